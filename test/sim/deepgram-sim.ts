// Simulator of Deepgram's live transcription websocket (`/v1/listen`) for tests,
// the benchmark and `npm run sim`. It speaks the real protocol (message shapes as in
// deepgram-js-sdk's ListenV1Results/UtteranceEnd/SpeechStarted/Metadata types) and
// recognises speech by the audio itself, in audio time, as Deepgram does:
//   - each 20 ms frame is speech when louder than about -35 dBFS;
//   - an utterance begins at the first loud frame (`SpeechStarted` when vad_events=true)
//     and "says" the next text queued with `say()` (when none is queued: what the
//     `transcribe` option answers for that socket, else '');
//   - interim `Results` every ~250 ms of speech carry a growing prefix of its words;
//   - after `endpointing` ms of silence the whole text comes as a final (is_final and
//     speech_final) `finalLatencyMs` later (wall time), then `UtteranceEnd` once the
//     silence reaches `utterance_end_ms` (never before the final it follows);
//     `endpointing(ms)` makes it settle sooner (or later) than the client asked, and
//     `interims(false)` leaves out the interim results (as Deepgram may for a short one);
//   - `Finalize` makes the pending words final at once (from_finalize), `CloseStream`
//     flushes, sends `Metadata` and closes with 1000, 10 s with neither audio nor a
//     text message closes with 1011 (NET-0001).
// Faults: a refused upgrade (401, or 503 for reconnection tests), live sockets dropped
// without a close frame, and a mute server that keeps reading but answers nothing.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { mulawToLinear } from '../../voice/audio/mulaw.ts';

export interface DeepgramSimOptions {
  port?: number;
  /** When set, only `Authorization: Token <apiKey>` is accepted; otherwise any token is. */
  apiKey?: string;
  /** Wall time between the endpoint being reached and the final being sent. */
  finalLatencyMs?: number;
  /** A socket that receives neither audio nor a text message for this long is closed (Deepgram: ~10 s). */
  idleTimeoutMs?: number;
  /**
   * What an utterance says when nothing is queued with `say()` (default ''): given the
   * socket and the utterance's index on it (0 for its first). The queue is one for all
   * sockets, which suits a test's one call; many concurrent calls (the benchmark) need
   * each socket to answer for itself.
   */
  transcribe?: (connection: DeepgramSimConnection, utteranceIndex: number) => string;
}

/** One websocket as the simulator saw it. */
export interface DeepgramSimConnection {
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly requestId: string;
  /** Audio bytes received. */
  bytes: number;
  /** Audio messages received (each binary websocket message, whatever its size). */
  audioMessages: number;
  /** Text control messages received, by type, in order (`KeepAlive`, `Finalize`, `CloseStream`, …). */
  readonly control: string[];
  /** Every message sent to the client, in order. */
  readonly sent: Record<string, unknown>[];
  /** False once the socket closed. */
  open: boolean;
}

/**
 * - `unauthorized`: refuse the next `times` upgrades with 401 (a revoked key).
 * - `unavailable`: refuse the next `times` upgrades with 503.
 * - `drop`: destroy every live socket now, without a close frame.
 * - `mute`: keep reading but send nothing until `recover()`.
 */
export type DeepgramSimFault = 'unauthorized' | 'unavailable' | 'drop' | 'mute';

export interface DeepgramSim {
  /** `ws://127.0.0.1:PORT`, the value for DEEPGRAM_BASE_URL. */
  readonly url: string;
  readonly connections: DeepgramSimConnection[];
  /** Upgrades refused so far (bad key or a `fail` fault). */
  readonly refused: number;
  /** Queues what the next utterances say, one text per utterance, in order. */
  say(...texts: string[]): void;
  fail(fault: DeepgramSimFault, times?: number): void;
  /** Ends `mute` and forgets upgrades still to be refused. */
  recover(): void;
  /**
   * From now on, on every socket, utterances end after `ms` of silence whatever
   * `endpointing` the client asked for (null: as asked again). A recogniser that settles
   * words sooner than asked is, to a client, the same as its own voice activity detector
   * running that much behind the recogniser (issue 24): the tests move the two apart with it.
   */
  endpointing(ms: number | null): void;
  /** From now on, on every socket, interim results are sent (true, as asked) or not (false). */
  interims(on: boolean): void;
  close(): Promise<void>;
}

const FRAME_MS = 20;
const INTERIM_EVERY_MS = 250;
/** -35 dBFS as a mean square of 16-bit samples: (32768 * 10^(-35/20))^2. */
const LOUD_MEAN_SQUARE = (32768 * 10 ** (-35 / 20)) ** 2;

