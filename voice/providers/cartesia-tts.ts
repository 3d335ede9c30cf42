// Cartesia text to speech over its websocket: ONE socket per client shared by every
// call, many contexts on it. Each segment (sentence) the engine pushes is its own
// context, requested the moment it is pushed, so later sentences synthesize while the
// earlier ones play; audio comes back interleaved across contexts and is delivered to
// the sink strictly in segment order (later contexts are held until their turn).
// Wire details, confirmed against pipecat's CartesiaTTSService and cartesia-js
// (src/resources/tts.ts, src/internal/lib/tts/ws.ts):
//   - `{baseUrl}/tts/websocket` with headers `X-API-Key` and `Cartesia-Version`
//     (pipecat sends exactly these; browsers use `?api_key=`/`?cartesia_version=`).
//   - request `{model_id, transcript, voice:{mode:"id",id}, language, context_id,
//     output_format:{container:"raw", encoding:"pcm_mulaw", sample_rate:8000}, continue}`;
//     each segment is complete, so `continue:false` and Cartesia ends the context with `done`.
//   - speed: `generation_config.speed` in [0.6, 1.5] on sonic-3 and later (cartesia-js:
//     "These are only for sonic-3 and have no effect on earlier models"); older models
//     take the deprecated top-level `speed: "slow"|"normal"|"fast"`.
//   - cancel `{context_id, cancel:true}`; replies `chunk` (base64 `data`), `timestamps`,
//     `flush_done`, `done`, `error` `{status_code, title, message, context_id?}`.
// A lost socket or an error message fails only the utterances it touches; the next use
// opens a new socket (Cartesia also closes idle sockets after about 5 minutes).
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { kindOfStatus, ProviderError, type ProviderErrorKind } from './errors.ts';
import type { TtsClient, TtsSink, TtsUtterance, TtsVoice } from './tts.ts';

export interface CartesiaTtsOptions {
  /** E.g. `wss://api.cartesia.ai`; a trailing slash is ignored. */
  baseUrl: string;
  apiKey: string;
  /** E.g. `sonic-3`. */
  model: string;
  /** The `Cartesia-Version` the requests are written against. */
  version?: string;
  /** The websocket handshake must complete within this. */
  connectTimeoutMs?: number;
  /** An utterance waiting on Cartesia that hears nothing back for this long fails with `timeout`. */
  progressTimeoutMs?: number;
}

export interface CartesiaTts extends TtsClient {
  /** Closes the shared socket (shutdown); utterances still open fail as `aborted`. */
  close(): void;
}

const OUTPUT_FORMAT = { container: 'raw', encoding: 'pcm_mulaw', sample_rate: 8000 } as const;
/** Cartesia's accepted `generation_config.speed` range. */
const MIN_SPEED = 0.6;
const MAX_SPEED = 1.5;

export function createCartesiaTts(opts: CartesiaTtsOptions): CartesiaTts {
  return new CartesiaClient(opts);
}

/** One segment: its context, and its audio while an earlier segment is still playing. */
interface Segment {
  readonly index: number;
  readonly contextId: string | null;
  conn: Connection | null;
  held: Uint8Array[] | null;
  done: boolean;
}

class CartesiaClient implements CartesiaTts {
  readonly name = 'cartesia' as const;
  private conn: Connection | null = null;
  private readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly connectTimeoutMs: number;
  readonly progressTimeoutMs: number;
  readonly speedFields: (speed: number) => Record<string, unknown>;
  readonly model: string;
  /** Utterances with requests outstanding, for the progress watchdog. */
  readonly waiting = new Set<Utterance>();
  private watchdog: NodeJS.Timeout | null = null;

  constructor(opts: CartesiaTtsOptions) {
    this.url = `${opts.baseUrl.replace(/\/+$/, '')}/tts/websocket`;
    this.headers = { 'X-API-Key': opts.apiKey, 'Cartesia-Version': opts.version ?? '2025-04-16' };
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 5000;
    this.progressTimeoutMs = opts.progressTimeoutMs ?? 10_000;
    this.model = opts.model;
    this.speedFields = speedFieldsFor(opts.model);
  }

  start(voice: TtsVoice, sink: TtsSink): TtsUtterance {
    return new Utterance(this, voice, sink);
  }

  close(): void {
    const conn = this.conn;
    this.conn = null;
    conn?.shutDown(new ProviderError('tts', 'aborted', 'tts cartesia: client closed'));
  }

  /** The live socket, opened on first use and again after it died. */
  connection(): Connection {
    if (!this.conn || this.conn.dead) {
      this.conn = new Connection(this.url, this.headers, this.connectTimeoutMs, (conn) => {
        if (this.conn === conn) this.conn = null;
      });
    }
    return this.conn;
  }

