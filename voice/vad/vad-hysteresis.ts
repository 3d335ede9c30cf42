// Speech probabilities to speech events: the pure half of the voice activity detector,
// fed one window's probability at a time with the time its window ended (in the call's
// audio, not the wall clock). Two thresholds make it a Schmitt trigger: speech starts
// above `activation` and only ends below the lower `deactivation`, so a probability
// hovering around one threshold cannot toggle it every window. A start needs
// `minSpeechMs` of windows above activation in a row (a click or a breath is one window);
// an end needs `minSilenceMs` of windows below deactivation in a row (the pauses between
// words and after a comma are shorter).
//
// Defaults are LiveKit Agents' Silero plugin's: activation 0.5, deactivation 0.35
// (activation - 0.15), min speech 50 ms (two 32 ms windows), min silence 550 ms. Pipecat
// starts later (0.2 s) and is the one its users call sluggish to interrupt; the engine's
// barge-in threshold adds its own delay on top of speech_start, so this one stays short.
import { SILERO_WINDOW_MS } from './silero-model.ts';

export type VadEvent =
  /** `atMs`: where speech began in the call's audio (start of its first window over activation). */
  | { type: 'speech_start'; atMs: number }
  /** `atMs`: where speech ended (end of its last window); `speechMs`: from the start to here. */
  | { type: 'speech_end'; atMs: number; speechMs: number };

export interface VadHysteresisOptions {
  /** Probability at or above which a window counts as speech when not speaking (default 0.5). */
  activation?: number;
  /** Probability below which a window counts as silence when speaking (default 0.35). */
  deactivation?: number;
  /** Speech this long in a row before speech_start (default 50 ms). */
  minSpeechMs?: number;
  /** Silence this long in a row before speech_end (default 550 ms). */
  minSilenceMs?: number;
  /** Length of each window (default Silero's 32 ms at 8 kHz). */
  windowMs?: number;
}

export const VAD_DEFAULTS = {
  activation: 0.5,
  deactivation: 0.35,
  minSpeechMs: 50,
  minSilenceMs: 550,
  windowMs: SILERO_WINDOW_MS,
} as const satisfies Required<VadHysteresisOptions>;

export interface VadHysteresis {
  /** One window's probability and the time its window ended; the event it causes, if any. */
  update(probability: number, windowEndMs: number): VadEvent | null;
  /** Between a speech_start and its speech_end. */
  readonly speaking: boolean;
  /** Back to not speaking, forgetting any run in progress (no event). */
  reset(): void;
}

export function createVadHysteresis(options: VadHysteresisOptions = {}): VadHysteresis {
  const activation = options.activation ?? VAD_DEFAULTS.activation;
  const deactivation = options.deactivation ?? VAD_DEFAULTS.deactivation;
  const minSpeechMs = options.minSpeechMs ?? VAD_DEFAULTS.minSpeechMs;
  const minSilenceMs = options.minSilenceMs ?? VAD_DEFAULTS.minSilenceMs;
  const windowMs = options.windowMs ?? VAD_DEFAULTS.windowMs;
  if (!(deactivation <= activation)) throw new RangeError(`deactivation ${deactivation} above activation ${activation}`);
  if (!(windowMs > 0)) throw new RangeError(`windowMs ${windowMs}`);

  let speaking = false;
  /** Start of the current run of speech windows (not speaking) or of the utterance (speaking). */
  let speechFrom = 0;
  /** Whether the last window was speech (a run is open at speechFrom) when not speaking. */
  let inSpeechRun = false;
  /** Start of the current run of silent windows while speaking. */
  let silenceFrom = 0;
  let inSilenceRun = false;

  return {
    update(probability, windowEndMs) {
      const windowStart = windowEndMs - windowMs;
      if (!speaking) {
        if (!(probability >= activation)) {
          inSpeechRun = false;
          return null;
        }
        if (!inSpeechRun) {
          inSpeechRun = true;
          speechFrom = windowStart;
        }
        if (windowEndMs - speechFrom < minSpeechMs) return null;
        speaking = true;
        inSpeechRun = false;
        inSilenceRun = false;
        return { type: 'speech_start', atMs: speechFrom };
      }
      if (probability >= deactivation) {
        inSilenceRun = false;
        return null;
      }
      if (!inSilenceRun) {
        inSilenceRun = true;
        silenceFrom = windowStart;
      }
      if (windowEndMs - silenceFrom < minSilenceMs) return null;
      speaking = false;
      inSilenceRun = false;
      return { type: 'speech_end', atMs: silenceFrom, speechMs: silenceFrom - speechFrom };
    },
    get speaking() {
      return speaking;
    },
    reset() {
      speaking = false;
      inSpeechRun = false;
      inSilenceRun = false;
    },
  };
}
