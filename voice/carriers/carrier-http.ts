// The one place the carrier REST clients touch the network: global fetch with a
// deadline, and the translation of every outcome into a parsed body or a typed
// CarrierError (errors.ts). Carrier-specific wire details stay in the clients.

import {
  CarrierAuthError,
  CarrierRequestError,
  CarrierUnreachableError,
  type CarrierErrorCode,
  type CarrierName,
} from './errors.ts';

export const DEFAULT_CARRIER_TIMEOUT_MS = 10_000;

export interface CarrierHttpRequest {
  carrier: CarrierName;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** Pulls the carrier's code and message out of a parsed error body (undefined when not JSON). */
  describeError: (body: unknown) => { code: CarrierErrorCode; message: string | null };
}

/** Resolves to the parsed JSON body of a 2xx answer (null when empty, e.g. 204). */
export async function carrierFetch(req: CarrierHttpRequest): Promise<unknown> {
  const { carrier, timeoutMs } = req;
  let res: Response;
  let text: string;
  try {
    // The signal also bounds reading the body, so a stalled stream counts as a timeout.
    res = await fetch(req.url, {
      method: req.method,
      headers: req.headers,
      ...(req.body === undefined ? {} : { body: req.body }),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'manual',
    });
    text = await res.text();
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
    const code = networkCode(err);
    const notSent = !timedOut && code !== null && NOT_SENT_CODES.has(code);
    const reason = timedOut ? `no answer within ${timeoutMs} ms` : `connection failed (${code ?? networkReason(err)})`;
    const kind = timedOut ? 'timeout' : notSent ? 'not-sent' : 'connection-lost';
    throw new CarrierUnreachableError(carrier, `${carrier} ${req.method} ${pathOf(req.url)}: ${reason}`, null, err, kind);
  }

  const parsed = parseJson(text);
  const { status } = res;
  if (status >= 200 && status < 300) {
    if (text.trim() === '') return null;
    if (parsed === undefined) {
      throw new CarrierUnreachableError(carrier, `${carrier} answered ${status} with a body that is not JSON`, status);
    }
    return parsed;
  }
  if (status >= 500 || status < 400) {
    // 5xx is the carrier's own trouble; a 1xx/3xx is never a valid API answer.
    throw new CarrierUnreachableError(carrier, `${carrier} answered HTTP ${status}`, status);
  }
  const { code, message } = req.describeError(parsed);
  const carrierError = parsed === undefined ? text : parsed;
  const msg = message ?? `${carrier} answered HTTP ${status}`;
  if (status === 401 || status === 403) throw new CarrierAuthError(carrier, status, code, msg, carrierError);
  throw new CarrierRequestError(carrier, status, code, msg, carrierError);
}

/** Joins a base URL that may end in a slash with a path that starts with one. */
export function joinUrl(baseUrl: string, path: string): string {
  return baseUrl.replace(/\/+$/, '') + path;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Network failures that happen before a single byte of the request is written: the TCP
 * connection was refused or never completed, or the host name did not resolve. A
 * request that failed this way cannot have been acted on by the carrier, so a dial
 * that fails so is "not placed" for certain (DialRejected `not-sent`). A reset or a
 * close after connecting (ECONNRESET, EPIPE, undici's "other side closed") and our
 * own timeout are not in the list: the request may have arrived.
 */
const NOT_SENT_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

/** The system error code behind a failed fetch (undici wraps it in `cause`, sometimes twice). */
function networkCode(err: unknown): string | null {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e !== null && typeof e === 'object'; depth++) {
    const { code, errors, cause } = e as { code?: unknown; errors?: unknown; cause?: unknown };
    // Happy eyeballs (several addresses tried) fails with an AggregateError: it counts
    // as "not sent" only when every attempt failed before connecting.
    if (Array.isArray(errors) && errors.length > 0) {
      const codes = errors.map(networkCode);
      return codes.every((c) => c !== null && NOT_SENT_CODES.has(c)) ? codes[0]! : (codes.find((c) => c !== null) ?? null);
    }
    if (typeof code === 'string' && code !== 'UND_ERR') return code;
    e = cause;
  }
  return null;
}

function networkReason(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  if (cause && typeof cause.code === 'string') return cause.code;
  return err instanceof Error ? err.message : String(err);
}

// Error messages name the path only: query strings can carry phone numbers.
function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}
