// G.711 μ-law <-> 16-bit linear PCM, as carriers.md §7 specifies (Sun g711.c decode,
// 16-bit encode with bias 132 and clip 32635). Every call carries 50 frames of 160
// samples a second in each direction, so both directions are single table look-ups
// built once at import, and the buffer functions write into caller-owned arrays so
// the per-frame path allocates nothing.

/** Silence in μ-law (positive zero); what a carrier sends for a quiet line. */
export const MULAW_SILENCE = 0xff;

const BIAS = 0x84; // 132: the "1 +" of the continuous law, in 16-bit units
const CLIP = 32635; // largest magnitude whose biased value still fits in 15 bits

function decodeByte(b: number): number {
  const u = ~b & 0xff;
  let t = ((u & 0x0f) << 3) + BIAS;
  t <<= (u & 0x70) >> 4;
  return u & 0x80 ? BIAS - t : t - BIAS;
}

function encodeSample(x: number): number {
  const sign = x < 0 ? 0x80 : 0;
  const s = Math.min(x < 0 ? -x : x, CLIP) + BIAS; // 132..32767, so the top bit is 7..14
  const exponent = 31 - Math.clz32(s) - 7;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** 256 entries: μ-law byte -> linear sample. */
const DECODE = new Int16Array(256);
for (let b = 0; b < 256; b++) DECODE[b] = decodeByte(b);

/**
 * 65,536 entries indexed by the sample's 16 bits (`x & 0xffff`). A 14-bit table
 * (`x >> 2`) would be smaller but is not exact: `>>` floors negative samples, so
 * e.g. -1 and -4 would share an entry although the bias makes them encode differently.
 */
const ENCODE = new Uint8Array(65536);
for (let i = 0; i < 65536; i++) ENCODE[i] = encodeSample((i << 16) >> 16);

/** Decodes one μ-law byte (0..255) to a linear sample in -32124..32124. */
export function mulawToLinear(b: number): number {
  return DECODE[b & 0xff]!;
}

/** Encodes one 16-bit linear sample (values outside the range wrap, as Int16Array would). */
export function linearToMulaw(x: number): number {
  return ENCODE[x & 0xffff]!;
}

/**
 * Decodes `src` into `dst` (allocated when omitted). `dst` must hold at least
 * `src.length` samples; the result is `dst` itself when the lengths match, otherwise
 * the view of its first `src.length` samples.
 */
export function decodeMulaw(src: Uint8Array, dst?: Int16Array): Int16Array {
  const n = src.length;
  const out = dst ?? new Int16Array(n);
  if (out.length < n) throw new RangeError(`decodeMulaw: dst holds ${out.length} samples, need ${n}`);
  for (let i = 0; i < n; i++) out[i] = DECODE[src[i]!]!;
  return out.length === n ? out : out.subarray(0, n);
}

/** Encodes `src` into `dst` (allocated when omitted); same length rules as decodeMulaw. */
export function encodeMulaw(src: Int16Array, dst?: Uint8Array): Uint8Array {
  const n = src.length;
  const out = dst ?? new Uint8Array(n);
  if (out.length < n) throw new RangeError(`encodeMulaw: dst holds ${out.length} bytes, need ${n}`);
  for (let i = 0; i < n; i++) out[i] = ENCODE[src[i]! & 0xffff]!;
  return out.length === n ? out : out.subarray(0, n);
}
