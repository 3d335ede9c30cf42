// The resamplers as a listener would judge them: lengths follow the rate ratio, a
// 1 kHz tone keeps its pitch and loudness through each direction, audio above the
// phone band does not fold back into it going down to 8 kHz, and a stream resampled
// in chunks split anywhere is bit-identical to the whole resampled at once. Then the
// TTS path: 24 kHz little-endian PCM bytes in, μ-law 8 kHz out.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mulawToPcm, type SampleRate } from './pcm.ts';
import { createResampler, createTtsPcmToMulaw, resample, type Resampler } from './resample.ts';

const RATES: SampleRate[] = [8000, 16000, 24000];
const DIRECTIONS: [SampleRate, SampleRate][] = RATES.flatMap((a) => RATES.filter((b) => b !== a).map((b): [SampleRate, SampleRate] => [a, b]));

function tone(hz: number, rate: SampleRate, ms: number, amplitude = 10_000): Int16Array {
  const n = Math.round((rate * ms) / 1000);
  const s = new Int16Array(n);
  for (let i = 0; i < n; i++) s[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate));
  return s;
}

/** RMS of the steady part: the filter's first and last few ms are left out. */
function rms(s: Int16Array, rate: SampleRate): number {
  const skip = Math.round(rate * 0.01);
  let sum = 0;
  for (let i = skip; i < s.length - skip; i++) sum += s[i]! * s[i]!;
  return Math.sqrt(sum / (s.length - 2 * skip));
}

const db = (a: number, b: number): number => 20 * Math.log10(a / b);

/** Frequency from upward zero crossings (interpolated), over the steady part. */
function frequency(s: Int16Array, rate: SampleRate): number {
  const skip = Math.round(rate * 0.01);
  const ups: number[] = [];
  for (let i = skip; i < s.length - skip - 1; i++) {
    const a = s[i]!;
    const b = s[i + 1]!;
    if (a < 0 && b >= 0) ups.push(i + -a / (b - a));
  }
  return ((ups.length - 1) * rate) / (ups[ups.length - 1]! - ups[0]!);
}

/** Runs `input` through `r` in chunks cut at `cuts`, returning all output. */
function chunked(r: Resampler, input: Int16Array, cuts: number[]): number[] {
  const points = [...new Set(cuts.map((c) => Math.min(c, input.length)))].sort((a, b) => a - b);
  const got: number[] = [];
  let from = 0;
  for (const to of [...points, input.length]) {
    const part = input.subarray(from, to);
    const out = new Int16Array(r.maxOutput(part.length));
    const n = r.push(part, out);
    got.push(...out.subarray(0, n));
    from = to;
  }
  return got;
}