  watch(u: Utterance): void {
    this.waiting.add(u);
    if (this.watchdog) return;
    // One timer for the whole client: checking every waiting utterance a few times per
    // deadline costs less than re-arming a timer per audio chunk.
    this.watchdog = setInterval(() => {
      const now = performance.now();
      for (const w of this.waiting) {
        if (now - w.lastProgressAt > this.progressTimeoutMs) {
          w.fail(new ProviderError('tts', 'timeout', `tts cartesia: no answer within ${this.progressTimeoutMs} ms`));
        }
      }
      if (this.waiting.size === 0 && this.watchdog) {
        clearInterval(this.watchdog);
        this.watchdog = null;
      }
    }, Math.max(10, Math.min(1000, this.progressTimeoutMs / 4)));
    this.watchdog.unref();
  }
}

/** The shared socket: requests queued until it opens, and which context belongs to whom. */
class Connection {
  readonly ws: WebSocket;
  private open = false;
  dead = false;
  private queue: { contextId: string; json: string }[] = [];
  readonly contexts = new Map<string, { utterance: Utterance; segment: Segment }>();

  constructor(url: string, headers: Record<string, string>, connectTimeoutMs: number, onDead: (c: Connection) => void) {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, handshakeTimeout: connectTimeoutMs });
    this.ws = ws;
    let refusedStatus: number | null = null;
    let lastError: Error | null = null;
    ws.on('unexpected-response', (_req, res) => {
      refusedStatus = res.statusCode ?? 0;
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      if (this.dead) return;
      this.open = true;
      for (const q of this.queue) ws.send(q.json);
      this.queue = [];
    });
    ws.on('message', (data, isBinary) => {
      if (!isBinary && !this.dead) this.onMessage(data.toString());
    });
    ws.on('error', (err) => {
      lastError = err;
    });
    ws.on('close', (code, reason) => {
      onDead(this);
      if (this.dead) return;
      let error: ProviderError;
      if (refusedStatus !== null) {
        error = new ProviderError('tts', kindOfStatus(refusedStatus), `tts cartesia /tts/websocket: HTTP ${refusedStatus}`, { status: refusedStatus });
      } else {
        const kind: ProviderErrorKind = lastError && /timed out/i.test(lastError.message) ? 'timeout' : 'unavailable';
        const why = lastError ? lastError.message : `socket closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`;
        error = new ProviderError('tts', kind, `tts cartesia /tts/websocket: ${why}`, { status: code, cause: lastError ?? undefined });
      }
      this.shutDown(error);
    });
  }

  send(contextId: string, json: string): void {
    if (this.open) this.ws.send(json);
    else this.queue.push({ contextId, json });
  }

  /** Stops Cartesia generating `contextId`: a request not sent yet is simply dropped. */
  cancel(contextId: string): void {
    this.contexts.delete(contextId);
    if (this.dead) return;
    if (this.open) this.ws.send(JSON.stringify({ context_id: contextId, cancel: true }));
    else this.queue = this.queue.filter((q) => q.contextId !== contextId);
  }

  /** The socket is gone (or closed by us): every utterance still waiting on it fails with `error`. */
  shutDown(error: ProviderError): void {
    if (this.dead) return;
    this.dead = true;
    this.queue = [];
    const affected = new Set([...this.contexts.values()].map((c) => c.utterance));
    this.contexts.clear();
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000);
    else if (this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
    for (const u of affected) u.fail(error);
  }

  private onMessage(text: string): void {
    let msg: { type?: unknown; context_id?: unknown; data?: unknown; done?: unknown; status_code?: unknown; title?: unknown; message?: unknown };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      return;
    }
    const id = typeof msg.context_id === 'string' ? msg.context_id : null;
    const owner = id === null ? undefined : this.contexts.get(id);
    if (msg.type === 'error') {
      const status = typeof msg.status_code === 'number' ? msg.status_code : undefined;
      const kind: ProviderErrorKind = status === undefined ? 'protocol' : kindOfStatus(status);
      const what = [msg.title, msg.message].filter((s) => typeof s === 'string' && s.length > 0).join(': ');
      const error = new ProviderError('tts', kind, `tts cartesia: ${what || 'error'}`, status === undefined ? {} : { status });
      if (owner) {
        // Cartesia already ended this context: only the utterance's other contexts need a cancel.
        this.contexts.delete(id!);
        owner.segment.conn = null;
        owner.utterance.fail(error);
      } else if (id === null) {
        // Not about one context: it may concern any request on this socket.
        for (const u of new Set([...this.contexts.values()].map((c) => c.utterance))) u.fail(error);
      }
      return;
    }
    if (!owner) return; // cancelled, failed or unknown: its late messages are dropped
    owner.utterance.lastProgressAt = performance.now();
    if (msg.type === 'chunk' && typeof msg.data === 'string' && msg.data.length > 0) {
      owner.utterance.onAudio(owner.segment, Buffer.from(msg.data, 'base64'));
    }
    // Early API versions marked the last chunk `done: true` instead of sending `done`.
    if (msg.type === 'done' || (msg.type === 'chunk' && msg.done === true)) {
      this.contexts.delete(owner.segment.contextId!);
      owner.utterance.onSegmentDone(owner.segment);
    }
  }
}

