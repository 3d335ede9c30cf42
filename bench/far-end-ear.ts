// The benchmark's ear at the far end of one call: what the caller would hear of the
// agent, judged from when each piece of agent audio reached the carrier. The carrier
// plays audio in real time (8 μ-law bytes per ms) from the moment it arrives, so if a
// piece arrives after everything before it has finished playing, the caller heard
// silence in the middle of the agent's speech: an underrun, whatever its cause in the
// service (a late playout tick, a starved TTS stream, a blocked event loop). That is
// the user-visible truth the playout's own counter can only estimate.
//
// Utterances are told apart the way the service delimits them: each ends with a mark
// (sent right after its last frame) or is cut by a `clear`, so audio that arrives after
// a new mark or clear opens the next utterance, and the silence before it is a pause
// between turns, not a gap.
//
// The ear hears through the bench process's event loop: audio that reached the socket
// in time but was read late, because this process was itself stalled, looks like a gap.
// So each gap is kept as an interval, and `gapsHeard` later keeps only the part of each
// that no stall of this process can explain (loop-stalls.ts).
import type { StallLog } from './loop-stalls.ts';

const BYTES_PER_MS = 8;

export interface HeardGaps {
  /** Gaps the service is to blame for: silence heard before this process stalled (if it did at all). */
  gaps: number;
  /** The longest such silence, ms. */
  maxGapMs: number;
  /** Gaps wholly explained by a stall of this process (the audio may have arrived in time). */
  benchGaps: number;
}

export class FarEndEar {
  /** Agent utterances heard (the greeting and each reply). */
  utterances = 0;
  /** performance.now() when the current (or last) utterance's first audio arrived. */
  utteranceStartedAt = 0;
  /** Every gap inside an utterance, as [from, to] pairs, flat: from = when the carrier ran dry, to = when audio came again. */
  readonly gapIntervals: number[] = [];
  private inUtterance = false;
  private boundaries = 0;
  /** When the carrier will have played everything received so far. */
  private playEnd = 0;

  /**
   * Agent audio reached the carrier: `bytes` of μ-law at `now` (ms), `boundaries`
   * being how many marks and clears the service has sent on this stream so far.
   */
  arrived(bytes: number, now: number, boundaries: number): void {
    if (boundaries !== this.boundaries) {
      this.boundaries = boundaries;
      this.inUtterance = false;
    }
    if (!this.inUtterance) {
      this.inUtterance = true;
      this.utterances++;
      this.utteranceStartedAt = now;
      this.playEnd = now + bytes / BYTES_PER_MS;
      return;
    }
    if (now > this.playEnd) {
      this.gapIntervals.push(this.playEnd, now);
      this.playEnd = now;
    }
    this.playEnd += bytes / BYTES_PER_MS;
  }

  /** The gaps, with what stalls of the listening process explain taken out. */
  gapsHeard(stalls: StallLog): HeardGaps {
    const heard: HeardGaps = { gaps: 0, maxGapMs: 0, benchGaps: 0 };
    for (let i = 0; i < this.gapIntervals.length; i += 2) {
      const from = this.gapIntervals[i]!;
      const to = this.gapIntervals[i + 1]!;
      // Silence before the first stall that overlaps the gap was heard whatever the stall did.
      const stalledAt = stalls.firstStallIn(from, to);
      const unexplained = (stalledAt === null ? to : Math.max(from, stalledAt)) - from;
      if (unexplained > 0) {
        heard.gaps++;
        if (unexplained > heard.maxGapMs) heard.maxGapMs = unexplained;
      } else {
        heard.benchGaps++;
      }
    }
    return heard;
  }
}
