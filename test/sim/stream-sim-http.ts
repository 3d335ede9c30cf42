// The HTTP plumbing the streaming provider simulators share (the model's chat
// completions, the speech endpoint): a node:http server on a random loopback port
// that records every request with its parsed JSON body, notices when the client
// hangs up before the answer is complete (barge-in cancels the model request; tests
// check that it really did), and misbehaves on demand. The plain faults are handled
// here; the ones that strike mid-stream (`drop`, `stall`, `garbage` after k units:
// tokens for the model, audio chunks for speech) are handed to the simulator's
// streamer with the request, because only it knows what a unit is.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * - `status`: answer this HTTP status with an OpenAI-style error body (and `Retry-After` if given);
 * - `hang`: never answer, not even the headers (the client's first-byte deadline must fire);
 * - `reset`: destroy the connection before answering;
 * - `drop`: stream `after` units, then destroy the connection mid-body;
 * - `stall`: stream `after` units, then send nothing more while holding the connection open;
 * - `garbage`: stream `after` units (default 0), then something the client cannot parse.
 * Each applies to the next `times` requests (default 1), in the order queued.
 */
export type StreamSimFault =
  | { kind: 'status'; status: number; retryAfter?: string; message?: string; times?: number }
  | { kind: 'hang'; times?: number }
  | { kind: 'reset'; times?: number }
  | { kind: 'drop'; after: number; times?: number }
  | { kind: 'stall'; after: number; times?: number }
  | { kind: 'garbage'; after?: number; times?: number };

/** The faults a streamer acts on itself, after some units of its answer. */
export type MidStreamFault = Extract<StreamSimFault, { kind: 'drop' | 'stall' | 'garbage' }>;

export interface StreamSimRequest<Body> {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The `Authorization` header as sent. */
  authorization: string | undefined;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: Body;
  /** The fault applied to it, if any. */
  fault: StreamSimFault['kind'] | undefined;
  /** The client closed the connection before the answer was complete (cancel, timeout). */
  aborted: boolean;
  /** `performance.now()` when the request arrived. */
  receivedAt: number;
}

/** What a simulator answers one healthy or mid-stream-faulted request with. */
export type StreamSimHandler<Body> = (req: StreamSimRequest<Body>, res: ServerResponse, fault: MidStreamFault | undefined) => void;

export interface StreamSimServer<Body> {
  /** `http://127.0.0.1:PORT/v1`, as clients are configured. */
  baseUrl: string;
  requests: StreamSimRequest<Body>[];
  fail(fault: StreamSimFault): void;
  /** How many requests the client abandoned before their answer was complete. */
  readonly aborted: number;
  /** Destroys the connection of a response on purpose (a `drop` fault), which is not a client abort. */
  drop(res: ServerResponse): void;
  close(): Promise<void>;
}

/**
 * `takesFaults`: whether a request is one the queued faults are meant for (default: every
 * one); a request it refuses is served healthy and leaves the faults for the next.
 */
export async function startStreamSim<Body>(port: number, handle: StreamSimHandler<Body>, takesFaults: (body: Body) => boolean = () => true): Promise<StreamSimServer<Body>> {
  const requests: StreamSimRequest<Body>[] = [];
  const faults: StreamSimFault[] = [];
  const droppedBySim = new WeakSet<ServerResponse>();
  let aborted = 0;
  let closing = false;

  const nextFault = (): StreamSimFault | undefined => {
    const fault = faults[0];
    if (fault && (fault.times = (fault.times ?? 1) - 1) <= 0) faults.shift();
    return fault;
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const fault = takesFaults(body as Body) ? nextFault() : undefined;
      const recorded: StreamSimRequest<Body> = {
        method: req.method ?? 'GET',
        path: new URL(req.url ?? '/', 'http://sim.invalid').pathname,
        headers: req.headers,
        authorization: req.headers.authorization,
        body: body as Body,
        fault: fault?.kind,
        aborted: false,
        receivedAt: performance.now(),
      };
      requests.push(recorded);
      res.on('close', () => {
        if (!res.writableFinished && !droppedBySim.has(res) && !closing) {
          recorded.aborted = true;
          aborted++;
        }
      });

      switch (fault?.kind) {
        case 'reset':
          droppedBySim.add(res);
          req.socket.destroy();
          return;
        case 'hang':
          return;
        case 'status':
          res.writeHead(fault.status, {
            'content-type': 'application/json',
            ...(fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter }),
          });
          res.end(JSON.stringify(openAiError(fault.status, fault.message ?? `simulated HTTP ${fault.status}`)));
          return;
        default:
          handle(recorded, res, fault);
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${bound}/v1`,
    requests,
    fail(fault) {
      faults.push({ ...fault });
    },
    get aborted() {
      return aborted;
    },
    drop(res) {
      droppedBySim.add(res);
      res.destroy();
    },
    close() {
      closing = true;
      return new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Hung and streaming answers would otherwise hold close() open.
        server.closeAllConnections();
      });
    },
  };
}

/** An error body as the OpenAI API writes it. */
export function openAiError(status: number, message: string): { error: { message: string; type: string; param: null; code: string | null } } {
  const type = status === 401 ? 'invalid_request_error' : status === 429 ? 'requests' : status >= 500 ? 'server_error' : 'invalid_request_error';
  const code = status === 401 ? 'invalid_api_key' : status === 429 ? 'rate_limit_exceeded' : null;
  return { error: { message, type, param: null, code } };
}

/** Answers a JSON error (the simulators' request validation). */
export function sendError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(openAiError(status, message)));
}

/** Checks `Authorization: Bearer <apiKey>` when the simulator has a key; answers 401 and returns false when wrong. */
export function checkBearer(res: ServerResponse, authorization: string | undefined, apiKey: string | undefined): boolean {
  if (apiKey === undefined || authorization === `Bearer ${apiKey}`) return true;
  const sent = authorization?.startsWith('Bearer ') ? authorization.slice(7) : '';
  // Like the real API: the key is named, masked, never echoed whole.
  const masked = sent.length > 8 ? `${sent.slice(0, 3)}***${sent.slice(-4)}` : '***';
  sendError(res, 401, sent ? `Incorrect API key provided: ${masked}.` : 'You did not provide an API key.');
  return false;
}

/** A timer the simulator cancels when the response closes (client gone, or the sim shut down). */
export function whileOpen(res: ServerResponse, ms: number, fn: () => void): void {
  if (res.destroyed) return;
  const t = setTimeout(() => {
    res.off('close', stop);
    if (!res.destroyed) fn();
  }, ms);
  const stop = () => clearTimeout(t);
  res.once('close', stop);
}
