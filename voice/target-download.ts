// A GET of a file whose URL came from outside (a carrier's recording link in a callback),
// streamed into a sink under one deadline and a size bound. Every hop is checked the way
// target-request.ts checks a customer URL (https, no credentials, a public unicast address
// judged at connect), except at the one origin the operator configured for this source
// (`trustedOrigin`, e.g. TWILIO_API_BASE), which is reached as configured. Credentials
// (`trustedHeaders`) go to that origin only, never along a redirect that leaves it; a
// redirect is followed only to a URL that passes the same checks, at most `maxRedirects`.
import type { Agent } from 'node:https';
import type { Writable } from 'node:stream';
import { checkedTarget, exchange, TargetRequestError } from './target-request.ts';

export interface DownloadOptions {
  /** The origin the operator configured for this source, or null: every hop must then be public https. */
  trustedOrigin: string | null;
  /** Sent on every request (accept). */
  headers?: Record<string, string>;
  /** Sent only to `trustedOrigin` (the carrier account's credentials). */
  trustedHeaders?: Record<string, string>;
  /** ALLOW_PRIVATE_NETWORK_TARGETS. */
  allowPrivate: boolean;
  /** The whole download, every hop and the last byte included. */
  timeoutMs: number;
  /** More bytes than this fail with too_large; the rest is never downloaded. */
  maxBytes: number;
  maxRedirects: number;
  signal?: AbortSignal;
  agent?: Agent;
}

export type DownloadResult =
  /** The body went into the sink, which has been ended and has finished. */
  | { kind: 'saved'; status: number; bytes: number }
  /** A non-2xx answer (or a redirect past the bound, or without a Location); nothing was written. */
  | { kind: 'status'; status: number; retryAfter: string | undefined };

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Downloads `url` into `sink`. A sink's write that throws (a content check) ends the
 * download at once and rejects with that error; every other failure is a TargetRequestError.
 */
export async function downloadTarget(url: string, sink: Writable, opts: DownloadOptions): Promise<DownloadResult> {
  const deadline = performance.now() + opts.timeoutMs;
  let target = checkedTarget(url, opts.allowPrivate, opts.trustedOrigin);
  for (let hop = 0; ; hop++) {
    const trusted = opts.trustedOrigin !== null && target.origin === opts.trustedOrigin;
    /** Set when the sink refused the bytes: reported instead of the stopped exchange's error. */
    let contentError: unknown = null;
    const answer = await exchange<{ redirect: string } | DownloadResult>(
      target,
      {
        method: 'GET',
        headers: { ...opts.headers, ...(trusted ? opts.trustedHeaders : {}) },
        body: null,
        deadline,
        timeoutMs: opts.timeoutMs,
        allowPrivate: opts.allowPrivate,
        trustedOrigin: opts.trustedOrigin,
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.agent ? { agent: opts.agent } : {}),
      },
      (res, done, fail) => {
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (status < 200 || status > 299) {
          if (REDIRECTS.has(status) && typeof location === 'string' && hop < opts.maxRedirects) done({ redirect: location });
          else done({ kind: 'status', status, retryAfter: typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined });
          // Nothing of a refusal or a redirect is kept: the socket goes rather than the body coming (after the answer is settled).
          res.destroy();
          return;
        }
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > opts.maxBytes) {
            fail(new TargetRequestError('too_large', `the file is longer than ${opts.maxBytes} bytes`, status, `the file is longer than ${opts.maxBytes} bytes`));
            return;
          }
          try {
            // The sink's backpressure holds the download: a slow disk never fills memory.
            if (!sink.write(chunk)) {
              res.pause();
              sink.once('drain', () => res.resume());
            }
          } catch (err) {
            res.destroy();
            // Not a network failure: the sink judged the bytes (not the expected file).
            rejectWith(err);
          }
        });
        res.on('end', () => {
          // A sink that judges the whole file (its last frame, its length) says so when it ends.
          sink.end((err?: Error | null) => (err ? rejectWith(err) : done({ kind: 'saved', status, bytes })));
        });
        sink.once('error', (err) => rejectWith(err));
        let rejected = false;
        function rejectWith(err: unknown): void {
          if (rejected) return;
          rejected = true;
          contentError = err;
          fail(new TargetRequestError('connection_failed', 'the download was stopped by its sink'));
        }
      },
    ).catch((err: unknown) => {
      if (contentError !== null) throw contentError;
      throw err;
    });
    if (!('redirect' in answer)) return answer;
    let next: URL;
    try {
      next = new URL(answer.redirect, target);
    } catch {
      throw new TargetRequestError('invalid_url', 'the redirect’s Location is not a URL', null, 'the redirect’s Location is not a URL');
    }
    // The next hop passes the same checks as the first; credentials stay with the trusted origin.
    target = checkedTarget(next, opts.allowPrivate, opts.trustedOrigin);
  }
}
