// 16-bit linear PCM as the engine handles it between the carrier's μ-law and the
// providers: frames that say their own sample rate (the phone line is 8 kHz, speech
// models like 16 kHz, OpenAI's TTS sends 24 kHz), the μ-law conversions with
// caller-owned buffers, and a reader for raw little-endian PCM arriving in HTTP body
// chunks of any length. Resampling between the rates is in resample.ts.
import { decodeMulaw, encodeMulaw } from './mulaw.ts';

/** The rates audio moves at: the phone line, speech recognisers and VAD, OpenAI TTS `pcm`. */
export type SampleRate = 8000 | 16000 | 24000;
export const SAMPLE_RATES: readonly SampleRate[] = [8000, 16000, 24000];

/** Samples with their rate, so audio at one rate is never mistaken for another. */
export interface PcmFrame {
  samples: Int16Array;
  sampleRate: SampleRate;
}

/** Samples in `ms` milliseconds of audio at `rate` (20 ms at 8 kHz: 160). */
export function samplesIn(ms: number, rate: SampleRate): number {
  return Math.round((ms * rate) / 1000);
}

/** Duration of a frame in milliseconds. */
export function frameMs(frame: PcmFrame): number {
  return (frame.samples.length * 1000) / frame.sampleRate;
}

/**
 * μ-law 8 kHz bytes to 8 kHz samples, into `out` when given (then nothing is
 * allocated; a longer `out` yields the view of its first `mulaw.length` samples).
 */
export function mulawToPcm(mulaw: Uint8Array, out?: Int16Array): Int16Array {
  return decodeMulaw(mulaw, out);
}

/**
 * 8 kHz samples to μ-law bytes, into `out` when given. A frame at another rate is
 * refused: μ-law on the line is 8 kHz, so it must be resampled first (resample.ts).
 */
export function pcmToMulaw(pcm: Int16Array | PcmFrame, out?: Uint8Array): Uint8Array {
  if (pcm instanceof Int16Array) return encodeMulaw(pcm, out);
  if (pcm.sampleRate !== 8000) throw new RangeError(`pcmToMulaw: ${pcm.sampleRate} Hz audio, μ-law is 8000 Hz (resample first)`);
  return encodeMulaw(pcm.samples, out);
}

/**
 * Little-endian 16-bit PCM bytes, in chunks of any length (an HTTP body splits where
 * it likes, odd byte counts included), to samples. The odd byte of a chunk is carried
 * over to the next one. The samples returned are a view into a buffer the reader
 * reuses: valid until the next `read`, copy them to keep them.
 */
export class Pcm16Reader {
  private buf = new Int16Array(0);
  // The low byte of a sample whose high byte has not arrived yet; -1 when none.
  private carry = -1;

  /** The samples completed by `chunk` (with the byte carried from the previous chunk). */
  read(chunk: Uint8Array): Int16Array {
    if (chunk.length === 0) return this.buf.subarray(0, 0);
    const carried = this.carry >= 0 ? 1 : 0;
    const total = chunk.length + carried;
    const n = total >> 1;
    // Grows to the largest chunk seen and stays: the body of one reply reuses it.
    if (this.buf.length < n) this.buf = new Int16Array(Math.max(n, this.buf.length * 2));
    const out = this.buf;
    let i = 0; // next byte of chunk
    let k = 0; // next sample
    if (carried) {
      out[k++] = ((this.carry | (chunk[0]! << 8)) << 16) >> 16;
      i = 1;
      this.carry = -1;
    }
    for (; k < n; k++, i += 2) out[k] = ((chunk[i]! | (chunk[i + 1]! << 8)) << 16) >> 16;
    if (total & 1) this.carry = chunk[chunk.length - 1]!;
    return out.subarray(0, n);
  }

  /** Whether half a sample is waiting for its other byte. */
  get pending(): boolean {
    return this.carry >= 0;
  }

  /** Forgets a half sample (the stream ended or was abandoned); true when there was one. */
  reset(): boolean {
    const had = this.carry >= 0;
    this.carry = -1;
    return had;
  }
}
