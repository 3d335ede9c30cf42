// How an HTTP provider's failure becomes a ProviderError, for the OpenAI-compatible
// clients (model and speech): an error status with the provider's own message and its
// Retry-After, and a fetch that threw, told apart by who stopped it (our caller: not a
// failure; our own deadline: a timeout) before anything else counts as the provider
// being unreachable. Messages name the path, never our key (the provider's own message
// may mention it masked, as OpenAI's does).
import { kindOfStatus, ProviderError, retryAfterMs, type ProviderName } from './errors.ts';

/** Why we aborted a request ourselves, so the error can say so instead of "AbortError". */
export type OwnAbort = { reason: 'caller' } | { reason: 'timeout'; message: string } | null;

/** The error an HTTP answer with a non-2xx status stands for. Reads (and so releases) the body. */
export async function errorOfStatus(provider: ProviderName, what: string, res: Response): Promise<ProviderError> {
  let detail = '';
  try {
    detail = describeBody(await res.text());
  } catch {
    // The body broke off; the status alone says enough.
  }
  const status = res.status;
  // Azure and some gateways give the wait in ms; it is the more precise when both are sent.
  const ms = Number(res.headers.get('retry-after-ms'));
  const wait = Number.isFinite(ms) && ms > 0 ? ms : retryAfterMs(res.headers.get('retry-after'));
  return new ProviderError(provider, kindOfStatus(status), `${what}: HTTP ${status}${detail ? `: ${detail}` : ''}`, {
    status,
    ...(wait === undefined ? {} : { retryAfterMs: wait }),
  });
}

/**
 * The error a thrown fetch or body read stands for. `own` says whether we aborted it:
 * the caller's signal (barge-in, hang-up) is `aborted`, a deadline is `timeout`; any
 * other throw is the network (refused, reset, cut mid-body): `unavailable`.
 */
export function errorOfThrow(provider: ProviderName, what: string, err: unknown, own: OwnAbort): ProviderError {
  if (err instanceof ProviderError) return err;
  if (own?.reason === 'caller') return new ProviderError(provider, 'aborted', `${what}: cancelled`, { cause: err });
  if (own?.reason === 'timeout') return new ProviderError(provider, 'timeout', `${what}: ${own.message}`, { cause: err });
  return new ProviderError(provider, 'unavailable', `${what}: connection failed (${networkReason(err)})`, { cause: err });
}

/** The provider's error message out of an OpenAI-style body `{error: {message}}`, else the text, shortened. */
function describeBody(text: string): string {
  let message: unknown;
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    message = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
  } catch {
    message = text;
  }
  const s = typeof message === 'string' ? message.trim() : '';
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

/** The system error code behind a failed fetch (undici nests it in `cause`), else the message. */
export function networkReason(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e !== null && typeof e === 'object'; depth++) {
    const { code } = e as { code?: unknown };
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return err instanceof Error ? err.message : String(err);
}
