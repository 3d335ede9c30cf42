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
