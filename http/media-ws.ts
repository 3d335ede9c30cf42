// The carriers' media websockets, `/carrier/twilio/media` and `/carrier/telnyx/media`:
// one media session per socket, counters for /metrics, and closing every stream on
// shutdown. uWS rules here: `req` is only read inside `upgrade`; a socket is never
// touched after its `close` handler ran; messages are only valid during the callback.
//
// Nobody signs a websocket upgrade, so a socket is "unclaimed" until its one-time token
// claims a call (at `start`). Unclaimed sockets are bounded twice: each gets
// `unclaimedTimeoutMs` (5 s) to claim before it is closed with 1008, by one sweep timer
// for all of them; and while `maxUnclaimed` (500) are waiting, further upgrades are
// answered 503 with Retry-After instead of upgraded. Carrier B's URL token is checked at
// the upgrade (403 when no live call expects it) and, once checked, is let in past the
// cap. Claimed sockets (calls) are untouched by either; the per-message path is unchanged.
import type { HttpRequest, HttpResponse, TemplatedApp, us_socket_context_t, WebSocket } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { EngineFactory } from '../voice/engine/engine.ts';
import type { MediaBindings, MediaProvider } from '../voice/media/bindings.ts';
import { CLOSE_POLICY, createMediaSession, DEFAULT_MAX_BUFFERED_BYTES, type MediaCounters, type MediaSession } from '../voice/media/session.ts';
import type { Metrics } from '../metrics.ts';
import { answerAndClose } from './close-answer.ts';

export interface MediaSocketDeps {
  bindings: MediaBindings;
  engine: EngineFactory;
  clock: () => number;
  metrics: Metrics;
  log: Logger;
  /** Outbound audio is dropped above this backlog (default 64 KiB). */
  maxBufferedBytes?: number;
  /** How long a socket may stay open without claiming a call (default UNCLAIMED_TIMEOUT_MS). */
  unclaimedTimeoutMs?: number;
  /** Unclaimed sockets above which upgrades without a checked token are refused (default MAX_UNCLAIMED). */
  maxUnclaimed?: number;
}

export interface MediaSocketCounters extends MediaCounters {
  /** Media sockets open now. */
  live: number;
  /**
   * Sockets closed with 1008 (no token, an unknown or used token, no `start`, no claim
   * within the bound) and carrier B upgrades refused with 403 (unknown or used URL token).
   */
  rejected: number;
  /** Upgrades refused with 503 because `maxUnclaimed` sockets were already waiting for a token. */
  refused: number;
}

export interface MediaSockets {
  readonly counters: Readonly<MediaSocketCounters>;
  /** Sockets open now that have not claimed a call yet. */
  readonly unclaimed: number;
  /** Ends every open stream (1001); each call's actor hears MEDIA.STOPPED before this returns. */
  closeAll(): void;
}

interface SocketData {
  provider: MediaProvider;
  /** Carrier B's token from the stream URL; carrier A's arrives in `start`. */
  token: string | undefined;
  session: MediaSession | null;
  /** `performance.now()` at open: the sweep closes the socket if it is still unclaimed `unclaimedTimeoutMs` later. */
  openedAt: number;
}

export const MEDIA_PATHS: Record<MediaProvider, string> = {
  twilio: '/carrier/twilio/media',
  telnyx: '/carrier/telnyx/media',
};

/** Hard cap of uWS's own queue, far above the audio limit: only marks and clears can reach it. */
const MAX_BACKPRESSURE = 1024 * 1024;
const CLOSE_GOING_AWAY = 1001;
const CLOSE_SERVER_ERROR = 1011;

/**
 * A socket that has not claimed a call this long after its upgrade is closed with 1008.
 * Carriers send `connected` and `start` as soon as the socket opens; 5 s is ample on a
 * slow path and keeps a silent probe (automatic pings defeat the idle timeout) short.
 */
