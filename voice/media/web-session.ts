// One web call's browser media session (the browser protocol, README "Web calls"): the
// browser's websocket speaks 16-bit little-endian mono PCM at 16 kHz in binary frames
// both ways, and JSON text messages for control. At this edge the audio is converted to
// and from what the conversation engine runs on, μ-law 8 kHz in 20 ms frames, with the
// same resampler the TTS path uses (voice/audio/resample.ts): caller audio 16 → 8 kHz,
// low-passed, then μ-law; agent audio μ-law → 8 kHz → 16 kHz. The engine cannot tell a
// browser from a carrier.
//
// Server → browser text: `start` {call_id, sample_rate, encoding, channels} once, first;
// `mark` {name} after the last audio of an utterance; `clear` (barge-in: drop everything
// queued for playback, now); `transcript` {speaker, text, final} for captions; `end`
// {reason} last, then the socket closes (1000).
// Browser → server text: `mark` {name} once the audio before that mark has played (the
// engine counts an utterance heard, and moves on, only then: a browser that plays as it
// receives may echo at once); `hangup`. Anything else is ignored and counted.
//
// The call actor hears MEDIA.STARTED when the session starts (the call is answered) and
// MEDIA.STOPPED once, on hang-up or when the socket closes (the call then ends
// caller_hangup). The owner (http/web-media-ws.ts) calls `end` when the call is over for
// another reason (the agent hung up, max duration, …).
import type { CallEvent } from '../../machines/call-events.ts';
import type { ConversationEngine, EngineFactory, MediaOutput } from '../engine/engine.ts';
import type { MediaBinding } from './bindings.ts';
import type { MediaCounters } from './session.ts';
import { createResampler } from '../audio/resample.ts';
import { Pcm16Reader } from '../audio/pcm.ts';
import { decodeMulaw, encodeMulaw } from '../audio/mulaw.ts';

/** The browser's audio rate, both ways. */
export const WEB_SAMPLE_RATE = 16000;
/** One engine frame: 20 ms of μ-law 8 kHz. */
const ENGINE_FRAME = 160;
/** 64 KiB: a browser this far behind is not reading; its audio is dropped rather than queued. */
export const WEB_MAX_BUFFERED_BYTES = 64 * 1024;
/** WebSocket close codes. */
export const CLOSE_NORMAL = 1000;
export const CLOSE_BACKED_UP = 1011;

/** What the session needs of its socket (uWS in production, a recorder in tests). */
export interface WebTransport {
  /** Queues one text message; false when the socket refused it. */
  sendText(text: string): boolean;
  /** Queues one binary message (copied before this returns); false when the socket refused it. */
  sendBinary(bytes: Uint8Array): boolean;
  bufferedAmount(): number;
  /** Ends the socket; the owner then calls `close()`. */
  close(code: number, reason: string): void;
  cork?(fn: () => void): void;
}

export interface WebSessionOptions {
  transport: WebTransport;
  binding: MediaBinding;
  engine: EngineFactory;
  clock: () => number;
  /** The call's public id, for `start`. */
  publicId: string;
  maxBufferedBytes?: number;
  totals?: MediaCounters;
}

export type WebSessionState = 'streaming' | 'stopped' | 'closed';

export interface WebSessionStats extends MediaCounters {
  /** Text messages that were not one of the browser's messages. */
  invalid: number;
}

export interface WebMediaSession {
  /** Sends `start`, answers the call (MEDIA.STARTED) and starts its engine. Once. */
  start(): void;
  /** One binary message: caller PCM, any length (an odd byte waits for its pair). */
  audio(bytes: Uint8Array): void;
  /** One text message from the browser. */
  text(text: string): void;
  /** The call is over: sends `end` {reason} and closes the socket. */
  end(reason: string): void;
  /** The socket closed (for any reason). Idempotent. */
  close(): void;
  readonly state: WebSessionState;
  stats(): WebSessionStats;
}

const CLEAR = JSON.stringify({ type: 'clear' });
/** Stands in for an engine whose factory threw, so the stream can still end cleanly. */
const MUTE: ConversationEngine = { onAudio() {}, onDtmf() {}, close() {} };

