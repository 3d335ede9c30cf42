// A small jitter buffer that puts carrier B audio back in order: carrier B does not
// guarantee frame order (carriers.md §6). Frames are ordered by `chunk`, not by
// `seq`: `seq` counts every message, so a dtmf or mark event leaves a hole in the
// audio's `seq` that no frame will ever fill, and each such hole would stall audio
// for a full window; `chunk` advances only with audio, so a hole is real loss.
//
// Invariants: frames are delivered in strictly increasing chunk order, each at most
// once; at most `window - 1` frames wait (so added latency is bounded by the window);
// a frame older than the last one delivered, or a duplicate, is dropped, since
// playing it late would garble the audio more than the gap it fills.

import type { AudioFrame } from './frames.ts';

export interface ReorderBuffer {
  /** Accepts one frame; calls `deliver` for it and any frames it unblocks, in order. */
  push(frame: AudioFrame): void;
  /** Delivers everything still waiting, in order (e.g. on stop); the next frame starts afresh. */
  flush(): void;
  /** Frames dropped as duplicates or as too late. */
  readonly dropped: number;
  /** Chunk numbers given up on (never arrived before the window moved past them). */
  readonly skipped: number;
}

/**
 * @param deliver called synchronously with each frame in order; the buffer keeps no
 *   reference to a frame once delivered.
 * @param window how many consecutive chunks are tracked (≥ 1; 1 means no reordering).
 * @param firstChunk the chunk a stream starts at (carrier A documents 1; carrier B's
 *   example fits 1 too). When the first frame to arrive is a later one, the buffer
 *   waits for the frames before it as for any gap, instead of dropping them as late.
 */
export function createReorderBuffer(deliver: (frame: AudioFrame) => void, window = 5, firstChunk = 1): ReorderBuffer {
  if (!Number.isInteger(window) || window < 1) throw new RangeError('createReorderBuffer: window must be an integer ≥ 1');
  const slots: (AudioFrame | undefined)[] = new Array<AudioFrame | undefined>(window).fill(undefined);
  let next = -1; // chunk expected next; -1 until the first frame
  let waiting = 0;
  let dropped = 0;
  let skipped = 0;

  /** Delivers the frame in `next`'s slot, if any, and moves past it. */
  function advance(): void {
    const i = next % window;
    const frame = slots[i];
    if (frame) {
      slots[i] = undefined;
      waiting--;
      deliver(frame);
    } else {
      skipped++;
    }
    next++;
  }

  return {
    push(frame) {
      const chunk = frame.chunk;
      if (next < 0) next = Math.min(chunk, Math.max(firstChunk, chunk - window + 1));
      if (chunk < next) {
        dropped++;
        return;
      }
      // Make room: everything more than a window behind this frame is now late.
      while (chunk >= next + window) {
        if (waiting === 0) {
          skipped += chunk - window + 1 - next;
          next = chunk - window + 1;
          break;
        }
        advance();
      }
      const i = chunk % window;
      if (slots[i]) {
        dropped++; // same chunk: slots only hold chunks in [next, next + window)
        return;
      }
      slots[i] = frame;
      waiting++;
      while (waiting > 0 && slots[next % window]) advance();
    },
    flush() {
      while (waiting > 0) advance();
      next = -1;
    },
    get dropped() {
      return dropped;
    },
    get skipped() {
      return skipped;
    },
  };
}
