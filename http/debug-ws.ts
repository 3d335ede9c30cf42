// The live machine view's websocket, `GET /v1/debug/actors/ws` (issue 7): the account's
// live actors as a first message, then every inspection event of the account's actors
// as it happens. uWS rules as in media-ws.ts: `req` is read inside `upgrade` only, a
// socket is never touched after its `close` handler ran.
//
// Authentication happens in `upgrade`, before any socket exists: the API key comes in
// `Authorization: Bearer KEY_ID:KEY_SECRET`, or (browsers cannot set headers on a
// websocket) as the offered subprotocol `bearer.KEY_ID.KEY_SECRET` (or
// `bearer.KEY_ID:KEY_SECRET`, which non-browser clients may send; browsers refuse `:` in
// a subprotocol), echoed back on accept. A refused upgrade is an HTTP answer (401, 429,
// 503) with the API's error envelope, and the connection closes before anything sent
// after it is parsed (close-answer.ts). Upgrades count in the service's shared rate-limit
// buckets (rate-limit.ts): a read of the key, or an attempt without a working key of the
// client IP, the same bucket HTTP requests without one count in.
//
// A viewer never slows a call: events are serialized once per account (not per viewer)
// and handed to uWS, which queues them; a viewer whose unread backlog passes
// `maxBufferedBytes` (256 KiB) is disconnected with 1013 at once, nothing is ever
// awaited, and the backlog a viewer can hold is bounded by that limit.
import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse, TemplatedApp, us_socket_context_t, WebSocket } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.ts';
import type { InspectionEvent, LiveActorSource } from '../actors/runtime/inspection.ts';
import type { Authenticator, AuthContext } from './auth.ts';
import { ApiError } from './errors.ts';
import { rateLimitExceeded, type RateLimits } from './rate-limit.ts';
import { answerAndClose } from './close-answer.ts';
import { actorListItem } from './routes/debug.ts';

export const DEBUG_WS_PATH = '/v1/debug/actors/ws';
/** A viewer whose unread backlog passes this is disconnected (1013). */
export const DEFAULT_VIEWER_MAX_BUFFERED = 256 * 1024;
/** Viewers one account may have open at once; more are refused with 429. */
export const MAX_VIEWERS_PER_ACCOUNT = 10;
/** How often open viewers' keys are checked again (a revoked key ends its viewers). */
export const DEFAULT_RECHECK_MS = 60_000;

export const CLOSE_TRY_AGAIN_LATER = 1013;
export const CLOSE_POLICY = 1008;
const CLOSE_GOING_AWAY = 1001;

export interface DebugSocketDeps {
  source: LiveActorSource;
  auth: Authenticator;
  clock: () => number;
  metrics: Metrics;
  log: Logger;
  trustProxy: boolean;
  /** The service's buckets, shared with the HTTP pipeline: an upgrade counts like a GET request. */
  limits: RateLimits;
  maxBufferedBytes?: number;
  recheckMs?: number;
}

export interface DebugSockets {
  /** Viewers open now. */
  readonly viewers: number;
  /** Viewers disconnected because they did not keep up. */
  readonly dropped: number;
  closeAll(): void;
}

interface ViewerData {
  auth: AuthContext;
  /** Unread bytes tolerated: the bound, plus the first message (a large account's list may exceed the bound alone). */
  limit: number;
  /** What authenticated the upgrade, as an Authorization value: checked again periodically. */
  credential: string;
  protocol: string;
}

type Viewer = WebSocket<ViewerData>;

/** The credential a browser offers as a subprotocol, as an Authorization header value. */
function credentialFromProtocols(header: string): { credential: string; protocol: string } | null {
  for (const raw of header.split(',')) {
    const protocol = raw.trim();
    if (!protocol.toLowerCase().startsWith('bearer.')) continue;
    const token = protocol.slice('bearer.'.length);
    // Key ids and secrets are base62 with a `key_`/`sk_` prefix: neither holds a dot.
    const sep = token.includes(':') ? ':' : '.';
    const at = token.indexOf(sep);
    const credential = at === -1 ? token : `${token.slice(0, at)}:${token.slice(at + 1)}`;
    return { credential: `Bearer ${credential}`, protocol };
  }
  return null;
}

