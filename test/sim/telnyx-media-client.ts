// The carrier B side of a media stream (carriers.md §6), for the simulator and tests: a
// websocket client that connects to the service's stream_url, sends `connected`, `start`
// (call_control_id, PCMU 8 kHz), the caller's audio as 160-byte μ-law frames every 20 ms
// (sequence_number / chunk / timestamp as the carrier numbers them), `dtmf` on demand and
// `stop` at the end, and records everything the service sends back. Playback is modelled
// in real time: a `mark` returns once the audio queued before it has played, and `clear`
// drops the queue and returns every pending mark at once, as the carrier does.

import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { FarEndPlayback, FarEndVoice, mulawTone, type FarEndAudio } from './far-end-playback.ts';

/** 20 ms of 8 kHz μ-law. */
export const FRAME_BYTES = 160;

export interface TelnyxMediaClientOptions {
  /** The stream_url from the dial or answer command (query string included). */
  url: string;
  callControlId: string;
  callSessionId: string;
  from: string;
  to: string;
  clientState: string | null;
  /** μ-law audio played in a loop as the far end's voice; default `generateMulawTone(440, 1000)`. */
  audio?: FarEndAudio;
  /** Milliseconds between frames (default 20, real time). */
  frameIntervalMs?: number;
  /** `PCMU` (current docs, default) or `audio/x-mulaw` (older docs). */
  encoding?: 'PCMU' | 'audio/x-mulaw';
  /** Called once when the socket is closed, by either side. */
  onClose?: (close: MediaClose) => void;
}

export interface MediaClose {
  code: number;
  reason: string;
  /** True when the service closed the socket; false when this client did (stop()). */
  byServer: boolean;
}

export interface TelnyxMediaClient {
  readonly streamId: string;
  /** Resolves once `connected` and `start` are sent; rejects when the socket cannot be opened. */
  readonly opened: Promise<void>;
  /** Resolves when the socket has closed. */
  readonly closed: Promise<MediaClose>;
  /** Every JSON message the service sent, in order. */
  readonly received: Record<string, unknown>[];
  /** Payload bytes of each `media` message the service sent. */
  readonly audio: Uint8Array[];
  /** Names of the marks the service sent. */
  readonly marks: string[];
  /** Names of the marks returned to the service (played, or flushed by clear), in order. */
  readonly returnedMarks: string[];
  /** Messages from the service that were not JSON or had an unknown event. */
  readonly invalid: string[];
  /** How many `clear` messages arrived. */
  readonly clears: number;
  /** How many `media` frames were sent. */
  readonly framesSent: number;
  sendDtmf(digit: string): void;
  /** Stops / restarts the caller's audio (no frames at all while paused). */
  pauseAudio(): void;
  resumeAudio(): void;
  /** Sends a text frame as is (malformed-input tests). */
  sendRaw(text: string): void;
  /** Sends `stop` and closes the socket: what the carrier does when the call ends. */
  stop(): Promise<MediaClose>;
}

/** A sine tone as μ-law at 8 kHz, at a quarter of full scale. */
export const generateMulawTone = mulawTone;

