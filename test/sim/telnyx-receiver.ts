// A stand-in for the service's carrier B endpoints in adapter and simulator tests: a
// uWebSockets.js app (the server library the service uses) on a random loopback port
// that records every `POST /carrier/telnyx/events/{token}` with its raw body and headers,
// and accepts the media websocket `/carrier/telnyx/media?token=…`, recording each
// message and letting the test talk back.

import { STATUS_CODES } from 'node:http';
import uWS from 'uWebSockets.js';

export interface ReceivedEvent {
  token: string;
  headers: Record<string, string>;
  rawBody: string;
}

export interface MediaConnection {
  token: string;
  /** Text messages from the carrier, in order. */
  messages: string[];
  closed: boolean;
  send(text: string): void;
  close(): void;
}

export interface TelnyxReceiver {
  /** http://127.0.0.1:<port>: use as the public base URL. */
  baseUrl: string;
  events: ReceivedEvent[];
  media: MediaConnection[];
  /** Called for each event after it is recorded (before the 200 goes out). */
  onEvent: ((event: ReceivedEvent) => void) | null;
  /** Status answered to webhooks (default 200). */
  status: number;
  /** Media tokens refused at the websocket upgrade (401). */
  refuseTokens: Set<string>;
  until<T>(check: () => T | undefined | false, timeoutMs?: number): Promise<T>;
  close(): void;
}

interface SocketData {
  conn: MediaConnection;
}

export function startTelnyxReceiver(): Promise<TelnyxReceiver> {
  const app = uWS.App();
  const sockets = new Set<uWS.WebSocket<SocketData>>();
  const receiver: TelnyxReceiver = {
    baseUrl: '',
    events: [],
    media: [],
    onEvent: null,
    status: 200,
    refuseTokens: new Set(),
    until,
    close: () => {},
  };

  app.post('/carrier/telnyx/events/:token', (res, req) => {
    // req dies when this callback returns: copy first.
    const token = req.getParameter(0) ?? '';
    const headers: Record<string, string> = {};
    req.forEach((k, v) => (headers[k] = v));
    let aborted = false;
    res.onAborted(() => (aborted = true));
    const chunks: Buffer[] = [];
    res.onData((chunk, isLast) => {
      chunks.push(Buffer.from(chunk.slice(0)));
      if (!isLast) return;
      const event = { token, headers, rawBody: Buffer.concat(chunks).toString('utf8') };
      receiver.events.push(event);
      receiver.onEvent?.(event);
      if (!aborted) res.cork(() => res.writeStatus(`${receiver.status} ${STATUS_CODES[receiver.status] ?? 'Status'}`).end('ok'));
    });
  });

  app.ws<SocketData>('/carrier/telnyx/media', {
    upgrade(res, req, context) {
      const token = req.getQuery('token') ?? '';
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      if (receiver.refuseTokens.has(token)) {
        res.writeStatus('401 Unauthorized').end();
        return;
      }
      const conn: MediaConnection = { token, messages: [], closed: false, send: () => {}, close: () => {} };
      res.upgrade<SocketData>({ conn }, key, protocol, extensions, context);
    },
    open(ws) {
      sockets.add(ws);
      const { conn } = ws.getUserData();
      conn.send = (text) => {
        if (!conn.closed) ws.cork(() => ws.send(text, false));
      };
      conn.close = () => {
        if (!conn.closed) ws.end(1000, 'done');
      };
      receiver.media.push(conn);
    },
    message(ws, message) {
      ws.getUserData().conn.messages.push(Buffer.from(message).toString('utf8'));
    },
    close(ws) {
      sockets.delete(ws);
      ws.getUserData().conn.closed = true;
    },
  });

  function until<T>(check: () => T | undefined | false, timeoutMs = 5000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const started = Date.now();
      const poll = () => {
        const value = check();
        if (value !== undefined && value !== false) resolve(value);
        else if (Date.now() - started > timeoutMs) reject(new Error('receiver: timed out'));
        else setTimeout(poll, 5);
      };
      poll();
    });
  }

  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', 0, (socket) => {
      if (!socket) {
        reject(new Error('receiver: could not listen'));
        return;
      }
      receiver.baseUrl = `http://127.0.0.1:${uWS.us_socket_local_port(socket)}`;
      receiver.close = () => {
        for (const ws of sockets) ws.close();
        uWS.us_listen_socket_close(socket);
      };
      resolve(receiver);
    });
  });
}
