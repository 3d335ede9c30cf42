// Streaming sample-rate conversion between the engine's three rates (8, 16, 24 kHz),
// and the TTS path built on it: OpenAI's 24 kHz `pcm` reply bytes in, the phone
// line's μ-law 8 kHz out.
//
// One rational polyphase resampler serves all six directions (up by L, low-pass, down
// by M, computing only the samples kept). The low-pass is a Kaiser-windowed sinc cut
// at the lower rate's Nyquist frequency: going down it keeps 24 kHz TTS audio above
// 4 kHz from folding back into the phone band, going up it removes the images. Its
// transition band is ±15 % around the cut (3.4 to 4.6 kHz for the phone line: 3.4 kHz
// is the top of the telephone band, and what lies between 4 and 4.6 kHz folds to
// above 3.4 kHz) with 40 dB of stop-band attenuation: μ-law's own signal to noise is
// ~38 dB, so aliases 40 dB down are under the codec's noise, and every decibel more
// costs taps on the busiest path of a conversation (50 dB took 60 taps, 40 dB takes
// 46). Going down to 8 kHz the filter is symmetric and only the kept samples are
// computed: 23 multiplies per output sample, about 0.3 ms of one core per second of
// 24 kHz TTS audio.
//
// State (the last taps' worth of input and the output phase) carries across chunks, and
// every output sample is computed by the same sum over the same samples whichever way
// the input was split, so chunked output is bit-identical to one-shot output.
import { linearToMulaw } from './mulaw.ts';
import { Pcm16Reader, type PcmFrame, type SampleRate } from './pcm.ts';

/** Stop-band attenuation of the anti-alias filter. */
const ATTENUATION_DB = 40;
/** Pass band ends, and stop band starts, this fraction below / above the cut. */
const TRANSITION = 0.15;

export interface Resampler {
  readonly inRate: SampleRate;
  readonly outRate: SampleRate;
  /** The most samples `push` can write for an input of `inputLength` samples: size `out` with it. */
  maxOutput(inputLength: number): number;
  /**
   * Resamples the next `input` samples of the stream into `out` from index 0 and
   * returns how many it wrote. Allocates nothing once its working buffer has grown to
   * the largest chunk seen. Throws RangeError when `out` is shorter than `maxOutput`.
   */
  push(input: Int16Array, out: Int16Array): number;
  /**
   * Ends the stream: feeds the filter silence for its delay so the input's last
   * samples come out too, writes them into `out` (size it with `maxOutput(0)`), resets.
   */
  drain(out: Int16Array): number;
  /** Forgets the stream (history and phase): the next `push` starts a new one. */
  reset(): void;
}

