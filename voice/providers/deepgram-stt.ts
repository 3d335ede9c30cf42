// Deepgram live speech to text: one websocket per call, the caller's μ-law sent as
// binary frames as it arrives, transcripts back as JSON. The wire details (confirmed
// against deepgram-js-sdk's generated ListenV1* types and pipecat's DeepgramSTTService):
//   - `GET {baseUrl}/v1/listen?model=…&encoding=mulaw&sample_rate=8000&channels=1&
//     interim_results=true&endpointing=…&utterance_end_ms=…&vad_events=true&language=…`
//     with `Authorization: Token <key>`; boosted words as repeated `keyterm=` params
//     (nova-3; pipecat: "repeated query params (keyterm=a&keyterm=b) instead of a
//     stringified list"), `keywords=` on older models.
//   - text controls `{"type":"KeepAlive"}` (Deepgram closes a socket that got no data
//     for about 10 s, NET-0001), `{"type":"Finalize"}`, `{"type":"CloseStream"}`.
//   - messages `Results` (channel.alternatives[0].transcript, is_final, speech_final,
//     from_finalize), `UtteranceEnd`, `SpeechStarted`, `Metadata`.
// A dropped socket is reconnected with a short backoff while the caller's audio is
// held (a few seconds at most) and sent first on the new socket, so words spoken
// during the gap are still heard. The engine sees one `error` only when that fails,
// or at once when the key is refused: retrying a refused key cannot help.
import WebSocket from 'ws';
import { kindOfStatus, ProviderError, retryAfterMs, type ProviderErrorKind } from './errors.ts';
import type { SttClient, SttEvent, SttOptions, SttStream } from './stt.ts';

export interface DeepgramSttOptions {
  /** E.g. `wss://api.deepgram.com`; a trailing slash is ignored. */
  baseUrl: string;
  apiKey: string;
  /** E.g. `nova-3`. */
  model: string;
  /** Silence (ms) after which Deepgram marks a final `speech_final`. */
  endpointingMs?: number;
  /** Gap (ms) in word timing after which Deepgram sends `UtteranceEnd` (its minimum is 1000). */
  utteranceEndMs?: number;
  /** A KeepAlive goes out when nothing was sent for this long (Deepgram asks for one every 3–5 s). */
  keepAliveMs?: number;
  /** Wait before each reconnection attempt; their count is how many attempts are made. */
  reconnectDelaysMs?: readonly number[];
  /** Audio held while the socket is down, in ms of 8 kHz μ-law; the oldest is dropped beyond it. */
  maxBufferedMs?: number;
  /** The websocket handshake must complete within this. */
  connectTimeoutMs?: number;
}

const KEEP_ALIVE = JSON.stringify({ type: 'KeepAlive' });
const FINALIZE = JSON.stringify({ type: 'Finalize' });
const CLOSE_STREAM = JSON.stringify({ type: 'CloseStream' });
const BYTES_PER_MS = 8; // μ-law, 8 kHz, mono
/** A connection that stayed up this long was healthy: its loss starts a fresh round of attempts. */
const STABLE_MS = 5000;
/** Deepgram's documented cap on key terms per request. */
const MAX_KEYTERMS = 100;

export function createDeepgramStt(opts: DeepgramSttOptions): SttClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const settings: StreamSettings = {
    apiKey: opts.apiKey,
    keepAliveMs: opts.keepAliveMs ?? 4000,
    reconnectDelaysMs: opts.reconnectDelaysMs ?? [200, 800, 2000],
    maxBufferedBytes: Math.max(BYTES_PER_MS * 20, Math.round((opts.maxBufferedMs ?? 5000) * BYTES_PER_MS)),
    connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
    // Past UtteranceEnd (which follows endpointing), with room: no turn's end waits in a quiet chunk.
    quietAfterMs: (opts.utteranceEndMs ?? 1000) + QUIET_MARGIN_MS,
  };
  const endpointingMs = opts.endpointingMs ?? 300;
  const utteranceEndMs = opts.utteranceEndMs ?? 1000;
  return {
    open(sttOpts) {
      const url = listenUrl(base, opts.model, endpointingMs, utteranceEndMs, sttOpts);
      return new DeepgramStream(url, settings, sttOpts.onEvent);
    },
  };
}

