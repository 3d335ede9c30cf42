// What a caller hears while the agent transfers them: a soft four-note chime played in a
// loop on the call's own playout (never silence, which callers take for a dropped line:
// complaint 7 of voice-anchors.md). The loop is made once per process as 8 kHz μ-law;
// the player keeps a little of it queued ahead of the carrier, and `stop` drops it at
// once (the agent speaks again after a failed transfer).
import { encodeMulaw } from '../audio/mulaw.ts';

const RATE = 8000;
/** C5 E5 G5 E5: each note 400 ms, 1.6 s a loop. */
const NOTES_HZ = [523.25, 659.25, 783.99, 659.25];
const NOTE_MS = 400;
/** A quarter of full scale at the peak: clearly there, never loud. */
const PEAK = 0.25 * 32767;
/** The envelope never falls below this share of the peak: the loop has no silent gap. */
const FLOOR = 0.35;

let loop: Uint8Array | null = null;

/** One loop of the hold chime, 8 kHz μ-law (made once). */
export function holdLoop(): Uint8Array {
  if (loop) return loop;
  const per = (RATE * NOTE_MS) / 1000;
  const pcm = new Int16Array(per * NOTES_HZ.length);
  NOTES_HZ.forEach((hz, n) => {
    for (let i = 0; i < per; i++) {
      // A struck-bell envelope: quick rise, slow decay to the floor.
      const t = i / per;
      const env = Math.min(1, t * 20) * (FLOOR + (1 - FLOOR) * Math.exp(-3 * t));
      const s = Math.sin((2 * Math.PI * hz * i) / RATE) + 0.3 * Math.sin((4 * Math.PI * hz * i) / RATE);
      pcm[n * per + i] = Math.round((PEAK / 1.3) * env * s);
    }
  });
  loop = encodeMulaw(pcm);
  return loop;
}

/** What the hold player needs of the call's playout. */
export interface HoldPlayout {
  enqueue(mulaw: Uint8Array, tag?: number): void;
  /** Audio queued and not sent yet, ms. */
  queuedMs(): number;
  /** Drops everything queued and clears the carrier's buffer. */
  clear(): void;
}

export interface HoldPlayer {
  readonly playing: boolean;
  start(): void;
  /** Tops the queue up; call it on every playout tick. */
  tick(): void;
  /** Stops at once: the queued chime is dropped. */
  stop(): void;
}

/** Audio kept queued while holding: enough to ride out a slow tick, little to drop on stop. */
const AHEAD_MS = 300;

export function createHoldPlayer(playout: HoldPlayout): HoldPlayer {
  const audio = holdLoop();
  let playing = false;
  return {
    get playing() {
      return playing;
    },
    start() {
      if (playing) return;
      playing = true;
      playout.enqueue(audio);
    },
    tick() {
      if (playing && playout.queuedMs() < AHEAD_MS) playout.enqueue(audio);
    },
    stop() {
      if (!playing) return;
      playing = false;
      playout.clear();
    },
  };
}
