// The hold chime: sound all the way through the loop (no silent gap a caller would take
// for a dropped line), kept a little ahead of the carrier, dropped at once on stop.
import { describe, expect, it } from 'vitest';
import { decodeMulaw } from '../audio/mulaw.ts';
import { createHoldPlayer, holdLoop } from './hold-audio.ts';

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / pcm.length) / 32768;
}

describe('hold audio', () => {
  it('is a 1.6 s loop with sound in every 50 ms of it, never loud', () => {
    const loop = holdLoop();
    expect(loop.length).toBe(8 * 1600);
    const pcm = decodeMulaw(loop);
    for (let i = 0; i + 400 <= pcm.length; i += 400) {
      const level = rms(pcm.subarray(i, i + 400));
      expect(level).toBeGreaterThan(0.03);
      expect(level).toBeLessThan(0.3);
    }
  });

  it('the player keeps about 300 ms queued while playing, and clears on stop', () => {
    let queued = 0;
    let clears = 0;
    const enqueued: number[] = [];
    const player = createHoldPlayer({
      enqueue: (m) => {
        enqueued.push(m.length);
        queued += m.length / 8;
      },
      queuedMs: () => queued,
      clear: () => {
        clears++;
        queued = 0;
      },
    });
    player.tick();
    expect(enqueued).toEqual([]);
    player.start();
    expect(enqueued).toEqual([12_800]);
    player.tick();
    expect(enqueued).toHaveLength(1);
    queued = 250;
    player.tick();
    expect(enqueued).toHaveLength(2);
    player.stop();
    expect([player.playing, clears, queued]).toEqual([false, 1, 0]);
    player.stop();
    expect(clears).toBe(1);
  });
});
