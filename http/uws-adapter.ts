// The one file that owns uWebSockets.js for HTTP. Its rules: register onAborted
// before anything async; copy what we need out of `req` at once (it is stack-allocated
// and dies when the callback returns); copy every body chunk (uWS neuters it after the
// callback); cork every write made after the first tick; close the listen socket to stop.
import uWS from 'uWebSockets.js';
import { STATUS_CODES } from 'node:http';
import type { Logger } from 'pino';
import type { Pipeline, RawRequest, RawResponse } from './pipeline.ts';

export interface HttpServerOptions {
  host: string;
  port: number;
  maxBodyBytes: number;
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
  /** Stops accepting, lets in-flight requests finish (up to graceMs). */
  close(graceMs: number): Promise<void>;
}

const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS']);
const statusLines = new Map<number, string>();
const statusLine = (status: number): string => {
  let line = statusLines.get(status);
  if (!line) {
    line = `${status} ${STATUS_CODES[status] ?? ''}`.trim();
    statusLines.set(status, line);
  }
  return line;
};

export function startHttpServer(opts: HttpServerOptions): Promise<HttpServer> {
  const app = uWS.App();
  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | null = null;

  // An unread oversized body would be parsed as the next request: close instead.
  function write(res: uWS.HttpResponse, out: RawResponse, close: boolean): void {
    res.writeStatus(statusLine(out.status));
    for (const name in out.headers) res.writeHeader(name, out.headers[name]!);
    res.end(out.body, close || draining);
  }

  function dispatch(res: uWS.HttpResponse, aborted: { v: boolean }, raw: RawRequest): void {
    let out: RawResponse | Promise<RawResponse>;
    try {
      out = opts.pipeline.handle(raw);
    } catch (err) {
      opts.log.error({ err }, 'pipeline failed');
      out = { status: 500, headers: {}, body: '' };
    }
    if (!(out instanceof Promise)) {
      if (!aborted.v) res.cork(() => write(res, out as RawResponse, raw.bodyTooLarge));
      if (inFlight === 0 && drained) drained();
      return;
    }
    inFlight++;
    out
      .then((done) => {
        if (!aborted.v) res.cork(() => write(res, done, raw.bodyTooLarge));
      })
      .catch((err: unknown) => {
        opts.log.error({ err }, 'pipeline failed');
        if (!aborted.v) res.cork(() => write(res, { status: 500, headers: {}, body: '' }, true));
      })
      .finally(() => {
        inFlight--;
        if (inFlight === 0 && drained) drained();
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
    const headers: Record<string, string> = {};
    req.forEach((k, v) => {
      headers[k] = v;
    });
    const forwarded = opts.trustProxy ? headers['x-forwarded-for']?.split(',')[0]?.trim() : undefined;
    const raw: RawRequest = {
      method,
      path: req.getUrl(),
      query: req.getQuery() ?? '',
      headers,
      ip: forwarded || Buffer.from(res.getRemoteAddressAsText()).toString(),
      body: null,
      bodyTooLarge: false,
    };
    const declared = headers['content-length'];
    if (BODYLESS.has(method) || (declared === '0' && !headers['transfer-encoding'])) {
      dispatch(res, aborted, raw);
      return;
    }
    if (declared !== undefined && Number(declared) > opts.maxBodyBytes) {
      raw.bodyTooLarge = true;
      dispatch(res, aborted, raw);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    res.onData((chunk, isLast) => {
      if (done) return;
      size += chunk.byteLength;
      if (size > opts.maxBodyBytes) {
        done = true;
        raw.bodyTooLarge = true;
        dispatch(res, aborted, raw);
        return;
      }
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) {
        done = true;
        raw.body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        dispatch(res, aborted, raw);
      }
    });
  });

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
