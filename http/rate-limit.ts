// Fixed-window counters per bucket (a key's reads, a key's writes, an IP's attempts
// without a working key, an IP's key creations, recording downloads and carrier
// webhooks). In memory: one process serves everything, and a restart forgiving the
// current window is harmless. A request over the limit is not counted.
import { ApiError } from './errors.ts';

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

export interface RateLimitSettings {
  readsPerMin: number;
  writesPerMin: number;
  keyCreationPerHourPerIp: number;
  recordingsPerMin: number;
  carrierPerMin: number;
}

/** Routes limited per client IP alone (route.ts `rateLimit`): the public recording links, the carriers' webhooks. */
export type PerIpClass = 'recordings' | 'carrier';

/**
 * The service's buckets, made once (server.ts) and shared by every way in: HTTP requests
 * (pipeline.ts) and websocket upgrades (debug-ws.ts). Shared on purpose: with a limiter
 * per transport, a client guessing keys had one budget over HTTP and another over
 * upgrades (issue 18). Every attempt without a working key, whatever its method or
 * transport, counts in its client IP's one bucket, at the read limit.
 */
export class RateLimits {
  private readonly perMinute = new FixedWindowLimiter(60_000);
  private readonly perHour = new FixedWindowLimiter(3_600_000);

  constructor(readonly settings: RateLimitSettings) {}

  /** A request or upgrade with a working key: the key's read bucket, or its write bucket for a mutation. */
  keyed(keyId: string, write: boolean, now: number): RateDecision {
    return write
      ? this.perMinute.hit(`key:${keyId}:w`, this.settings.writesPerMin, now)
      : this.perMinute.hit(`key:${keyId}:r`, this.settings.readsPerMin, now);
  }

  /** An attempt without a working key (none, a wrong one, a revoked one): its client IP's bucket. */
  anonymous(ip: string, now: number): RateDecision {
    return this.perMinute.hit(`anon:${ip}`, this.settings.readsPerMin, now);
  }

  /** POST /v1/keys: its own hourly bucket per client IP. */
  keyCreation(ip: string, now: number): RateDecision {
    return this.perHour.hit(`keys:${ip}`, this.settings.keyCreationPerHourPerIp, now);
  }

  perIp(cls: PerIpClass, ip: string, now: number): RateDecision {
    const limit = cls === 'recordings' ? this.settings.recordingsPerMin : this.settings.carrierPerMin;
    return this.perMinute.hit(`${cls}:${ip}`, limit, now);
  }
}

/** The 429 of a bucket that is spent, with Retry-After and `details.retry_after`. */
export function rateLimitExceeded(d: RateDecision): ApiError {
  return new ApiError('rate_limit_exceeded', `Rate limit exceeded, try again in ${d.retryAfter} seconds.`, { retry_after: d.retryAfter }, { 'Retry-After': String(d.retryAfter) });
}
