// Regression tests for issue 11's transport and path defects, each seen failing on
// 565faaf: a non-canonical path skipping authentication and rate limits, HEAD answers
// with a body, conflicting Content-Length and unknown Transfer-Encoding accepted,
// oversized bodies answered with a reset, and no bound on bodies held in memory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { rawHttp, requestText } from '../helpers/raw-http.ts';

const MiB = 1024 * 1024;

describe('one canonical path before routing and authentication', () => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ KEY_CREATION_PER_HOUR_PER_IP: '2', TRUST_PROXY: 'false' });
    ({ key } = await server.newAccount());
  });
  afterAll(() => server?.close());

  const get = (path: string, withKey = true) =>
    rawHttp(server.port, requestText(`GET ${path}`, withKey ? [['Authorization', `Bearer ${key}`]] : []), { expect: 1 });

  it('refuses a leading // instead of answering without a key', async () => {
    const { responses } = await get('//v1/voices', false);
    expect(responses[0]!.status).toBe(400);
    expect(JSON.parse(responses[0]!.body).error).toMatchObject({ type: 'invalid_request', code: 'invalid_path' });
  });

  it('answers 400, not 500, for a // path with a key', async () => {
    const { responses } = await get('//v1/agents/agent_x');
    expect(responses[0]!.status).toBe(400);
    expect(JSON.parse(responses[0]!.body).error.code).toBe('invalid_path');
  });

  it.each([
    '/v1//voices',
    '/v1/voices//',
    '/v1/./voices',
    '/v1/../v1/voices',
    '/v1/%2e%2e/v1/voices',
    '/v1/%2E/voices',
    '/v1%2Fvoices',
    '/v1/agents/a%2Fb',
    '/v1/agents/a%5Cb',
  ])('refuses %s with the error envelope, with or without a key', async (path) => {
    for (const withKey of [true, false]) {
      const { responses } = await get(path, withKey);
      expect(responses[0]!.status).toBe(400);
      const body = JSON.parse(responses[0]!.body);
      expect(body.error).toMatchObject({ type: 'invalid_request', code: 'invalid_path' });
      expect(body.error.message).toMatch(/canonical form/);
    }
  });

  it('reads one trailing slash as the same path, under the same key and limits', async () => {
    const { responses } = await get('/v1/voices/');
    expect(responses[0]!.status).toBe(200);
    expect(responses[0]!.headers['x-ratelimit-limit']).toBe('600');
    const anonymous = await get('/v1/voices/', false);
    expect(anonymous.responses[0]!.status).toBe(401);
  });

  it('counts every spelling of POST /v1/keys against the one per-IP limit', async () => {
    const post = (path: string) => rawHttp(server.port, requestText(`POST ${path}`, [['Content-Length', '0']]), { expect: 1 });
    // The limit of 2 was spent by beforeAll's account and this one.
    expect((await post('/v1/keys')).responses[0]!.status).toBe(201);
    expect((await post('/v1/keys')).responses[0]!.status).toBe(429);
    for (const path of ['//v1/keys', '/v1//keys', '/v1/./keys', '/v1/keys/']) {
      const status = (await post(path)).responses[0]!.status;
      expect([400, 429]).toContain(status);
    }
  });
});

describe('HTTP framing', () => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ MAX_BODY_BYTES: String(MiB) });
    ({ key } = await server.newAccount());
  });
  afterAll(() => server?.close());

  it('answers HEAD with the headers of GET and no body, so the next response on the connection parses', async () => {
    const auth: [string, string] = ['Authorization', `Bearer ${key}`];
    const out = await rawHttp(server.port, [requestText('HEAD /v1/voices', [auth]), requestText('GET /v1/voices', [auth])], { expect: 2, heads: new Set([0]) });
    expect(out.responses.map((r) => r.status)).toEqual([200, 200]);
    const [head, get] = out.responses;
    expect(head!.headers['content-length']).toBe(String(Buffer.byteLength(get!.body)));
    expect(head!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(get!.body).voices.length).toBeGreaterThan(0);
    expect(out.leftover).toBe('');
  });

  it('answers HEAD on an error with no body either', async () => {
    const out = await rawHttp(server.port, [requestText('HEAD /v1/voices', []), requestText('GET /healthz', [])], { expect: 2, heads: new Set([0]) });
    expect(out.responses.map((r) => r.status)).toEqual([401, 200]);
    expect(out.responses[1]!.body).toBe('{"ok":true}');
    expect(out.leftover).toBe('');
  });

  it('refuses conflicting Content-Length headers with 400 and closes, creating nothing', async () => {
    const before = await server.request('GET', '/v1/agents', { key });
    const body = '{"name":"smuggled"}';
    const out = await rawHttp(
      server.port,
      requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Content-Length', String(body.length)], ['Content-Length', '2']], body),
    );
    expect(out.responses[0]!.status).toBe(400);
    expect(JSON.parse(out.responses[0]!.body).error).toMatchObject({ type: 'invalid_request', code: 'malformed_request' });
    expect(out.responses[0]!.headers['connection']).toBe('close');
    expect(out.closed).toBe(true);
    const after = await server.request('GET', '/v1/agents', { key });
    expect(after.body).toEqual(before.body);
  });

  it('accepts repeated identical Content-Length headers', async () => {
    const body = '{"name":"twice"}';
    const out = await rawHttp(
      server.port,
      requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Content-Length', String(body.length)], ['Content-Length', String(body.length)]], body),
      { expect: 1 },
    );
    expect(out.responses[0]!.status).toBe(201);
  });

  it.each(['gzip, chunked', 'deflate,chunked', 'chunked, chunked'])('refuses Transfer-Encoding %s with 400, creating nothing', async (coding) => {
    const before = await server.request('GET', '/v1/agents', { key });
    const out = await rawHttp(
      server.port,
      requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Transfer-Encoding', coding]], '10\r\n{"name":"coded"}\r\n0\r\n\r\n'),
    );
    expect(out.responses[0]!.status).toBe(400);
    expect(JSON.parse(out.responses[0]!.body).error.code).toBe('malformed_request');
    const after = await server.request('GET', '/v1/agents', { key });
    expect(after.body).toEqual(before.body);
  });

  it('still reads a chunked body', async () => {
    const json = '{"name":"chunked"}';
    const out = await rawHttp(
      server.port,
      requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']], `${json.length.toString(16)}\r\n${json}\r\n0\r\n\r\n`),
      { expect: 1 },
    );
    expect(out.responses[0]!.status).toBe(201);
  });

  it('answers an oversized chunked body with 413 and keeps the connection in step', async () => {
    const chunk = 'a'.repeat(256 * 1024);
    const chunks = Array.from({ length: 6 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('') + '0\r\n\r\n';
    const out = await rawHttp(server.port, [
      requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']], chunks),
      requestText('GET /healthz', []),
    ], { expect: 2 });
    expect(out.responses.map((r) => r.status)).toEqual([413, 200]);
    expect(out.error).toBeNull();
  });
});

