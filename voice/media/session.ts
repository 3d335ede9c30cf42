// One call's media session: decodes the carrier's websocket messages, claims the call
// with the stream's one-time token, feeds caller audio to the call's engine and sends
// the engine's audio, marks and clears back. The call actor hears only three coarse
// events from here: MEDIA.STARTED (the carrier's `start`), DTMF, MEDIA.STOPPED
// (`stop`, or the socket closing), each at most once except DTMF.
import type { CallEvent } from '../../machines/call-events.ts';
import type { ConversationEngine, EngineFactory, MediaOutput } from '../engine/engine.ts';
import type { MediaBinding, MediaBindings, MediaProvider } from './bindings.ts';
import type { MediaCodec } from './codec.ts';
import type { AudioFrame, ErrorFrame, OutboundAudioFrame, OutboundFrame, StartFrame } from './frames.ts';
import { createReorderBuffer, type ReorderBuffer } from './reorder.ts';
import { telnyxCodec } from './telnyx-codec.ts';
import { twilioCodec } from './twilio-codec.ts';

/** What the session needs of its socket (uWS in production, a recorder in tests). */
export interface MediaTransport {
  /** Queues one text message; false when the socket refused it (closed, or over its hard limit). */
  send(text: string): boolean;
  /** Bytes queued for the socket that the kernel has not taken yet. */
  bufferedAmount(): number;
  /** Ends the socket with a websocket close code; the owner then calls `session.close()`. */
  close(code: number, reason: string): void;
  /** Runs `fn` with the socket corked (uWS `cork`): its sends leave in one write. */
  cork?(fn: () => void): void;
}

/** Counters shared by every session of a process (the `/metrics` gauges). */
export interface MediaCounters {
  /** Caller audio messages received on streams that had started. */
  framesIn: number;
  /** Audio messages sent to carriers (normally one 20 ms frame each). */
  framesOut: number;
  /** Audio messages not sent because the socket was backed up. */
  dropped: number;
}

export interface MediaSessionStats extends MediaCounters {
  /** Messages that were not valid frames, or came at the wrong time (a second `start`). */
  invalid: number;
  /** Carrier B audio dropped by the reorder buffer as duplicate or too late. */
  late: number;
}

export interface MediaSessionOptions {
  provider: MediaProvider;
  transport: MediaTransport;
  bindings: MediaBindings;
  engine: EngineFactory;
  clock: () => number;
  /**
   * Carrier B's token from the stream URL. Without it the `start` frame's `token`
   * custom parameter is used: carrier A's only way, and carrier B's if it echoes them.
   */
  token?: string | undefined;
  /** Above this many buffered bytes outbound audio is dropped; marks and clears are always sent. */
  maxBufferedBytes?: number;
  /** Process-wide counters to add to. */
  totals?: MediaCounters;
  /** Carrier B `error` messages (rare; for the log). */
  onCarrierError?: (frame: ErrorFrame) => void;
}

export interface MediaSession {
  /** Handles one websocket text message. */
  handle(text: string): void;
  /** The socket closed (for any reason). Idempotent. */
  close(): void;
  /** The call, once the token was claimed. */
  readonly binding: MediaBinding | null;
  readonly state: MediaSessionState;
  stats(): MediaSessionStats;
}

/**
 * `waiting` for the carrier's `start`; `streaming` between `start` and `stop`;
 * `stopped` after `stop` with the socket still open; `rejected` when the token did not
 * claim a call; `closed` once the socket is gone.
 */
export type MediaSessionState = 'waiting' | 'streaming' | 'stopped' | 'rejected' | 'closed';

/** 64 KiB: the kernel's send buffer is already full by then, so the carrier is not reading. */
export const DEFAULT_MAX_BUFFERED_BYTES = 64 * 1024;
/** Carrier B reorder window, in 20 ms frames: adds at most 80 ms when a frame is missing. */
export const REORDER_WINDOW = 5;
/** How long a `start` whose claim could not be recorded (a database refusing writes for a moment) is tried again. */
export const CLAIM_RETRY_MS = 2000;
/** Messages a socket may send before `start` (carriers send `connected`, then `start`). */
export const MAX_MESSAGES_BEFORE_START = 16;

/** WebSocket close codes: 1008 policy violation (no call for this socket), 1011 server error. */
export const CLOSE_POLICY = 1008;
export const CLOSE_BACKED_UP = 1011;

const CODECS: Record<MediaProvider, MediaCodec> = { twilio: twilioCodec, telnyx: telnyxCodec };
const CLEAR: OutboundFrame = Object.freeze({ type: 'clear' });
const EMPTY = new Uint8Array(0);
/** Stands in for an engine whose factory threw, so the stream can still end cleanly. */
const MUTE: ConversationEngine = { onAudio() {}, onDtmf() {}, close() {} };

