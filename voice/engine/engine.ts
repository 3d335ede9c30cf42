// The seam between a call's media stream and whatever talks on it. The media session
// hands every caller frame to one engine per call; the engine answers through the
// output it was created with. Engines never see sockets, codecs or carrier ids.
import { createEchoEngine } from './echo.ts';
import { createListenEngine } from './listen.ts';

/** What an engine can do to the caller's line. Safe to call after the stream ended (then a no-op). */
export interface MediaOutput {
  /** Queues μ-law 8 kHz audio for playback; may hold several 20 ms frames. Dropped (and counted) when the socket is backed up. */
  play(mulaw: Uint8Array): void;
  /** Asks the carrier to return `name` once everything queued before it has played. Never dropped. */
  mark(name: string): void;
  /** Drops everything queued for playback (barge-in). Never dropped. */
  clear(): void;
}

/** The call an engine is created for. */
export interface EngineCall {
  /** Internal id `call_…`. */
  callId: string;
  direction: 'inbound' | 'outbound';
  agentId: string | null;
}

export interface ConversationEngine {
  /**
   * One frame of caller audio, in order (carrier B audio is reordered before this).
   * `mulaw` is only valid during the call: it may be a view into a shared pool, so an
   * engine that keeps audio copies it. Runs on the media hot path: no allocation or
   * logging per frame that can be avoided.
   */
  onAudio(mulaw: Uint8Array, timestampMs: number): void;
  /** A key the carrier detected (one of 0-9 * # A-D). */
  onDtmf(digit: string): void;
  /** A mark sent through `MediaOutput.mark` came back (played, or flushed by a clear). */
  onMark?(name: string): void;
  /** The stream ended; the output is dead from here on. Called once. */
  close(): void;
}

export type EngineFactory = (output: MediaOutput, call: EngineCall) => ConversationEngine;

/** `MEDIA_ENGINE` values: `listen` until the AI conversation lands, `echo` to test a line. */
export const MEDIA_ENGINES = ['listen', 'echo'] as const;
export type MediaEngineName = (typeof MEDIA_ENGINES)[number];

const FACTORIES: Record<MediaEngineName, EngineFactory> = { listen: createListenEngine, echo: createEchoEngine };

/** The factory `MEDIA_ENGINE` names. */
export function selectEngine(name: MediaEngineName): EngineFactory {
  return FACTORIES[name];
}
