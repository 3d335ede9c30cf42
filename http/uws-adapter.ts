// The one file that owns uWebSockets.js for HTTP (with its two helpers: close-answer.ts
// for answers that close the connection, file-body.ts for file bodies). Its rules:
// register onAborted before anything async; copy what we need out of `req` at once (it is
// stack-allocated and dies when the callback returns); copy every body chunk (uWS neuters
// it after the callback); cork every write made after the first tick; never end() a
// response with Connection: close (close-answer.ts says why); close the listen socket to stop.
import uWS from 'uWebSockets.js';
import { STATUS_CODES } from 'node:http';
import type { Logger } from 'pino';
import type { Exchange, Pipeline, RawRequest, RawResponse } from './pipeline.ts';
import { ApiError } from './errors.ts';
import { answerAndClose } from './close-answer.ts';
import { regionLength, sendFile } from './file-body.ts';

export interface HttpServerOptions {
  host: string;
  port: number;
  /**
   * All request bodies being read at one time may hold at most this many bytes together;
   * a request that would pass it is answered 503 server_busy with Retry-After.
   */
  maxInflightBodyBytes: number;
  /** The largest body one request may have (413 payload_too_large above it). */
  maxBodyBytes: number;
  /** How much of a refused request's body is read and thrown away before the socket closes. */
  lingerBytes: number;
  trustProxy: boolean;
  pipeline: Pipeline;
  log: Logger;
  /** Registers the service's websockets (the carriers' media streams) before the catch-all. */
  websockets?: (app: uWS.TemplatedApp) => void;
  /** Registers extra uWS routes (benchmarks, tests) before the catch-all. */
  configure?: (app: uWS.TemplatedApp) => void;
}

export interface HttpServer {
  app: uWS.TemplatedApp;
  port: number;
  /** Bytes of request bodies held in memory now (for tests and /metrics). */
  bufferedBodyBytes(): number;
  /** Stops accepting, lets in-flight requests finish (up to graceMs). */
  close(graceMs: number): Promise<void>;
}

const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Seconds a client is asked to wait when bodies in flight are at their bound. */
const BUSY_RETRY_AFTER_S = 1;
const statusLines = new Map<number, string>();
const statusLine = (status: number): string => {
  let line = statusLines.get(status);
  if (!line) {
    line = `${status} ${STATUS_CODES[status] ?? ''}`.trim();
    statusLines.set(status, line);
  }
  return line;
};

/** What the request line and headers say about the body, or why they cannot be trusted. */
interface Framing {
  /** Content-Length, or null when chunked or absent. */
  declared: number | null;
  chunked: boolean;
  /** Set when the framing is ambiguous: the request is refused and the socket closed. */
  malformed: string | null;
}

function readFraming(method: string, contentLength: string[] | null, transferEncoding: string | undefined): Framing {
  let declared: number | null = null;
  if (contentLength) {
    // One value, or repeats of one value (RFC 9110 8.6); anything else could be framed
    // differently by a proxy in front of us, which is how requests are smuggled.
    const first = contentLength[0]!.trim();
    if (contentLength.some((v) => v.trim() !== first)) return { declared: null, chunked: false, malformed: 'The request has conflicting Content-Length headers.' };
    if (!/^\d{1,15}$/.test(first)) return { declared: null, chunked: false, malformed: 'Content-Length must be a whole number of bytes.' };
    declared = Number(first);
  }
  if (transferEncoding !== undefined) {
    // The parser reads every Transfer-Encoding as chunked; gzip or any other coding would
    // reach handlers undecoded. Only `chunked` alone is accepted (RFC 9112 6.1).
    if (transferEncoding.trim().toLowerCase() !== 'chunked') {
      return { declared: null, chunked: false, malformed: `Transfer-Encoding "${transferEncoding}" is not supported; send the body with Content-Length or Transfer-Encoding: chunked alone.` };
    }
    return { declared: null, chunked: true, malformed: null };
  }
  if (BODYLESS.has(method)) return { declared: null, chunked: false, malformed: null };
  return { declared, chunked: false, malformed: null };
}