export function registerDebugSockets(app: TemplatedApp, deps: DebugSocketDeps): DebugSockets {
  const { source, log } = deps;
  const maxBuffered = deps.maxBufferedBytes ?? DEFAULT_VIEWER_MAX_BUFFERED;
  /** Viewers by account, with the one hub subscription that feeds them all. */
  const byAccount = new Map<string, { viewers: Set<Viewer>; unsubscribe: () => void }>();
  const open = new Set<Viewer>();
  let dropped = 0;
  let closing = false;

  deps.metrics.gauge('switchboard_debug_viewers', 'Live machine view websockets open now.', () => open.size);
  deps.metrics.gauge('switchboard_debug_viewers_dropped_total', 'Live machine view websockets closed because the viewer did not read fast enough.', () => dropped);

  function refuse(res: HttpResponse, err: ApiError): void {
    const headers = { ...err.headers, 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff' };
    answerAndClose(res, `${err.status} ${STATUS_CODES[err.status] ?? ''}`.trim(), headers, JSON.stringify(err.toBody()));
  }

  /** Sends or, when the viewer is too far behind, disconnects it. Never waits. */
  function deliver(ws: Viewer, text: string): void {
    const { limit } = ws.getUserData();
    if (ws.getBufferedAmount() > limit) return disconnectSlow(ws);
    // 2: uWS dropped the message (its own backpressure cap): the viewer is no longer in step.
    if (ws.send(text, false) === 2 || ws.getBufferedAmount() > limit) disconnectSlow(ws);
  }

  function disconnectSlow(ws: Viewer): void {
    dropped++;
    log.warn({ account_id: ws.getUserData().auth.accountId, buffered: ws.getBufferedAmount() }, 'debug viewer too slow, disconnected');
    // The close handler runs inside end(): the viewer leaves its account's set at once.
    ws.end(CLOSE_TRY_AGAIN_LATER, `viewer too slow: more than ${maxBuffered} bytes unread`);
  }

  function join(ws: Viewer, accountId: string): void {
    let group = byAccount.get(accountId);
    if (!group) {
      const viewers = new Set<Viewer>();
      // One subscription per account: each event is serialized once for all its viewers.
      const unsubscribe = source.subscribe(accountId, (e: InspectionEvent) => {
        const text = JSON.stringify(e);
        for (const v of viewers) deliver(v, text);
      });
      byAccount.set(accountId, (group = { viewers, unsubscribe }));
    }
    group.viewers.add(ws);
  }

  function leave(ws: Viewer, accountId: string): void {
    const group = byAccount.get(accountId);
    if (!group) return;
    group.viewers.delete(ws);
    if (group.viewers.size === 0) {
      byAccount.delete(accountId);
      group.unsubscribe();
    }
  }

  // A revoked key (or a deleted account) ends its viewers within one period.
  const recheck = setInterval(() => {
    for (const ws of [...open]) {
      const data = ws.getUserData();
      let valid = false;
      try {
        valid = deps.auth.authenticate(data.credential, deps.clock())?.accountId === data.auth.accountId;
      } catch {
        valid = false;
      }
      if (!valid) ws.end(CLOSE_POLICY, 'API key no longer valid');
    }
  }, deps.recheckMs ?? DEFAULT_RECHECK_MS);
  recheck.unref();

  app.ws<ViewerData>(DEBUG_WS_PATH, {
    // Viewers only listen; anything they send is ignored, and large messages end them.
    maxPayloadLength: 1024,
    idleTimeout: 60,
    // The bound is enforced by deliver(); uWS's own cap is set out of its way (a first
    // message may be large), and a send it refuses ends the viewer as well.
    maxBackpressure: 1024 * 1024 * 1024,
    upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t) {
      const header = req.getHeader('authorization');
      const offered = req.getHeader('sec-websocket-protocol');
      const key = req.getHeader('sec-websocket-key');
      const extensions = req.getHeader('sec-websocket-extensions');
      const forwarded = deps.trustProxy ? req.getHeader('x-forwarded-for').split(',')[0]?.trim() : undefined;
      const ip = forwarded || Buffer.from(res.getRemoteAddressAsText()).toString();
      if (closing) return refuse(res, new ApiError('server_busy', 'The server is shutting down.'));
      // The header wins when both are sent; an offered bearer subprotocol is echoed either way.
      const fromProtocol = credentialFromProtocols(offered);
      const credential = header !== '' ? header : fromProtocol?.credential;
      const now = deps.clock();
      let auth: AuthContext | null = null;
      let failure: unknown = null;
      try {
        auth = deps.auth.authenticate(credential, now);
      } catch (e) {
        if (!(e instanceof ApiError)) {
          log.error({ err: e }, 'debug viewer authentication failed');
          return refuse(res, new ApiError('server_error'));
        }
        failure = e;
      }
      // Counted like a GET: the key's reads, or without a working key the client IP's one
      // bucket, shared with HTTP requests, so guessing keys has one budget over both.
      const d = auth ? deps.limits.keyed(auth.keyId, false, now) : deps.limits.anonymous(ip, now);
      if (!d.allowed) return refuse(res, rateLimitExceeded(d));
      if (!auth) return refuse(res, (failure as ApiError | null) ?? new ApiError('invalid_api_key'));
      if ((byAccount.get(auth.accountId)?.viewers.size ?? 0) >= MAX_VIEWERS_PER_ACCOUNT) {
        return refuse(res, new ApiError('rate_limit_exceeded', `At most ${MAX_VIEWERS_PER_ACCOUNT} live machine viewers per account; close one first.`, { retry_after: 5 }, { 'Retry-After': '5' }));
      }
      // A browser requires the server to select one of the subprotocols it offered.
      const protocol = fromProtocol?.protocol ?? '';
      res.upgrade<ViewerData>({ auth, limit: maxBuffered, credential: credential!, protocol }, key, protocol, extensions, context);
    },
    open(ws) {
      const data = ws.getUserData();
      open.add(ws);
      // The list first, then the stream: both in this one tick, so no event falls between.
      const list = JSON.stringify({ type: 'actors', actors: source.list(data.auth.accountId).map(actorListItem) });
      data.limit = maxBuffered + list.length;
      ws.send(list, false);
      join(ws, data.auth.accountId);
    },
    message() {},
    close(ws) {
      open.delete(ws);
      leave(ws, ws.getUserData().auth.accountId);
    },
  });

  return {
    get viewers() {
      return open.size;
    },
    get dropped() {
      return dropped;
    },
    closeAll() {
      closing = true;
      clearInterval(recheck);
      for (const ws of [...open]) ws.end(CLOSE_GOING_AWAY, 'server shutting down');
    },
  };
}