interface Design {
  /** Up-sampling factor. */
  up: number;
  /** Down-sampling factor. */
  down: number;
  /** Taps per phase. */
  taps: number;
  /** Phase p's taps at [p·taps, (p+1)·taps), newest input sample first. */
  coef: Float64Array;
  /** Input samples of silence that push the last real sample through the filter. */
  tail: number;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Modified Bessel function of the first kind, order 0 (the Kaiser window's kernel). */
function besselI0(x: number): number {
  const q = (x * x) / 4;
  let sum = 1;
  let term = 1;
  for (let k = 1; k < 64 && term > 1e-12 * sum; k++) {
    term *= q / (k * k);
    sum += term;
  }
  return sum;
}

function design(inRate: SampleRate, outRate: SampleRate): Design {
  const g = gcd(inRate, outRate);
  const up = outRate / g;
  const down = inRate / g;
  const fsUp = inRate * up; // the rate the filter runs at, conceptually
  const cut = Math.min(inRate, outRate) / 2;
  const width = (2 * TRANSITION * cut) / fsUp; // transition band, cycles per sample
  // Kaiser's estimates of the length and the window shape for the attenuation wanted.
  const length = Math.ceil((ATTENUATION_DB - 7.95) / (14.36 * width)) + 1;
  const beta = 0.1102 * (ATTENUATION_DB - 8.7);
  const taps = Math.ceil(length / up);
  const n = taps * up;
  const centre = (n - 1) / 2;
  const fc = cut / fsUp;
  const proto = new Float64Array(n);
  const i0beta = besselI0(beta);
  for (let j = 0; j < n; j++) {
    const x = j - centre;
    const sinc = x === 0 ? 2 * fc : Math.sin(2 * Math.PI * fc * x) / (Math.PI * x);
    const r = (2 * j) / (n - 1) - 1;
    proto[j] = sinc * (besselI0(beta * Math.sqrt(Math.max(0, 1 - r * r))) / i0beta);
  }
  // Phase p uses taps p, p+up, p+2·up…; each phase is scaled to unit gain at DC so
  // up-sampling does not leave a ripple at the output rate on steady signals.
  const coef = new Float64Array(n);
  for (let p = 0; p < up; p++) {
    let sum = 0;
    for (let i = 0; i < taps; i++) sum += proto[p + i * up]!;
    for (let i = 0; i < taps; i++) coef[p * taps + i] = proto[p + i * up]! / sum;
  }
  return { up, down, taps, coef, tail: Math.ceil(centre / up) };
}

// Designed once per direction, on first use.
const designs = new Map<number, Design>();
function designFor(inRate: SampleRate, outRate: SampleRate): Design {
  const key = inRate * 100_000 + outRate;
  let d = designs.get(key);
  if (!d) designs.set(key, (d = design(inRate, outRate)));
  return d;
}

function clamp16(x: number): number {
  const r = Math.round(x);
  return r > 32767 ? 32767 : r < -32768 ? -32768 : r;
}

/** A streaming resampler from `inRate` to `outRate` (the same rate copies). */
export function createResampler(inRate: SampleRate, outRate: SampleRate): Resampler {
  if (inRate === outRate) {
    return {
      inRate,
      outRate,
      maxOutput: (n) => n,
      push(input, out) {
        if (out.length < input.length) throw new RangeError(`resampler: out holds ${out.length} samples, need ${input.length}`);
        out.set(input);
        return input.length;
      },
      drain: () => 0,
      reset() {},
    };
  }
  const { up, down, taps, coef, tail } = designFor(inRate, outRate);
  const history = taps - 1;
  const half = taps >> 1;
  const odd = (taps & 1) === 1;
  // [0, history): the previous input's last samples (silence before the stream); the chunk
  // follows. Doubles, so the inner loop multiplies without converting.
  let work = new Float64Array(history + 480);
  // Position of the next output sample on the up-sampled time line, counted from the
  // current chunk's first sample (so it stays small however long the stream runs).
  let t = 0;
  const silence = new Int16Array(tail);

  function push(input: Int16Array, out: Int16Array): number {
    const n = input.length;
    const limit = n * up;
    const count = t < limit ? Math.ceil((limit - t) / down) : 0;
    if (out.length < count) throw new RangeError(`resampler: out holds ${out.length} samples, need ${count}`);
    if (work.length < history + n) {
      const grown = new Float64Array(history + Math.max(n, 2 * (work.length - history)));
      grown.set(work.subarray(0, history));
      work = grown;
    }
    work.set(input, history);
    const w = work;
    if (up === 1) {
      // Pure decimation (24 -> 8 kHz TTS, 16 -> 8 kHz), the busy directions: one phase,
      // a symmetric (linear-phase) filter, so pairs of samples share a multiply.
      for (let k = 0; k < count; k++, t += down) {
        const x = history + t;
        const oldest = x - taps + 1;
        let acc = odd ? coef[half]! * w[x - half]! : 0;
        for (let i = 0; i < half; i++) acc += coef[i]! * (w[x - i]! + w[oldest + i]!);
        out[k] = clamp16(acc);
      }
    } else {
      for (let k = 0; k < count; k++, t += down) {
        const newest = Math.floor(t / up);
        const base = (t - newest * up) * taps;
        const x = history + newest;
        let acc = 0;
        for (let i = 0; i < taps; i++) acc += coef[base + i]! * w[x - i]!;
        out[k] = clamp16(acc);
      }
    }
    t -= limit;
    w.copyWithin(0, n, n + history);
    return count;
  }

  function reset(): void {
    work.fill(0, 0, history);
    t = 0;
  }

  return {
    inRate,
    outRate,
    maxOutput: (n) => Math.ceil(((n + tail) * up) / down),
    push,
    drain(out) {
      const k = push(silence, out);
      reset();
      return k;
    },
    reset,
  };
}

/** One-shot resampling of a whole frame (allocates; the streaming path is `createResampler`). */
export function resample(frame: PcmFrame, outRate: SampleRate): PcmFrame {
  const r = createResampler(frame.sampleRate, outRate);
  const out = new Int16Array(r.maxOutput(frame.samples.length));
  const n = r.push(frame.samples, out);
  return { samples: out.subarray(0, n), sampleRate: outRate };
}

/** Raw 16-bit PCM bytes in, μ-law 8 kHz out, as a stream. */
export interface PcmToMulawStream {
  /**
   * The μ-law for the next bytes of the stream (any length; an odd byte waits for its
   * pair). The result is a view into a buffer reused by the next call: copy to keep.
   */
  push(bytes: Uint8Array): Uint8Array;
  /** The stream ended: the filter's last samples (same view rule); a dangling odd byte is dropped. Resets. */
  end(): Uint8Array;
}

/**
 * The TTS client's converter: little-endian 16-bit mono PCM at `sourceRate` (OpenAI's
 * `response_format: "pcm"` is 24 kHz) to μ-law 8 kHz, low-passed so nothing above the
 * phone band aliases into it.
 */
export function createTtsPcmToMulaw(sourceRate: SampleRate): PcmToMulawStream {
  const reader = new Pcm16Reader();
  const resampler = createResampler(sourceRate, 8000);
  let pcm = new Int16Array(resampler.maxOutput(4096));
  let mulaw = new Uint8Array(pcm.length);

  function encode(n: number): Uint8Array {
    for (let i = 0; i < n; i++) mulaw[i] = linearToMulaw(pcm[i]!);
    return mulaw.subarray(0, n);
  }

  function room(inputSamples: number): void {
    const need = resampler.maxOutput(inputSamples);
    if (pcm.length >= need) return;
    pcm = new Int16Array(need);
    mulaw = new Uint8Array(need);
  }

  return {
    push(bytes) {
      const samples = reader.read(bytes);
      room(samples.length);
      return encode(resampler.push(samples, pcm));
    },
    end() {
      reader.reset();
      room(0);
      return encode(resampler.drain(pcm));
    },
  };
}
