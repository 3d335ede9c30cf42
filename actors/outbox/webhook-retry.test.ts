// The outbox's pure retry decision, by properties: a 2xx is delivered, a 410 fails at
// once, anything else waits the schedule's next step (±10% jitter) or what Retry-After
// asks on a 429/503, and the schedule running out fails the delivery.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideAfterAttempt, DEFAULT_RETRY_SCHEDULE_MS, JITTER, MAX_RETRY_AFTER_MS, parseRetryAfter, type AttemptResult } from './webhook-retry.ts';

const now = fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 });
const jitter = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
const schedule = fc.array(fc.integer({ min: 1, max: 86_400_000 }), { minLength: 1, maxLength: 12 });
const failingStatus = fc.integer({ min: 100, max: 599 }).filter((s) => (s < 200 || s >= 300) && s !== 410);
const noAnswer = fc.string({ maxLength: 40 }).map((message): AttemptResult => ({ kind: 'error', message }));

describe('decideAfterAttempt', () => {
  it('has the schedule of contract.md §9: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h', () => {
    const h = 3_600_000;
    expect(DEFAULT_RETRY_SCHEDULE_MS).toEqual([5_000, 300_000, 1_800_000, 2 * h, 5 * h, 10 * h, 14 * h, 20 * h, 24 * h]);
  });

  it('a 2xx is delivered, whatever the attempt', () => {
    fc.assert(
      fc.property(fc.integer({ min: 200, max: 299 }), fc.integer({ min: 1, max: 50 }), schedule, now, jitter, (status, attempts, s, t, j) => {
        expect(decideAfterAttempt({ attempts, result: { kind: 'answer', status }, now: t, schedule: s, jitter: j })).toEqual({ status: 'delivered', statusCode: status, at: t });
      }),
    );
  });

  it('a 410 fails at once', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), schedule, now, jitter, (attempts, s, t, j) => {
        expect(decideAfterAttempt({ attempts, result: { kind: 'answer', status: 410 }, now: t, schedule: s, jitter: j })).toMatchObject({ status: 'failed', statusCode: 410 });
      }),
    );
  });

  it('nothing left to send to (a CRM delivery whose integration is gone) fails at once', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), schedule, now, jitter, (attempts, s, t, j) => {
        expect(decideAfterAttempt({ attempts, result: { kind: 'abandon', message: 'gone' }, now: t, schedule: s, jitter: j })).toEqual({ status: 'failed', statusCode: null, error: 'gone' });
      }),
    );
  });

  it('any other answer, or none, waits the next step of the schedule within ±10%, until the schedule is used up', () => {
    const result = fc.oneof(
      failingStatus.filter((s) => s !== 429 && s !== 503).map((status): AttemptResult => ({ kind: 'answer', status })),
      noAnswer,
    );
    fc.assert(
      fc.property(schedule, fc.integer({ min: 1, max: 14 }), result, now, jitter, (s, attempts, r, t, j) => {
        const out = decideAfterAttempt({ attempts, result: r, now: t, schedule: s, jitter: j });
        if (attempts > s.length) {
          expect(out.status).toBe('failed');
          return;
        }
        expect(out.status).toBe('pending');
        if (out.status !== 'pending') return;
        const base = s[attempts - 1]!;
        expect(out.nextAttemptAt - t).toBeGreaterThanOrEqual(Math.floor(base * (1 - JITTER)));
        expect(out.nextAttemptAt - t).toBeLessThanOrEqual(Math.ceil(base * (1 + JITTER)));
        expect(out.statusCode).toBe(r.kind === 'answer' ? r.status : null);
        expect(out.error).toEqual(expect.any(String));
      }),
    );
  });

  it('on a 429 or 503, Retry-After (seconds) decides the wait instead of the schedule, capped at 24 h', () => {
    fc.assert(
      fc.property(fc.constantFrom(429, 503), fc.integer({ min: 0, max: 200_000 }), schedule, now, jitter, (status, seconds, s, t, j) => {
        const out = decideAfterAttempt({ attempts: 1, result: { kind: 'answer', status, retryAfter: String(seconds) }, now: t, schedule: s, jitter: j });
        expect(out).toMatchObject({ status: 'pending', nextAttemptAt: t + Math.min(seconds * 1000, MAX_RETRY_AFTER_MS) });
      }),
    );
  });

  it('Retry-After on another status is not what decides', () => {
    const out = decideAfterAttempt({ attempts: 1, result: { kind: 'answer', status: 500, retryAfter: '3600' }, now: 0, schedule: [1000], jitter: 0.5 });
    expect(out).toMatchObject({ status: 'pending', nextAttemptAt: 1000 });
  });

  it('a 3xx is a failed attempt (redirects are not followed), said so', () => {
    const out = decideAfterAttempt({ attempts: 1, result: { kind: 'answer', status: 301 }, now: 0, schedule: [1000], jitter: 0.5 });
    expect(out).toMatchObject({ status: 'pending', statusCode: 301, error: expect.stringContaining('not followed') });
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, never below 0 or above 24 h, and nothing else', () => {
    const t = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('120', t)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', t)).toBe(0);
    expect(parseRetryAfter(new Date(t + 90_000).toUTCString(), t)).toBe(90_000);
    expect(parseRetryAfter(new Date(t - 90_000).toUTCString(), t)).toBe(0);
    expect(parseRetryAfter('999999999', t)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('soon', t)).toBeNull();
    expect(parseRetryAfter('-5', t)).toBeNull();
    expect(parseRetryAfter(undefined, t)).toBeNull();
  });
});
