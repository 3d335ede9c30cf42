// One budget per client IP for attempts without a working key, whatever the way in
// (issue 18, defect 7): the live machine view's websocket upgrade and HTTP requests of any
// method count in the same bucket, at RATE_LIMIT_READS_PER_MIN. Before the fix the
// upgrade had a limiter of its own (and writes another bucket), so one IP could try 600
// keys over upgrades and 600 more over HTTP in a minute. A working key's upgrade is one
// of that key's reads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';
import { rawHttp, requestText } from '../helpers/raw-http.ts';

const LIMIT = 20;
// A fixed clock half-way through a minute: no window rolls over in the middle of a test.
const NOW = Date.parse('2026-11-22T10:00:30.000Z');
const WRONG_KEY = `Bearer key_${'a'.repeat(24)}:sk_${'b'.repeat(61)}`;
/** The ways of having no working key: none at all, a wrong one, one without its secret half. */
const CREDENTIALS: Array<string | null> = [null, WRONG_KEY, `Bearer key_${'c'.repeat(24)}`];

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_READS_PER_MIN: String(LIMIT) }, { clock: () => NOW });
});
afterAll(() => server?.close());

/** A live machine view upgrade from `ip`; resolves to the status of the answer (101 when upgraded). */
async function upgrade(ip: string, authorization: string | null): Promise<{ status: number; body: string; headers: Record<string, string> }> {
  const headers: Array<[string, string]> = [
    ['Upgrade', 'websocket'],
    ['Connection', 'Upgrade'],
    ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='],
    ['Sec-WebSocket-Version', '13'],
    ['X-Forwarded-For', ip],
  ];
  if (authorization) headers.push(['Authorization', authorization]);
  const out = await rawHttp(server.port, requestText('GET /v1/debug/actors/ws', headers), { expect: 1 });
  const answer = out.responses[0];
  if (!answer) throw new Error('no answer to the upgrade');
  return answer;
}

/** An HTTP request from `ip` without a working key; `i` picks the method and the credential. */
function request(ip: string, i: number) {
  const method = (['GET', 'POST', 'DELETE', 'PATCH'] as const)[i % 4]!;
  const path = method === 'GET' ? '/v1/account' : method === 'POST' ? '/v1/agents' : '/v1/agents/agent_x';
  const credential = CREDENTIALS[i % CREDENTIALS.length];
  return server.request(method, path, { headers: { 'x-forwarded-for': ip, ...(credential ? { authorization: credential } : {}) } });
}

describe('attempts without a working key from one IP', () => {
  it(`share one bucket of ${LIMIT}: upgrades first, then HTTP requests of any method`, async () => {
    const ip = '10.7.0.1';
    const upgrades = 12;
    for (let i = 0; i < upgrades; i++) expect((await upgrade(ip, CREDENTIALS[i % CREDENTIALS.length] ?? null)).status).toBe(401);
    let admitted = 0;
    for (let i = 0; i < 2 * LIMIT; i++) {
      const res = await request(ip, i);
      if (res.status === 429) {
        expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
        expect(res.headers.get('retry-after')).toBe('30');
        break;
      }
      expect(res.status).toBe(401);
      admitted++;
    }
    expect(upgrades + admitted).toBe(LIMIT);
    // And the upgrades are out of budget too.
    const refused = await upgrade(ip, WRONG_KEY);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body).error.code).toBe('rate_limit_exceeded');
  });

  it(`share one bucket of ${LIMIT}: HTTP requests of any method first, then upgrades`, async () => {
    const ip = '10.7.0.2';
    const requests = 12;
    for (let i = 0; i < requests; i++) expect((await request(ip, i)).status).toBe(401);
    let admitted = 0;
    for (let i = 0; i < 2 * LIMIT; i++) {
      const res = await upgrade(ip, CREDENTIALS[i % CREDENTIALS.length] ?? null);
      if (res.status === 429) {
        expect(res.headers['retry-after']).toBe('30');
        break;
      }
      expect(res.status).toBe(401);
      admitted++;
    }
    expect(requests + admitted).toBe(LIMIT);
    expectError(await request(ip, 0), 429, 'rate_limit_error', 'rate_limit_exceeded');
  });

  it('leave another IP its own bucket', async () => {
    for (let i = 0; i < LIMIT; i++) await request('10.7.0.3', i);
    expect((await request('10.7.0.3', 0)).status).toBe(429);
    expect((await upgrade('10.7.0.4', WRONG_KEY)).status).toBe(401);
    expect((await request('10.7.0.4', 1)).status).toBe(401);
  });
});

describe('a working key', () => {
  it('counts its upgrades as its reads, in the same bucket as its GET requests', async () => {
    const { key } = await server.newAccount('10.7.0.5');
    for (let i = 0; i < 3; i++) expect((await server.request('GET', '/v1/account', { key })).status).toBe(200);
    expect((await upgrade('10.7.0.5', `Bearer ${key}`)).status).toBe(101);
    const res = await server.request('GET', '/v1/account', { key });
    expect(res.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 5));
  });

  it('is not held back by its IP spending the budget of attempts without a key', async () => {
    const ip = '10.7.0.6';
    const { key } = await server.newAccount(ip);
    for (let i = 0; i < LIMIT; i++) await request(ip, i);
    expect((await request(ip, 0)).status).toBe(429);
    expect((await server.request('GET', '/v1/account', { key, headers: { 'x-forwarded-for': ip } })).status).toBe(200);
    expect((await upgrade(ip, `Bearer ${key}`)).status).toBe(101);
  });
});