export const UNCLAIMED_TIMEOUT_MS = 5000;
/**
 * Unclaimed sockets at most: beyond it, upgrades without a checked token get 503. A real
 * call's socket is unclaimed for one round trip, so a process near its ~500-call
 * capacity has a handful waiting at a time; 500 only caps what a probe can hold open.
 */
export const MAX_UNCLAIMED = 500;

// Decoding straight from the ArrayBuffer: one string per message, no Buffer wrapper.
const utf8 = new TextDecoder();

export function registerMediaSockets(app: TemplatedApp, deps: MediaSocketDeps): MediaSockets {
  const { log } = deps;
  const counters: MediaSocketCounters = { live: 0, rejected: 0, refused: 0, framesIn: 0, framesOut: 0, dropped: 0 };
  const open = new Set<WebSocket<SocketData>>();
  const timeoutMs = deps.unclaimedTimeoutMs ?? UNCLAIMED_TIMEOUT_MS;
  const maxUnclaimed = deps.maxUnclaimed ?? MAX_UNCLAIMED;
  const retryAfter = String(Math.max(1, Math.ceil(timeoutMs / 1000)));
  const reapReason = `no media token within ${timeoutMs} ms`;
  // Insertion order is opening order, and every socket gets the same time: the sweep
  // stops at the first one still in time, so it costs only the sockets it closes.
  const unclaimed = new Set<WebSocket<SocketData>>();
  let refusedSinceSweep = 0;
  let closing = false;

  function sweep(): void {
    const cutoff = performance.now() - timeoutMs;
    let reaped = 0;
    for (const ws of unclaimed) {
      if (ws.getUserData().openedAt > cutoff) break;
      unclaimed.delete(ws);
      counters.rejected++;
      reaped++;
      ws.end(CLOSE_POLICY, reapReason);
    }
    // One line per sweep, not per socket: a probe must not flood the log.
    if (reaped > 0 || refusedSinceSweep > 0) {
      log.warn({ reaped, refused: refusedSinceSweep, unclaimed: unclaimed.size }, 'media sockets without a token closed or refused');
      refusedSinceSweep = 0;
    }
  }
  // A socket is closed at most one sweep period after its bound: each second, or a fifth of
  // a shorter bound (so 5 to 6 s after the upgrade by default).
  const sweeper = setInterval(sweep, Math.min(1000, Math.max(10, Math.ceil(timeoutMs / 5))));
  sweeper.unref();

  /**
   * Answers the upgrade request itself and closes the connection: no socket, no session,
   * and nothing sent after the request is parsed (close-answer.ts).
   */
  function refuse(res: HttpResponse, status: string, body: string, retry: boolean): void {
    const headers: Record<string, string> = { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' };
    if (retry) headers['Retry-After'] = retryAfter;
    answerAndClose(res, status, headers, body);
  }

  /** Whether a live call expects carrier B's URL token; a failing look-up leaves the check to `start`. */
  function expected(provider: MediaProvider, token: string): boolean | undefined {
    if (!deps.bindings.expects) return undefined;
    try {
      return deps.bindings.expects(provider, token);
    } catch (err) {
      log.error({ err, provider }, 'media token look-up failed');
      return undefined;
    }
  }

  deps.metrics.gauge('switchboard_media_streams', 'Carrier media websockets open now.', () => counters.live);
  deps.metrics.gauge('switchboard_media_frames_in_total', 'Caller audio messages received on started media streams.', () => counters.framesIn);
  deps.metrics.gauge('switchboard_media_frames_out_total', 'Audio messages sent to carriers.', () => counters.framesOut);
  deps.metrics.gauge('switchboard_media_frames_dropped_total', 'Outbound audio messages dropped because the media socket was backed up.', () => counters.dropped);
  deps.metrics.gauge(
    'switchboard_media_rejected_total',
    'Media websockets closed with 1008 or refused with 403 because no expected call matched their token in time.',
    () => counters.rejected,
  );
  deps.metrics.gauge('switchboard_media_unclaimed', 'Media websockets open now that have not claimed a call yet.', () => unclaimed.size);
  deps.metrics.gauge('switchboard_media_refused_total', 'Media websocket upgrades refused with 503: too many sockets were waiting for a token.', () => counters.refused);

  function register(provider: MediaProvider): void {
    app.ws<SocketData>(MEDIA_PATHS[provider], {
      maxPayloadLength: 64 * 1024,
      // Carriers send 50 messages a second; uWS pings a quiet socket before giving up on it.
      idleTimeout: 32,
      maxBackpressure: MAX_BACKPRESSURE,
      upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t) {
        const token = provider === 'telnyx' ? req.getQuery('token') || undefined : undefined;
        if (closing) return refuse(res, '503 Service Unavailable', 'server shutting down', false);
        const checked = token === undefined ? undefined : expected(provider, token);
        if (checked === false) {
          counters.rejected++;
          return refuse(res, '403 Forbidden', 'unknown or used media token', false);
        }
        // A token a live call expects cannot be forged, so only unchecked upgrades meet the cap.
        if (checked !== true && unclaimed.size >= maxUnclaimed) {
          counters.refused++;
          refusedSinceSweep++;
          return refuse(res, '503 Service Unavailable', 'too many media sockets waiting for a token, retry later', true);
        }
        res.upgrade<SocketData>(
          { provider, token, session: null, openedAt: 0 },
          req.getHeader('sec-websocket-key'),
          req.getHeader('sec-websocket-protocol'),
          req.getHeader('sec-websocket-extensions'),
          context,
        );
      },
      open(ws) {
        counters.live++;
        open.add(ws);
        const data = ws.getUserData();
        data.openedAt = performance.now();
        unclaimed.add(ws);
        data.session = createMediaSession({
          provider,
          token: data.token,
          // The one claim of this socket: a binding takes it off the unclaimed set for good.
          bindings: {
            claim(p, t, at) {
              const binding = deps.bindings.claim(p, t, at);
              if (binding) unclaimed.delete(ws);
              return binding;
            },
          },
          engine: deps.engine,
          clock: deps.clock,
          totals: counters,
          maxBufferedBytes: deps.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
          transport: {
            // 0 means queued behind backpressure (still sent); 2 means uWS dropped it.
            send: (text) => ws.send(text) !== 2,
            bufferedAmount: () => ws.getBufferedAmount(),
            // Outside uWS's own callbacks (the playout clock's timer) sends are not corked for us.
            cork: (fn) => void ws.cork(fn),
            close(code, reason) {
              if (code === CLOSE_POLICY) {
                counters.rejected++;
                log.warn({ provider, reason }, 'media stream rejected');
              }
              ws.end(code, reason);
            },
          },
          onCarrierError: (frame) =>
            log.warn({ provider, call_id: data.session?.binding?.callId, code: frame.code, title: frame.title }, 'carrier media error'),
        });
      },
      // No drain handler: nothing waits for the socket to drain, late audio is dropped instead.
      message(ws, message) {
        const session = ws.getUserData().session!;
        try {
          session.handle(utf8.decode(message));
        } catch (err) {
          // An engine or binding fault ends this stream only; the process and other calls go on.
          log.error({ err, provider, call_id: session.binding?.callId }, 'media stream failed');
          if (session.state !== 'closed') ws.end(CLOSE_SERVER_ERROR, 'internal error');
        }
      },
      close(ws, code) {
        counters.live--;
        open.delete(ws);
        unclaimed.delete(ws);
        const session = ws.getUserData().session!;
        try {
          session.close();
        } catch (err) {
          log.error({ err, provider, call_id: session.binding?.callId }, 'media stream close failed');
        }
        if (session.binding && log.isLevelEnabled('debug')) log.debug({ provider, call_id: session.binding.callId, code, ...session.stats() }, 'media stream closed');
      },
    });
  }

  register('twilio');
  register('telnyx');

  return {
    counters,
    get unclaimed() {
      return unclaimed.size;
    },
    closeAll() {
      closing = true;
      clearInterval(sweeper);
      for (const ws of [...open]) ws.end(CLOSE_GOING_AWAY, 'server shutting down');
    },
  };
}