export function startHttpServer(opts: HttpServerOptions): Promise<HttpServer> {
  const app = uWS.App();
  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | null = null;
  /** Bytes reserved by bodies being read or handled now. */
  let bufferedBodies = 0;

  /**
   * Writes an answer. A closing one (`close`, or any answer while shutting down) goes
   * through answerAndClose: the socket is closed before uWS parses another byte of it, so
   * nothing pipelined behind the request can run. HEAD answers carry the length of the
   * body a GET would get, and no body: a body would be read by the client as the start of
   * the next response. (This uWS build's endWithoutBody(length) never completes the
   * response, so the length is written as a header and the response ended without one.)
   * A file region is streamed with backpressure (file-body.ts), also while shutting down:
   * it is written after the parse loop, and a streamed response cannot be closed once
   * ended, so it does not say close (the process ends it at the end of the grace period).
   */
  function send(res: uWS.HttpResponse, aborted: { v: boolean }, out: RawResponse, close: boolean, head: boolean): void {
    if (close || (draining && !out.file)) {
      answerAndClose(res, statusLine(out.status), out.headers, out.body, head);
      return;
    }
    if (out.file && !head) {
      inFlight++;
      sendFile(res, aborted, statusLine(out.status), out.headers, out.file, () => {
        inFlight--;
        settle();
      });
      return;
    }
    res.cork(() => {
      res.writeStatus(statusLine(out.status));
      for (const name in out.headers) res.writeHeader(name, out.headers[name]!);
      if (head) {
        res.writeHeader('Content-Length', String(out.file ? regionLength(out.file) : Buffer.byteLength(out.body)));
        res.endWithoutBody();
      } else res.end(out.body);
    });
  }

  function settle(): void {
    if (inFlight === 0 && drained) drained();
  }

  function deliver(res: uWS.HttpResponse, aborted: { v: boolean }, head: boolean, out: RawResponse | Promise<RawResponse>, release: number): void {
    if (!(out instanceof Promise)) {
      bufferedBodies -= release;
      if (!aborted.v) send(res, aborted, out, false, head);
      settle();
      return;
    }
    inFlight++;
    out
      .then((done) => {
        if (!aborted.v) send(res, aborted, done, false, head);
      })
      .catch((err: unknown) => {
        opts.log.error({ err }, 'pipeline failed');
        if (!aborted.v) send(res, aborted, failure(), true, head);
      })
      .finally(() => {
        bufferedBodies -= release;
        inFlight--;
        settle();
      });
  }

  /**
   * Answers a request refused before its body was read. The body is read and thrown
   * away (never held) up to `lingerBytes`, then the answer goes out on a connection
   * still in step; a body longer than that gets the answer with Connection: close. Read
   * first, answer after: a socket closed with unread data resets the connection, and the
   * reset destroys the answer before a client that writes its whole body first reads it.
   */
  function refuseAndDiscard(res: uWS.HttpResponse, aborted: { v: boolean }, out: RawResponse, framing: Framing, head: boolean): void {
    const expectsBody = framing.chunked || (framing.declared !== null && framing.declared > 0);
    if (!expectsBody) {
      if (!aborted.v) send(res, aborted, out, false, head);
      return;
    }
    if (framing.declared !== null && framing.declared > opts.lingerBytes) {
      if (!aborted.v) send(res, aborted, out, true, head);
      return;
    }
    let discarded = 0;
    let answered = false;
    res.onData((chunk, isLast) => {
      if (answered) return;
      discarded += chunk.byteLength;
      if (isLast || discarded > opts.lingerBytes) {
        answered = true;
        if (!aborted.v) send(res, aborted, out, !isLast, head);
      }
    });
  }

  opts.websockets?.(app);
  opts.configure?.(app);

  app.any('/*', (res, req) => {
    const aborted = { v: false };
    res.onAborted(() => {
      aborted.v = true;
    });
    const method = req.getMethod().toUpperCase();
    const head = method === 'HEAD';
    const headers: Record<string, string> = {};
    let contentLength: string[] | null = null;
    req.forEach((k, v) => {
      if (k === 'content-length') (contentLength ??= []).push(v);
      else if (k in headers) headers[k] += `, ${v}`;
      else headers[k] = v;
    });
    if (contentLength) headers['content-length'] = (contentLength as string[])[0]!;
    const forwarded = opts.trustProxy ? headers['x-forwarded-for']?.split(',')[0]?.trim() : undefined;
    const raw: RawRequest = {
      method,
      path: req.getUrl(),
      query: req.getQuery() ?? '',
      headers,
      ip: forwarded || Buffer.from(res.getRemoteAddressAsText()).toString(),
    };
    const framing = readFraming(method, contentLength, headers['transfer-encoding']);
    if (framing.malformed) {
      // The body's end is not known, so nothing after it can be read as a request: close.
      const out = opts.pipeline.refuse(raw, new ApiError('malformed_request', framing.malformed));
      send(res, aborted, out, true, head);
      return;
    }

    const x = opts.pipeline.begin(raw, framing.declared);
    if (x.response) {
      refuseAndDiscard(res, aborted, x.response, framing, head);
      return;
    }
    if (!framing.chunked && !framing.declared) {
      deliver(res, aborted, head, x.complete(null), 0);
      return;
    }
    if (BODYLESS.has(method)) {
      // A GET, HEAD or OPTIONS body means nothing (RFC 9110 9.3.1): read past it, keep none of it.
      let skipped = 0;
      let answered = false;
      res.onData((chunk, isLast) => {
        if (answered) return;
        skipped += chunk.byteLength;
        if (isLast) {
          answered = true;
          deliver(res, aborted, head, x.complete(null), 0);
        } else if (skipped > opts.lingerBytes) {
          answered = true;
          const out = x.reject(new ApiError('payload_too_large')).response!;
          if (!aborted.v) send(res, aborted, out, true, head);
        }
      });
      return;
    }
    // A declared body reserves its whole length before a byte is read; a chunked one
    // reserves as it arrives. The reservation is released once the answer is written.
    let reserved = framing.declared ?? 0;
    if (bufferedBodies + reserved > opts.maxInflightBodyBytes) {
      refuseAndDiscard(res, aborted, busy(x), framing, head);
      return;
    }
    bufferedBodies += reserved;
    const chunks: Buffer[] = [];
    let size = 0;
    let mode: 'keep' | 'discard' | 'done' = 'keep';
    let answer: RawResponse | null = null;
    let discarded = 0;
    res.onAborted(() => {
      aborted.v = true;
      if (mode === 'keep') {
        bufferedBodies -= reserved;
        mode = 'done';
      }
    });
    res.onData((chunk, isLast) => {
      if (mode === 'done') return;
      if (mode === 'keep') {
        size += chunk.byteLength;
        if (size > reserved) {
          const more = size - reserved;
          if (size > opts.maxBodyBytes || bufferedBodies + more > opts.maxInflightBodyBytes) {
            // Past the body limit or the memory bound: drop what was kept, read on, answer at the end.
            bufferedBodies -= reserved;
            chunks.length = 0;
            answer = size > opts.maxBodyBytes ? x.reject(new ApiError('payload_too_large')).response : busy(x);
            mode = 'discard';
          } else {
            bufferedBodies += more;
            reserved = size;
          }
        }
        if (mode === 'keep') {
          chunks.push(Buffer.from(chunk.slice(0)));
          if (isLast) {
            mode = 'done';
            deliver(res, aborted, head, x.complete(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)), reserved);
          }
          return;
        }
      }
      discarded += chunk.byteLength;
      if (isLast || discarded > opts.lingerBytes) {
        mode = 'done';
        const out = answer!;
        if (!aborted.v) send(res, aborted, out, !isLast, head);
      }
    });
  });

  /** The answer when the pipeline itself failed (a defect): the envelope, and the connection closed. */
  function failure(): RawResponse {
    return {
      status: 500,
      headers: { 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff' },
      body: JSON.stringify(new ApiError('server_error').toBody()),
    };
  }

  function busy(x: Exchange): RawResponse {
    x.reject(new ApiError('server_busy', undefined, { retry_after: BUSY_RETRY_AFTER_S }, { 'Retry-After': String(BUSY_RETRY_AFTER_S) }));
    return x.response!;
  }

  return new Promise((resolve, reject) => {
    app.listen(opts.host, opts.port, (socket) => {
      if (!socket) {
        reject(new Error(`could not listen on ${opts.host}:${opts.port}`));
        return;
      }
      const port = uWS.us_socket_local_port(socket);
      resolve({
        app,
        port,
        bufferedBodyBytes: () => bufferedBodies,
        close(graceMs: number): Promise<void> {
          draining = true;
          uWS.us_listen_socket_close(socket);
          if (inFlight === 0) return Promise.resolve();
          return new Promise<void>((done) => {
            const timer = setTimeout(done, graceMs);
            drained = () => {
              clearTimeout(timer);
              done();
            };
          });
        },
      });
    });
  });
}
