// μ-law codec against carriers.md §7: the fixed points, the round trips and an
// independent implementation of the continuous law.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeMulaw, encodeMulaw, linearToMulaw, mulawToLinear } from './mulaw.ts';

const int16 = fc.integer({ min: -32768, max: 32767 });
const byte = fc.integer({ min: 0, max: 255 });

/** Step between adjacent codes in the segment the byte belongs to. */
function stepOf(code: number): number {
  return 8 << (((~code & 0xff) & 0x70) >> 4);
}

/**
 * The continuous law F(x) = sgn(x)·ln(1+μ|x|)/ln(1+μ), μ = 255, scaled to 128 codes.
 * Full scale is 255·132: the encoder's bias 132 is the law's "1 +", so segment i
 * starts where 1+μ|x|/X = 2^i and the floored continuous code is the discrete one
 * give or take the chord error of the 8 linear segments (under one code).
 */
function continuousMulaw(x: number): number {
  const mag = Math.min(Math.abs(x) / (255 * 132), 1);
  const code = Math.min(127, Math.floor((128 * Math.log1p(255 * mag)) / Math.log(256)));
  return ~((x < 0 ? 0x80 : 0) | code) & 0xff;
}

/** Signed code position: ±(segment·16 + mantissa). */
function position(code: number): number {
  const u = ~code & 0xff;
  return u & 0x80 ? -(u & 0x7f) : u & 0x7f;
}

describe('μ-law fixed points (§7)', () => {
  it('decodes the zero codes to 0 and the extremes to ±32124', () => {
    expect(mulawToLinear(0xff)).toBe(0);
    expect(mulawToLinear(0x7f)).toBe(0);
    expect(mulawToLinear(0x00)).toBe(-32124);
    expect(mulawToLinear(0x80)).toBe(32124);
  });

  it('encodes 0 as silence (0xFF), clips the extremes', () => {
    expect(linearToMulaw(0)).toBe(0xff);
    expect(linearToMulaw(32767)).toBe(0x80);
    expect(linearToMulaw(-32768)).toBe(0x00);
  });
});

describe('μ-law round trips', () => {
  it('decode(encode(x)) is within half a step of x (one step once clipped)', () => {
    fc.assert(
      fc.property(int16, (x) => {
        const code = linearToMulaw(x);
        const err = Math.abs(mulawToLinear(code) - x);
        const bound = Math.abs(x) <= 32635 ? stepOf(code) / 2 : Math.abs(x) - 32124;
        expect(err).toBeLessThanOrEqual(bound);
      }),
      { numRuns: 20_000 },
    );
  });

  it('encode(decode(b)) == b for every byte but negative zero, which becomes 0xFF', () => {
    fc.assert(
      fc.property(byte, (b) => {
        expect(linearToMulaw(mulawToLinear(b))).toBe(b === 0x7f ? 0xff : b);
      }),
    );
  });

  it('agrees with the continuous law within ±1 code, on the right side of zero', () => {
    fc.assert(
      fc.property(int16, (x) => {
        const got = linearToMulaw(x);
        const want = continuousMulaw(x);
        expect(Math.abs(position(got) - position(want))).toBeLessThanOrEqual(1);
        expect(got & 0x80).toBe(want & 0x80);
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('buffer functions', () => {
  it('match the single-sample functions and write into the caller-owned array', () => {
    fc.assert(
      fc.property(fc.array(int16, { maxLength: 400 }), (xs) => {
        const pcm = Int16Array.from(xs);
        const out = new Uint8Array(pcm.length);
        expect(encodeMulaw(pcm, out)).toBe(out);
        expect(Array.from(out)).toEqual(xs.map(linearToMulaw));
        const back = decodeMulaw(out);
        expect(Array.from(back)).toEqual(Array.from(out, mulawToLinear));
      }),
    );
  });

  it('returns a view when dst is longer, throws when it is too short', () => {
    const src = new Uint8Array([0x00, 0x80, 0xff]);
    const dst = new Int16Array(8);
    const view = decodeMulaw(src, dst);
    expect(Array.from(view)).toEqual([-32124, 32124, 0]);
    expect(view.buffer).toBe(dst.buffer);
    expect(() => decodeMulaw(src, new Int16Array(2))).toThrow(RangeError);
    expect(() => encodeMulaw(new Int16Array(3), new Uint8Array(2))).toThrow(RangeError);
  });
});
