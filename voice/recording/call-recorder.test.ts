// The two sides of a call on one timeline: the caller's audio where it arrived, the
// agent's where the carrier plays it (after what it already holds), and a barge-in's
// `clear` cutting what was queued but never played.
import { describe, expect, it } from 'vitest';
import { encodeMulaw } from '../audio/mulaw.ts';
import { createCallRecorder } from './call-recorder.ts';

/** 20 ms of a constant level as μ-law. */
const frame = (level: number) => encodeMulaw(new Int16Array(160).fill(level));

function recorder() {
  let t = 0;
  const rec = createCallRecorder(() => t);
  return { rec, at: (ms: number) => (t = ms) };
}

/** The mix's mean level over [fromMs, toMs). */
function levelBetween(pcm: Int16Array, fromMs: number, toMs: number): number {
  let sum = 0;
  for (let i = fromMs * 8; i < toMs * 8; i++) sum += pcm[i]!;
  return Math.round(sum / ((toMs - fromMs) * 8));
}

describe('the call recorder', () => {
  it('places the caller’s frames one after the other from the first one’s arrival', () => {
    const { rec, at } = recorder();
    at(100);
    rec.inbound(frame(1000));
    at(105); // arrival jitter: the stream is continuous, so it follows the first frame
    rec.inbound(frame(2000));
    const pcm = rec.mix();
    expect(pcm.length).toBe(140 * 8);
    expect(levelBetween(pcm, 0, 100)).toBe(0);
    expect(Math.abs(levelBetween(pcm, 100, 120) - 1000)).toBeLessThan(40);
    expect(Math.abs(levelBetween(pcm, 120, 140) - 2000)).toBeLessThan(70);
  });

  it('places the agent’s audio after what the carrier still holds, mixed with the caller’s', () => {
    const { rec, at } = recorder();
    at(0);
    rec.outbound(frame(1000));
    rec.outbound(frame(1000)); // sent at once: it plays after the first frame
    rec.inbound(frame(500));
    const pcm = rec.mix();
    expect(pcm.length).toBe(40 * 8);
    expect(Math.abs(levelBetween(pcm, 0, 20) - 1500)).toBeLessThan(60);
    expect(Math.abs(levelBetween(pcm, 20, 40) - 1000)).toBeLessThan(40);
  });

  it('drops what a barge-in’s clear kept from being played', () => {
    const { rec, at } = recorder();
    at(0);
    for (let i = 0; i < 10; i++) rec.outbound(frame(1000)); // 200 ms queued at the carrier
    at(60);
    rec.clear(); // the carrier played 60 ms of it
    at(100);
    rec.inbound(frame(300));
    const pcm = rec.mix();
    expect(Math.abs(levelBetween(pcm, 0, 60) - 1000)).toBeLessThan(40);
    expect(levelBetween(pcm, 60, 100)).toBe(0);
    expect(Math.abs(levelBetween(pcm, 100, 120) - 300)).toBeLessThan(20);
    expect(pcm.length).toBe(120 * 8);
  });
});
