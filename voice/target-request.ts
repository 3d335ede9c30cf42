// One request to a URL that came from outside (the pre-call gate, in-call tools, webhook
// deliveries, a carrier's recording link): https only, no credentials in the URL, one
// deadline over look-up, connect, TLS and the whole answer, and at most a bounded part of
// the answer read. The address is checked where the connection is made: the socket's own
// `lookup` refuses every address that is not public unicast (url-safety.ts) unless
// ALLOW_PRIVATE_NETWORK_TARGETS, so there is no window between a check and the connect
// for DNS to change its answer. A request never follows a redirect by itself; a download
// (target-download.ts) follows one only to a URL that passes the same checks.
//
// What went wrong is told to customers as a short category (TargetRequestError.kind and
// `publicMessage`), never as the socket's own message: that names addresses and ports,
// and would let a customer map hosts and ports the service can see.
import { request as httpsRequest, type Agent } from 'node:https';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { nonPublicReason } from './url-safety.ts';

/** Why a request to an outside URL got no usable answer, as a customer may be told. */
export type TargetFailure = 'invalid_url' | 'refused_address' | 'timeout' | 'connection_failed' | 'tls_error' | 'too_large';

/** What each failure means, in words without any address, port or socket detail. */
const PUBLIC_WORDS: Record<TargetFailure, string> = {
  invalid_url: 'the URL is not allowed',
  refused_address: 'the host is not on the public internet',
  timeout: 'no complete answer in time',
  connection_failed: 'the connection could not be made or was cut',
  tls_error: 'the TLS handshake failed (certificate or protocol)',
  too_large: 'the answer was too large',
};

/** Why a request to an outside URL got no usable answer; `kind` says which way it failed. */
export class TargetRequestError extends Error {
  constructor(
    readonly kind: TargetFailure,
    /** For the operator's log: may name the host and its address. */
    message: string,
    /** The HTTP status, when an answer had started (too_large). */
    readonly status: number | null = null,
    /** The customer-facing detail (the deadline, the size bound, the kind of address); defaults to the kind's words. */
    readonly detail: string = PUBLIC_WORDS[kind],
  ) {
    super(message);
    this.name = 'TargetRequestError';
  }

  /** `kind: detail`, with nothing a customer could use to probe the network. */
  get publicMessage(): string {
    return `${this.kind}: ${this.detail}`;
  }
}

/** The customer-facing text of any failure of a request (a non-TargetRequestError is a connection failure). */
export const publicFailure = (err: unknown): string => toTargetError(err).publicMessage;

export interface TargetResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** At most maxResponseBytes of the answer (all of it unless `oversize: 'truncate'` cut it). */
  body: Buffer;
  /** True when the answer was longer than maxResponseBytes and `oversize` was 'truncate'. */
  truncated: boolean;
}

export interface TargetRequestOptions {
  method?: 'POST' | 'PUT';
  headers?: Record<string, string>;
  body: string | Buffer;
  /** The whole exchange: look-up, connect, TLS, request and the answer's last byte. */
  timeoutMs: number;
  maxResponseBytes: number;
  /** Longer answers: 'error' (default) fails with too_large; 'truncate' keeps the first bytes. */
  oversize?: 'error' | 'truncate';
  /** ALLOW_PRIVATE_NETWORK_TARGETS. */
  allowPrivate: boolean;
  signal?: AbortSignal;
  /** A keep-alive agent of the caller's; by default every request has its own connection. */
  agent?: Agent;
}

/** Errors whose code says the TLS layer refused: a certificate, a name or the protocol. */
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|HOSTNAME_MISMATCH$|EPROTO$)/;

/** Any failure as a TargetRequestError: a refusal of our own lookup, a TLS failure, or a failed connection. */
export function toTargetError(err: unknown): TargetRequestError {
  if (err instanceof TargetRequestError) return err;
  // Node wraps a lookup error of a happy-eyeballs connect in an AggregateError.
  if (err instanceof AggregateError) for (const e of err.errors) if (e instanceof TargetRequestError) return e;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === 'string' && TLS_CODE.test(code)) return new TargetRequestError('tls_error', message);
  return new TargetRequestError('connection_failed', message);
}

/**
 * A `lookup` for the socket: resolves as the system would, then refuses the connection
 * when any address the name resolves to is not public unicast (unless allowed).
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      if (!allowPrivate) {
        for (const a of addresses) {
          const why = nonPublicReason(a.address);
          if (why) return callback(new TargetRequestError('refused_address', `${hostname} resolves to ${why} (${a.address}); only public hosts are allowed`, null, `the host resolves to ${why}; only public hosts are allowed`), '', 0);
        }
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/**
 * The URL, when it may be requested at all: https, no user name or password, and an IP
 * literal only when public (or allowed). `trustedOrigin` is an origin the operator
 * configured (a carrier's API base): there http is allowed and no address is judged.
 */
