// What a carrier does with the audio the service sends on a media stream, shared by
// both simulators: audio plays in real time (8 bytes of μ-law per ms), a `mark` comes
// back once the audio queued before it has played, and `clear` drops the queue and
// returns every pending mark at once (carriers.md §4, §6).
import { encodeMulaw } from '../../voice/audio/mulaw.ts';

export const BYTES_PER_MS = 8;

/** A sine tone as 8 kHz μ-law at a quarter of full scale: the default far-end voice. */
export function mulawTone(hz: number, ms: number): Uint8Array {
  const samples = new Int16Array(Math.round(ms * BYTES_PER_MS));
  const step = (2 * Math.PI * hz) / 8000;
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(8192 * Math.sin(step * i));
  return encodeMulaw(samples);
}

export class FarEndPlayback {
  /** Audio payloads the service sent, in order. */
  readonly audio: Uint8Array[] = [];
  /** Names of the marks the service sent. */
  readonly marks: string[] = [];
  clears = 0;
  // When the audio queued so far will have finished playing (performance.now() ms).
  private playbackEnd = 0;
  private readonly pending: { name: string; timer: NodeJS.Timeout }[] = [];

  constructor(private readonly returnMark: (name: string) => void) {}

  audioArrived(bytes: Uint8Array, now: number): void {
    this.audio.push(bytes);
    this.playbackEnd = Math.max(this.playbackEnd, now) + bytes.length / BYTES_PER_MS;
  }

  markArrived(name: string, now: number): void {
    this.marks.push(name);
    const wait = this.playbackEnd - now;
    if (wait <= 0 && this.pending.length === 0) {
      this.returnMark(name);
      return;
    }
    const entry = {
      name,
      timer: setTimeout(() => {
        this.pending.splice(this.pending.indexOf(entry), 1);
        this.returnMark(name);
      }, Math.max(0, wait)),
    };
    this.pending.push(entry);
  }

  clearArrived(now: number): void {
    this.clears++;
    this.playbackEnd = now;
    for (const entry of this.pending.splice(0)) {
      clearTimeout(entry.timer);
      this.returnMark(entry.name);
    }
  }

  /** The stream closed: pending marks never come back. */
  close(): void {
    for (const entry of this.pending.splice(0)) clearTimeout(entry.timer);
  }
}

/**
 * The far end's voice for a conversation: silence (μ-law 0xFF) until the test says
 * something, then those bytes frame by frame in real time, then silence again. Given as
 * a media client's `audio` in place of a looped tone.
 */
export class FarEndVoice {
  private readonly queue: Uint8Array[] = [];
  private offset = 0;
  private waiters: (() => void)[] = [];
  /** performance.now() when the last queued speech finished playing (its last frame sent). */
  lastSpokeAt = 0;

  /** Queues μ-law 8 kHz audio to speak after anything already queued. */
  say(mulaw: Uint8Array): Promise<void> {
    this.queue.push(mulaw);
    return this.done();
  }

  get speaking(): boolean {
    return this.queue.length > 0;
  }

  /** Resolves once everything queued has been sent. */
  done(): Promise<void> {
    if (this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Fills one frame: queued speech, else silence. */
  fill(frame: Uint8Array): void {
    for (let i = 0; i < frame.length; i++) {
      const current = this.queue[0];
      if (!current) {
        frame[i] = 0xff;
        continue;
      }
      frame[i] = current[this.offset++]!;
      if (this.offset >= current.length) {
        this.queue.shift();
        this.offset = 0;
        if (this.queue.length === 0) {
          this.lastSpokeAt = performance.now();
          const waiters = this.waiters;
          this.waiters = [];
          // After this frame is on the wire.
          setImmediate(() => waiters.forEach((w) => w()));
        }
      }
    }
  }
}

/** A media client's far-end audio: a looped recording, or a scripted voice. */
export type FarEndAudio = Uint8Array | FarEndVoice;
