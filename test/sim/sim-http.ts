// The HTTP plumbing the carrier simulators share: a node:http server on a random
// loopback port that records every request, hands it to the simulator's router,
// writes the JSON answer, and can be told to misbehave so tests reach the error paths
// of the real clients:
//   status/body  answer this instead of routing (nothing happens at the carrier);
//   delayMs      the request is processed at once (a dial places its call), the answer
//                comes `delayMs` later: a slow carrier, or past the client's deadline;
//   drop         the request is processed (the call IS placed), then the connection is
//                destroyed without an answer: the answer was lost;
//   reset        the connection is destroyed before processing: nothing happens.
// A fault applies to the next request(s) its `match` accepts (default: any request),
// e.g. `match: 'dial'` for the carrier's dial endpoint only, so hang-ups and look-ups
// stay healthy (`match: 'message'`: SMS sends; `drop` there is the send whose outcome
// the client cannot know: the message went out, the answer never came). `chaos()` applies faults at random with a seeded PRNG (mulberry32):
// the same seed and the same order of matching requests give the same faults; with
// `keyBy` (the simulators key dials by their `To` number) each request's draw depends
// only on the seed, its key and how many requests of that key came before, so
// concurrent requests arriving in another order still meet the same faults.

import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
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
  /** The fault applied to it, if any (`status`: answered with a fault's status, not routed). */
  fault?: 'status' | 'slow' | 'drop' | 'reset';
}

export interface SimResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * Which requests a fault applies to: a named endpoint of the simulator (`dial`,
 * `hangup`, `lookup`), a method and/or path pattern, or a predicate.
 */
export type SimMatch<Body = unknown> =
  | SimEndpoint
  | { method?: string; path?: RegExp }
  | ((req: RecordedRequest<Body>) => boolean);

/**
 * - `dial`: the request that places a call (carrier A `POST …/Calls.json`, carrier B `POST /v2/calls`);
 * - `hangup`: the request that ends one (carrier A `POST …/Calls/{Sid}.json`, carrier B `…/actions/hangup`);
 * - `lookup`: the reads of calls (carrier A `GET …/Calls.json` and `…/Calls/{Sid}.json`,
 *   carrier B `GET /v2/calls/{id}`, `GET /v2/connections/{id}/active_calls` and `GET /v2/call_events`);
 * - `message`: the request that sends an SMS (carrier A `POST …/Messages.json`, carrier B `POST /v2/messages`).
 */
export type SimEndpoint = 'dial' | 'hangup' | 'lookup' | 'message';

/** A one-shot or repeated misbehaviour. */
export interface SimFault<Body = unknown> {
  /** Answer with this status (and `body`) instead of routing. */
  status?: number;
  body?: unknown;
  /** Process at once, answer this much later. */
  delayMs?: number;
  /** Process, then destroy the connection without answering (after `delayMs` if set). */
  drop?: boolean;
  /** Destroy the connection before processing: nothing happens. */
  reset?: boolean;
  /** How many matching requests it applies to (default 1). */
  times?: number;
  /** Which requests it applies to (default: any). */
  match?: SimMatch<Body>;
}

/** Random faults, each matching request drawing one number from the seeded PRNG. */
export interface SimChaos<Body = unknown> {
  seed: number;
  /** Probability that a matching request is reset (nothing processed). */
  resetRate?: number;
  /** Probability that it is processed and its answer dropped. */
  dropRate?: number;
  /** Probability that it is processed and answered late. */
  slowRate?: number;
  /** The lateness of a slow answer, ms: fixed, or drawn uniformly from [min, max]. Default 2000. */
  slowMs?: number | readonly [number, number];
  /** Which requests it applies to (default: any; the simulators' `chaos` default to `dial`). */
  match?: SimMatch<Body>;
  /**
   * Makes each draw a function of (seed, key, n-th request with that key) instead of the
   * arrival order. The simulators' `chaos` default to the dial's `To` number (and, with
   * `match: 'message'`, the message's).
   */
  keyBy?: (req: RecordedRequest<Body>) => string;
}

export interface SimServer<Body> {
  baseUrl: string;
  requests: RecordedRequest<Body>[];
  /** Queues a fault for the next matching request(s); faults apply in the order queued. */
  fail(fault: SimFault<Body>): void;
  /** Random faults from now on (null: none). Explicit faults from `fail` go first. */
  chaos(chaos: SimChaos<Body> | null): void;
  close(): Promise<void>;
}

