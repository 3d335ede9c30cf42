// One request to a customer's URL (the pre-call gate, in-call tools, webhook deliveries):
// https only, no credentials in the URL, redirects never followed (a 3xx is just the
// answer), one deadline over look-up, connect, TLS and the whole answer, and at most
// `maxResponseBytes` of the answer read. The address is checked where the connection
// is made: the socket's own `lookup` refuses loopback, private, link-local (and the
// other non-public ranges of url-safety.ts) unless ALLOW_PRIVATE_NETWORK_TARGETS, so
// there is no window between a check and the connect for DNS to change its answer.
import { request as httpsRequest, type Agent } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { nonPublicReason } from './url-safety.ts';

export type TargetFailure = 'invalid_url' | 'refused_address' | 'timeout' | 'network' | 'too_large';

/** Why a request to a customer URL got no usable answer; `kind` says which way it failed. */
export class TargetRequestError extends Error {
  constructor(
    readonly kind: TargetFailure,
    message: string,
    /** The HTTP status, when an answer had started (too_large). */
    readonly status: number | null = null,
  ) {
    super(message);
    this.name = 'TargetRequestError';
  }
}

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

/**
 * A `lookup` for the socket: resolves as the system would, then refuses the connection
 * when any address the name resolves to is not on the public internet (unless allowed).
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      if (!allowPrivate) {
        for (const a of addresses) {
          const why = nonPublicReason(a.address);
          if (why) return callback(new TargetRequestError('refused_address', `${hostname} resolves to ${why} (${a.address}); only public hosts are allowed`), '', 0);
        }
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** The URL, when it may be requested at all: https, no user name or password, and an IP literal only when public (or allowed). */
function targetUrl(url: string, allowPrivate: boolean): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TargetRequestError('invalid_url', 'not a valid URL');
  }
  if (parsed.protocol !== 'https:') throw new TargetRequestError('invalid_url', `must use https, not ${parsed.protocol.replace(/:$/, '')}`);
  if (parsed.username || parsed.password) throw new TargetRequestError('invalid_url', 'must not contain a user name or password');
  // An address literal is connected to without a look-up, so it is judged here.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!allowPrivate && isIP(host) !== 0) {
    const why = nonPublicReason(host);
    if (why) throw new TargetRequestError('refused_address', `${host} is ${why}; only public hosts are allowed`);
  }
  return parsed;
}

/** Sends the request; resolves with any HTTP answer (2xx or not), rejects with a TargetRequestError. */
export function requestTarget(url: string, opts: TargetRequestOptions): Promise<TargetResponse> {
  return new Promise((resolve, reject) => {
    let target: URL;
    try {
      target = targetUrl(url, opts.allowPrivate);
    } catch (err) {
      reject(err);
      return;
    }
    const body = typeof opts.body === 'string' ? Buffer.from(opts.body) : opts.body;
    let settled = false;
    const fail = (err: TargetRequestError) => {
      if (settled) return;
      settled = true;
      cleanup();
      req.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new TargetRequestError('timeout', `no complete answer within ${opts.timeoutMs} ms`)), opts.timeoutMs);
    const onAbort = () => fail(new TargetRequestError('network', 'the request was aborted'));
    const cleanup = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    };

    const req = httpsRequest(target, {
      method: opts.method ?? 'POST',
      headers: { ...opts.headers, 'content-length': String(body.length) },
      lookup: guardedLookup(opts.allowPrivate),
      agent: opts.agent ?? false,
    });
    if (opts.signal?.aborted) {
      onAbort();
      return;
    }
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    req.on('error', (err) => {
      const refused = err instanceof TargetRequestError ? err : findRefusal(err);
      fail(refused ?? new TargetRequestError('network', err.message));
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      const done = () => {
        if (settled) return;
        settled = true;
        cleanup();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated });
      };
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        const room = opts.maxResponseBytes - size;
        if (chunk.length > room) {
          if (opts.oversize !== 'truncate') {
            fail(new TargetRequestError('too_large', `the answer is longer than ${opts.maxResponseBytes} bytes`, res.statusCode ?? null));
            return;
          }
          if (room > 0) chunks.push(chunk.subarray(0, room));
          size = opts.maxResponseBytes;
          truncated = true;
          // Enough read: the rest is never downloaded.
          done();
          req.destroy();
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', done);
      res.on('error', (err) => fail(new TargetRequestError('network', err.message)));
      res.on('aborted', () => fail(new TargetRequestError('network', 'the answer was cut off')));
    });
    req.end(body);
  });
}

/** Node wraps a lookup error of a happy-eyeballs connect in an AggregateError. */
function findRefusal(err: unknown): TargetRequestError | null {
  if (err instanceof TargetRequestError) return err;
  if (err instanceof AggregateError) for (const e of err.errors) if (e instanceof TargetRequestError) return e;
  return null;
}
