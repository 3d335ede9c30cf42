// The seam between a call's media stream and whatever talks on it. The media session
// hands every caller frame to one engine per call; the engine answers through the
// output it was created with. Engines never see sockets, codecs or carrier ids.
import type { CallEvent } from '../../machines/call-events.ts';
import { createEchoEngine } from './echo.ts';
import { createListenEngine } from './listen.ts';

/** What an engine can do to the caller's line. Safe to call after the stream ended (then a no-op). */
export interface MediaOutput {
  /**
   * Queues μ-law 8 kHz audio for playback; may hold several 20 ms frames. Dropped (and counted) when the socket is backed up.
   * `mulaw` is consumed before this returns: callers may reuse the buffer (the playout does, every frame).
   */
  play(mulaw: Uint8Array): void;
  /** Asks the carrier to return `name` once everything queued before it has played. Never dropped. */
  mark(name: string): void;
  /** Drops everything queued for playback (barge-in). Never dropped. */
  clear(): void;
  /** True while `play` would drop audio because the socket is backed up, so a playout can hold its place instead. */
  backedUp?(): boolean;
  /** Runs `fn` with the socket corked: the sends it makes leave in one write instead of one each. */
  cork?(fn: () => void): void;
}

/** The call an engine is created for. */
export interface EngineCall {
  /** Internal id `call_…`. */
  callId: string;
  accountId: string;
  direction: 'inbound' | 'outbound';
  agentId: string | null;
  /** Hands an event to the call's actor (a transcript line, a hang-up request); never throws. */
  deliver(event: CallEvent): void;
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

/**
 * `MEDIA_ENGINE` values: `agent` (the conversation: voice/engine/agent.ts), and two line
 * tests: `listen` (silent, counts the caller's audio) and `echo` (plays the caller back).
 */
export const MEDIA_ENGINES = ['agent', 'listen', 'echo'] as const;
export type MediaEngineName = (typeof MEDIA_ENGINES)[number];

/** The factory `MEDIA_ENGINE` names; the agent's is built by the caller (it needs providers and storage). */
export function selectEngine(name: MediaEngineName, agent: () => EngineFactory): EngineFactory {
  if (name === 'listen') return createListenEngine;
  if (name === 'echo') return createEchoEngine;
  return agent();
}
