// Fixed-window counters per bucket (a key's reads, a key's writes, an IP's key
// creations). In memory: one process serves everything, and a restart forgiving the
// current window is harmless. A request over the limit is not counted.

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the window resets. */
  reset: number;
  /** Whole seconds to wait, at least 1; only meaningful when not allowed. */
  retryAfter: number;
}

interface Window {
  start: number;
  count: number;
}

export class FixedWindowLimiter {
  private readonly windows = new Map<string, Window>();
  private lastSweep = 0;

  constructor(private readonly windowMs: number) {}

  hit(bucket: string, limit: number, now: number): RateDecision {
    const start = now - (now % this.windowMs);
    if (now - this.lastSweep > this.windowMs) this.sweep(start);
    let w = this.windows.get(bucket);
    if (!w || w.start !== start) {
      w = { start, count: 0 };
      this.windows.set(bucket, w);
    }
    const resetMs = start + this.windowMs;
    const allowed = w.count < limit;
    if (allowed) w.count++;
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - w.count),
      reset: Math.ceil(resetMs / 1000),
      retryAfter: Math.max(1, Math.ceil((resetMs - now) / 1000)),
    };
  }

  /** Forgets windows that ended, so idle buckets do not accumulate. */
  private sweep(currentStart: number): void {
    this.lastSweep = currentStart;
    for (const [bucket, w] of this.windows) if (w.start < currentStart) this.windows.delete(bucket);
  }
}

export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(d.limit),
    'X-RateLimit-Remaining': String(d.remaining),
    'X-RateLimit-Reset': String(d.reset),
  };
}
