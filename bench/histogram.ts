// Reading a Prometheus histogram from GET /metrics, as the benchmarks see the service
// from outside: the cumulative buckets of one series, the difference of two scrapes
// (what one bench step added, since the server's histograms only ever grow), and a
// quantile interpolated inside its bucket as Prometheus' histogram_quantile does, so
// the bench reports the same figure an operator's dashboard would.

/** One series' cumulative buckets: `le` upper bounds ascending (the last is +Infinity), counts of observations <= each. */
export interface HistogramSnapshot {
  le: number[];
  counts: number[];
  sum: number;
  count: number;
}

const EMPTY: HistogramSnapshot = { le: [], counts: [], sum: 0, count: 0 };

/**
 * The series of histogram `name` whose labels include `labels` (e.g. `part="engine"`),
 * from the text exposition format; empty (count 0) when the series does not exist yet.
 */
export function readHistogram(text: string, name: string, labels: string): HistogramSnapshot {
  const buckets: [number, number][] = [];
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || !line.includes(labels)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    const rest = line.slice(name.length);
    if (rest.startsWith('_bucket{')) {
      const le = /le="([^"]+)"/.exec(rest)?.[1];
      if (le !== undefined) buckets.push([le === '+Inf' ? Infinity : Number(le), value]);
    } else if (rest.startsWith('_sum{')) sum = value;
    else if (rest.startsWith('_count{')) count = value;
  }
  if (buckets.length === 0) return EMPTY;
  buckets.sort((a, b) => a[0] - b[0]);
  return { le: buckets.map((b) => b[0]), counts: buckets.map((b) => b[1]), sum, count };
}

/** What `after` holds that `before` did not (two scrapes of the same series). */
export function histogramDelta(after: HistogramSnapshot, before: HistogramSnapshot): HistogramSnapshot {
  if (before.count === 0) return after;
  if (before.le.length !== after.le.length || before.le.some((b, i) => b !== after.le[i])) {
    throw new Error('histogramDelta: the two scrapes have different buckets');
  }
  return {
    le: after.le,
    counts: after.counts.map((c, i) => c - before.counts[i]!),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/**
 * The q-quantile (0..1), interpolated linearly inside the bucket it falls in (the
 * first bucket's lower bound being 0), as histogram_quantile does. NaN without
 * observations; when it falls in the +Inf bucket, the highest finite bound (the real
 * value is somewhere above it: `aboveTop` says so).
 */
export function histogramQuantile(h: HistogramSnapshot, q: number): { value: number; aboveTop: boolean } {
  if (h.count === 0) return { value: NaN, aboveTop: false };
  const rank = q * h.count;
  for (let i = 0; i < h.le.length; i++) {
    const upper = h.le[i]!;
    const cumulative = h.counts[i]!;
    if (cumulative < rank) continue;
    if (upper === Infinity) return { value: h.le[i - 1] ?? NaN, aboveTop: true };
    const lower = i === 0 ? 0 : h.le[i - 1]!;
    const below = i === 0 ? 0 : h.counts[i - 1]!;
    const inBucket = cumulative - below;
    return { value: inBucket === 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket, aboveTop: false };
  }
  return { value: h.le.at(-1) ?? NaN, aboveTop: true };
}
