// The bench reads the service's turn-latency histogram the way an operator's dashboard
// would: scraped from the real Metrics rendering, differenced between two scrapes, and
// interpolated inside a bucket. Checked against values whose quantiles are known.
import { describe, expect, it } from 'vitest';
import { Metrics } from '../metrics.ts';
import { histogramDelta, histogramQuantile, readHistogram } from './histogram.ts';

const NAME = 'switchboard_turn_latency_seconds';

/** Observes each engine latency (ms) as one turn, the way the engine reports it. */
function observe(m: Metrics, ms: number[]): void {
  for (const v of ms) m.observeTurn({ total: 0.9, engine: v / 1000 });
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('reading the turn-latency histogram', () => {
  it('interpolates quantiles inside the fine buckets below 50 ms', () => {
    const m = new Metrics();
    observe(m, range(1, 40)); // 1, 2, … 40 ms
    const h = readHistogram(m.render(), NAME, 'part="engine"');
    expect(h.count).toBe(40);
    expect(h.sum).toBeCloseTo(0.82, 6);
    // 20 of 40 are <= 20 ms, a bucket bound: the median is exactly there.
    expect(histogramQuantile(h, 0.5).value * 1000).toBeCloseTo(20, 6);
    // Rank 38 falls in (30, 40] ms, which holds 10: 30 + 10 * 8/10.
    expect(histogramQuantile(h, 0.95).value * 1000).toBeCloseTo(38, 6);
    // Within a millisecond of the true quantile wherever the buckets are 2.5 ms wide or less.
    expect(Math.abs(histogramQuantile(h, 0.3).value * 1000 - 12)).toBeLessThanOrEqual(1);
  });

  it('keeps the series apart by label', () => {
    const m = new Metrics();
    observe(m, [5, 5, 5]);
    const total = readHistogram(m.render(), NAME, 'part="total"');
    expect(total.count).toBe(3);
    expect(histogramQuantile(total, 0.5).value).toBeGreaterThan(0.75);
    expect(histogramQuantile(total, 0.5).value).toBeLessThanOrEqual(1);
  });

  it('takes one bench step out of a histogram that only grows', () => {
    const m = new Metrics();
    observe(m, range(30, 50));
    const before = readHistogram(m.render(), NAME, 'part="engine"');
    observe(m, [1, 1, 1, 1]);
    const step = histogramDelta(readHistogram(m.render(), NAME, 'part="engine"'), before);
    expect(step.count).toBe(4);
    expect(step.sum).toBeCloseTo(0.004, 9);
    expect(histogramQuantile(step, 0.99).value * 1000).toBeLessThanOrEqual(1);
  });

  it('says when a quantile is beyond the last finite bucket, and has none without observations', () => {
    const m = new Metrics();
    observe(m, [20_000, 30_000]);
    const h = readHistogram(m.render(), NAME, 'part="engine"');
    expect(histogramQuantile(h, 0.5)).toEqual({ value: 10, aboveTop: true });
    const none = readHistogram(m.render(), NAME, 'part="stt"');
    expect(none.count).toBe(0);
    expect(histogramQuantile(none, 0.5).value).toBeNaN();
  });
});
