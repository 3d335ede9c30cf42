// Answering-machine beep detection over 8 kHz linear PCM (a cousin of dtmf.ts): the
// steady single tone, somewhere in 400–2000 Hz, that a voicemail plays after its
// greeting. Blocks of 160 samples (20 ms) go through a bank of Goertzel filters 25 Hz
// apart (a tone is never more than 12.5 Hz from one, under 1 dB lost). A block is
// "tonal" when one filter carries most of the block's energy (speech spreads its energy
// over many harmonics and formants, a beep puts it in one line) and the block is not
// near silence. A beep is a run of tonal blocks at the same frequency (±50 Hz) of at
// least MIN_BEEP_MS; it is reported once, when the tone stops, because that is when a
// message can start. A tone that goes on past MAX_BEEP_MS (a dial or fax tone) is not a
// beep. The state is a few numbers per call; `push` does not allocate.

const RATE = 8000;
const BLOCK = 160;
const BLOCK_MS = (BLOCK * 1000) / RATE;
export const BEEP_BAND_HZ = { low: 400, high: 2000 } as const;
const STEP_HZ = 25;
const FREQS = Array.from({ length: (BEEP_BAND_HZ.high - BEEP_BAND_HZ.low) / STEP_HZ + 1 }, (_, i) => BEEP_BAND_HZ.low + i * STEP_HZ);
const COEFFS = Float64Array.from(FREQS, (f) => 2 * Math.cos((2 * Math.PI * f) / RATE));
/** Shortest tone taken for a beep (real ones last 0.2–1 s). */
export const MIN_BEEP_MS = 160;
/** Longer than this is a dial, busy or fax tone, not a beep. */
export const MAX_BEEP_MS = 3000;
/** The strongest line's share of the block's energy (1 for a pure tone on a filter, ~0.8 between two). */
const MIN_TONE_SHARE = 0.6;
/** Block RMS at least -45 dBFS: line hiss is never a beep. */
const MIN_RMS = 32768 * 10 ** (-45 / 20);
const MIN_ENERGY = MIN_RMS * MIN_RMS * BLOCK;
/** A run's blocks stay within this of its first frequency. */
const DRIFT_HZ = 50;

export interface Beep {
  /** The tone's frequency, to the filter bank's 25 Hz. */
  hz: number;
  durationMs: number;
}

export interface BeepDetector {
  /** Feeds 8 kHz samples (any chunking); returns the beep that ended here, if any. */
  push(samples: Int16Array): Beep | null;
  reset(): void;
}

export function createBeepDetector(): BeepDetector {
  const s1 = new Float64Array(FREQS.length);
  const s2 = new Float64Array(FREQS.length);
  let filled = 0;
  let energy = 0;
  let runHz = 0; // frequency of the current tonal run, 0 when none
  let runBlocks = 0;

  /** The block's tone frequency, or 0 when it is not tonal. */
  function classify(): number {
    let best = 0;
    let bestPower = 0;
    for (let k = 0; k < FREQS.length; k++) {
      const a = s1[k]!;
      const b = s2[k]!;
      const power = a * a + b * b - COEFFS[k]! * a * b;
      if (power > bestPower) {
        bestPower = power;
        best = k;
      }
      s1[k] = 0;
      s2[k] = 0;
    }
    // A sine of amplitude A on a filter: power (A·N/2)², energy A²·N/2, so 2·power/(N·energy) = 1.
    const share = energy > 0 ? (2 * bestPower) / (BLOCK * energy) : 0;
    return energy >= MIN_ENERGY && share >= MIN_TONE_SHARE ? FREQS[best]! : 0;
  }

  function endBlock(): Beep | null {
    const hz = classify();
    energy = 0;
    filled = 0;
    if (hz !== 0 && runBlocks > 0 && Math.abs(hz - runHz) <= DRIFT_HZ) {
      runBlocks++;
      return null;
    }
    // The run (if any) is over: a beep if it lasted long enough and not too long.
    const durationMs = runBlocks * BLOCK_MS;
    const ended = runBlocks > 0 && durationMs >= MIN_BEEP_MS && durationMs <= MAX_BEEP_MS ? { hz: runHz, durationMs } : null;
    runHz = hz;
    runBlocks = hz === 0 ? 0 : 1;
    return ended;
  }

  return {
    push(samples) {
      let found: Beep | null = null;
      for (let i = 0; i < samples.length; i++) {
        const x = samples[i]!;
        energy += x * x;
        for (let k = 0; k < FREQS.length; k++) {
          const s = x + COEFFS[k]! * s1[k]! - s2[k]!;
          s2[k] = s1[k]!;
          s1[k] = s;
        }
        if (++filled === BLOCK) found = endBlock() ?? found;
      }
      return found;
    },
    reset() {
      s1.fill(0);
      s2.fill(0);
      filled = 0;
      energy = 0;
      runHz = 0;
      runBlocks = 0;
    },
  };
}

/** A beep as 8 kHz PCM (tests, the simulated voicemail): a sine at `amplitude` of full scale with 5 ms ramps. */
export function generateBeep(hz: number, ms: number, amplitude = 0.3): Int16Array {
  const n = Math.round((ms * RATE) / 1000);
  const ramp = 40;
  return Int16Array.from({ length: n }, (_, i) => {
    const edge = Math.min(1, i / ramp, (n - 1 - i) / ramp);
    return Math.round(edge * amplitude * 32767 * Math.sin((2 * Math.PI * hz * i) / RATE));
  });
}