export async function startDeepgramSim(opts: DeepgramSimOptions = {}): Promise<DeepgramSim> {
  const finalLatencyMs = opts.finalLatencyMs ?? 0;
  const idleTimeoutMs = opts.idleTimeoutMs ?? 10_000;
  const connections: DeepgramSimConnection[] = [];
  const sessions = new Set<ListenSession>();
  const script: string[] = [];
  const refusals: number[] = [];
  let muted = false;
  let refused = 0;
  let endpointingOverride: number | null = null;
  let interimsOn = true;

  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  const server = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ err_code: 'NOT_FOUND', err_msg: 'Use a websocket.' }));
  });
  const refuse = (socket: Duplex, status: number, code: string, message: string, requestId: string): void => {
    refused++;
    refuseUpgrade(socket, status, code, message, requestId);
  };
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://sim');
    const requestId = randomUUID();
    if (url.pathname !== '/v1/listen') return refuse(socket, 404, 'NOT_FOUND', 'Unknown path.', requestId);
    const auth = /^Token (.+)$/.exec(req.headers.authorization ?? '');
    if (!auth || (opts.apiKey !== undefined && auth[1] !== opts.apiKey)) return refuse(socket, 401, 'INVALID_AUTH', 'Invalid credentials.', requestId);
    const refusal = refusals.shift();
    if (refusal === 401) return refuse(socket, 401, 'INVALID_AUTH', 'Invalid credentials.', requestId);
    if (refusal !== undefined) return refuse(socket, refusal, 'SERVICE_UNAVAILABLE', 'Service unavailable.', requestId);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn: DeepgramSimConnection = { query: url.searchParams, headers: req.headers, requestId, bytes: 0, audioMessages: 0, control: [], sent: [], open: true };
      connections.push(conn);
      let utterances = 0;
      const session = new ListenSession(ws, conn, {
        finalLatencyMs,
        idleTimeoutMs,
        nextText: () => {
          const index = utterances++;
          return script.shift() ?? opts.transcribe?.(conn, index) ?? '';
        },
        muted: () => muted,
        endpointingMs: () => endpointingOverride,
        interims: () => interimsOn,
      });
      sessions.add(session);
      ws.on('close', () => {
        conn.open = false;
        session.stop();
        sessions.delete(session);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    url: `ws://127.0.0.1:${port}`,
    connections,
    get refused() {
      return refused;
    },
    say(...texts) {
      script.push(...texts);
    },
    fail(fault, times = 1) {
      if (fault === 'unauthorized' || fault === 'unavailable') for (let i = 0; i < times; i++) refusals.push(fault === 'unauthorized' ? 401 : 503);
      else if (fault === 'mute') muted = true;
      else for (const s of sessions) s.drop();
    },
    recover() {
      muted = false;
      refusals.length = 0;
    },
    endpointing(ms) {
      endpointingOverride = ms;
    },
    interims(on) {
      interimsOn = on;
    },
    async close() {
      for (const s of sessions) s.drop();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function refuseUpgrade(socket: Duplex, status: number, code: string, message: string, requestId: string): void {
  const body = JSON.stringify({ err_code: code, err_msg: message, request_id: requestId });
  const reason = status === 401 ? 'Unauthorized' : status === 404 ? 'Not Found' : 'Service Unavailable';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ndg-request-id: ${requestId}\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

interface SessionHooks {
  finalLatencyMs: number;
  idleTimeoutMs: number;
  nextText(): string;
  muted(): boolean;
  /** The endpointing every socket uses instead of the one it asked for (null: its own). */
  endpointingMs(): number | null;
  /** Interim results are sent when asked for (false: none, whatever was asked). */
  interims(): boolean;
}

/** One utterance: the words it says and where it is in audio time. */
interface Utterance {
  words: string[];
  startMs: number;
  lastLoudEndMs: number;
  speechMs: number;
  nextInterimAtMs: number;
  interims: number;
  /** Words already sent in a final. */
  finalized: number;
  endpointed: boolean;
  finalPending: boolean;
  utteranceEndOwed: boolean;
}

class ListenSession {
  private readonly bytesPerSample: number;
  private readonly frameBytes: number;
  private readonly carry: Uint8Array;
  private carryLength = 0;
  private frames = 0;
  private current: Utterance | null = null;
  private readonly endpointingMs: number | null;
  private readonly utteranceEndMs: number | null;
  private readonly interimResults: boolean;
  private readonly vadEvents: boolean;
  private readonly model: string;
  /** Finals waiting out `finalLatencyMs`, so CloseStream can send them at once. */
  private readonly pendingFinals = new Map<() => void, NodeJS.Timeout>();
  private lastActivity = performance.now();
  private readonly idleCheck: NodeJS.Timeout;
  private closing = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly conn: DeepgramSimConnection,
    private readonly hooks: SessionHooks,
  ) {
    const q = conn.query;
    this.bytesPerSample = q.get('encoding') === 'linear16' ? 2 : 1;
    const rate = Number(q.get('sample_rate') ?? 8000) || 8000;
    this.frameBytes = Math.round((rate * FRAME_MS) / 1000) * this.bytesPerSample;
    this.carry = new Uint8Array(this.frameBytes);
    const endpointing = q.get('endpointing');
    this.endpointingMs = endpointing === 'false' ? null : Number(endpointing ?? 10) || 10;
    this.interimResults = q.get('interim_results') === 'true';
    const utteranceEnd = Number(q.get('utterance_end_ms'));
    // Deepgram only sends UtteranceEnd alongside interim results.
    this.utteranceEndMs = this.interimResults && utteranceEnd > 0 ? utteranceEnd : null;
    this.vadEvents = q.get('vad_events') === 'true';
    this.model = q.get('model') ?? 'nova-3';
    ws.on('message', (data, isBinary) => this.onMessage(data as Buffer, isBinary));
    this.idleCheck = setInterval(() => {
      if (performance.now() - this.lastActivity >= hooks.idleTimeoutMs) {
        ws.close(1011, 'Deepgram did not receive audio data or a text message within the timeout window. See https://dpgr.am/net0001');
      }
    }, Math.min(1000, hooks.idleTimeoutMs));
    this.idleCheck.unref();
  }

  drop(): void {
    this.ws.terminate();
  }

  stop(): void {
    clearInterval(this.idleCheck);
    for (const t of this.pendingFinals.values()) clearTimeout(t);
    this.pendingFinals.clear();
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closing) return;
    this.lastActivity = performance.now();
    if (isBinary) {
      this.conn.bytes += data.length;
      this.conn.audioMessages++;
      this.onAudio(data);
      return;
    }
    let type = 'invalid';
    try {
      type = String((JSON.parse(data.toString()) as { type?: unknown }).type);
    } catch {
      // recorded as `invalid`
    }
    this.conn.control.push(type);
    if (type === 'Finalize') this.finalizeNow();
    else if (type === 'CloseStream') this.closeStream();
  }

  private onAudio(data: Buffer): void {
    let at = 0;
    if (this.carryLength > 0) {
      const take = Math.min(this.frameBytes - this.carryLength, data.length);
      this.carry.set(data.subarray(0, take), this.carryLength);
      this.carryLength += take;
      at = take;
      if (this.carryLength < this.frameBytes) return;
      this.onFrame(this.isLoud(this.carry, 0));
      this.carryLength = 0;
    }
    for (; at + this.frameBytes <= data.length; at += this.frameBytes) this.onFrame(this.isLoud(data, at));
    if (at < data.length) {
      this.carry.set(data.subarray(at), 0);
      this.carryLength = data.length - at;
    }
  }

  private isLoud(buf: Uint8Array, at: number): boolean {
    let sum = 0;
    const n = this.frameBytes / this.bytesPerSample;
    if (this.bytesPerSample === 1) {
      for (let i = 0; i < n; i++) {
        const x = mulawToLinear(buf[at + i]!);
        sum += x * x;
      }
    } else {
      for (let i = 0; i < n; i++) {
        const lo = buf[at + 2 * i]!;
        const x = ((buf[at + 2 * i + 1]! << 24) >> 16) | lo;
        sum += x * x;
      }
    }
    return sum / n > LOUD_MEAN_SQUARE;
  }

  private onFrame(loud: boolean): void {
    this.frames++;
    const endMs = this.frames * FRAME_MS;
    let u = this.current;
    if (loud) {
      if (!u || u.endpointed) {
        const text = this.hooks.nextText().trim();
        u = {
          words: text ? text.split(/\s+/) : [],
          startMs: endMs - FRAME_MS,
          lastLoudEndMs: endMs,
          speechMs: 0,
          nextInterimAtMs: INTERIM_EVERY_MS,
          interims: 0,
          finalized: 0,
          endpointed: false,
          finalPending: false,
          utteranceEndOwed: false,
        };
        this.current = u;
        if (this.vadEvents) this.send({ type: 'SpeechStarted', channel: [0], timestamp: seconds(u.startMs) });
      }
      u.lastLoudEndMs = endMs;
      u.speechMs += FRAME_MS;
      if (this.interimResults && this.hooks.interims() && u.speechMs >= u.nextInterimAtMs) {
        u.nextInterimAtMs += INTERIM_EVERY_MS;
        u.interims++;
        const shown = u.words.slice(u.finalized, Math.min(u.words.length, u.finalized + u.interims));
        this.send(this.results(u, shown.join(' '), { isFinal: false, speechFinal: false, fromFinalize: false }));
      }
      return;
    }
    if (!u) return;
    const silenceMs = endMs - u.lastLoudEndMs;
    const endpointingMs = this.hooks.endpointingMs() ?? this.endpointingMs;
    if (!u.endpointed && endpointingMs !== null && silenceMs >= endpointingMs) {
      u.endpointed = true;
      this.scheduleFinal(u);
    }
    if (this.utteranceEndMs !== null && silenceMs >= this.utteranceEndMs) {
      this.current = null;
      // Without endpointing nothing made the words final yet: the utterance's end does.
      if (!u.endpointed) {
        u.endpointed = true;
        this.scheduleFinal(u);
      }
      if (u.finalPending) u.utteranceEndOwed = true;
      else this.sendUtteranceEnd(u);
    }
  }

  private scheduleFinal(u: Utterance): void {
    const text = u.words.slice(u.finalized).join(' ');
    u.finalized = u.words.length;
    u.finalPending = true;
    const fire = () => {
      clearTimeout(this.pendingFinals.get(fire));
      this.pendingFinals.delete(fire);
      u.finalPending = false;
      this.send(this.results(u, text, { isFinal: true, speechFinal: true, fromFinalize: false }));
      if (u.utteranceEndOwed) this.sendUtteranceEnd(u);
    };
    this.pendingFinals.set(fire, setTimeout(fire, this.hooks.finalLatencyMs));
  }

  private sendUtteranceEnd(u: Utterance): void {
    u.utteranceEndOwed = false;
    this.send({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: seconds(u.lastLoudEndMs) });
  }

  private finalizeNow(): void {
    const u = this.current;
    if (u && u.finalized < u.words.length) {
      const text = u.words.slice(u.finalized).join(' ');
      u.finalized = u.words.length;
      this.send(this.results(u, text, { isFinal: true, speechFinal: false, fromFinalize: true }));
      return;
    }
    // Nothing pending: Deepgram still answers, with an empty final.
    const at = this.frames * FRAME_MS;
    const empty: Utterance = { words: [], startMs: at, lastLoudEndMs: at, speechMs: 0, nextInterimAtMs: 0, interims: 0, finalized: 0, endpointed: true, finalPending: false, utteranceEndOwed: false };
    this.send(this.results(empty, '', { isFinal: true, speechFinal: false, fromFinalize: true }));
  }

  private closeStream(): void {
    for (const fire of [...this.pendingFinals.keys()]) fire();
    const u = this.current;
    if (u && u.finalized < u.words.length) {
      const text = u.words.slice(u.finalized).join(' ');
      u.finalized = u.words.length;
      this.send(this.results(u, text, { isFinal: true, speechFinal: true, fromFinalize: false }));
    }
    this.send({
      type: 'Metadata',
      transaction_key: 'deprecated',
      request_id: this.conn.requestId,
      sha256: '0'.repeat(64),
      created: new Date().toISOString(),
      duration: seconds(this.frames * FRAME_MS),
      channels: 1,
    });
    this.closing = true;
    this.ws.close(1000);
  }

  private results(u: Utterance, text: string, flags: { isFinal: boolean; speechFinal: boolean; fromFinalize: boolean }): Record<string, unknown> {
    const start = u.startMs;
    const end = Math.max(u.lastLoudEndMs, start + FRAME_MS);
    const spoken = text ? text.split(' ') : [];
    const step = (end - start) / Math.max(1, spoken.length);
    return {
      type: 'Results',
      channel_index: [0, 1],
      duration: seconds(end - start),
      start: seconds(start),
      is_final: flags.isFinal,
      speech_final: flags.speechFinal,
      from_finalize: flags.fromFinalize,
      channel: {
        alternatives: [
          {
            transcript: text,
            confidence: spoken.length > 0 ? 0.99 : 0,
            words: spoken.map((w, i) => ({
              word: w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, ''),
              start: seconds(start + i * step),
              end: seconds(start + (i + 1) * step),
              confidence: 0.99,
              punctuated_word: w,
            })),
          },
        ],
      },
      metadata: {
        request_id: this.conn.requestId,
        model_info: { name: `general-${this.model}`, version: 'sim', arch: this.model },
        model_uuid: '00000000-0000-4000-8000-000000000000',
      },
    };
  }

  private send(msg: Record<string, unknown>): void {
    if (this.hooks.muted() || this.ws.readyState !== this.ws.OPEN) return;
    this.conn.sent.push(msg);
    this.ws.send(JSON.stringify(msg));
  }
}

const seconds = (ms: number): number => Math.round(ms) / 1000;
