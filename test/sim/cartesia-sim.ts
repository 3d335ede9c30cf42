// Simulator of Cartesia's text-to-speech websocket (`/tts/websocket`) for tests, the
// benchmark and `npm run sim`. The protocol as Cartesia documents it (and cartesia-js's
// WebsocketResponse types spell it): many contexts on one socket; a generation request
// `{model_id, transcript, voice:{mode:"id",id}, language, context_id, output_format,
// continue, generation_config}`; a cancel `{context_id, cancel:true}`; replies
// `{type:"chunk", data:<base64>, done:false, status_code:206, step_time, context_id}`
// and `{type:"done", done:true, status_code:200, context_id}` once a context's input has
// ended (`continue:false`), `{type:"error", status_code, title, message, …}` otherwise.
// The key is read from `X-API-Key`, `Authorization: Bearer` or `?api_key=`, the version
// from `Cartesia-Version` or `?cartesia_version=` (Cartesia's API conventions page).
// Contexts are generated side by side, as the service does, so a short later sentence
// can finish before a long earlier one. The audio is the speech-like sound the OpenAI
// speech simulator makes (speech-like-audio.ts), brought to 8 kHz μ-law, ~65 ms a
// character divided by `generation_config.speed`.
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { linearToMulaw } from '../../voice/audio/mulaw.ts';
import { speechLikePcm24k } from './speech-like-audio.ts';

export interface CartesiaSimOptions {
  port?: number;
  /** When set, only this key is accepted; otherwise any non-empty key is. */
  apiKey?: string;
  /** From a request to its context's first chunk. */
  firstAudioMs?: number;
  /** How many times faster than real time audio is produced after the first chunk. */
  speedFactor?: number;
  /** Audio per chunk message. */
  chunkMs?: number;
  /** A cancelled context keeps streaming this long, as chunks already in flight do on a real network. */
  cancelLatencyMs?: number;
}

/** A generation request as the client sent it. */
export interface CartesiaSimRequest {
  model_id?: unknown;
  transcript?: unknown;
  voice?: { mode?: unknown; id?: unknown };
  language?: unknown;
  context_id?: unknown;
  output_format?: { container?: unknown; encoding?: unknown; sample_rate?: unknown };
  continue?: unknown;
  generation_config?: { speed?: unknown; volume?: unknown; emotion?: unknown };
  [field: string]: unknown;
}

export interface CartesiaSimConnection {
  readonly headers: IncomingHttpHeaders;
  readonly query: URLSearchParams;
  open: boolean;
}

/**
 * - `error`: the next generation request is answered with an error message (`status`, default 500).
 * - `stall`: the next generation request is accepted and never answered.
 * - `drop`: every live socket is destroyed now, without a close frame.
 * - `unauthorized`: the next upgrade is refused with 401.
 */
export type CartesiaSimFault = 'error' | 'stall' | 'drop' | 'unauthorized';

export interface CartesiaSim {
  /** `ws://127.0.0.1:PORT`, the value for CARTESIA_BASE_URL. */
  readonly url: string;
  /** Every generation request, in arrival order. */
  readonly requests: CartesiaSimRequest[];
  /** Context ids of every cancel received. */
  readonly cancels: string[];
  readonly connections: CartesiaSimConnection[];
  fail(fault: CartesiaSimFault, opts?: { status?: number; message?: string }): void;
  close(): Promise<void>;
}

const SUPPORTED_RATE = 8000;

