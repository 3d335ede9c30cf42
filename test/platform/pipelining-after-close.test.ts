// Nothing sent after a request answered with Connection: close is ever run (issue 18,
// defect 5; RFC 9112 9.6). Each exchange is one TCP write: a request the service refuses
// and closes on, then a valid, authenticated POST /v1/agents. uWS parses every request in
// its read buffer in one loop, and end(…, true) only marked the response: the smuggled
// request ran (201) and the connection stayed open. Now exactly one answer arrives (none
// where the HTTP parser itself drops the request), the connection closes, and no agent exists.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { rawHttp, requestText } from '../helpers/raw-http.ts';

const MAX_BODY_BYTES = 1024;
/** What a refused body is read up to before the answer closes instead (server.ts: twice the limit). */
const LINGER_BYTES = 2 * MAX_BODY_BYTES;

let server: TestServer;
let key: string;
beforeAll(async () => {
  server = await startTestServer({ MAX_BODY_BYTES: String(MAX_BODY_BYTES) });
  ({ key } = await server.newAccount());
});
afterAll(() => server?.close());

const json = '{"name":"smuggled"}';
const smuggled = () =>
  requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Content-Length', String(json.length)]], json);
const upgradeHeaders: Array<[string, string]> = [
  ['Upgrade', 'websocket'],
  ['Connection', 'Upgrade'],
  ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='],
  ['Sec-WebSocket-Version', '13'],
];
const padding = 'x'.repeat(LINGER_BYTES + 100);

/** Sends `first` and the smuggled request in one write; returns what came back and whether an agent appeared. */
async function exchange(first: string, heads: ReadonlySet<number> = new Set()) {
  const before = (await server.request('GET', '/v1/agents', { key })).body.count as number;
  // Well under the old behaviour's wait (the connection stayed open), far over a close's latency.
  const out = await rawHttp(server.port, first + smuggled(), { timeoutMs: 3000, heads });
  const after = (await server.request('GET', '/v1/agents', { key })).body.count as number;
  return { ...out, created: after - before };
}

describe('a framing error followed, in the same write, by a valid request', () => {
  it('conflicting Content-Length: one 400 malformed_request, closed, nothing created', async () => {
    // Content-Length 0 to a reader that takes the first value, the whole rest to one that takes the last.
    const out = await exchange(requestText('POST /healthz', [['Content-Length', '0'], ['Content-Length', String(smuggled().length)]]));
    expect(out.responses.map((r) => r.status)).toEqual([400]);
    expect(JSON.parse(out.responses[0]!.body).error).toMatchObject({ type: 'invalid_request', code: 'malformed_request' });
    expect(out.responses[0]!.headers['connection']).toBe('close');
    // After the message only blank lines, which flushed it (http/close-answer.ts).
    expect(out.leftover).toMatch(/^(\r\n)+$/);
    expect(out.closed).toBe(true);
    expect(out.created).toBe(0);
  });

  it.each(['gzip', 'gzip, chunked', 'chunked, chunked'])('Transfer-Encoding %s whose body parses as chunked: one 400, closed, nothing created', async (coding) => {
    const out = await exchange(requestText('POST /healthz', [['Transfer-Encoding', coding]], '0\r\n\r\n'));
    expect(out.responses.map((r) => r.status)).toEqual([400]);
    expect(JSON.parse(out.responses[0]!.body).error.code).toBe('malformed_request');
    expect(out.closed).toBe(true);
    expect(out.created).toBe(0);
  });

  it('Content-Length with Transfer-Encoding: chunked is dropped by the HTTP parser: no answer, closed, nothing created', async () => {
    const out = await exchange(requestText('POST /healthz', [['Content-Length', '5'], ['Transfer-Encoding', 'chunked']], '0\r\n\r\n'));
    expect(out.responses).toEqual([]);
    expect(out.closed).toBe(true);
    expect(out.created).toBe(0);
  });

  it('on a HEAD request: one 400 with the length and no body, closed, nothing created', async () => {
    const out = await exchange(requestText('HEAD /healthz', [['Content-Length', '0'], ['Content-Length', '7']]), new Set([0]));
    expect(out.responses.map((r) => r.status)).toEqual([400]);
    expect(Number(out.responses[0]!.headers['content-length'])).toBeGreaterThan(0);
    expect(out.leftover).toMatch(/^(\r\n)+$/);
    expect(out.closed).toBe(true);
    expect(out.created).toBe(0);
  });

  it('after answers already on their way: those come first, then the 400, then the close', async () => {
    const voices = requestText('GET /v1/voices', [['Authorization', `Bearer ${key}`]]);
    const out = await exchange(voices + voices + requestText('POST /healthz', [['Content-Length', '0'], ['Content-Length', '9']]));
    expect(out.responses.map((r) => r.status)).toEqual([200, 200, 400]);
    expect(out.closed).toBe(true);
    expect(out.created).toBe(0);
  });
});

describe('other answers that close, followed in the same write by a valid request', () => {
  it('a declared body past what is read of a refused one: one 413, closed, nothing created', async () => {
    const out = await exchange(
      requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Content-Length', String(padding.length)]], padding),
    );
    expect(out.responses.map((r) => r.status)).toEqual([413]);
    expect(JSON.parse(out.responses[0]!.body).error.code).toBe('payload_too_large');
    expect(out.closed).toBe(true);
    expect(out.created).toBe(0);
  });

  it('a chunked body read and dropped past that bound: one 413, closed, nothing created', async () => {
    const out = await exchange(
      requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']], `${padding.length.toString(16)}\r\n${padding}\r\n0\r\n\r\n`),
    );
    expect(out.responses.map((r) => r.status)).toEqual([413]);
    expect(out.closed).toBe(true);
    expect(out.created).toBe(0);
  });

  it('a refused live machine view upgrade: one 401, closed, nothing created', async () => {
    const out = await exchange(requestText('GET /v1/debug/actors/ws', [...upgradeHeaders, ['Authorization', `Bearer key_${'a'.repeat(24)}:sk_${'b'.repeat(61)}`]]));
    expect(out.responses.map((r) => r.status)).toEqual([401]);
    expect(JSON.parse(out.responses[0]!.body).error.code).toBe('invalid_api_key');
    expect(out.closed).toBe(true);
    expect(out.created).toBe(0);
  });

  it('a refused carrier media upgrade: one 403, closed, nothing created', async () => {
    const out = await exchange(requestText('GET /carrier/telnyx/media?token=not-a-live-call', upgradeHeaders));
    expect(out.responses.map((r) => r.status)).toEqual([403]);
    expect(out.responses[0]!.body).toBe('unknown or used media token');
    expect(out.closed).toBe(true);
    expect(out.created).toBe(0);
  });
});

describe('answers that do not close', () => {
  it('leave the connection open for the next request, as before', async () => {
    const voices = requestText('GET /v1/voices', [['Authorization', `Bearer ${key}`]]);
    const out = await rawHttp(server.port, voices + smuggled(), { expect: 2 });
    expect(out.responses.map((r) => r.status)).toEqual([200, 201]);
    expect(out.responses[0]!.headers['connection']).toBeUndefined();
    expect(out.closed).toBe(false);
  });
});