describe('resampler', () => {
  it('outputs samples in the ratio of the rates, exactly, however the input is chunked', () => {
    for (const [from, to] of DIRECTIONS) {
      // 20 ms frames: 160 / 320 / 480 samples.
      const r = createResampler(from, to);
      const out = new Int16Array(r.maxOutput(from / 50));
      for (let i = 0; i < 5; i++) expect(r.push(new Int16Array(from / 50), out), `${from} -> ${to}`).toBe(to / 50);
    }
    fc.assert(
      fc.property(fc.constantFrom(...DIRECTIONS), fc.integer({ min: 0, max: 2000 }), fc.array(fc.nat(2000), { maxLength: 12 }), ([from, to], n, cuts) => {
        const got = chunked(createResampler(from, to), new Int16Array(n), cuts);
        expect(got.length).toBe(Math.ceil((n * to) / from));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps a 1 kHz tone at 1 kHz and its level within 1 dB through 8 -> 16 -> 8 kHz', () => {
    const x = tone(1000, 8000, 500);
    const up = resample({ samples: x, sampleRate: 8000 }, 16000);
    const back = resample(up, 8000);
    expect(up.sampleRate).toBe(16000);
    expect(back.samples.length).toBe(x.length);
    for (const y of [up, back]) {
      expect(frequency(y.samples, y.sampleRate)).toBeCloseTo(1000, 0);
      expect(Math.abs(db(rms(y.samples, y.sampleRate), rms(x, 8000)))).toBeLessThan(1);
    }
  });

  it('keeps a 1 kHz tone at 1 kHz and its level within 1 dB in every direction (24 -> 8 kHz included)', () => {
    for (const [from, to] of DIRECTIONS) {
      const x = tone(1000, from, 500);
      const y = resample({ samples: x, sampleRate: from }, to);
      expect(frequency(y.samples, to), `${from} -> ${to}`).toBeCloseTo(1000, 0);
      expect(Math.abs(db(rms(y.samples, to), rms(x, from))), `${from} -> ${to}`).toBeLessThan(1);
    }
  });

  it('keeps the telephone band (300 to 3400 Hz) within 1 dB going down from 24 kHz', () => {
    for (const hz of [300, 2000, 3000, 3400]) {
      const x = tone(hz, 24000, 300);
      const y = resample({ samples: x, sampleRate: 24000 }, 8000).samples;
      expect(Math.abs(db(rms(y, 8000), rms(x, 24000))), `${hz} Hz`).toBeLessThan(1);
    }
  });

  it('does not alias: a 6 kHz tone at 24 kHz loses at least 30 dB going to 8 kHz (unfiltered it would sound at 2 kHz)', () => {
    const x = tone(6000, 24000, 500);
    const y = resample({ samples: x, sampleRate: 24000 }, 8000).samples;
    expect(db(rms(y, 8000), rms(x, 24000))).toBeLessThanOrEqual(-30);
    // Everything above the stop band edge folds to below 3.4 kHz: all of it is cut.
    for (const hz of [4600, 5000, 7000, 9000, 11000]) {
      const z = resample({ samples: tone(hz, 24000, 300), sampleRate: 24000 }, 8000).samples;
      expect(db(rms(z, 8000), rms(tone(hz, 24000, 300), 24000)), `${hz} Hz`).toBeLessThanOrEqual(-30);
    }
    const from16 = resample({ samples: tone(6000, 16000, 500), sampleRate: 16000 }, 8000).samples;
    expect(db(rms(from16, 8000), rms(tone(6000, 16000, 500), 16000))).toBeLessThanOrEqual(-30);
  });

  it('gives bit-identical output in chunks split anywhere and in one go', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...DIRECTIONS),
        fc.array(fc.integer({ min: -32768, max: 32767 }), { maxLength: 1500 }),
        fc.array(fc.nat(1500), { maxLength: 15 }),
        ([from, to], xs, cuts) => {
          const input = Int16Array.from(xs);
          const whole = Array.from(resample({ samples: input, sampleRate: from }, to).samples);
          expect(chunked(createResampler(from, to), input, cuts)).toEqual(whole);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('drains the filter tail at the end and starts a fresh stream after it', () => {
    const r = createResampler(24000, 8000);
    const x = tone(1000, 24000, 100);
    const out = new Int16Array(r.maxOutput(x.length));
    const n = r.push(x, out);
    const first = Array.from(out.subarray(0, n));
    const tail = new Int16Array(r.maxOutput(0));
    const k = r.drain(tail);
    expect(k).toBeGreaterThan(0);
    // The tone's last moments were still in the filter: the tail is not silence.
    expect(Math.max(...Array.from(tail.subarray(0, k), Math.abs))).toBeGreaterThan(1000);
    // After drain the next stream is like a new resampler's.
    const again = Array.from(out.subarray(0, r.push(x, out)));
    expect(again).toEqual(first);
  });

  it('refuses an output buffer shorter than the output', () => {
    const r = createResampler(8000, 24000);
    expect(() => r.push(new Int16Array(160), new Int16Array(479))).toThrow(RangeError);
  });
});

describe('createTtsPcmToMulaw', () => {
  /** 24 kHz samples as the little-endian bytes OpenAI's `pcm` format streams. */
  function pcmBytes(samples: Int16Array): Uint8Array {
    const buf = Buffer.alloc(samples.length * 2);
    samples.forEach((s, i) => buf.writeInt16LE(s, i * 2));
    return new Uint8Array(buf);
  }

  function convert(bytes: Uint8Array, cuts: number[]): Uint8Array {
    const conv = createTtsPcmToMulaw(24000);
    const points = [...new Set(cuts.map((c) => Math.min(c, bytes.length)))].sort((a, b) => a - b);
    const parts: number[] = [];
    let from = 0;
    for (const to of [...points, bytes.length]) {
      parts.push(...conv.push(bytes.subarray(from, to)));
      from = to;
    }
    parts.push(...conv.end());
    return Uint8Array.from(parts);
  }

  it('turns 24 kHz PCM bytes, split anywhere, into the same μ-law 8 kHz of the same tone', () => {
    const x = tone(1000, 24000, 400, 8000);
    const bytes = pcmBytes(x);
    const whole = convert(bytes, []);
    const tail = createResampler(24000, 8000).maxOutput(0);
    expect(whole.length).toBe(x.length / 3 + tail);
    const y = mulawToPcm(whole);
    expect(frequency(y, 8000)).toBeCloseTo(1000, 0);
    expect(Math.abs(db(rms(y, 8000), rms(x, 24000)))).toBeLessThan(1);
    fc.assert(
      fc.property(fc.array(fc.nat(bytes.length), { maxLength: 30 }), (cuts) => {
        expect(convert(bytes, cuts)).toEqual(whole);
      }),
      { numRuns: 100 },
    );
  });

  it('keeps a 6 kHz component out of the phone line', () => {
    const y = mulawToPcm(convert(pcmBytes(tone(6000, 24000, 300, 8000)), [777]));
    expect(db(rms(y, 8000), rms(tone(6000, 24000, 300, 8000), 24000))).toBeLessThanOrEqual(-30);
  });
});
