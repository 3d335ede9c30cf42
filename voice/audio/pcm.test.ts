// PCM at the edge: the μ-law conversions against known G.711 values (mulaw.test.ts has
// the fixed points 0 / ±32124 and the clip; these add mid-range codes), the round
// trip for every 16-bit sample, frames that keep their rate, and the reader for
// little-endian PCM split anywhere, as HTTP bodies are.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { frameMs, mulawToPcm, Pcm16Reader, pcmToMulaw, samplesIn } from './pcm.ts';

/**
 * Sun's g711.c as shipped in CPython's `audioop` (lin2ulaw / ulaw2lin), computed
 * outside this code base. Only samples where its 14-bit encoder and our 16-bit one
 * (carriers.md §7) agree: they differ for tiny negative values (-1 is 0x7E there, 0x7F here).
 */
const KNOWN_ENCODE: [number, number][] = [
  [0, 0xff],
  [100, 0xf2],
  [-100, 0x72],
  [1000, 0xce],
  [-1000, 0x4e],
  [4000, 0xaf],
  [8000, 0xa0],
  [-8000, 0x20],
  [32767, 0x80],
  [-32767, 0x00],
  [-32768, 0x00],
];
const KNOWN_DECODE: [number, number][] = [
  [0xff, 0],
  [0x7f, 0],
  [0x80, 32124],
  [0x00, -32124],
  [0xce, 988],
  [0x4e, -988],
  [0x9f, 8316],
  [0x1f, -8316],
];

/** Step between adjacent codes in the segment a code belongs to. */
const stepOf = (code: number): number => 8 << ((~code & 0x70) >> 4);

/** Little-endian 16-bit bytes of `samples`, written independently of the reader. */
function leBytes(samples: number[]): Uint8Array {
  const buf = Buffer.alloc(samples.length * 2);
  samples.forEach((s, i) => buf.writeInt16LE(s, i * 2));
  return new Uint8Array(buf);
}

describe('μ-law <-> PCM', () => {
  it('encodes and decodes the known G.711 values', () => {
    const encoded = pcmToMulaw(Int16Array.from(KNOWN_ENCODE, ([x]) => x));
    expect(Array.from(encoded)).toEqual(KNOWN_ENCODE.map(([, b]) => b));
    const decoded = mulawToPcm(Uint8Array.from(KNOWN_DECODE, ([b]) => b));
    expect(Array.from(decoded)).toEqual(KNOWN_DECODE.map(([, x]) => x));
  });

  it('round-trips every int16 within half a quantisation step (the clip bound beyond 32635)', () => {
    const all = new Int16Array(65536);
    for (let i = 0; i < 65536; i++) all[i] = i - 32768;
    const codes = pcmToMulaw(all, new Uint8Array(65536));
    const back = mulawToPcm(codes, new Int16Array(65536));
    let worst = 0;
    for (let i = 0; i < 65536; i++) {
      const x = all[i]!;
      const err = Math.abs(back[i]! - x);
      const bound = Math.abs(x) <= 32635 ? stepOf(codes[i]!) / 2 : Math.abs(x) - 32124;
      if (err > bound) throw new Error(`sample ${x}: code 0x${codes[i]!.toString(16)} decodes to ${back[i]}, off by ${err} > ${bound}`);
      worst = Math.max(worst, err);
    }
    // The largest segment's step is 1024: half of it, plus the clip at the very top.
    expect(worst).toBe(32768 - 32124);
  });

  it('writes into caller-owned buffers (the hot path allocates nothing) and round-trips any frame', () => {
    const out = new Uint8Array(160);
    const pcm = new Int16Array(160);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -32768, max: 32767 }), { minLength: 160, maxLength: 160 }), (xs) => {
        const frame = Int16Array.from(xs);
        expect(pcmToMulaw(frame, out)).toBe(out);
        expect(mulawToPcm(out, pcm)).toBe(pcm);
        xs.forEach((x, i) => {
          const bound = Math.abs(x) <= 32635 ? stepOf(out[i]!) / 2 : Math.abs(x) - 32124;
          expect(Math.abs(pcm[i]! - x)).toBeLessThanOrEqual(bound);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('takes 8 kHz frames and refuses other rates (μ-law is 8 kHz: resample first)', () => {
    const samples = Int16Array.from([0, 1000, -1000]);
    expect(Array.from(pcmToMulaw({ samples, sampleRate: 8000 }))).toEqual([0xff, 0xce, 0x4e]);
    expect(() => pcmToMulaw({ samples, sampleRate: 24000 })).toThrow(/24000 Hz/);
  });

  it('sizes frames by their rate', () => {
    expect(samplesIn(20, 8000)).toBe(160);
    expect(samplesIn(20, 16000)).toBe(320);
    expect(samplesIn(20, 24000)).toBe(480);
    expect(frameMs({ samples: new Int16Array(480), sampleRate: 24000 })).toBe(20);
    expect(frameMs({ samples: new Int16Array(480), sampleRate: 8000 })).toBe(60);
  });
});

describe('Pcm16Reader', () => {
  it('turns little-endian bytes split anywhere (odd splits included) into the same samples', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -32768, max: 32767 }), { maxLength: 300 }),
        fc.array(fc.integer({ min: 0, max: 600 }), { maxLength: 20 }),
        (samples, cuts) => {
          const bytes = leBytes(samples);
          const points = [...new Set(cuts.map((c) => Math.min(c, bytes.length)))].sort((a, b) => a - b);
          const reader = new Pcm16Reader();
          const got: number[] = [];
          let from = 0;
          for (const to of [...points, bytes.length]) {
            // Views are reused by the next read: copy out at once, as a caller must.
            got.push(...reader.read(bytes.subarray(from, to)));
            from = to;
          }
          expect(got).toEqual(samples);
          expect(reader.pending).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('carries the odd byte: one byte at a time still yields every sample', () => {
    const samples = [0, 1, -1, 256, -256, 32767, -32768, 0x1234];
    const bytes = leBytes(samples);
    const reader = new Pcm16Reader();
    const got: number[] = [];
    bytes.forEach((b, i) => {
      const out = reader.read(bytes.subarray(i, i + 1));
      expect(out.length).toBe(i % 2);
      expect(reader.pending).toBe(i % 2 === 0);
      got.push(...out);
    });
    expect(got).toEqual(samples);
    expect(reader.read(new Uint8Array(0)).length).toBe(0);
  });

  it('drops a dangling half sample on reset and starts clean', () => {
    const reader = new Pcm16Reader();
    expect(Array.from(reader.read(Uint8Array.from([0x34, 0x12, 0xff])))).toEqual([0x1234]);
    expect(reader.reset()).toBe(true);
    expect(reader.reset()).toBe(false);
    expect(Array.from(reader.read(Uint8Array.from([0x01, 0x80])))).toEqual([-32767]);
  });
});
