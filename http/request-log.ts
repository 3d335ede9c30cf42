// The one log line per request, written through the logger's own pino destination
// but formatted here: the fields are fixed and need no redaction (route patterns,
// ids, numbers), and pino's generic object serializer was the largest single cost on
// the request path. The line is exactly what `log.info(fields, 'request')` would write.
// Lines of one event-loop turn go to the destination in one write (a busy turn answers
// many requests); a quiet service still writes each line in the turn it happened.
import pino, { type Logger } from 'pino';

export interface RequestLogFields {
  method: string;
  route: string;
  status: number;
  durationMs: number;
  accountId: string | undefined;
  requestId: string;
}

type Destination = { write(line: string): unknown };

export function createRequestLog(log: Logger): (f: RequestLogFields) => void {
  const stream = (log as unknown as Record<symbol, Destination>)[pino.symbols.streamSym];
  const bindings = (log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
  const level = log.levels.values['info']!;
  if (!stream || typeof stream.write !== 'function') {
    return (f) => log.info({ method: f.method, route: f.route, status: f.status, duration_ms: f.durationMs, account_id: f.accountId, request_id: f.requestId }, 'request');
  }
  let pending = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const text = pending;
    pending = '';
    if (text) stream.write(text);
  };
  return (f) => {
    if (!log.isLevelEnabled('info')) return;
    const account = f.accountId === undefined ? '' : `,"account_id":${JSON.stringify(f.accountId)}`;
    pending +=
      `{"level":${level},"time":${Date.now()}${bindings},"method":${JSON.stringify(f.method)},"route":${JSON.stringify(f.route)},` +
      `"status":${f.status},"duration_ms":${f.durationMs}${account},"request_id":"${f.requestId}","msg":"request"}\n`;
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}
