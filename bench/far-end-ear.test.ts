// The far end's ear: a caller hears a gap when the agent's audio runs out mid-utterance,
// not between utterances, and a gap that a stall of the listening process alone explains
// is not blamed on the service. Arrival times are given directly (ms), as the bench's
// media client stamps them.
import { describe, expect, it } from 'vitest';
import { FarEndEar } from './far-end-ear.ts';
import { stallLogOf } from './loop-stalls.ts';

const FRAME = 160; // 20 ms of μ-law
const NO_STALLS = stallLogOf([]);

/** An utterance as the playout sends it: three frames at once (the 60 ms lead), then one frame every 20 ms. */
function speak(ear: FarEndEar, at: number, frames: number, boundaries: number, late: Map<number, number> = new Map()): number {
  for (let i = 0; i < frames; i++) {
    const t = at + Math.max(0, i - 2) * 20 + (late.get(i) ?? 0);
    ear.arrived(FRAME, t, boundaries);
  }
  return at + frames * 20;
}

describe('the far end hears the agent', () => {
  it('hears no gap in audio paced ahead of real time, and counts each utterance', () => {
    const ear = new FarEndEar();
    const end = speak(ear, 1000, 100, 0);
    // The utterance's mark, then a pause of seconds, then the next utterance: not a gap.
    speak(ear, end + 3000, 50, 1);
    expect(ear.utterances).toBe(2);
    expect(ear.gapIntervals).toEqual([]);
    expect(ear.gapsHeard(NO_STALLS)).toEqual({ gaps: 0, maxGapMs: 0, benchGaps: 0 });
  });

  it('hears a gap when a frame comes after the carrier has played everything before it', () => {
    const ear = new FarEndEar();
    // Frame 10 is 70 ms late: the 40 ms held at the carrier when it was due ran out 30 ms before it.
    speak(ear, 1000, 30, 0, new Map([[10, 70]]));
    const heard = ear.gapsHeard(NO_STALLS);
    expect(heard.gaps).toBe(1);
    expect(heard.maxGapMs).toBeCloseTo(30, 6);
    expect(ear.gapIntervals).toEqual([1200, 1230]);
  });

  it('hears frames late by less than what the carrier holds as no gap', () => {
    const ear = new FarEndEar();
    speak(ear, 1000, 30, 0, new Map([[10, 35]]));
    expect(ear.gapsHeard(NO_STALLS).gaps).toBe(0);
  });

  it('does not blame the service for silence a stall of the listening process explains', () => {
    const ear = new FarEndEar();
    speak(ear, 1000, 30, 0, new Map([[10, 70]])); // gap [1200, 1230]
    // This process stalled from before the carrier ran dry until after: the audio may have been on time.
    expect(ear.gapsHeard(stallLogOf([1180, 1230]))).toEqual({ gaps: 0, maxGapMs: 0, benchGaps: 1 });
    // It stalled only 15 ms into the gap: those 15 ms of silence were heard regardless.
    const partly = ear.gapsHeard(stallLogOf([1215, 1230]));
    expect(partly.gaps).toBe(1);
    expect(partly.maxGapMs).toBeCloseTo(15, 6);
    // A stall elsewhere explains nothing.
    expect(ear.gapsHeard(stallLogOf([500, 900, 1300, 1400])).gaps).toBe(1);
  });
});
