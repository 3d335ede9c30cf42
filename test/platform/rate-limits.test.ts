// Fixed-window rate limits per key (reads and writes apart), per IP without a key,
// and per IP for key creation; the X-RateLimit-* headers on every /v1 response.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';

// A fixed clock half-way through a minute: no window rolls over in the middle of a test.
const NOW = Date.parse('2026-11-22T10:00:30.000Z');
let now = NOW;
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer(
    { RATE_LIMIT_READS_PER_MIN: '3', RATE_LIMIT_WRITES_PER_MIN: '2', KEY_CREATION_PER_HOUR_PER_IP: '10' },
    { clock: () => now },
  );
});
afterAll(() => server.close());

const limitHeaders = (h: Headers) => ({
  limit: h.get('x-ratelimit-limit'),
  remaining: h.get('x-ratelimit-remaining'),
  reset: Number(h.get('x-ratelimit-reset')),
});

describe('per-key limits', () => {
  it('count reads down and answer 429 with Retry-After and details.retry_after', async () => {
    const a = await server.newAccount('10.0.0.1');
    const seen: Array<string | null> = [];
    for (let i = 0; i < 3; i++) {
      const res = await server.request('GET', '/v1/account', { key: a.key });
      expect(res.status).toBe(200);
      const h = limitHeaders(res.headers);
      expect(h.limit).toBe('3');
      expect(h.reset).toBe(Date.parse('2026-11-22T10:01:00.000Z') / 1000);
      seen.push(h.remaining);
    }
    expect(seen).toEqual(['2', '1', '0']);
    const res = await server.request('GET', '/v1/account', { key: a.key });
    expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBe(30);
    expect(res.body.error.details).toEqual({ retry_after: retryAfter });
    expect(res.body.error.message).toContain(`${retryAfter} seconds`);
    expect(limitHeaders(res.headers).remaining).toBe('0');
  });

  it('keep writes in their own bucket', async () => {
    const a = await server.newAccount('10.0.0.2');
    for (let i = 0; i < 3; i++) await server.request('GET', '/v1/account', { key: a.key });
    const w1 = await server.request('DELETE', '/v1/account', { key: a.key });
    expect(w1.status).toBe(400);
    expect(limitHeaders(w1.headers)).toMatchObject({ limit: '2', remaining: '1' });
    await server.request('DELETE', '/v1/account', { key: a.key });
    expectError(await server.request('DELETE', '/v1/account', { key: a.key }), 429, 'rate_limit_error', 'rate_limit_exceeded');
  });

  it('are per key: another key of the same account has its own window', async () => {
    const a = await server.newAccount('10.0.0.3');
    const other = await server.request('POST', '/v1/keys', { key: a.key, headers: { 'x-forwarded-for': '10.0.0.3' } });
    for (let i = 0; i < 3; i++) await server.request('GET', '/v1/account', { key: a.key });
    expect((await server.request('GET', '/v1/account', { key: a.key })).status).toBe(429);
    const res = await server.request('GET', '/v1/account', { key: `${other.body.key_id}:${other.body.key_secret}` });
    expect(res.status).toBe(200);
    expect(limitHeaders(res.headers).remaining).toBe('2');
  });

  it('with the default limits a new key shows 599 remaining after its first read', async () => {
    const fresh = await startTestServer();
    try {
      const a = await fresh.newAccount();
      const res = await fresh.request('GET', '/v1/account', { key: a.key });
      expect(limitHeaders(res.headers)).toMatchObject({ limit: '600', remaining: '599' });
    } finally {
      await fresh.close();
    }
  });
});

describe('windows', () => {
  it('open again when the minute turns', async () => {
    const a = await server.newAccount('10.0.0.4');
    for (let i = 0; i < 3; i++) await server.request('GET', '/v1/account', { key: a.key });
    expect((await server.request('GET', '/v1/account', { key: a.key })).status).toBe(429);
    now = NOW + 30_000;
    try {
      const res = await server.request('GET', '/v1/account', { key: a.key });
      expect(res.status).toBe(200);
      expect(limitHeaders(res.headers)).toMatchObject({ remaining: '2', reset: Date.parse('2026-11-22T10:02:00.000Z') / 1000 });
    } finally {
      now = NOW;
    }
  });
});

describe('requests without a working key', () => {
  it('count against the client IP and still carry the headers', async () => {
    const ip = { 'x-forwarded-for': '10.9.9.9' };
    const first = await server.request('GET', '/v1/account', { headers: ip });
    expectError(first, 401, 'authentication_error', 'invalid_api_key');
    expect(limitHeaders(first.headers)).toMatchObject({ limit: '3', remaining: '2' });
    await server.request('GET', '/v1/account', { headers: ip });
    await server.request('GET', '/v1/account', { headers: ip });
    expectError(await server.request('GET', '/v1/account', { headers: ip }), 429, 'rate_limit_error', 'rate_limit_exceeded');
    // Another address is not affected.
    expect((await server.request('GET', '/v1/account', { headers: { 'x-forwarded-for': '10.9.9.10' } })).status).toBe(401);
  });
});

describe('key creation', () => {
  it('allows 10 per hour per IP and shows its own hourly headers', async () => {
    const ip = { 'x-forwarded-for': '10.5.5.5' };
    for (let i = 0; i < 10; i++) {
      const res = await server.request('POST', '/v1/keys', { headers: ip });
      expect(res.status).toBe(201);
      expect(limitHeaders(res.headers)).toMatchObject({ limit: '10', remaining: String(9 - i) });
    }
    const res = await server.request('POST', '/v1/keys', { headers: ip });
    expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
    // The hourly window ends at 11:00:00, 59.5 minutes away.
    expect(Number(res.headers.get('retry-after'))).toBe(3570);
    expect((await server.request('POST', '/v1/keys', { headers: { 'x-forwarded-for': '10.5.5.6' } })).status).toBe(201);
  });
});