/** The `/v1/listen` URL for one call: the fixed telephone audio format plus the agent's language and words. */
export function listenUrl(base: string, model: string, endpointingMs: number, utteranceEndMs: number, sttOpts: Pick<SttOptions, 'language' | 'keyterms'>): string {
  const q = new URLSearchParams({
    model,
    encoding: 'mulaw',
    sample_rate: '8000',
    channels: '1',
    interim_results: 'true',
    endpointing: String(endpointingMs),
    utterance_end_ms: String(utteranceEndMs),
    vad_events: 'true',
    // Numbers, dates and punctuation written out the way the model reads best.
    smart_format: 'true',
  });
  if (sttOpts.language) q.set('language', sttOpts.language);
  const terms = [...new Set(sttOpts.keyterms.map((t) => t.trim()).filter((t) => t.length > 0))].slice(0, MAX_KEYTERMS);
  // Key terms (phrases) exist on nova-3 and later; older models only boost single keywords.
  const param = /^(nova-3|flux)/.test(model) ? 'keyterm' : 'keywords';
  for (const term of terms) q.append(param, term);
  return `${base}/v1/listen?${q.toString()}`;
}

interface StreamSettings {
  apiKey: string;
  keepAliveMs: number;
  reconnectDelaysMs: readonly number[];
  maxBufferedBytes: number;
  connectTimeoutMs: number;
  /** Caller silence after which the stream sends quiet-sized chunks (QUIET_BATCH_BYTES). */
  quietAfterMs: number;
}

/** The subset of Deepgram's messages we act on. */
interface DeepgramMessage {
  type?: string;
  is_final?: boolean;
  speech_final?: boolean;
  channel?: { alternatives?: { transcript?: string }[] };
}

/**
 * Audio per message (μ-law 8 kHz; Deepgram takes 20 to 250 ms at once): 40 ms while the
 * caller speaks or a turn may be ending, 200 ms once the caller has been silent past
 * UtteranceEnd plus QUIET_MARGIN_MS (1.5 s with the defaults). The
 * websocket writes were a tenth of the engine's CPU per call at 40 ms, and a quiet
 * caller's audio is only waited on for the moment they start again, when the engine
 * makes the stream live and the held audio goes at once.
 */
const LIVE_BATCH_BYTES = 320;
const QUIET_BATCH_BYTES = 1600;
const QUIET_MARGIN_MS = 500;

class DeepgramStream implements SttStream {
  private ws: WebSocket | null = null;
  private isOpen = false;
  /** Closed by the engine or broken for good: no sends, no events. */
  private ended = false;
  private attempts = 0;
  private openedAt = 0;
  private lastSentAt = performance.now();
  private keepAliveTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private finalizePending = false;
  // Audio held while there is no open socket: a ring, allocated only while needed,
  // so a connected call's per-frame path allocates nothing here.
  private ring: Uint8Array | null = null;
  private ringStart = 0;
  private ringLength = 0;
  // Audio gathered for the next message (see send).
  private readonly batch = new Uint8Array(QUIET_BATCH_BYTES);
  private batched = 0;
  private batchLimit = LIVE_BATCH_BYTES;

  constructor(
    private readonly url: string,
    private readonly settings: StreamSettings,
    private readonly onEvent: (event: SttEvent) => void,
  ) {
    this.connect();
  }

  send(mulaw: Uint8Array): void {
    if (this.ended || mulaw.length === 0) return;
    // Frames are gathered up to the batch limit (see LIVE_BATCH_BYTES).
    if (this.batched + mulaw.length <= this.batchLimit) {
      this.batch.set(mulaw, this.batched);
      this.batched += mulaw.length;
      if (this.batched >= this.batchLimit) this.flushBatch();
      return;
    }
    this.flushBatch();
    if (mulaw.length < this.batchLimit) {
      this.batch.set(mulaw, 0);
      this.batched = mulaw.length;
    } else {
      this.sendNow(mulaw); // a chunk as large as a message goes as one
    }
  }