export async function startSimServer<Body>(
  parseBody: (raw: string, contentType: string | undefined) => Body,
  route: (req: RecordedRequest<Body>) => SimResponse,
  /** 0 (a free port) in tests; a fixed one for `npm run sim`. */
  port = 0,
  /** The simulator's named endpoints, for `match: 'dial'` and the like. */
  endpoints: Partial<Record<SimEndpoint, (req: RecordedRequest<Body>) => boolean>> = {},
  /** Serve HTTPS with this certificate (test/sim/webhook-receiver.ts makeTestCa) instead of HTTP. */
  tls?: { cert: string; key: string },
): Promise<SimServer<Body>> {
  const requests: RecordedRequest<Body>[] = [];
  const faults: SimFault<Body>[] = [];
  let chaos: { opts: SimChaos<Body>; random: () => number; seen: Map<string, number> } | null = null;

  const matches = (match: SimMatch<Body> | undefined, req: RecordedRequest<Body>): boolean => {
    if (match === undefined) return true;
    if (typeof match === 'function') return match(req);
    if (typeof match === 'string') {
      const is = endpoints[match];
      if (!is) throw new Error(`sim: no endpoint named ${match}`);
      return is(req);
    }
    return (match.method === undefined || match.method === req.method) && (match.path === undefined || match.path.test(req.path));
  };

  // The explicit fault for this request (consumed), else chaos's draw, else none.
  const faultFor = (req: RecordedRequest<Body>): SimFault<Body> | undefined => {
    const i = faults.findIndex((f) => matches(f.match, req));
    if (i >= 0) {
      const fault = faults[i]!;
      if ((fault.times = (fault.times ?? 1) - 1) <= 0) faults.splice(i, 1);
      return fault;
    }
    if (!chaos || !matches(chaos.opts.match, req)) return undefined;
    const { opts, seen } = chaos;
    let random = chaos.random;
    if (opts.keyBy) {
      const key = opts.keyBy(req);
      const n = seen.get(key) ?? 0;
      seen.set(key, n + 1);
      random = mulberry32(hashSeed(`${opts.seed}\n${key}\n${n}`));
    }
    const r = random();
    const reset = opts.resetRate ?? 0;
    const drop = reset + (opts.dropRate ?? 0);
    const slow = drop + (opts.slowRate ?? 0);
    if (r < reset) return { reset: true };
    if (r < drop) return { drop: true };
    if (r < slow) {
      const ms = opts.slowMs ?? 2000;
      return { delayMs: typeof ms === 'number' ? ms : Math.round(ms[0] + random() * (ms[1] - ms[0])) };
    }
    return undefined;
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
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

      let fault: SimFault<Body> | undefined;
      try {
        fault = faultFor(recorded);
      } catch (err) {
        fault = { status: 500, body: { sim_error: err instanceof Error ? err.message : String(err) } };
      }
      if (fault?.reset) {
        recorded.fault = 'reset';
        req.socket.destroy();
        return;
      }
      if (fault?.status !== undefined) recorded.fault = 'status';
      else if (fault?.drop) recorded.fault = 'drop';
      else if (fault?.delayMs) recorded.fault = 'slow';

      let answer: SimResponse;
      try {
        answer = fault?.status !== undefined ? { status: fault.status, body: fault.body ?? '' } : route(recorded);
      } catch (err) {
        answer = { status: 500, body: { sim_error: err instanceof Error ? err.message : String(err) } };
      }
      const write = () => {
        if (fault?.drop) {
          // Processed, never answered: the client sees the connection close mid-request.
          req.socket.destroy();
          return;
        }
        if (res.destroyed) return;
        const binary = answer.body instanceof Uint8Array;
        const payload = binary ? (answer.body as Uint8Array) : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? null);
        res.writeHead(answer.status, {
          'content-type': binary ? 'application/octet-stream' : typeof answer.body === 'string' ? 'text/plain' : 'application/json',
          ...answer.headers,
        });
        res.end(answer.status === 204 ? undefined : payload);
      };
      if (fault?.delayMs) setTimeout(write, fault.delayMs).unref();
      else write();
    });
  };
  const server = tls ? createTlsServer({ cert: tls.cert, key: tls.key }, handle) : createServer(handle);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;

  return {
    baseUrl: `${tls ? 'https' : 'http'}://127.0.0.1:${bound}`,
    requests,
    fail(fault) {
      faults.push({ ...fault });
    },
    chaos(opts) {
      chaos = opts === null ? null : { opts: { ...opts }, random: mulberry32(opts.seed), seen: new Map() };
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

/** A small seeded PRNG (mulberry32): uniform in [0, 1), the same sequence for the same seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a: a 32-bit seed from a string. */
function hashSeed(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * A clock the simulators keep their carrier-side time by (call times, how long a
 * command_id is remembered, how long an ended call's record is kept): the real time
 * plus an offset that `advance` moves forward, or an injected `now`.
 */
export class SimClock {
  private offset = 0;

  constructor(private readonly base: () => number = Date.now) {}

  now(): number {
    return this.base() + this.offset;
  }

  /** Moves the simulated time forward by `ms` (timers already running are not hurried). */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new Error('sim clock: advance by a non-negative number of ms');
    this.offset += ms;
  }
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
