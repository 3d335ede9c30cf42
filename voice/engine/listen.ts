// The default engine until the AI conversation lands: it listens and says nothing,
// keeping a few numbers about the caller's audio (frames, and how much of it was
// speech or silence by a plain energy threshold) for diagnostics and tests.
import { mulawToLinear } from '../audio/mulaw.ts';
import type { ConversationEngine, MediaOutput, EngineCall } from './engine.ts';

/** -35 dBFS RMS: quieter frames count as silence (line noise sits well below, speech well above). */
export const SPEECH_RMS = Math.round(32768 * 10 ** (-35 / 20));
const SPEECH_MEAN_SQUARE = SPEECH_RMS * SPEECH_RMS;

/** Squared linear value of each μ-law byte: one look-up per sample on the hot path. */
const SQUARE = new Float64Array(256);
for (let b = 0; b < 256; b++) SQUARE[b] = mulawToLinear(b) ** 2;

export interface ListenStats {
  frames: number;
  /** Audio time whose frame RMS reached SPEECH_RMS, in ms (8 bytes of μ-law = 1 ms). */
  speechMs: number;
  silenceMs: number;
  dtmf: number;
}

export interface ListenEngine extends ConversationEngine {
  /** A copy of the numbers so far. */
  stats(): ListenStats;
}

export function createListenEngine(_output: MediaOutput, _call: EngineCall): ListenEngine {
  let frames = 0;
  let speechMs = 0;
  let silenceMs = 0;
  let dtmf = 0;
  return {
    onAudio(mulaw) {
      const n = mulaw.length;
      if (n === 0) return;
      frames++;
      let sum = 0;
      for (let i = 0; i < n; i++) sum += SQUARE[mulaw[i]!]!;
      if (sum / n >= SPEECH_MEAN_SQUARE) speechMs += n / 8;
      else silenceMs += n / 8;
    },
    onDtmf() {
      dtmf++;
    },
    close() {},
    stats: () => ({ frames, speechMs, silenceMs, dtmf }),
  };
}
