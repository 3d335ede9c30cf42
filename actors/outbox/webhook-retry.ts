// The outbox's pure decision (contract.md §9): after an attempt, is the delivery
// delivered, failed for good, or sent again, and when. No clock and no randomness of
// its own: `now` and `jitter` are parameters, so the property tests can drive it.
import type { AttemptOutcome } from '../../storage/webhook-deliveries.ts';

/** The waits after the 1st, 2nd, … failed attempt: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  14 * 3_600_000,
  20 * 3_600_000,
  24 * 3_600_000,
];

/** Each wait is spread over ±JITTER of itself, so deliveries that failed together do not all come back together. */
export const JITTER = 0.1;
/** The longest a `Retry-After` may push an attempt out: the schedule's own longest wait. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * What one attempt came to: an HTTP answer, or no answer (timeout, refused, TLS,
 * connection), or nothing left to send to (`abandon`: a CRM delivery whose number lost
 * its CRM integration), which fails at once like a 410.
 */
export type AttemptResult =
  | { kind: 'answer'; status: number; retryAfter?: string | undefined }
  | { kind: 'error'; message: string }
  | { kind: 'abandon'; message: string };

export interface RetryInput {
  /** Attempts made so far, this one included (1 after the first). */
  attempts: number;
  result: AttemptResult;
  now: number;
  /** Waits after each failed attempt; its length is the number of retries. */
  schedule: readonly number[];
  /** A number in [0, 1): where in the ±JITTER band this wait falls. */
  jitter: number;
}

/**
 * Parses `Retry-After`: seconds (`120`) or an HTTP date. Milliseconds from `now`,
 * at least 0, at most MAX_RETRY_AFTER_MS; null when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    // An HTTP date names its day and month ("Wed, 21 Oct 2015 07:28:00 GMT"); a bare
    // "-5" or "2026" would otherwise parse as a year.
    if (!/[A-Za-z]{3}/.test(text)) return null;
    const at = Date.parse(text);
    if (Number.isNaN(at)) return null;
    ms = at - now;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}

/** The wait after failed attempt number `attempts` (1-based), jittered. */
export function retryDelay(attempts: number, schedule: readonly number[], jitter: number): number {
  const base = schedule[Math.min(attempts, schedule.length) - 1] ?? 0;
  return Math.round(base * (1 - JITTER + 2 * JITTER * Math.min(Math.max(jitter, 0), 1)));
}

const isSuccess = (status: number): boolean => status >= 200 && status < 300;

/**
 * Decides what an attempt leads to: a 2xx is delivered; a 410 (Gone) fails at once;
 * anything else (another status, a 3xx, which is never followed, or no answer) is
 * retried after the schedule's next wait (`Retry-After` instead on a 429 or 503),
 * until the schedule is used up, and then fails.
 */
export function decideAfterAttempt(i: RetryInput): AttemptOutcome {
  const { result, now } = i;
  const statusCode = result.kind === 'answer' ? result.status : null;
  if (statusCode !== null && isSuccess(statusCode)) return { status: 'delivered', statusCode, at: now };
  const error = result.kind === 'answer' ? describeStatus(statusCode!) : result.message;
  if (statusCode === 410 || result.kind === 'abandon') return { status: 'failed', statusCode, error };
  if (i.attempts > i.schedule.length) return { status: 'failed', statusCode, error };
  const asked = statusCode === 429 || statusCode === 503 ? parseRetryAfter(result.kind === 'answer' ? result.retryAfter : undefined, now) : null;
  const wait = asked ?? retryDelay(i.attempts, i.schedule, i.jitter);
  return { status: 'pending', statusCode, error, nextAttemptAt: now + wait };
}

function describeStatus(status: number): string {
  if (status >= 300 && status < 400) return `answered ${status}; redirects are not followed`;
  if (status === 410) return 'answered 410 Gone; not retried';
  return `answered ${status}`;
}
