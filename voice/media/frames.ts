// Typed frames of a carrier media stream: what a carrier codec turns wire messages
// into, and what it turns back into wire messages. Carrier-neutral on purpose (no
// callSid / call_control_id, no streamSid / stream_id) so everything after the codec
// is written once. Plain types, not zod: the wire parse is hand-written because it
// runs 50 times a second per call; it still validates, and anything it cannot vouch
// for becomes an `invalid` frame rather than an exception.

/** The socket is up; the carrier has not described the stream yet. */
export interface ConnectedFrame {
  type: 'connected';
}

/** Stream metadata; arrives once, before any audio. */
export interface StartFrame {
  type: 'start';
  /** The carrier's id of the call leg (carrier A `callSid`, carrier B `call_control_id`). */
  carrierCallId: string;
  /** The carrier's id of this stream; carrier A needs it on every outbound message. */
  streamId: string;
  /** Values the call was set up with (carrier A `<Parameter>`s); `{}` when none. */
  customParameters: Record<string, string>;
  /** Always μ-law: codecs turn any other encoding into an `invalid` frame. */
  encoding: 'mulaw';
  sampleRate: number;
}

/** One chunk of caller audio, normally 20 ms = 160 bytes. */
export interface AudioFrame {
  type: 'audio';
  /** The message's sequence number; counts every message of the stream, not just audio. */
  seq: number;
  /** The media chunk number: +1 per audio message, so gaps in it are lost or late audio. */
  chunk: number;
  /** Milliseconds since the stream started, as the carrier stamped it. */
  timestampMs: number;
  /** Raw μ-law bytes, no header. May be a view into a shared pool: copy to keep it long. */
  payload: Uint8Array;
}

/** A key press the carrier detected (one of 0-9 * # A-D). */
export interface DtmfFrame {
  type: 'dtmf';
  digit: string;
}

/** A mark sent earlier came back: all audio queued before it has played (or was cleared). */
export interface MarkFrame {
  type: 'mark';
  name: string;
}

export interface StopFrame {
  type: 'stop';
}

/** The carrier reports a stream error (carrier B only). */
export interface ErrorFrame {
  type: 'error';
  code: number;
  title: string;
  detail: string;
}

/** A message that is not valid JSON, has an unknown event, or lacks a required field. */
export interface InvalidFrame {
  type: 'invalid';
  reason: string;
}

export type InboundFrame =
  | ConnectedFrame
  | StartFrame
  | AudioFrame
  | DtmfFrame
  | MarkFrame
  | StopFrame
  | ErrorFrame
  | InvalidFrame;

/** μ-law audio to play to the caller; may hold several 20 ms frames. */
export interface OutboundAudioFrame {
  type: 'audio';
  payload: Uint8Array;
}

/** Ask the carrier to return this name once everything queued before it has played. */
export interface OutboundMarkFrame {
  type: 'mark';
  name: string;
}

/** Drop everything queued for playback (barge-in). */
export interface ClearFrame {
  type: 'clear';
}

export type OutboundFrame = OutboundAudioFrame | OutboundMarkFrame | ClearFrame;

export function invalid(reason: string): InvalidFrame {
  return { type: 'invalid', reason };
}