  callerSilence(ms: number): void {
    if (this.ended) return;
    const limit = ms >= this.settings.quietAfterMs ? QUIET_BATCH_BYTES : LIVE_BATCH_BYTES;
    if (limit === this.batchLimit) return;
    this.batchLimit = limit;
    // The caller may be speaking again: what was held for a quiet stream goes now.
    if (limit === LIVE_BATCH_BYTES) this.flushBatch();
  }

  /** Sends what the batch holds (the last frames before a Finalize or the end must go too). */
  private flushBatch(): void {
    if (this.batched === 0) return;
    const n = this.batched;
    this.batched = 0;
    this.sendNow(this.batch.subarray(0, n));
  }

  private sendNow(mulaw: Uint8Array): void {
    // readyState, not just isOpen: between the server's close and our `close` event ws
    // would silently drop what we send, and that audio belongs on the next socket.
    if (this.isOpen && this.ws && this.ws.readyState === WebSocket.OPEN) {
      // ws copies the bytes while masking them (client frames are masked), so the
      // caller may reuse its buffer as soon as this returns.
      this.ws.send(mulaw);
      this.lastSentAt = performance.now();
    } else {
      this.hold(mulaw);
    }
  }

  finalize(): void {
    if (this.ended) return;
    this.flushBatch();
    if (this.isOpen && this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(FINALIZE);
      this.lastSentAt = performance.now();
    } else {
      // Sent after the held audio once a socket is up, so it finalizes those words too.
      this.finalizePending = true;
    }
  }

  close(): void {
    if (this.ended) return;
    if (this.isOpen) this.flushBatch();
    this.ended = true;
    this.stopTimers();
    this.ring = null;
    const ws = this.ws;
    this.ws = null;
    if (!ws) return;
    if (this.isOpen) {
      ws.send(CLOSE_STREAM);
      ws.close(1000);
    } else {
      ws.terminate();
    }
    this.isOpen = false;
  }

  private connect(): void {
    this.reconnectTimer = null;
    const ws = new WebSocket(this.url, {
      headers: { Authorization: `Token ${this.settings.apiKey}` },
      perMessageDeflate: false,
      handshakeTimeout: this.settings.connectTimeoutMs,
    });
    this.ws = ws;
    let refused: { status: number; retryAfter: string | undefined } | null = null;
    let lastError: Error | null = null;
    // A refused upgrade (401 for a bad key, 429, 5xx): remember the status, then let
    // terminate() abort the handshake, which ends in `close` like every other failure.
    ws.on('unexpected-response', (_req, res) => {
      const header = res.headers['retry-after'];
      refused = { status: res.statusCode ?? 0, retryAfter: Array.isArray(header) ? header[0] : header };
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      if (ws !== this.ws || this.ended) return;
      this.isOpen = true;
      this.openedAt = performance.now();
      this.flushHeld(ws);
      if (this.finalizePending) {
        this.finalizePending = false;
        ws.send(FINALIZE);
      }
      this.lastSentAt = performance.now();
      this.armKeepAlive(this.settings.keepAliveMs);
    });
    ws.on('message', (data, isBinary) => {
      if (ws !== this.ws || this.ended || isBinary) return;
      this.onMessage(data);
    });
    // Every failure also ends in `close`, where it is handled; without a listener ws would throw.
    ws.on('error', (err) => {
      lastError = err;
    });
    ws.on('close', (code, reason) => {
      if (ws !== this.ws || this.ended) return;
      this.onSocketGone(this.failureOf(refused, lastError, code, reason.toString()));
    });
  }

  private failureOf(refused: { status: number; retryAfter: string | undefined } | null, err: Error | null, code: number, reason: string): ProviderError {
    if (refused) {
      const wait = retryAfterMs(refused.retryAfter ?? null);
      return new ProviderError('stt', kindOfStatus(refused.status), `stt deepgram /v1/listen: HTTP ${refused.status}`, {
        status: refused.status,
        ...(wait === undefined ? {} : { retryAfterMs: wait }),
      });
    }
    const kind: ProviderErrorKind = err && /timed out/i.test(err.message) ? 'timeout' : 'unavailable';
    const why = err ? err.message : `socket closed (${code}${reason ? ` ${reason}` : ''})`;
    return new ProviderError('stt', kind, `stt deepgram /v1/listen: ${why}`, { status: code, cause: err ?? undefined });
  }

