// DTMF (ITU-T Q.23) detection over 8 kHz linear PCM, for carriers or callers whose
// key presses arrive in-band rather than as a `dtmf` event, and tone generation for
// tests and the carrier simulators.
//
// Detection runs eight Goertzel filters over blocks of 102 samples (12.75 ms; the
// block size spandsp uses: 697 and 770 Hz, 73 Hz apart, land about one bin apart).
// A block "hits" a key when one row and one column tone each dominate their group,
// their levels are within the twist limits, and together they carry most of the
// block's energy. Debouncing then gives Q.24-like timing:
//   - a press is reported after 2 consecutive hit blocks; a block only hits when at
//     least 3/4 of it is tone, so tones of 40 ms or more (which always span 2 whole
//     blocks) are reported, and tones under about 19 ms never are;
//   - the next press needs 3 consecutive blocks without any tone first: a 40 ms gap
//     always gives 3, a dropout under 10 ms never does, so one press is one digit.
// The state is a few numbers per call and `push` allocates only when it reports.

/** Q.23 keypad, row-major: rows 697, 770, 852, 941 Hz × columns 1209, 1336, 1477, 1633 Hz. */
export const DTMF_KEYS = '123A456B789C*0#D';
const ROWS = [697, 770, 852, 941] as const;
const COLS = [1209, 1336, 1477, 1633] as const;
const FREQS = [...ROWS, ...COLS];

const RATE = 8000;
const BLOCK = 102;
const MIN_TONE_AMPLITUDE = 0.01; // each tone at least -40 dBFS
const MIN_POWER = (MIN_TONE_AMPLITUDE * BLOCK) ** 2 / 4; // Goertzel power of that sine over a block
const DOMINANCE = 4; // 6 dB over every other tone of the same group
const MAX_TWIST = 10 ** 0.8; // 8 dB either way between row and column
const MIN_TONE_SHARE = 0.75; // row + column energy / block energy
const HITS_TO_REPORT = 2;
const QUIET_TO_RELEASE = 3;

const COEFFS = Float64Array.from(FREQS, (f) => 2 * Math.cos((2 * Math.PI * f) / RATE));

/** Shared result for the common case of no new digit; frozen so a caller mutating it fails loudly. */
const NONE: string[] = Object.freeze([]) as unknown as string[];

export interface DtmfDetector {
  /** Feeds 8 kHz samples (any chunking); returns the digits whose press completed its debounce here. */
  push(samples: Int16Array): string[];
  /** Forgets any partial block and press, e.g. after a stream restart. */
  reset(): void;
}

export function createDtmfDetector(): DtmfDetector {
  const s1 = new Float64Array(8);
  const s2 = new Float64Array(8);
  const power = new Float64Array(8);
  let filled = 0; // samples in the current block
  let energy = 0;
  let lastHit = ''; // key of the previous block, '' when it had no valid tone pair
  let hitRun = 0;
  let quietRun = QUIET_TO_RELEASE; // starts released
  let pressed = false;

  function classify(): string {
    for (let k = 0; k < 8; k++) {
      const a = s1[k]!;
      const b = s2[k]!;
      power[k] = a * a + b * b - COEFFS[k]! * a * b;
    }
    let row = 0;
    let col = 4;
    for (let k = 1; k < 4; k++) if (power[k]! > power[row]!) row = k;
    for (let k = 5; k < 8; k++) if (power[k]! > power[col]!) col = k;
    const pr = power[row]!;
    const pc = power[col]!;
    if (pr < MIN_POWER || pc < MIN_POWER) return '';
    if (pc > pr * MAX_TWIST || pr > pc * MAX_TWIST) return '';
    for (let k = 0; k < 8; k++) {
      if (k === row || k === col) continue;
      if (power[k]! * DOMINANCE > (k < 4 ? pr : pc)) return '';
    }
    // A sine of amplitude A gives Goertzel power ≈ (A·N/2)² and energy A²·N/2.
    if ((2 * (pr + pc)) / BLOCK < MIN_TONE_SHARE * energy) return '';
    return DTMF_KEYS[row * 4 + (col - 4)]!;
  }

  function endBlock(): string {
    const hit = classify();
    s1.fill(0);
    s2.fill(0);
    filled = 0;
    energy = 0;
    hitRun = hit !== '' && hit === lastHit ? hitRun + 1 : hit === '' ? 0 : 1;
    quietRun = hit === '' ? quietRun + 1 : 0;
    lastHit = hit;
    if (quietRun >= QUIET_TO_RELEASE) pressed = false;
    if (!pressed && hitRun >= HITS_TO_REPORT) {
      pressed = true;
      return hit;
    }
    return '';
  }

  return {
    push(samples) {
      let out = NONE;
      for (let i = 0; i < samples.length; i++) {
        const x = samples[i]! / 32768;
        energy += x * x;
        for (let k = 0; k < 8; k++) {
          const s0 = x + COEFFS[k]! * s1[k]! - s2[k]!;
          s2[k] = s1[k]!;
          s1[k] = s0;
        }
        if (++filled === BLOCK) {
          const digit = endBlock();
          if (digit !== '') {
            if (out === NONE) out = [];
            out.push(digit);
          }
        }
      }
      return out;
    },
    reset() {
      s1.fill(0);
      s2.fill(0);
      filled = 0;
      energy = 0;
      lastHit = '';
      hitRun = 0;
      quietRun = QUIET_TO_RELEASE;
      pressed = false;
    },
  };
}

/**
 * The two-tone signal of `digit` (one of DTMF_KEYS, case-insensitive for A-D) for `ms`
 * milliseconds, each tone at 0.3 of full scale (about -10 dBFS), both starting at phase 0.
 */
export function generateDtmf(digit: string, ms: number, sampleRate = RATE): Int16Array {
  const index = digit.length === 1 ? DTMF_KEYS.indexOf(digit.toUpperCase()) : -1;
  if (index < 0) throw new RangeError(`generateDtmf: not a DTMF key: ${JSON.stringify(digit)}`);
  if (!(ms >= 0) || !(sampleRate > 0)) throw new RangeError('generateDtmf: ms and sampleRate must be positive');
  const low = (2 * Math.PI * ROWS[index >> 2]!) / sampleRate;
  const high = (2 * Math.PI * COLS[index & 3]!) / sampleRate;
  const out = new Int16Array(Math.round((ms * sampleRate) / 1000));
  const amplitude = 0.3 * 32767;
  for (let i = 0; i < out.length; i++) out[i] = Math.round(amplitude * (Math.sin(low * i) + Math.sin(high * i)));
  return out;
}
