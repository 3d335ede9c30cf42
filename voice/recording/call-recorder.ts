// The two sides of a call as they were heard, on one timeline of 8 kHz samples: the
// caller's inbound media placed where it arrived, and the agent's audio placed where the
// carrier plays it (after what it already holds; a barge-in's `clear` drops what it had
// not played yet). Kept as μ-law bytes (one byte a sample, 0xFF is silence) and mixed once.
import { decodeMulaw } from '../audio/mulaw.ts';

const SILENCE = 0xff;
const RATE = 8; // samples a millisecond

class Track {
  buf = new Uint8Array(8000 * 30).fill(SILENCE);
  /** Samples written so far (the end of the furthest write). */
  length = 0;

  write(at: number, bytes: Uint8Array): void {
    this.reserve(at + bytes.length);
    this.buf.set(bytes, at);
    this.length = Math.max(this.length, at + bytes.length);
  }

  /** `n` bytes from `at`, silence past what was written. */
  bufAt(at: number, n: number): Uint8Array {
    if (at + n <= this.buf.length) return this.buf.subarray(at, at + n);
    const out = new Uint8Array(n).fill(SILENCE);
    if (at < this.buf.length) out.set(this.buf.subarray(at));
    return out;
  }

  /** Silences everything from `at` on (audio that was queued but never played). */
  cut(at: number): void {
    if (at >= this.length) return;
    this.buf.fill(SILENCE, at, this.length);
    this.length = at;
  }

  private reserve(n: number): void {
    if (n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(n, this.buf.length * 2)).fill(SILENCE);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }
}

export interface CallRecorder {
  /** Caller audio as it arrives from the carrier. */
  inbound(mulaw: Uint8Array): void;
  /** Agent audio handed to the carrier now; it plays after what the carrier still holds. */
  outbound(mulaw: Uint8Array): void;
  /** The carrier dropped what it had not played (barge-in). */
  clear(): void;
  /** Samples on the timeline so far (the longer side's end). */
  length(): number;
  /**
   * Both sides mixed into 16-bit PCM at 8 kHz, samples [from, from + out.length): a
   * finished call is mixed slice by slice as it is encoded (a ten-minute call mixed at
   * once held the event loop some 40 ms).
   */
  mixRange(from: number, out: Int16Array): void;
  /** Both sides mixed, whole (tests). */
  mix(): Int16Array;
}

/** `now` is a monotonic clock in ms (performance.now()). */
export function createCallRecorder(now: () => number): CallRecorder {
  const t0 = now();
  const pos = () => Math.max(0, Math.round((now() - t0) * RATE));
  const caller = new Track();
  const agent = new Track();
  let inNext: number | null = null;
  let outEnd = 0;
  return {
    inbound(mulaw) {
      // The carrier's stream is continuous: after the first packet, each follows the last.
      inNext ??= pos();
      caller.write(inNext, mulaw);
      inNext += mulaw.length;
    },
    outbound(mulaw) {
      const at = Math.max(outEnd, pos());
      agent.write(at, mulaw);
      outEnd = at + mulaw.length;
    },
    clear() {
      outEnd = Math.min(outEnd, pos());
      agent.cut(outEnd);
    },
    length: () => Math.max(caller.length, agent.length),
    mixRange(from, out) {
      const n = out.length;
      // Both tracks are reserved (silence) at least as far as the longer one was written.
      const a = decodeMulaw(caller.bufAt(from, n));
      const b = decodeMulaw(agent.bufAt(from, n));
      for (let i = 0; i < n; i++) {
        const s = a[i]! + b[i]!;
        out[i] = s > 32767 ? 32767 : s < -32768 ? -32768 : s;
      }
    },
    mix() {
      const out = new Int16Array(Math.max(caller.length, agent.length));
      this.mixRange(0, out);
      return out;
    },
  };
}