export async function startCartesiaSim(opts: CartesiaSimOptions = {}): Promise<CartesiaSim> {
  const firstAudioMs = opts.firstAudioMs ?? 20;
  const speedFactor = opts.speedFactor ?? 4;
  const chunkBytes = Math.max(8, Math.round((opts.chunkMs ?? 40) * 8));
  const chunkIntervalMs = chunkBytes / 8 / speedFactor;
  const requests: CartesiaSimRequest[] = [];
  const cancels: string[] = [];
  const connections: CartesiaSimConnection[] = [];
  const sockets = new Set<WebSocket>();
  const faults: { fault: CartesiaSimFault; status: number; message: string }[] = [];
  const takeFault = (kinds: CartesiaSimFault[]) => {
    const i = faults.findIndex((f) => kinds.includes(f.fault));
    return i < 0 ? undefined : faults.splice(i, 1)[0];
  };

  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://sim');
    if (url.pathname !== '/tts/websocket') return refuse(socket, 404, 'Not Found', 'Unknown path.');
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const key = headerOf(req.headers['x-api-key']) ?? bearer ?? url.searchParams.get('api_key') ?? '';
    if (!key || (opts.apiKey !== undefined && key !== opts.apiKey) || takeFault(['unauthorized'])) {
      return refuse(socket, 401, 'Unauthorized', 'Invalid API key.');
    }
    if (!headerOf(req.headers['cartesia-version']) && !url.searchParams.get('cartesia_version')) {
      return refuse(socket, 400, 'Bad Request', 'Cartesia-Version header is required.');
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn: CartesiaSimConnection = { headers: req.headers, query: url.searchParams, open: true };
      connections.push(conn);
      sockets.add(ws);
      const session = new TtsSession(ws, { requests, cancels, takeFault, firstAudioMs, chunkBytes, chunkIntervalMs, cancelLatencyMs: opts.cancelLatencyMs ?? 0 });
      ws.on('close', () => {
        conn.open = false;
        sockets.delete(ws);
        session.stop();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    url: `ws://127.0.0.1:${port}`,
    requests,
    cancels,
    connections,
    fail(fault, o = {}) {
      if (fault === 'drop') for (const ws of sockets) ws.terminate();
      else faults.push({ fault, status: o.status ?? 500, message: o.message ?? 'The simulator was told to fail this request.' });
    },
    async close() {
      for (const ws of sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function headerOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function refuse(socket: Duplex, status: number, reason: string, message: string): void {
  const body = JSON.stringify({ error: message });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/** The speech-like sound of `text` at `speed`, as 8 kHz μ-law (24 kHz averaged by threes). */
export function speechLikeMulaw(text: string, speed = 1): Buffer {
  const pcm = speechLikePcm24k(text, speed);
  const out = Buffer.alloc(Math.floor(pcm.length / 3));
  for (let i = 0; i < out.length; i++) {
    out[i] = linearToMulaw(Math.round((pcm[3 * i]! + pcm[3 * i + 1]! + pcm[3 * i + 2]!) / 3));
  }
  return out;
}

interface SessionShared {
  requests: CartesiaSimRequest[];
  cancels: string[];
  takeFault(kinds: CartesiaSimFault[]): { fault: CartesiaSimFault; status: number; message: string } | undefined;
  firstAudioMs: number;
  chunkBytes: number;
  chunkIntervalMs: number;
  cancelLatencyMs: number;
}

/** A context: its audio still to send, in order, and whether its input has ended. */
interface Context {
  pending: Buffer[];
  inputEnded: boolean;
  timer: NodeJS.Timeout | null;
  started: boolean;
}

class TtsSession {
  private readonly contexts = new Map<string, Context>();
  private readonly requestId = randomUUID();

  constructor(
    private readonly ws: WebSocket,
    private readonly shared: SessionShared,
  ) {
    ws.on('message', (data, isBinary) => {
      if (!isBinary) this.onText(data.toString());
    });
  }

  stop(): void {
    for (const ctx of this.contexts.values()) if (ctx.timer) clearTimeout(ctx.timer);
    this.contexts.clear();
  }

  private onText(text: string): void {
    let msg: CartesiaSimRequest;
    try {
      msg = JSON.parse(text) as CartesiaSimRequest;
    } catch {
      return this.error(undefined, 400, 'Invalid JSON', 'The message is not JSON.');
    }
    const contextId = typeof msg.context_id === 'string' ? msg.context_id : undefined;
    if (msg['cancel'] === true) {
      if (contextId === undefined) return this.error(undefined, 400, 'Invalid request', 'context_id is required to cancel.');
      this.shared.cancels.push(contextId);
      const stop = () => {
        const ctx = this.contexts.get(contextId);
        if (ctx?.timer) clearTimeout(ctx.timer);
        this.contexts.delete(contextId);
      };
      if (this.shared.cancelLatencyMs > 0) setTimeout(stop, this.shared.cancelLatencyMs).unref();
      else stop();
      return;
    }
    this.shared.requests.push(msg);
    const invalid = invalidRequest(msg);
    if (invalid || contextId === undefined) return this.error(contextId, 400, 'Invalid request', invalid ?? 'context_id is required.');
    const fault = this.shared.takeFault(['error', 'stall']);
    if (fault?.fault === 'error') return this.error(contextId, fault.status, 'Simulated failure', fault.message);
    let ctx = this.contexts.get(contextId);
    if (!ctx) {
      ctx = { pending: [], inputEnded: false, timer: null, started: false };
      this.contexts.set(contextId, ctx);
    }
    if (fault?.fault === 'stall') return; // accepted, never answered
    const speed = typeof msg.generation_config?.speed === 'number' ? msg.generation_config.speed : 1;
    const audio = speechLikeMulaw(msg.transcript as string, speed);
    for (let at = 0; at < audio.length; at += this.shared.chunkBytes) ctx.pending.push(audio.subarray(at, at + this.shared.chunkBytes));
    if (msg.continue !== true) ctx.inputEnded = true;
    this.pump(contextId, ctx);
  }

  /** Sends the context's next chunk (or its `done`) when its time comes. */
  private pump(contextId: string, ctx: Context): void {
    if (ctx.timer) return;
    if (ctx.pending.length === 0 && !ctx.inputEnded) return;
    const wait = ctx.started ? this.shared.chunkIntervalMs : this.shared.firstAudioMs;
    ctx.timer = setTimeout(() => {
      ctx.timer = null;
      if (this.contexts.get(contextId) !== ctx) return; // cancelled
      ctx.started = true;
      const chunk = ctx.pending.shift();
      if (chunk) {
        this.send({ type: 'chunk', data: chunk.toString('base64'), done: false, status_code: 206, step_time: 1, context_id: contextId });
      } else if (ctx.inputEnded) {
        this.contexts.delete(contextId);
        this.send({ type: 'done', done: true, status_code: 200, context_id: contextId });
        return;
      }
      this.pump(contextId, ctx);
    }, wait);
  }

  private error(contextId: string | undefined, status: number, title: string, message: string): void {
    if (contextId !== undefined) {
      const ctx = this.contexts.get(contextId);
      if (ctx?.timer) clearTimeout(ctx.timer);
      this.contexts.delete(contextId);
    }
    this.send({ type: 'error', status_code: status, title, message, done: true, request_id: this.requestId, ...(contextId === undefined ? {} : { context_id: contextId }) });
  }

  private send(msg: Record<string, unknown>): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(msg));
  }
}

/** Why Cartesia would refuse the request, or null. The simulator makes 8 kHz μ-law only. */
function invalidRequest(msg: CartesiaSimRequest): string | null {
  if (typeof msg.model_id !== 'string' || msg.model_id === '') return 'model_id is required.';
  if (typeof msg.transcript !== 'string') return 'transcript must be a string.';
  if (msg.voice?.mode !== 'id' || typeof msg.voice.id !== 'string') return 'voice must be {mode: "id", id}.';
  const f = msg.output_format;
  if (f?.container !== 'raw' || f.encoding !== 'pcm_mulaw' || f.sample_rate !== SUPPORTED_RATE) {
    return 'output_format must be raw pcm_mulaw at 8000 Hz (the only format the simulator makes).';
  }
  const speed = msg.generation_config?.speed;
  if (speed !== undefined && (typeof speed !== 'number' || speed < 0.6 || speed > 1.5)) return 'generation_config.speed must be between 0.6 and 1.5.';
  if (msg.language !== undefined && (typeof msg.language !== 'string' || !/^[a-z]{2}$/.test(msg.language))) return 'language must be a two-letter code.';
  return null;
}
