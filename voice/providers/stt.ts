// Speech to text, as the conversation engine sees it: one live stream per call, fed
// the caller's μ-law audio as it arrives, reporting words as they are recognised.
// Deepgram's websocket protocol (deepgram-stt.ts) is the implementation; the client
// reconnects by itself and reports only what the engine must act on.
import type { ProviderError } from './errors.ts';

export type SttEvent =
  /** Words recognised so far in the current utterance; replaced by the next interim or final. */
  | { type: 'interim'; text: string }
  /**
   * Final words of a stretch of audio (Deepgram `is_final`). `speechFinal` is true when
   * the provider also judged the utterance finished (`speech_final`).
   */
  | { type: 'final'; text: string; speechFinal: boolean }
  /** The provider saw the end of an utterance by its word timing (Deepgram `UtteranceEnd`). */
  | { type: 'utterance_end' }
  /** The provider heard speech begin (Deepgram `SpeechStarted`). */
  | { type: 'speech_started' }
  /** The stream is broken for good (reconnection failed, or the key was refused). */
  | { type: 'error'; error: ProviderError };

export interface SttOptions {
  /** The agent's language: a code such as `en`, or `multi` for multilingual recognition. */
  language: string;
  /** Words the recogniser should favour (the agent's `boosted_keywords`). */
  keyterms: string[];
  onEvent(event: SttEvent): void;
}

export interface SttStream {
  /** One chunk of caller audio (μ-law 8 kHz). Copied or sent at once: the caller may reuse the buffer. Buffered while reconnecting. */
  send(mulaw: Uint8Array): void;
  /**
   * How long the caller has been silent, in ms of their audio (0 while they speak; the
   * engine's voice activity detector decides). Once that is past the provider's own
   * end-of-speech marks, the stream may send audio in larger chunks, fewer writes per
   * call for audio nobody is waiting on; at 0 again it sends what it holds at once.
   */
  callerSilence(ms: number): void;
  /** Asks the provider to finish the words it holds now (Deepgram `Finalize`). */
  finalize(): void;
  /** Ends the stream (Deepgram `CloseStream`) and closes the socket; no events after this. Idempotent. */
  close(): void;
}

export interface SttClient {
  open(opts: SttOptions): SttStream;
}
