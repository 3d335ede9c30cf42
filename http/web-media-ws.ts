// The browsers' media websocket, `/v1/web-calls/media?access_token=…` (README "Web
// calls"; the protocol is voice/media/web-session.ts). A web call's one-time access token
// (POST /v1/web-calls) is claimed at the upgrade: an unknown, used or expired token is
// answered 403 and no socket exists; a missing one 401. The API key is never sent here:
// the token alone opens the call it was made for, once, within its lifetime.
//
// Once open, the call is answered (MEDIA.STARTED) and the conversation engine runs on the
// socket. The session ends the call when the browser hangs up or the socket closes
// (MEDIA.STOPPED: caller_hangup); when the call ends for another reason (the agent's
// end_call, max duration, silence, the call erased) the browser gets `end` {reason} and
// the socket closes. uWS rules as in media-ws.ts: `req` is read inside `upgrade` only, a
// socket is never touched after its `close` handler ran.
import type { HttpRequest, HttpResponse, TemplatedApp, us_socket_context_t, WebSocket } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { EngineFactory } from '../voice/engine/engine.ts';
import type { MediaBinding } from '../voice/media/bindings.ts';
import type { MediaCounters } from '../voice/media/session.ts';
import { createWebMediaSession, WEB_MAX_BUFFERED_BYTES, type WebMediaSession } from '../voice/media/web-session.ts';
import type { WebMediaBindings } from '../actors/calls/media-bindings.ts';
import type { Metrics } from '../metrics.ts';
import { answerAndClose } from './close-answer.ts';

export const WEB_MEDIA_PATH = '/v1/web-calls/media';

export interface WebMediaSocketDeps {
  bindings: WebMediaBindings;
  engine: EngineFactory;
  /** Calls `fn` with the call's context after each committed step (and at once) until it returns true; null when gone. */
  watchCall(id: string, fn: (ctx: { endedAt: number | null; endedReason: string | null } | null) => boolean): void;
  clock: () => number;
  metrics: Metrics;
  log: Logger;
}

export interface WebMediaSockets {
  readonly counters: Readonly<WebMediaCounters>;
  /** Ends every open web call socket (1001); each call's actor hears MEDIA.STOPPED before this returns. */
  closeAll(): void;
}

export interface WebMediaCounters extends MediaCounters {
  /** Browser sockets open now. */
  live: number;
  /** Upgrades refused: no token (401), or a token that opened no call (403: unknown, used, expired, call over). */
  rejected: number;
}

interface SocketData {
  binding: MediaBinding;
  session: WebMediaSession | null;
  closed: boolean;
}

const CLOSE_GOING_AWAY = 1001;
const CLOSE_SERVER_ERROR = 1011;
/** Hard cap of uWS's own queue, above the audio limit: only control messages can reach it. */
const MAX_BACKPRESSURE = 1024 * 1024;

const utf8 = new TextDecoder();

export function registerWebMediaSockets(app: TemplatedApp, deps: WebMediaSocketDeps): WebMediaSockets {
  const { log } = deps;
  const counters: WebMediaCounters = { live: 0, rejected: 0, framesIn: 0, framesOut: 0, dropped: 0 };
  const open = new Set<WebSocket<SocketData>>();
  let closing = false;

  deps.metrics.gauge('switchboard_web_call_sockets', 'Browser web call media websockets open now.', () => counters.live);
  deps.metrics.gauge('switchboard_web_call_rejected_total', 'Web call media websocket upgrades refused (no token, or one that opened no call).', () => counters.rejected);

  function refuse(res: HttpResponse, status: string, body: string): void {
    counters.rejected++;
    answerAndClose(res, status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' }, body);
  }

  app.ws<SocketData>(WEB_MEDIA_PATH, {
    // 16 kHz PCM is 32 KiB a second: a browser sends far smaller messages (an AudioWorklet's 128 samples, or 20 ms).
    maxPayloadLength: 64 * 1024,
    idleTimeout: 32,
    maxBackpressure: MAX_BACKPRESSURE,
    upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t) {
      const token = req.getQuery('access_token') ?? '';
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      if (closing) return refuse(res, '503 Service Unavailable', 'server shutting down');
      if (token === '') return refuse(res, '401 Unauthorized', 'access_token query parameter required (from POST /v1/web-calls)');
      let binding: MediaBinding | null = null;
      try {
        binding = deps.bindings.claim(token, deps.clock());
      } catch (err) {
        log.error({ err }, 'web call token claim failed');
        counters.rejected++;
        return answerAndClose(res, '503 Service Unavailable', { 'Content-Type': 'text/plain; charset=utf-8', 'Retry-After': '1' }, 'try again');
      }
      if (!binding) return refuse(res, '403 Forbidden', 'unknown, used or expired access token');
      // A browser requires the server to select one of the subprotocols it offered: the first is echoed.
      const selected = protocol.split(',')[0]?.trim() ?? '';
      res.upgrade<SocketData>({ binding, session: null, closed: false }, key, selected, extensions, context);
    },
    open(ws) {
      counters.live++;
      open.add(ws);
      const data = ws.getUserData();
      const callId = data.binding.callId;
      const session = createWebMediaSession({
        binding: data.binding,
        publicId: callId,
        engine: deps.engine,
        clock: deps.clock,
        totals: counters,
        maxBufferedBytes: WEB_MAX_BUFFERED_BYTES,
        transport: {
          sendText: (text) => !data.closed && ws.send(text, false) !== 2,
          sendBinary: (bytes) => !data.closed && ws.send(bytes, true) !== 2,
          bufferedAmount: () => (data.closed ? 0 : ws.getBufferedAmount()),
          cork: (fn) => (data.closed ? fn() : void ws.cork(fn)),
          close(code, reason) {
            if (!data.closed) ws.end(code, reason);
          },
        },
      });
      data.session = session;
      try {
        session.start();
      } catch (err) {
        log.error({ err, call_id: callId }, 'web call media failed to start');
        ws.end(CLOSE_SERVER_ERROR, 'internal error');
        return;
      }
      // The call over for any reason but this socket: the browser hears `end`, then the socket closes.
      // Deferred, so the session never runs inside the commit that ended the call.
      deps.watchCall(callId, (ctx) => {
        if (ctx !== null && ctx.endedAt === null) return false;
        const reason = ctx?.endedReason ?? 'completed';
        setImmediate(() => {
          if (!data.closed) session.end(reason);
        });
        return true;
      });
    },
    message(ws, message, isBinary) {
      const data = ws.getUserData();
      const session = data.session;
      if (!session) return;
      try {
        if (isBinary) session.audio(new Uint8Array(message));
        else session.text(utf8.decode(message));
      } catch (err) {
        // An engine fault ends this call's socket only; the process and other calls go on.
        log.error({ err, call_id: data.binding.callId }, 'web call media failed');
        if (!data.closed) ws.end(CLOSE_SERVER_ERROR, 'internal error');
      }
    },
    close(ws, code) {
      counters.live--;
      open.delete(ws);
      const data = ws.getUserData();
      data.closed = true;
      try {
        data.session?.close();
      } catch (err) {
        log.error({ err, call_id: data.binding.callId }, 'web call media close failed');
      }
      if (log.isLevelEnabled('debug')) log.debug({ call_id: data.binding.callId, code, ...data.session?.stats() }, 'web call media closed');
    },
  });

  return {
    counters,
    closeAll() {
      closing = true;
      for (const ws of [...open]) ws.end(CLOSE_GOING_AWAY, 'server shutting down');
    },
  };
}