export function checkedTarget(url: string | URL, allowPrivate: boolean, trustedOrigin: string | null = null): URL {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    throw new TargetRequestError('invalid_url', 'not a valid URL');
  }
  if (trustedOrigin !== null && parsed.origin === trustedOrigin && !parsed.username && !parsed.password) return parsed;
  if (parsed.protocol !== 'https:') throw new TargetRequestError('invalid_url', `must use https, not ${parsed.protocol.replace(/:$/, '')}`, null, 'the URL must use https');
  if (parsed.username || parsed.password) throw new TargetRequestError('invalid_url', 'must not contain a user name or password', null, 'the URL must not contain a user name or password');
  // An address literal is connected to without a look-up, so it is judged here.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!allowPrivate && isIP(host) !== 0) {
    const why = nonPublicReason(host);
    if (why) throw new TargetRequestError('refused_address', `${host} is ${why}; only public hosts are allowed`, null, `the host is ${why}; only public hosts are allowed`);
  }
  return parsed;
}

export interface ExchangeOptions {
  method: 'GET' | 'POST' | 'PUT';
  headers: Record<string, string>;
  body: Buffer | null;
  /** When the exchange must be over (a performance.now() instant), whatever it is doing. */
  deadline: number;
  /** The deadline's length, for the timeout's message. */
  timeoutMs: number;
  /** ALLOW_PRIVATE_NETWORK_TARGETS; ignored for a URL at `trustedOrigin` (no address is judged there). */
  allowPrivate: boolean;
  trustedOrigin?: string | null;
  signal?: AbortSignal;
  agent?: Agent;
}

/** Reads an answer: resolves the exchange (`done`) or fails it (`fail`); `stop` ends the download early. */
export type AnswerReader<T> = (res: IncomingMessage, done: (value: T) => void, fail: (err: TargetRequestError) => void) => void;

/**
 * One HTTP exchange with a checked URL: the request, then `read` consumes the answer. The
 * deadline, the caller's abort and every socket error end it with a TargetRequestError;
 * whatever ends it destroys the request, so nothing more is downloaded.
 */
export function exchange<T>(url: URL, opts: ExchangeOptions, read: AnswerReader<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // Aborted before it began (an outbox stopping while the attempt prepared): no request at all.
    if (opts.signal?.aborted) {
      reject(new TargetRequestError('connection_failed', 'the request was aborted'));
      return;
    }
    let settled = false;
    const finish = (err: TargetRequestError | null, value?: T) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(value as T);
    };
    const timer = setTimeout(
      () => finish(new TargetRequestError('timeout', `no complete answer within ${opts.timeoutMs} ms`, null, `no complete answer within ${opts.timeoutMs} ms`)),
      Math.max(0, opts.deadline - performance.now()),
    );
    const onAbort = () => finish(new TargetRequestError('connection_failed', 'the request was aborted'));
    const trusted = opts.trustedOrigin != null && url.origin === opts.trustedOrigin;
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const req = send(url, {
      method: opts.method,
      headers: opts.body ? { ...opts.headers, 'content-length': String(opts.body.length) } : opts.headers,
      // The operator's own origin is reached as configured; everything else only at a public address.
      ...(trusted ? {} : { lookup: guardedLookup(opts.allowPrivate) }),
      agent: url.protocol === 'https:' ? (opts.agent ?? false) : false,
    });
    // Listened to before anything can destroy it: a destroyed request emits its error later.
    req.on('error', (err) => finish(toTargetError(err)));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('response', (res) => {
      res.on('error', (err) => finish(toTargetError(err)));
      res.on('aborted', () => finish(new TargetRequestError('connection_failed', 'the answer was cut off')));
      read(
        res,
        (value) => finish(null, value),
        (err) => finish(err),
      );
    });
    req.end(opts.body ?? undefined);
  });
}

/** Sends the request; resolves with any HTTP answer (2xx or not, a redirect included), rejects with a TargetRequestError. */
export function requestTarget(url: string, opts: TargetRequestOptions): Promise<TargetResponse> {
  let target: URL;
  try {
    target = checkedTarget(url, opts.allowPrivate);
  } catch (err) {
    return Promise.reject(err);
  }
  const max = opts.maxResponseBytes;
  return exchange<TargetResponse>(
    target,
    {
      method: opts.method ?? 'POST',
      headers: opts.headers ?? {},
      body: typeof opts.body === 'string' ? Buffer.from(opts.body) : opts.body,
      deadline: performance.now() + opts.timeoutMs,
      timeoutMs: opts.timeoutMs,
      allowPrivate: opts.allowPrivate,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.agent ? { agent: opts.agent } : {}),
    },
    (res, done, fail) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const answer = (truncated: boolean) => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated });
      res.on('data', (chunk: Buffer) => {
        const room = max - size;
        if (chunk.length <= room) {
          chunks.push(chunk);
          size += chunk.length;
          return;
        }
        if (opts.oversize !== 'truncate') {
          fail(new TargetRequestError('too_large', `the answer is longer than ${max} bytes`, res.statusCode ?? null, `the answer is longer than ${max} bytes`));
          return;
        }
        if (room > 0) chunks.push(chunk.subarray(0, room));
        size = max;
        // Enough read: answering ends the exchange, and the rest is never downloaded.
        answer(true);
        res.destroy();
      });
      res.on('end', () => answer(false));
    },
  );
}