export function createMediaSession(opts: MediaSessionOptions): MediaSession {
  const { transport, clock } = opts;
  const codec = CODECS[opts.provider];
  const maxBuffered = opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  const totals: MediaCounters = opts.totals ?? { framesIn: 0, framesOut: 0, dropped: 0 };
  let state: MediaSessionState = 'waiting';
  let binding: MediaBinding | null = null;
  let engine: ConversationEngine | null = null;
  let streamId = '';
  // A `start` whose claim failed to commit, tried again on the carrier's next messages.
  let pendingStart: StartFrame | null = null;
  let claimUntil = 0;
  let early = 0;
  let framesIn = 0;
  let framesOut = 0;
  let dropped = 0;
  let invalid = 0;
  // Reused for every outbound audio message: the hot path allocates only the text.
  const audioOut: OutboundAudioFrame = { type: 'audio', payload: EMPTY };

  const toEngine = (frame: AudioFrame): void => engine!.onAudio(frame.payload, frame.timestampMs);
  const reorder: ReorderBuffer | null = opts.provider === 'telnyx' ? createReorderBuffer(toEngine, REORDER_WINDOW) : null;

  function deliver(event: CallEvent): void {
    binding!.deliver(event);
  }

  function drop(): void {
    dropped++;
    totals.dropped++;
  }

  /** Marks and clears carry state the engine relies on, so they are never dropped; a socket that refuses one is dead. */
  function sendControl(frame: OutboundFrame): void {
    if (!transport.send(codec.encode(frame, streamId))) transport.close(CLOSE_BACKED_UP, 'media socket backed up');
  }

  const output: MediaOutput = {
    play(mulaw) {
      if (state !== 'streaming' || mulaw.length === 0) return;
      // Real-time audio that is late is useless: drop it rather than queue behind a stall.
      if (transport.bufferedAmount() > maxBuffered) return drop();
      audioOut.payload = mulaw;
      const text = codec.encode(audioOut, streamId);
      audioOut.payload = EMPTY;
      if (!transport.send(text)) return drop();
      framesOut++;
      totals.framesOut++;
    },
    mark(name) {
      if (state === 'streaming') sendControl({ type: 'mark', name });
    },
    clear() {
      if (state === 'streaming') sendControl(CLEAR);
    },
    backedUp: () => state === 'streaming' && transport.bufferedAmount() > maxBuffered,
    // A socket that is gone is never touched again (uWS): then `fn` runs plain and its plays are no-ops.
    cork(fn) {
      if (state === 'streaming' && transport.cork) transport.cork(fn);
      else fn();
    },
  };

  function start(frame: StartFrame): void {
    const token = opts.token ?? frame.customParameters['token'];
    try {
      binding = token ? opts.bindings.claim(opts.provider, token, clock()) : null;
    } catch (err) {
      // The claim could not be recorded: the carrier keeps sending (50 messages a second),
      // so claim again on its next messages for a short while before giving the stream up.
      if (pendingStart === null) {
        pendingStart = frame;
        claimUntil = clock() + CLAIM_RETRY_MS;
      } else if (clock() > claimUntil) {
        pendingStart = null;
        throw err;
      }
      return;
    }
    pendingStart = null;
    if (!binding) {
      state = 'rejected';
      transport.close(CLOSE_POLICY, 'unknown or used media token');
      return;
    }
    streamId = frame.streamId;
    state = 'streaming';
    deliver({ type: 'MEDIA.STARTED', at: clock() });
    try {
      engine = opts.engine(output, { callId: binding.callId, accountId: binding.accountId, direction: binding.direction, agentId: binding.agentId, deliver: binding.deliver });
    } catch (err) {
      // The owner closes the socket on the rethrow; the actor then hears MEDIA.STOPPED.
      engine = MUTE;
      throw err;
    }
  }

  /** Ends a started stream once: the audio still waiting reaches the engine, then the actor hears MEDIA.STOPPED. */
  function finish(): void {
    try {
      reorder?.flush();
      engine!.close();
    } finally {
      deliver({ type: 'MEDIA.STOPPED', at: clock() });
    }
  }

  /** Anything but `connected` before `start`: ignored, up to a limit, since no call is known yet. */
  function beforeStart(): void {
    invalid++;
    if (++early > MAX_MESSAGES_BEFORE_START && state === 'waiting') {
      state = 'rejected';
      transport.close(CLOSE_POLICY, 'start expected');
    }
  }

  return {
    handle(text) {
      const frame = codec.decode(text);
      if (pendingStart !== null && state === 'waiting') {
        start(pendingStart);
        // start() may have moved the session on (TypeScript cannot see it through the call).
        if ((state as MediaSessionState) !== 'streaming') return;
      }
      switch (frame.type) {
        case 'audio':
          if (state !== 'streaming') {
            if (state === 'waiting') beforeStart();
            return;
          }
          framesIn++;
          totals.framesIn++;
          if (reorder) reorder.push(frame);
          else engine!.onAudio(frame.payload, frame.timestampMs);
          return;
        case 'start':
          if (state === 'waiting') start(frame);
          else invalid++;
          return;
        case 'dtmf':
          if (state !== 'streaming') return state === 'waiting' ? beforeStart() : undefined;
          deliver({ type: 'DTMF', at: clock(), digit: frame.digit });
          engine!.onDtmf(frame.digit);
          return;
        case 'mark':
          if (state === 'streaming') engine!.onMark?.(frame.name);
          return;
        case 'stop':
          if (state === 'streaming') {
            state = 'stopped';
            finish();
          }
          return;
        case 'error':
          opts.onCarrierError?.(frame);
          return;
        case 'connected':
          return;
        case 'invalid':
          if (state === 'waiting') beforeStart();
          else invalid++;
          return;
      }
    },
    close() {
      const was = state;
      if (was === 'closed') return;
      state = 'closed';
      if (was === 'streaming') finish();
    },
    get binding() {
      return binding;
    },
    get state() {
      return state;
    },
    stats: () => ({ framesIn, framesOut, dropped, invalid, late: reorder?.dropped ?? 0 }),
  };
}
