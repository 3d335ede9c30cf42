// The envelope for every way a request can be wrong before a handler runs, and for
// an unexpected failure inside one.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let key: string;
beforeAll(async () => {
  server = await startTestServer({ MAX_BODY_BYTES: '65536' });
  key = (await server.newAccount()).key;
});
afterAll(() => server.close());

describe('request body', () => {
  it('malformed JSON is 400 invalid_json', async () => {
    const res = await server.request('POST', '/v1/keys', { key, rawBody: '{"name": "x",}', headers: { 'content-type': 'application/json' } });
    expectError(res, 400, 'invalid_request', 'invalid_json');
  });

  it('a body without Content-Type: application/json is 400 invalid_content_type', async () => {
    const variants: Array<Record<string, string>> = [{}, { 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }];
    for (const headers of variants) {
      const res = await server.request('POST', '/v1/keys', { key, rawBody: '{"name":"x"}', headers });
      expectError(res, 400, 'invalid_request', 'invalid_content_type');
    }
    const ok = await server.request('POST', '/v1/keys', { key, rawBody: '{"name":"x"}', headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(ok.status).toBe(201);
  });

  it('an empty POST needs no Content-Type', async () => {
    const res = await server.request('POST', '/v1/keys', { key });
    expect(res.status).toBe(201);
  });

  it('a JSON body that is not an object is 400 invalid_request', async () => {
    for (const rawBody of ['[]', '"text"', 'null', '42']) {
      const res = await server.request('POST', '/v1/keys', { key, rawBody, headers: { 'content-type': 'application/json' } });
      expectError(res, 400, 'invalid_request', 'invalid_request');
    }
  });

  it('a body over the limit is 413 payload_too_large and nothing is created', async () => {
    const before = (await server.request('GET', '/v1/keys', { key })).body.count;
    const big = JSON.stringify({ name: 'x'.repeat(70_000) });
    const res = await server.request('POST', '/v1/keys', { key, rawBody: big, headers: { 'content-type': 'application/json' } });
    expectError(res, 413, 'invalid_request', 'payload_too_large');
    expect((await server.request('GET', '/v1/keys', { key })).body.count).toBe(before);
  });

  it('a chunked body over the limit is refused too', async () => {
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(new Uint8Array(10_000).fill(32));
        controller.close();
      },
    });
    const res = await fetch(`${server.url}/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: chunks,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe('payload_too_large');
  });
});

describe('unexpected failures', () => {
  it('answer 500 server_error with a request id, log the error, and show no stack', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const broken = await startTestServer({}, { log: pino({ level: 'info' }, sink) });
    try {
      const a = await broken.newAccount();
      // A storage failure no handler expects: the table the key look-up reads is gone.
      broken.storage.db.exec('PRAGMA foreign_keys = OFF; DROP TABLE api_keys;');
      const res = await broken.request('GET', '/v1/account', { key: a.key });
      expectError(res, 500, 'server_error', 'server_error');
      const requestId = res.headers.get('x-request-id');
      expect(res.body.error.details.request_id).toBe(requestId);
      expect(res.text).not.toMatch(/at .*\.ts:\d+/);
      expect(res.text).not.toContain('api_keys');
      const logged = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'unhandled error in request');
      expect(logged.request_id).toBe(requestId);
      expect(logged.err.message).toContain('api_keys');
    } finally {
      await broken.close();
    }
  });
});

describe('request log', () => {
  it('writes one line per request with route pattern, status, duration, account and request id, and no secrets', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logged = await startTestServer({}, { log: pino({ level: 'info' }, sink) });
    try {
      const created = await logged.request('POST', '/v1/keys', { body: { name: 'n' } });
      const a = { key: `${created.body.key_id}:${created.body.key_secret}` };
      await logged.request('DELETE', '/v1/keys/key_AAAAAAAAAAAAAAAAAAAAAAAA', { key: a.key });
      const entries = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
      expect(entries).toHaveLength(2);
      expect(entries[1]).toMatchObject({ method: 'DELETE', route: '/v1/keys/{key_id}', status: 404, account_id: created.body.account_id });
      expect(typeof entries[1].duration_ms).toBe('number');
      expect(entries[1].request_id).toMatch(/^req_/);
      expect(lines.join('')).not.toContain(created.body.key_secret);
    } finally {
      await logged.close();
    }
  });
});
