// Answers after which the connection is closed (framing the server cannot trust, a body it
// will not read, a refused websocket upgrade, a shutdown), written so that no byte the
// client sent after the request is ever parsed as another request (RFC 9112 9.6; issue 18).
//
// Why not `res.end(body, true)`: uWS parses every request already in its read buffer in
// one loop, with the socket corked. end(…, true) only marks the response "close"; the next
// pipelined request in the same buffer resets that mark, is routed and runs, and the
// connection stays open. uWS stops parsing as soon as the socket is closed, but
// `res.close()` drops whatever still sits in the loop-wide cork buffer (16 KiB,
// LoopData::CORK_BUFFER_SIZE), and a response ended with end() can no longer be closed.
// So the answer is written raw, without ending the response, and its last write is larger
// than the whole cork buffer: uWS then sends the cork buffer and that write to the kernel
// (AsyncSocket::write → uncork(src, len)) before the socket is closed. Fail-safe: whatever
// happens to the bytes (a client that does not read leaves them in uWS's own buffer, lost
// with the close), the socket closes and the parser stops.
//
// What makes the last write that large is blank lines (CRLF) after the message: the status,
// headers and body are exactly what end() would have sent, so bodies, text or JSON, and
// HEAD answers are unchanged. Clients read the message by its Content-Length and stop at
// the close; llhttp (Node's http, undici's fetch, ws) explicitly skips CR and LF after a
// `Connection: close` message, as curl and Python's http.client do (checked by hand).
import type { HttpResponse } from 'uWebSockets.js';

/** A single write larger than this cannot fit the cork buffer, so uWS hands it to the kernel at once. */
const CORK_BUFFER_BYTES = 16 * 1024;

/**
 * Writes `status`, `headers`, `Connection: close` and `body` (only its length for a HEAD
 * answer), then closes the socket. Any onAborted handler of `res` runs before this
 * returns, and `res` may not be used after it.
 */
export function answerAndClose(res: HttpResponse, status: string, headers: Record<string, string>, body: string, head = false): void {
  res.cork(() => {
    res.writeStatus(status);
    for (const name in headers) res.writeHeader(name, headers[name]!);
    res.writeHeader('Connection', 'close');
    // uWS writes a header as `name: value\r\n`, raw: this value carries the blank line, the
    // body and the blank lines after it (the last CRLF is the one uWS appends).
    res.writeHeader('Content-Length', lengthBodyAndFlush(body, head));
  });
  res.close();
}

/** The Content-Length header's value: the length, the blank line, the body and at least 16 KiB after its start. */
function lengthBodyAndFlush(body: string, head: boolean): string {
  const bytes = Buffer.byteLength(body);
  const sent = head ? 0 : bytes;
  // One CRLF fewer than the blank lines: uWS appends the last.
  const extraLines = Math.max(0, Math.ceil((CORK_BUFFER_BYTES - sent) / 2));
  return `${bytes}\r\n\r\n${head ? '' : body}${'\r\n'.repeat(extraLines)}`;
}