export function connectTelnyxMedia(opts: TelnyxMediaClientOptions): TelnyxMediaClient {
  const streamId = randomUUID();
  const userId = randomUUID();
  const voice = opts.audio instanceof FarEndVoice ? opts.audio : null;
  const source = opts.audio instanceof Uint8Array ? opts.audio : generateMulawTone(440, 1000);
  if (source.length === 0) throw new RangeError('telnyx media client: audio must not be empty');
  const interval = opts.frameIntervalMs ?? 20;

  const received: Record<string, unknown>[] = [];
  const returnedMarks: string[] = [];
  const invalid: string[] = [];
  // returnMark is a hoisted function declaration below.
  const playback = new FarEndPlayback((name) => returnMark(name));
  let framesSent = 0;

  let seq = 0;
  let chunk = 0;
  let offset = 0;
  let startedAt = 0;
  let paused = false;
  let frameTimer: NodeJS.Timeout | null = null;
  let stoppedByUs = false;

  const ws = new WebSocket(opts.url, { handshakeTimeout: 5000 });
  ws.on('message', (data, isBinary) => {
    // The protocol is JSON text; a binary frame is recorded as unreadable.
    if (isBinary) invalid.push(`<binary frame>`);
    else onMessage(data.toString());
  });

  const send = (msg: object) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  };
  const nextSeq = () => String(++seq);

  function sendFrame(): void {
    if (paused) return;
    const frame = new Uint8Array(FRAME_BYTES);
    if (voice) voice.fill(frame);
    else
      for (let i = 0; i < FRAME_BYTES; i++) {
        frame[i] = source[offset]!;
        offset = (offset + 1) % source.length;
      }
    chunk++;
    framesSent++;
    send({
      event: 'media',
      sequence_number: nextSeq(),
      stream_id: streamId,
      media: {
        track: 'inbound',
        chunk: String(chunk),
        timestamp: String(Math.round(performance.now() - startedAt)),
        payload: Buffer.from(frame).toString('base64'),
      },
    });
  }

  function returnMark(name: string): void {
    returnedMarks.push(name);
    send({ event: 'mark', sequence_number: nextSeq(), stream_id: streamId, mark: { name } });
  }

  function onMessage(text: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      invalid.push(text);
      return;
    }
    if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) {
      invalid.push(text);
      return;
    }
    const m = msg as Record<string, unknown>;
    received.push(m);
    const now = performance.now();
    const body = (key: string) => (typeof m[key] === 'object' && m[key] !== null ? (m[key] as Record<string, unknown>) : {});
    switch (m.event) {
      case 'media': {
        const payload = body('media').payload;
        if (typeof payload !== 'string') {
          invalid.push(text);
          return;
        }
        const bytes = new Uint8Array(Buffer.from(payload, 'base64'));
        playback.audioArrived(bytes, now);
        return;
      }
      case 'mark': {
        const name = body('mark').name;
        if (typeof name !== 'string') {
          invalid.push(text);
          return;
        }
        playback.markArrived(name, now);
        return;
      }
      case 'clear':
        playback.clearArrived(now);
        return;
      default:
        invalid.push(text);
    }
  }

  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => {
      startedAt = performance.now();
      send({ event: 'connected', version: '1.0.0' });
      send({
        event: 'start',
        sequence_number: nextSeq(),
        stream_id: streamId,
        start: {
          user_id: userId,
          call_control_id: opts.callControlId,
          call_session_id: opts.callSessionId,
          from: opts.from,
          to: opts.to,
          tags: [],
          client_state: opts.clientState,
          media_format: { encoding: opts.encoding ?? 'PCMU', sample_rate: 8000, channels: 1 },
        },
      });
      frameTimer = setInterval(sendFrame, interval);
      resolve();
    });
    ws.once('unexpected-response', (_req, res) => reject(new Error(`media websocket refused: HTTP ${res.statusCode}`)));
    ws.once('error', (err) => reject(err));
  });
  // A refused socket is reported through `opened`; keep the rejection from going unhandled here.
  opened.catch(() => {});

  const closed = new Promise<MediaClose>((resolve) => {
    ws.once('close', (code, reason) => {
      if (frameTimer) clearInterval(frameTimer);
      playback.close();
      const close = { code, reason: reason.toString('utf8'), byServer: !stoppedByUs };
      opts.onClose?.(close);
      resolve(close);
    });
  });

  return {
    streamId,
    opened,
    closed,
    received,
    audio: playback.audio,
    marks: playback.marks,
    returnedMarks,
    invalid,
    get clears() {
      return playback.clears;
    },
    get framesSent() {
      return framesSent;
    },
    sendDtmf(digit) {
      send({ event: 'dtmf', sequence_number: nextSeq(), stream_id: streamId, occurred_at: new Date().toISOString(), dtmf: { digit } });
    },
    pauseAudio() {
      paused = true;
    },
    resumeAudio() {
      paused = false;
    },
    sendRaw(text) {
      if (ws.readyState === WebSocket.OPEN) ws.send(text);
    },
    async stop() {
      if (ws.readyState === WebSocket.OPEN) {
        stoppedByUs = true;
        if (frameTimer) clearInterval(frameTimer);
        send({ event: 'stop', sequence_number: nextSeq(), stream_id: streamId, stop: { user_id: userId, call_control_id: opts.callControlId } });
        ws.close(1000, 'stream stopped');
      } else if (ws.readyState === WebSocket.CONNECTING) {
        stoppedByUs = true;
        ws.terminate();
      }
      return closed;
    },
  };
}