export function createWebMediaSession(opts: WebSessionOptions): WebMediaSession {
  const { transport, binding, clock } = opts;
  const maxBuffered = opts.maxBufferedBytes ?? WEB_MAX_BUFFERED_BYTES;
  const totals: MediaCounters = opts.totals ?? { framesIn: 0, framesOut: 0, dropped: 0 };
  let state: WebSessionState = 'streaming';
  let started = false;
  let engine: ConversationEngine = MUTE;
  let framesIn = 0;
  let framesOut = 0;
  let dropped = 0;
  let invalid = 0;

  // Caller audio: 16 kHz PCM → 8 kHz → μ-law, cut into the engine's 20 ms frames.
  const reader = new Pcm16Reader();
  const down = createResampler(WEB_SAMPLE_RATE, 8000);
  let downOut = new Int16Array(down.maxOutput(1024));
  const frame = new Int16Array(ENGINE_FRAME);
  const frameMulaw = new Uint8Array(ENGINE_FRAME);
  let filled = 0;
  let sentMs = 0;

  // Agent audio: μ-law 8 kHz → 8 kHz PCM → 16 kHz PCM → little-endian bytes.
  const up = createResampler(8000, WEB_SAMPLE_RATE);
  let linear = new Int16Array(ENGINE_FRAME);
  let upOut = new Int16Array(up.maxOutput(ENGINE_FRAME));
  let bytesOut = new Uint8Array(upOut.length * 2);

  const live = (): boolean => state === 'streaming';

  function sendControl(message: unknown): void {
    if (state === 'closed') return;
    // Marks and clears carry state the engine relies on: a socket that refuses one is dead.
    if (!transport.sendText(JSON.stringify(message))) transport.close(CLOSE_BACKED_UP, 'web media socket backed up');
  }

  const output: MediaOutput = {
    play(mulaw) {
      if (!live() || mulaw.length === 0) return;
      if (transport.bufferedAmount() > maxBuffered) {
        dropped++;
        totals.dropped++;
        return;
      }
      if (linear.length < mulaw.length) {
        linear = new Int16Array(mulaw.length);
        upOut = new Int16Array(up.maxOutput(mulaw.length));
        bytesOut = new Uint8Array(upOut.length * 2);
      }
      const pcm8 = decodeMulaw(mulaw, linear);
      const n = up.push(pcm8, upOut);
      for (let i = 0; i < n; i++) {
        const v = upOut[i]!;
        bytesOut[2 * i] = v & 0xff;
        bytesOut[2 * i + 1] = (v >> 8) & 0xff;
      }
      if (!transport.sendBinary(bytesOut.subarray(0, 2 * n))) {
        dropped++;
        totals.dropped++;
        return;
      }
      framesOut++;
      totals.framesOut++;
    },
    mark(name) {
      if (live()) sendControl({ type: 'mark', name });
    },
    clear() {
      if (!live()) return;
      if (!transport.sendText(CLEAR)) transport.close(CLOSE_BACKED_UP, 'web media socket backed up');
    },
    backedUp: () => live() && transport.bufferedAmount() > maxBuffered,
    cork(fn) {
      if (live() && transport.cork) transport.cork(fn);
      else fn();
    },
  };

  /** The engine's events reach the call actor; its final lines reach the browser as captions too. */
  function deliver(event: CallEvent): void {
    if (event.type === 'CONVERSATION.LINE' && state !== 'closed') {
      transport.sendText(JSON.stringify({ type: 'transcript', speaker: event.speaker, text: event.text, final: true }));
    }
    binding.deliver(event);
  }

  /** The caller's side ended once: audio still waiting reaches the engine, then the actor hears MEDIA.STOPPED. */
  function finish(): void {
    try {
      engine.close();
    } finally {
      binding.deliver({ type: 'MEDIA.STOPPED', at: clock() });
    }
  }

  function toEngine(samples: Int16Array): void {
    if (downOut.length < down.maxOutput(samples.length)) downOut = new Int16Array(down.maxOutput(samples.length));
    const n = down.push(samples, downOut);
    for (let i = 0; i < n; i++) {
      frame[filled++] = downOut[i]!;
      if (filled === ENGINE_FRAME) {
        filled = 0;
        encodeMulaw(frame, frameMulaw);
        framesIn++;
        totals.framesIn++;
        engine.onAudio(frameMulaw, sentMs);
        sentMs += 20;
      }
    }
  }

  return {
    start() {
      if (started) return;
      started = true;
      sendControl({ type: 'start', call_id: opts.publicId, sample_rate: WEB_SAMPLE_RATE, encoding: 'pcm_s16le', channels: 1 });
      binding.deliver({ type: 'MEDIA.STARTED', at: clock() });
      // The owner closes the socket on a throw; the actor then hears MEDIA.STOPPED.
      engine = opts.engine(output, { callId: binding.callId, accountId: binding.accountId, direction: binding.direction, agentId: binding.agentId, deliver });
    },
    audio(bytes) {
      if (!live() || !started) return;
      const samples = reader.read(bytes);
      if (samples.length > 0) toEngine(samples);
    },
    text(text) {
      let msg: unknown;
      try {
        msg = JSON.parse(text);
      } catch {
        invalid++;
        return;
      }
      const m = msg as { type?: unknown; name?: unknown } | null;
      if (m !== null && typeof m === 'object' && m.type === 'mark' && typeof m.name === 'string') {
        if (live()) engine.onMark?.(m.name);
        return;
      }
      if (m !== null && typeof m === 'object' && m.type === 'hangup') {
        if (live()) {
          state = 'stopped';
          finish();
        }
        return;
      }
      invalid++;
    },
    end(reason) {
      if (state === 'closed') return;
      if (state === 'streaming') {
        // The call is over: the engine stops talking before the browser hears `end`.
        state = 'stopped';
        finish();
      }
      if ((state as WebSessionState) === 'closed') return;
      transport.sendText(JSON.stringify({ type: 'end', reason }));
      transport.close(CLOSE_NORMAL, 'call ended');
    },
    close() {
      const was = state;
      if (was === 'closed') return;
      state = 'closed';
      if (was === 'streaming' && started) finish();
    },
    get state() {
      return state;
    },
    stats: () => ({ framesIn, framesOut, dropped, invalid }),
  };
}
