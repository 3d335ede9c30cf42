// Carrier A's side of a Media Streams websocket (carriers.md §4), for the simulator and
// tests: connects to the `<Stream url>` of the TwiML (handshake signed with
// X-Twilio-Signature over that URL), sends `connected`, `start` (customParameters,
// μ-law 8 kHz), the far end's audio as 160-byte frames (sequenceNumber / chunk /
// timestamp as strings), `dtmf` on demand and `stop` when the call ends, and records
// everything the service sends back. Playback runs in real time: a `mark` returns once
// the audio queued before it has played; `clear` drops the queue and returns the pending
// marks at once (the carrier's behaviour there is UNCONFIRMED; this is the reading that
// lets the service account for every mark).

import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { generateDtmf } from '../../voice/audio/dtmf.ts';
import { encodeMulaw } from '../../voice/audio/mulaw.ts';
import { FarEndPlayback, FarEndVoice, mulawTone, type FarEndAudio } from './far-end-playback.ts';
import { signTwilio } from '../../voice/carriers/twilio-signature.ts';

/** 20 ms of 8 kHz μ-law. */
export const FRAME_BYTES = 160;
const FRAME_MS = 20;

export interface TwilioMediaClientOptions {
  /** Where to connect (loopback); may differ from `signedUrl` behind a test proxy mapping. */
  url: string;
  /** The URL as written in the TwiML, signed for the handshake (default `url`). */
  signedUrl?: string;
  /** The account's auth token: signs the handshake when given. */
  authToken?: string;
  accountSid: string;
  callSid: string;
  /** The `<Parameter>`s of the `<Stream>`. */
  customParameters: Record<string, string>;
  /** μ-law audio played in a loop as the far end's voice; default `mulawTone(440, 1000)`. */
  audio?: FarEndAudio;
  /** Milliseconds between frames (default 20, real time); timestamps still step by 20. */
  frameIntervalMs?: number;
  /** Called once when the socket is closed, by either side. */
  onClose?: (close: MediaClose) => void;
}

export interface MediaClose {
  code: number;
  reason: string;
  /** True when the service closed the socket; false when this client did (stop()). */
  byServer: boolean;
}

export interface TwilioMediaClient {
  readonly streamSid: string;
  readonly customParameters: Record<string, string>;
  /** Resolves once `connected` and `start` are sent; rejects when the socket cannot be opened. */
  readonly opened: Promise<void>;
  readonly closed: Promise<MediaClose>;
  /** Every JSON message the service sent, in order. */
  readonly received: Record<string, unknown>[];
  /** Payload bytes of each `media` message the service sent. */
  readonly audio: Uint8Array[];
  /** Names of the marks the service sent. */
  readonly marks: string[];
  /** Names of the marks returned to the service (played, or flushed by clear), in order. */
  readonly returnedMarks: string[];
  /** Messages that break the protocol: not JSON, unknown event, missing or wrong streamSid, bad payload. */
  readonly invalid: string[];
  readonly clears: number;
  readonly framesSent: number;
  /** All audio the service sent, concatenated. */
  receivedAudio(): Uint8Array;
  /** A `dtmf` event, as the carrier sends for a key pressed on the far end. */
  sendDtmf(digit: string): void;
  /** Stops / restarts the far end's audio (no frames at all while paused). */
  pauseAudio(): void;
  resumeAudio(): void;
  /** Sends a text frame as is (malformed-input tests). */
  sendRaw(text: string): void;
  /** Sends `stop` and closes the socket: what the carrier does when the call ends. */
  stop(): Promise<MediaClose>;
}

export { mulawTone } from './far-end-playback.ts';

/** An in-band key press as 8 kHz μ-law (for callers whose DTMF arrives as audio). */
export function mulawDtmf(digit: string, ms: number): Uint8Array {
  return encodeMulaw(generateDtmf(digit, ms));
}

export function connectTwilioMedia(opts: TwilioMediaClientOptions): TwilioMediaClient {
  const streamSid = 'MZ' + randomBytes(16).toString('hex');
  const voice = opts.audio instanceof FarEndVoice ? opts.audio : null;
  const source = opts.audio instanceof Uint8Array ? opts.audio : mulawTone(440, 1000);
  if (source.length === 0) throw new RangeError('twilio media client: audio must not be empty');
  const interval = opts.frameIntervalMs ?? FRAME_MS;

  const received: Record<string, unknown>[] = [];
  const returnedMarks: string[] = [];
  const invalid: string[] = [];
  // returnMark is a hoisted function declaration below.
  const playback = new FarEndPlayback((name) => returnMark(name));
  let framesSent = 0;

  let seq = 0;
  let chunk = 0;
  let offset = 0;
  let paused = false;
  let frameTimer: NodeJS.Timeout | null = null;
  let stoppedByUs = false;

  const headers: Record<string, string> = {};
  // Signed over the wss:// URL with no parameters (carriers.md §2).
  if (opts.authToken) headers['x-twilio-signature'] = signTwilio(opts.authToken, opts.signedUrl ?? opts.url);
  const ws = new WebSocket(opts.url, { headers });

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
      sequenceNumber: nextSeq(),
      streamSid,
      media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * FRAME_MS), payload: Buffer.from(frame).toString('base64') },
    });
  }

  function returnMark(name: string): void {
    returnedMarks.push(name);
    send({ event: 'mark', sequenceNumber: nextSeq(), streamSid, mark: { name } });
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
    // Carrier A needs the streamSid on every message it is sent.
    if (m.streamSid !== streamSid) {
      invalid.push(text);
      return;
    }
    const now = performance.now();
    const body = (key: string) => (typeof m[key] === 'object' && m[key] !== null ? (m[key] as Record<string, unknown>) : {});
    switch (m.event) {
      case 'media': {
        const payload = body('media').payload;
        if (typeof payload !== 'string' || payload.length === 0) {
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

  ws.on('message', (data, isBinary) => {
    if (isBinary) invalid.push('<binary frame>');
    else onMessage(data.toString());
  });

  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => {
      send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
      send({
        event: 'start',
        sequenceNumber: nextSeq(),
        streamSid,
        start: {
          accountSid: opts.accountSid,
          streamSid,
          callSid: opts.callSid,
          tracks: ['inbound'],
          customParameters: opts.customParameters,
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        },
      });
      frameTimer = setInterval(sendFrame, interval);
      resolve();
    });
    ws.once('unexpected-response', (_req, res) => {
      reject(new Error(`media websocket refused: HTTP ${res.statusCode}`));
      ws.terminate();
    });
    // `on`, not `once`: an aborted handshake can emit a second error, and an unheard one throws.
    ws.on('error', (err) => reject(err));
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
    streamSid,
    customParameters: opts.customParameters,
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
    receivedAudio() {
      return new Uint8Array(Buffer.concat(playback.audio));
    },
    sendDtmf(digit) {
      send({ event: 'dtmf', streamSid, sequenceNumber: nextSeq(), dtmf: { track: 'inbound_track', digit } });
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
        send({ event: 'stop', sequenceNumber: nextSeq(), streamSid, stop: { accountSid: opts.accountSid, callSid: opts.callSid } });
        ws.close(1000, 'stream stopped');
      } else if (ws.readyState === WebSocket.CONNECTING) {
        stoppedByUs = true;
        ws.terminate();
      }
      return closed;
    },
  };
}
