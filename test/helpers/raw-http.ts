// HTTP/1.1 over a plain TCP socket, byte for byte: for the requests fetch will not send
// (duplicate Content-Length, dot segments, HEAD then GET on one connection) and for
// reading exactly what the server wrote back, including whether it closed.
import net from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawExchange {
  /** Every complete response read, in order (framed by Content-Length). */
  responses: RawAnswer[];
  /** Bytes after the last complete response: must be empty on a well-framed connection. */
  leftover: string;
  /** The server closed the connection (FIN) before the deadline. */
  closed: boolean;
  /** A socket error such as ECONNRESET or EPIPE, if one happened. */
  error: string | null;
}

/**
 * Parses responses off `text`. A HEAD answer has no body whatever its Content-Length
 * says, so `heads` names which responses (by index) answer HEAD requests.
 */
export function parseResponses(text: string, heads: ReadonlySet<number> = new Set()): { responses: RawAnswer[]; leftover: string } {
  const responses: RawAnswer[] = [];
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const lines = rest.slice(0, end).split('\r\n');
    const status = /^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? '');
    if (!status) break;
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = heads.has(responses.length) ? 0 : Number(headers['content-length'] ?? 0);
    if (rest.length < end + 4 + length) break;
    responses.push({ status: Number(status[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return { responses, leftover: rest };
}

export interface RawOptions {
  /** Stop once this many responses have been read (default: wait for close or deadline). */
  expect?: number;
  heads?: ReadonlySet<number>;
  timeoutMs?: number;
  /**
   * Read nothing until every byte is written, like a client that sends its whole body
   * before it looks for an answer: a server that closes early makes the write fail.
   */
  writeFirst?: boolean;
}

/** Writes `data` (all of it, then reads) and collects what comes back. */
export function rawHttp(port: number, data: string | Buffer | Array<string | Buffer>, opts: RawOptions = {}): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let error: string | null = null;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parseResponses(Buffer.concat(chunks).toString('latin1'), opts.heads);
      resolve({ ...parsed, closed, error });
    };
    const timer = setTimeout(() => finish(false), opts.timeoutMs ?? 5000);
    const read = () => {
      socket.on('data', (d) => {
        chunks.push(d);
        if (opts.expect !== undefined && parseResponses(Buffer.concat(chunks).toString('latin1'), opts.heads).responses.length >= opts.expect) finish(false);
      });
      socket.on('end', () => finish(true));
    };
    socket.on('close', () => finish(true));
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    if (!opts.writeFirst) read();
    const parts = Array.isArray(data) ? data : [data];
    parts.forEach((part, i) => socket.write(part, i === parts.length - 1 && opts.writeFirst ? () => read() : undefined));
  });
}

/** One request's text: `head` is the request line, headers are written as given. */
export function requestText(head: string, headers: Array<[string, string]>, body = ''): string {
  return `${head} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`;
}