class Utterance implements TtsUtterance {
  private readonly id = randomUUID();
  private readonly segments: Segment[] = [];
  /** The segment whose audio the sink is receiving now. */
  private current = 0;
  private ended = false;
  /** Segments requested from Cartesia and not done yet: only these can time out. */
  private outstanding = 0;
  /** Done, failed or cancelled: no more sink calls. */
  private finished = false;
  private readonly conn: Connection;
  private readonly request: Record<string, unknown>;
  lastProgressAt = performance.now();

  constructor(
    private readonly client: CartesiaClient,
    voice: TtsVoice,
    private readonly sink: TtsSink,
  ) {
    // Opened now, not at the first push: the handshake overlaps the model's first words.
    this.conn = client.connection();
    const language = cartesiaLanguage(voice.language);
    this.request = {
      model_id: client.model,
      voice: { mode: 'id', id: voice.voice },
      ...(language === undefined ? {} : { language }),
      output_format: OUTPUT_FORMAT,
      ...client.speedFields(voice.speed),
    };
  }

  push(text: string): number {
    if (this.ended) throw new Error('push() after end()');
    const index = this.segments.length;
    if (this.finished) {
      this.segments.push({ index, contextId: null, conn: null, held: null, done: true });
      return index;
    }
    if (text.trim().length === 0) {
      // Nothing to say: done without asking Cartesia (it refuses an empty transcript).
      this.segments.push({ index, contextId: null, conn: null, held: null, done: true });
      queueMicrotask(() => this.advance());
      return index;
    }
    // A socket that died since start() is replaced; its own failure already reached us if it carried our contexts.
    const conn = this.conn.dead ? this.client.connection() : this.conn;
    const contextId = `${this.id}-${index}`;
    const segment: Segment = { index, contextId, conn, held: null, done: false };
    this.segments.push(segment);
    conn.contexts.set(contextId, { utterance: this, segment });
    conn.send(contextId, JSON.stringify({ ...this.request, transcript: text, context_id: contextId, continue: false }));
    // The deadline runs only while Cartesia owes us audio, not while the model writes the next sentence.
    if (this.outstanding++ === 0) {
      this.lastProgressAt = performance.now();
      this.client.watch(this);
    }
    return index;
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    queueMicrotask(() => this.advance());
  }

  cancel(): void {
    if (this.finished) return;
    this.finished = true;
    this.release();
  }

  onAudio(segment: Segment, audio: Uint8Array): void {
    if (this.finished) return;
    if (segment.index === this.current) this.sink.audio(audio, segment.index);
    else (segment.held ??= []).push(audio);
  }

  onSegmentDone(segment: Segment): void {
    segment.done = true;
    segment.conn = null;
    if (--this.outstanding === 0) this.client.waiting.delete(this);
    if (segment.index === this.current) this.advance();
  }

  fail(error: ProviderError): void {
    if (this.finished) return;
    this.finished = true;
    this.release();
    this.sink.error(error);
  }

  /** Delivers every finished segment in order, the held audio of the next, and `done` at the end. */
  private advance(): void {
    while (!this.finished) {
      const seg = this.segments[this.current];
      if (!seg) {
        if (this.ended) {
          this.finished = true;
          this.client.waiting.delete(this);
          this.sink.done();
        }
        return;
      }
      if (seg.held) {
        const held = seg.held;
        seg.held = null;
        for (const audio of held) {
          if (this.finished) return;
          this.sink.audio(audio, seg.index);
        }
      }
      if (!seg.done || this.finished) return;
      this.current++;
      this.sink.segmentDone(seg.index);
    }
  }

  /** Cancels every context still generating and stops watching. */
  private release(): void {
    this.client.waiting.delete(this);
    for (const seg of this.segments) {
      if (!seg.done && seg.conn && seg.contextId) seg.conn.cancel(seg.contextId);
      seg.conn = null;
      seg.held = null;
    }
  }
}

/** Cartesia's two-letter language code, or undefined for `multi` (the voice's own language then). */
function cartesiaLanguage(language: string): string | undefined {
  const base = language.trim().toLowerCase().split(/[-_]/)[0] ?? '';
  return /^[a-z]{2}$/.test(base) ? base : undefined;
}

/** How a model takes the speaking rate: `generation_config` from sonic-3 on, a coarse word before. */
function speedFieldsFor(model: string): (speed: number) => Record<string, unknown> {
  const major = /^sonic-(\d+)/.exec(model)?.[1];
  const modern = model === 'sonic-latest' || (major !== undefined && Number(major) >= 3);
  if (modern) return (speed) => ({ generation_config: { speed: Math.min(MAX_SPEED, Math.max(MIN_SPEED, speed)) } });
  return (speed) => (speed < 0.9 ? { speed: 'slow' } : speed > 1.1 ? { speed: 'fast' } : {});
}
