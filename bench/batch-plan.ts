// Pure helpers of the batch campaign benchmark (bench/batch.ts): the recipients' numbers,
// the request body, and the figures computed from what the simulator recorded. No I/O,
// so bench/batch-plan.test.ts can check them without a server.

/**
 * Recipient `i` (0 ≤ i < 1,000,000) of number block `block` (0 … 7): a distinct real US
 * number of San Francisco's 628 area, exchange 2xx for block 0, 3xx for block 1, … (an
 * exchange never starts with 0 or 1 under the North American plan), so libphonenumber-js
 * with its full metadata accepts it and the blocks never share a number.
 */
export function benchPhone(block: number, i: number): string {
  if (!Number.isInteger(block) || block < 0 || block > 7) throw new RangeError(`block must be 0 to 7, not ${block}`);
  if (!Number.isInteger(i) || i < 0 || i >= 1_000_000) throw new RangeError(`index must be 0 to 999999, not ${i}`);
  return `+1628${(2 + block) * 1_000_000 + i}`;
}

export interface BatchBodyOptions {
  agentId: string;
  fromNumber: string;
  name: string;
  /** Numbers of the recipients, in row order. */
  phones: readonly string[];
  /** Give each row `variables: {first_name}` (the agent's context), as a real list would. */
  variables: boolean;
  maxConcurrent?: number;
  /** `schedule_type: "schedule"` on this date (YYYY-MM-DD); else `now`. */
  scheduledDate?: string;
}

/** The JSON body of POST /v1/calls/batch. */
export function batchBody(o: BatchBodyOptions): string {
  return JSON.stringify({
    agent_id: o.agentId,
    from_number: o.fromNumber,
    name: o.name,
    prompt: 'Benchmark campaign: remind {first_name} of tomorrow’s appointment.',
    recipients: o.phones.map((phone, i) => (o.variables ? { phone, variables: { first_name: `R${i}` } } : { phone })),
    ...(o.maxConcurrent === undefined ? {} : { max_concurrent: o.maxConcurrent }),
    ...(o.scheduledDate === undefined ? { schedule_type: 'now' } : { schedule_type: 'schedule', scheduled_date: o.scheduledDate }),
  });
}

/** January 1st, `years` years after `now`'s year (UTC): a scheduled_date far enough ahead that the campaign waits. */
export function farDate(now: number, years = 5): string {
  return `${new Date(now).getUTCFullYear() + years}-01-01`;
}

/** The p-th percentile (nearest rank) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The most intervals open at one instant; an interval still open (end null) counts to the end. An end at t closes before a start at t. */
export function peakOverlap(intervals: readonly { start: number; end: number | null }[]): number {
  const edges: [number, number][] = [];
  for (const x of intervals) edges.push([x.start, 1], [x.end ?? Infinity, -1]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let up = 0;
  let peak = 0;
  for (const [, d] of edges) peak = Math.max(peak, (up += d));
  return peak;
}

/**
 * The rate of events over their middle part: from the event at `lo` of the way through
 * to the one at `hi` (shares of the count, 0.1 and 0.9 by default), so the ramp at the
 * start and the tail at the end do not weigh on it. Events per second; NaN when there are
 * too few events or no time between them.
 */
export function steadyRate(sortedTimesMs: readonly number[], lo = 0.1, hi = 0.9): number {
  const n = sortedTimesMs.length;
  if (n < 3) return NaN;
  const a = Math.floor(lo * (n - 1));
  const b = Math.ceil(hi * (n - 1));
  const span = sortedTimesMs[b]! - sortedTimesMs[a]!;
  return span > 0 ? ((b - a) / span) * 1000 : NaN;
}
