// Text to speech, as the conversation engine sees it: one utterance at a time, fed
// text in segments (sentences) as the model writes them, audio back as μ-law 8 kHz
// in order, each chunk saying which segment it belongs to so the engine knows which
// words the caller actually heard. Implementations: an OpenAI-compatible speech
// endpoint (openai-tts.ts, one POST per segment) and Cartesia's websocket
// (cartesia-tts.ts, contexts on one shared socket).
import type { ProviderError } from './errors.ts';

export interface TtsVoice {
  /** The provider's own voice name or id (the catalogue maps ours to it). */
  voice: string;
  /** 1 is normal; the agent's `speaking_rate`, clamped to 0.5..1.5. */
  speed: number;
  /** The agent's language code (`multi` lets the provider choose). */
  language: string;
}

export interface TtsSink {
  /** μ-law 8 kHz audio of segment `segment`, in order: every chunk of segment n before any of n+1. */
  audio(mulaw: Uint8Array, segment: number): void;
  /** All audio of segment `segment` has been delivered. */
  segmentDone(segment: number): void;
  /** Every segment pushed before `end()` is done; nothing follows. */
  done(): void;
  /** Synthesis failed; nothing follows. Not called after `cancel()`. */
  error(err: ProviderError): void;
}

export interface TtsUtterance {
  /** Adds one segment of text; returns its index (0, 1, …). */
  push(text: string): number;
  /** No more segments: `done()` follows once the last one is delivered. */
  end(): void;
  /** Stops at once (barge-in, hang-up): pending requests are cancelled, no more sink calls. Idempotent. */
  cancel(): void;
}

export interface TtsClient {
  readonly name: 'openai' | 'cartesia';
  start(voice: TtsVoice, sink: TtsSink): TtsUtterance;
  /** Releases what the client keeps open between utterances (Cartesia's shared socket). */
  close?(): void;
}
