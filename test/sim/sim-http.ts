// The HTTP plumbing the carrier simulators share: a node:http server on a random
// loopback port that records every request, hands it to the simulator's router,
// writes the JSON answer, and can be told to misbehave (a 5xx, a slow answer) so
// tests reach the error paths of the real clients.

import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';

export interface RecordedRequest<Body = unknown> {
  method: string;
  /** Path without the query string, percent-decoding left to the router. */
  path: string;
  /** Query parameters; a repeated key becomes an array. */
  query: Record<string, string | string[]>;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** Parsed body: form fields for carrier A, JSON for carrier B, undefined when unparseable. */
  body: Body;
}

export interface SimResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A one-shot or repeated misbehaviour, applied before routing. */
export interface SimFault {
  status?: number;
  body?: unknown;
  delayMs?: number;
  /** How many requests it applies to (default 1). */
  times?: number;
}

export interface SimServer<Body> {
  baseUrl: string;
  requests: RecordedRequest<Body>[];
  /** Makes the next request(s) answer with `status` and/or after `delayMs`. */
  fail(fault: SimFault): void;
  close(): Promise<void>;
}

export async function startSimServer<Body>(
  parseBody: (raw: string, contentType: string | undefined) => Body,
  route: (req: RecordedRequest<Body>) => SimResponse,
  /** 0 (a free port) in tests; a fixed one for `npm run sim`. */
  port = 0,
): Promise<SimServer<Body>> {
  const requests: RecordedRequest<Body>[] = [];
  const faults: SimFault[] = [];

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://sim.invalid');
      const recorded: RecordedRequest<Body> = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: paramsToRecord(url.searchParams),
        headers: req.headers,
        rawBody,
        body: parseBody(rawBody, req.headers['content-type']),
      };
      requests.push(recorded);

      const fault = faults[0];
      if (fault && (fault.times = (fault.times ?? 1) - 1) <= 0) faults.shift();
      let answer: SimResponse;
      try {
        answer = fault?.status !== undefined ? { status: fault.status, body: fault.body ?? '' } : route(recorded);
      } catch (err) {
        answer = { status: 500, body: { sim_error: err instanceof Error ? err.message : String(err) } };
      }
      const write = () => {
        const payload = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? null);
        res.writeHead(answer.status, {
          'content-type': typeof answer.body === 'string' ? 'text/plain' : 'application/json',
          ...answer.headers,
        });
        res.end(answer.status === 204 ? undefined : payload);
      };
      if (fault?.delayMs) setTimeout(write, fault.delayMs).unref();
      else write();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${bound}`,
    requests,
    fail(fault) {
      faults.push({ ...fault });
    },
    close() {
      return new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // fetch keeps connections alive; without this close() waits for their idle timeout.
        server.closeAllConnections();
      });
    },
  };
}

export function paramsToRecord(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of params) {
    const prev = out[key];
    out[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

/** A loopback port that was free a moment ago and has nothing listening on it. */
export async function closedPort(): Promise<number> {
  const srv = createNetServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
