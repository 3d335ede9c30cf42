// Every provider failure is one typed error that says whether trying again can help,
// so the engine decides between a retry, the fallback line and ending the call
// without knowing any provider's wire details.

export type ProviderName = 'llm' | 'stt' | 'tts';

/**
 * - `auth`: the key was refused (401/403); retrying cannot help.
 * - `bad_request`: the provider refused what we sent (400/404/422); retrying the same cannot help.
 * - `rate_limited`: 429; a retry after `retryAfterMs` may help.
 * - `unavailable`: 5xx, connection refused or reset; a retry may help.
 * - `timeout`: no first byte / no progress within the deadline; a retry may help.
 * - `protocol`: the provider answered something we cannot read; retrying rarely helps.
 * - `aborted`: we cancelled it ourselves (barge-in, hang-up); not a failure.
 */
export type ProviderErrorKind = 'auth' | 'bad_request' | 'rate_limited' | 'unavailable' | 'timeout' | 'protocol' | 'aborted';

export class ProviderError extends Error {
  readonly provider: ProviderName;
  readonly kind: ProviderErrorKind;
  /** True when the same request may succeed if sent again. */
  readonly retryable: boolean;
  /** HTTP status or websocket close code, when there was one. */
  readonly status: number | undefined;
  /** From `Retry-After`, when the provider sent it. */
  readonly retryAfterMs: number | undefined;

  constructor(provider: ProviderName, kind: ProviderErrorKind, message: string, opts: { status?: number; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ProviderError';
    this.provider = provider;
    this.kind = kind;
    this.retryable = kind === 'rate_limited' || kind === 'unavailable' || kind === 'timeout';
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
  }
}

/** The error kind an HTTP status means. */
export function kindOfStatus(status: number): ProviderErrorKind {
  if (status === 401 || status === 403) return 'auth';
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  if (status >= 500) return 'unavailable';
  return 'bad_request';
}

/** `Retry-After` as milliseconds (seconds or an HTTP date), or undefined. */
export function retryAfterMs(header: string | null, now: number = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export const isAborted = (err: unknown): boolean => err instanceof ProviderError && err.kind === 'aborted';