  private onSocketGone(error: ProviderError): void {
    const wasOpen = this.isOpen;
    this.ws = null;
    this.isOpen = false;
    this.stopTimers();
    if (!error.retryable) {
      this.fail(error);
      return;
    }
    if (wasOpen && performance.now() - this.openedAt >= STABLE_MS) this.attempts = 0;
    const delay = this.settings.reconnectDelaysMs[this.attempts];
    if (delay === undefined) {
      const tries = this.settings.reconnectDelaysMs.length;
      this.fail(new ProviderError('stt', error.kind, `${error.message}; gave up after ${tries} reconnection attempt${tries === 1 ? '' : 's'}`, { ...(error.status === undefined ? {} : { status: error.status }), cause: error }));
      return;
    }
    this.attempts++;
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  private fail(error: ProviderError): void {
    this.ended = true;
    this.ring = null;
    this.stopTimers();
    this.onEvent({ type: 'error', error });
  }

  private onMessage(data: WebSocket.RawData): void {
    let msg: DeepgramMessage;
    try {
      msg = JSON.parse(data.toString()) as DeepgramMessage;
    } catch {
      return; // not JSON: nothing we could act on
    }
    switch (msg.type) {
      case 'Results': {
        const text = msg.channel?.alternatives?.[0]?.transcript ?? '';
        if (msg.is_final === true) this.onEvent({ type: 'final', text, speechFinal: msg.speech_final === true });
        // Deepgram sends empty interims while it hears sound but no words yet; they say nothing.
        else if (text.length > 0) this.onEvent({ type: 'interim', text });
        return;
      }
      case 'UtteranceEnd':
        this.onEvent({ type: 'utterance_end' });
        return;
      case 'SpeechStarted':
        this.onEvent({ type: 'speech_started' });
        return;
      default:
        return; // Metadata and anything newer
    }
  }

  private armKeepAlive(ms: number): void {
    this.keepAliveTimer = setTimeout(this.onKeepAliveTimer, ms);
    this.keepAliveTimer.unref();
  }

  // Re-armed lazily from the last send, so a call streaming audio costs no timer work per frame.
  private readonly onKeepAliveTimer = (): void => {
    this.keepAliveTimer = null;
    if (!this.isOpen || !this.ws || this.ended) return;
    const idle = performance.now() - this.lastSentAt;
    const every = this.settings.keepAliveMs;
    if (idle >= every - 1) {
      this.ws.send(KEEP_ALIVE);
      this.lastSentAt = performance.now();
      this.armKeepAlive(every);
    } else {
      this.armKeepAlive(every - idle);
    }
  };

  private stopTimers(): void {
    if (this.keepAliveTimer) clearTimeout(this.keepAliveTimer);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.keepAliveTimer = null;
    this.reconnectTimer = null;
  }

  /** Copies `src` into the ring, dropping the oldest audio beyond the cap. */
  private hold(src: Uint8Array): void {
    const cap = this.settings.maxBufferedBytes;
    const ring = (this.ring ??= new Uint8Array(cap));
    let bytes = src;
    if (bytes.length >= cap) {
      bytes = bytes.subarray(bytes.length - cap);
      this.ringStart = 0;
      this.ringLength = 0;
    }
    const overflow = this.ringLength + bytes.length - cap;
    if (overflow > 0) {
      this.ringStart = (this.ringStart + overflow) % cap;
      this.ringLength -= overflow;
    }
    const at = (this.ringStart + this.ringLength) % cap;
    const first = Math.min(bytes.length, cap - at);
    ring.set(bytes.subarray(0, first), at);
    if (first < bytes.length) ring.set(bytes.subarray(first), 0);
    this.ringLength += bytes.length;
  }

  private flushHeld(ws: WebSocket): void {
    const ring = this.ring;
    if (ring && this.ringLength > 0) {
      const first = Math.min(this.ringLength, ring.length - this.ringStart);
      ws.send(ring.subarray(this.ringStart, this.ringStart + first));
      if (first < this.ringLength) ws.send(ring.subarray(0, this.ringLength - first));
    }
    this.ring = null;
    this.ringStart = 0;
    this.ringLength = 0;
  }
}