describe('an oversized body at the default 5 MiB limit', () => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer();
    ({ key } = await server.newAccount());
  });
  afterAll(() => server?.close());

  it('is answered 413, not reset, for a client that writes the whole body before reading, and the connection stays in step (20 times)', async () => {
    const body = Buffer.alloc(6 * MiB, 0x61);
    for (let i = 0; i < 20; i++) {
      const out = await rawHttp(server.port, [
        requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Content-Length', String(body.length)]]),
        body,
        requestText('GET /healthz', []),
      ], { expect: 2, writeFirst: true });
      expect(out.error).toBeNull();
      expect(out.responses.map((r) => r.status)).toEqual([413, 200]);
      expect(JSON.parse(out.responses[0]!.body).error).toMatchObject({ type: 'invalid_request', code: 'payload_too_large' });
    }
  });

  it('closes, after answering 413, a connection whose declared body is past what it is willing to read', async () => {
    const out = await rawHttp(server.port, requestText('POST /v1/agents', [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/json'], ['Content-Length', String(64 * MiB)]]));
    expect(out.responses[0]!.status).toBe(413);
    expect(out.responses[0]!.headers['connection']).toBe('close');
    expect(out.closed).toBe(true);
  });
});

describe('bodies in flight share one memory bound', () => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ MAX_BODY_BYTES: String(MiB), MAX_INFLIGHT_BODY_BYTES: String(2 * MiB) });
    ({ key } = await server.newAccount());
  });
  afterAll(() => server?.close());

  const BODY = Math.floor(0.9 * MiB);
  const head = (auth: boolean) =>
    requestText('POST /v1/agents', [...(auth ? ([['Authorization', `Bearer ${key}`]] as Array<[string, string]>) : []), ['Content-Type', 'application/json'], ['Content-Length', String(BODY)]]);
  const padded = () => Buffer.from(`{"name":"${'p'.repeat(BODY - 11)}"}`);

  /** Opens an upload, sends the headers and the first half of the body, and holds. */
  async function holdUpload(auth: boolean) {
    const net = await import('node:net');
    const socket = net.connect(server.port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (d) => received.push(d));
    socket.on('error', () => {});
    const body = padded();
    socket.write(head(auth));
    socket.write(body.subarray(0, BODY / 2));
    await new Promise((r) => setTimeout(r, 100));
    return {
      async finish(): Promise<number> {
        socket.write(body.subarray(BODY / 2));
        for (let i = 0; i < 100 && !/^HTTP\/1\.1 \d{3}/.test(Buffer.concat(received).toString()); i++) await new Promise((r) => setTimeout(r, 20));
        socket.destroy();
        return Number(/^HTTP\/1\.1 (\d{3})/.exec(Buffer.concat(received).toString())?.[1]);
      },
    };
  }

  it('answers 503 server_busy with Retry-After once held bodies reach the bound, and serves again after', async () => {
    const first = await holdUpload(true);
    const second = await holdUpload(true);
    const out = await rawHttp(server.port, [head(true), padded()], { expect: 1 });
    expect(out.responses[0]!.status).toBe(503);
    expect(out.responses[0]!.headers['retry-after']).toBe('1');
    expect(JSON.parse(out.responses[0]!.body).error).toMatchObject({ type: 'server_error', code: 'server_busy' });
    expect(await first.finish()).toBe(400);
    expect(await second.finish()).toBe(400);
    expect(server.http.bufferedBodyBytes()).toBe(0);
    const again = await rawHttp(server.port, [head(true), padded()], { expect: 1 });
    expect(again.responses[0]!.status).toBe(400); // name too long: validated, so read in full
  });

  it('holds nothing for bodies of requests without a working key: they never count against the bound', async () => {
    const anonymous = await Promise.all([1, 2, 3, 4, 5].map(() => holdUpload(false)));
    expect(server.http.bufferedBodyBytes()).toBe(0);
    const out = await rawHttp(server.port, [head(true), padded()], { expect: 1 });
    expect(out.responses[0]!.status).toBe(400);
    for (const upload of anonymous) expect(await upload.finish()).toBe(401);
  });
});
