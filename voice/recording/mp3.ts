// MP3 encoding of a finished call's mix (lamejs, pure JS), in slices that give the event
// loop back between them: a slice of ~0.5 s of audio takes well under a millisecond, so
// live calls' 20 ms audio frames are never held up by an encoding.
import { Mp3Encoder } from '@breezystack/lamejs';

const SAMPLE_RATE = 8000;
const KBPS = 32;
/** Samples per slice: a multiple of the 576-sample MPEG-2 frame. */
const SLICE = 576 * 8;

const yieldToLoop = () => new Promise<void>((r) => setImmediate(r));

export function encodeMp3(pcm: Int16Array): Promise<Buffer> {
  return encodeMp3From(pcm.length, (from, out) => out.set(pcm.subarray(from, from + out.length)));
}

/** `length` samples, each slice read into `out` by `read` just before it is encoded. */
export async function encodeMp3From(length: number, read: (from: number, out: Int16Array) => void): Promise<Buffer> {
  const enc = new Mp3Encoder(1, SAMPLE_RATE, KBPS);
  const parts: Uint8Array[] = [];
  for (let i = 0; i < length; i += SLICE) {
    const chunk = new Int16Array(Math.min(SLICE, length - i));
    read(i, chunk);
    const out = enc.encodeBuffer(chunk);
    if (out.length > 0) parts.push(Uint8Array.from(out));
    await yieldToLoop();
  }
  const tail = enc.flush();
  if (tail.length > 0) parts.push(Uint8Array.from(tail));
  return Buffer.concat(parts);
}

export const MP3_SAMPLE_RATE = SAMPLE_RATE;
