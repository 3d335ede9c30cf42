// The carriers' media websockets, `/carrier/twilio/media` and `/carrier/telnyx/media`:
// one media session per socket, counters for /metrics, and closing every stream on
// shutdown. uWS rules here: `req` is only read inside `upgrade`; a socket is never
// touched after its `close` handler ran; messages are only valid during the callback.
import type { HttpRequest, HttpResponse, TemplatedApp, us_socket_context_t, WebSocket } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { EngineFactory } from '../voice/engine/engine.ts';
import type { MediaBindings, MediaProvider } from '../voice/media/bindings.ts';
import { CLOSE_POLICY, createMediaSession, DEFAULT_MAX_BUFFERED_BYTES, type MediaCounters, type MediaSession } from '../voice/media/session.ts';
import type { Metrics } from './metrics.ts';

export interface MediaSocketDeps {
  bindings: MediaBindings;
  engine: EngineFactory;
  clock: () => number;
  metrics: Metrics;
  log: Logger;
  /** Outbound audio is dropped above this backlog (default 64 KiB). */
  maxBufferedBytes?: number;
}

export interface MediaSocketCounters extends MediaCounters {
  /** Media sockets open now. */
  live: number;
  /** Sockets closed with 1008: no token, an unknown or used token, or no `start`. */
  rejected: number;
}

export interface MediaSockets {
  readonly counters: Readonly<MediaSocketCounters>;
  /** Ends every open stream (1001); each call's actor hears MEDIA.STOPPED before this returns. */
  closeAll(): void;
}

interface SocketData {
  provider: MediaProvider;
  /** Carrier B's token from the stream URL; carrier A's arrives in `start`. */
  token: string | undefined;
  session: MediaSession | null;
}

export const MEDIA_PATHS: Record<MediaProvider, string> = {
  twilio: '/carrier/twilio/media',
  telnyx: '/carrier/telnyx/media',
};

/** Hard cap of uWS's own queue, far above the audio limit: only marks and clears can reach it. */
const MAX_BACKPRESSURE = 1024 * 1024;
const CLOSE_GOING_AWAY = 1001;
const CLOSE_SERVER_ERROR = 1011;

// Decoding straight from the ArrayBuffer: one string per message, no Buffer wrapper.
const utf8 = new TextDecoder();

export function registerMediaSockets(app: TemplatedApp, deps: MediaSocketDeps): MediaSockets {
  const { log } = deps;
  const counters: MediaSocketCounters = { live: 0, rejected: 0, framesIn: 0, framesOut: 0, dropped: 0 };
  const open = new Set<WebSocket<SocketData>>();

  deps.metrics.gauge('switchboard_media_streams', 'Carrier media websockets open now.', () => counters.live);
  deps.metrics.gauge('switchboard_media_frames_in_total', 'Caller audio messages received on started media streams.', () => counters.framesIn);
  deps.metrics.gauge('switchboard_media_frames_out_total', 'Audio messages sent to carriers.', () => counters.framesOut);
  deps.metrics.gauge('switchboard_media_frames_dropped_total', 'Outbound audio messages dropped because the media socket was backed up.', () => counters.dropped);
  deps.metrics.gauge('switchboard_media_rejected_total', 'Media websockets closed because no expected call matched their token.', () => counters.rejected);

  function register(provider: MediaProvider): void {
    app.ws<SocketData>(MEDIA_PATHS[provider], {
      maxPayloadLength: 64 * 1024,
      // Carriers send 50 messages a second; uWS pings a quiet socket before giving up on it.
      idleTimeout: 32,
      maxBackpressure: MAX_BACKPRESSURE,
      upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t) {
        const token = provider === 'telnyx' ? req.getQuery('token') || undefined : undefined;
        res.upgrade<SocketData>(
          { provider, token, session: null },
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
        data.session = createMediaSession({
          provider,
          token: data.token,
          bindings: deps.bindings,
          engine: deps.engine,
          clock: deps.clock,
          totals: counters,
          maxBufferedBytes: deps.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
          transport: {
            // 0 means queued behind backpressure (still sent); 2 means uWS dropped it.
            send: (text) => ws.send(text) !== 2,
            bufferedAmount: () => ws.getBufferedAmount(),
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
    closeAll() {
      for (const ws of [...open]) ws.end(CLOSE_GOING_AWAY, 'server shutting down');
    },
  };
}
