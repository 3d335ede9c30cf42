// Accounts and API keys through real HTTP: creation, authentication failures,
// revocation taking effect at once, the last-key guard, isolation between accounts,
// and erasing an account.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('POST /v1/keys', () => {
  it('creates an account and a 64-character sk_ secret shown once', async () => {
    const res = await server.request('POST', '/v1/keys', { body: { name: 'prod', email: 'ops@example.com' } });
    expect(res.status).toBe(201);
    expect(res.body.key_id).toMatch(/^key_[0-9A-Za-z]{24}$/);
    expect(res.body.key_secret).toMatch(/^sk_[0-9A-Za-z]{61}$/);
    expect(res.body.key_secret).toHaveLength(64);
    expect(res.body.account_id).toMatch(/^acct_/);
    expect(typeof res.body.message).toBe('string');
    const list = await server.request('GET', '/v1/keys', { key: `${res.body.key_id}:${res.body.key_secret}` });
    expect(list.status).toBe(200);
    expect(list.body.count).toBe(1);
    expect(list.body.keys[0]).toMatchObject({ key_id: res.body.key_id, name: 'prod', email: 'ops@example.com', revoked_at: null });
    expect(JSON.stringify(list.body)).not.toContain(res.body.key_secret);
  });

  it('adds a key to the same account when called with a key', async () => {
    const a = await server.newAccount();
    const res = await server.request('POST', '/v1/keys', { key: a.key, body: { name: 'staging' } });
    expect(res.status).toBe(201);
    expect(res.body.account_id).toBe(a.accountId);
    const list = await server.request('GET', '/v1/keys', { key: `${res.body.key_id}:${res.body.key_secret}` });
    expect(list.body.keys.map((k: { key_id: string }) => k.key_id).sort()).toEqual([a.keyId, res.body.key_id].sort());
  });

  it('rejects a bad Authorization header instead of silently making a new account', async () => {
    const res = await server.request('POST', '/v1/keys', { key: 'key_AAAAAAAAAAAAAAAAAAAAAAAA:sk_wrong' });
    expectError(res, 401, 'authentication_error', 'invalid_api_key');
  });

  it('validates the body: unknown fields and bad emails name the field', async () => {
    const unknown = await server.request('POST', '/v1/keys', { body: { nmae: 'x' } });
    expectError(unknown, 400, 'invalid_request', 'invalid_request');
    expect(unknown.body.error.details).toEqual({ field: 'nmae' });
    const email = await server.request('POST', '/v1/keys', { body: { email: 'not-an-email' } });
    expectError(email, 400, 'invalid_request', 'invalid_request');
    expect(email.body.error.details).toEqual({ field: 'email' });
    const type = await server.request('POST', '/v1/keys', { body: { name: 5 } });
    expectError(type, 400, 'invalid_request', 'invalid_request');
  });
});

describe('authentication', () => {
  it('answers invalid_api_key for a missing, malformed, unknown or wrong key', async () => {
    const a = await server.newAccount();
    const [, secret] = a.key.split(':');
    const cases: Array<Record<string, string>> = [
      {},
      { authorization: 'Basic abc' },
      { authorization: 'Bearer' },
      { authorization: `Bearer key_AAAAAAAAAAAAAAAAAAAAAAAA:${secret}` },
      { authorization: `Bearer ${a.keyId}:sk_${'x'.repeat(61)}` },
      { authorization: `Bearer ${a.keyId} ${secret}` },
    ];
    for (const headers of cases) {
      const res = await server.request('GET', '/v1/account', { headers });
      expectError(res, 401, 'authentication_error', 'invalid_api_key');
    }
  });

  it('answers key_secret_required when the secret half is missing', async () => {
    const a = await server.newAccount();
    for (const authorization of [`Bearer ${a.keyId}`, `Bearer ${a.keyId}:`]) {
      const res = await server.request('GET', '/v1/account', { headers: { authorization } });
      expectError(res, 401, 'authentication_error', 'key_secret_required');
    }
  });

  it('authenticates before routing: unknown /v1 paths are 401 without a key, 404 with one', async () => {
    const a = await server.newAccount();
    expectError(await server.request('GET', '/v1/nothing-here'), 401, 'authentication_error', 'invalid_api_key');
    expectError(await server.request('GET', '/v1/nothing-here', { key: a.key }), 404, 'not_found', 'route_not_found');
    expectError(await server.request('GET', '/nothing-here'), 404, 'not_found', 'route_not_found');
  });

  it('answers 405 method_not_allowed with an Allow header on a known path', async () => {
    const a = await server.newAccount();
    const res = await server.request('PATCH', '/v1/account', { key: a.key, body: {} });
    expectError(res, 405, 'invalid_request', 'method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, DELETE');
  });
});

describe('revocation', () => {
  it('takes effect on the very next request', async () => {
    const a = await server.newAccount();
    const second = await server.request('POST', '/v1/keys', { key: a.key });
    const secondKey = `${second.body.key_id}:${second.body.key_secret}`;
    expect((await server.request('GET', '/v1/account', { key: secondKey })).status).toBe(200);
    const revoked = await server.request('DELETE', `/v1/keys/${second.body.key_id}`, { key: a.key });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ key_id: second.body.key_id, revoked: true });
    expectError(await server.request('GET', '/v1/account', { key: secondKey }), 401, 'authentication_error', 'invalid_api_key');
    const list = await server.request('GET', '/v1/keys', { key: a.key });
    const row = list.body.keys.find((k: { key_id: string }) => k.key_id === second.body.key_id);
    expect(row.revoked_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('refuses to revoke the last active key', async () => {
    const a = await server.newAccount();
    const res = await server.request('DELETE', `/v1/keys/${a.keyId}`, { key: a.key });
    expectError(res, 400, 'invalid_request', 'last_active_key');
    expect((await server.request('GET', '/v1/account', { key: a.key })).status).toBe(200);
  });

  it('lets a key revoke itself when another stays active', async () => {
    const a = await server.newAccount();
    await server.request('POST', '/v1/keys', { key: a.key });
    expect((await server.request('DELETE', `/v1/keys/${a.keyId}`, { key: a.key })).status).toBe(200);
    expectError(await server.request('GET', '/v1/keys', { key: a.key }), 401, 'authentication_error', 'invalid_api_key');
  });
});

describe('account isolation', () => {
  it("never lists, revokes or reveals another account's keys", async () => {
    const a = await server.newAccount();
    const b = await server.newAccount();
    await server.request('POST', '/v1/keys', { key: b.key });
    const res = await server.request('DELETE', `/v1/keys/${b.keyId}`, { key: a.key });
    expectError(res, 404, 'not_found', 'key_not_found');
    const unknown = await server.request('DELETE', '/v1/keys/key_AAAAAAAAAAAAAAAAAAAAAAAA', { key: a.key });
    expect(unknown.body).toEqual(res.body);
    expect((await server.request('GET', '/v1/account', { key: b.key })).status).toBe(200);
    const listA = await server.request('GET', '/v1/keys', { key: a.key });
    expect(listA.body.keys.map((k: { key_id: string }) => k.key_id)).toEqual([a.keyId]);
  });
});

describe('account and usage', () => {
  it('shows the plan and its concurrency limit', async () => {
    const a = await server.newAccount();
    const res = await server.request('GET', '/v1/account', { key: a.key });
    expect(res.body).toMatchObject({ account_id: a.accountId, plan: 'payg', concurrency_limit: 10 });
  });

  it('counts usage from the stored calls and messages of this account only', async () => {
    const a = await server.newAccount();
    const b = await server.newAccount();
    const db = server.storage.db;
    const at = Date.parse('2026-03-10T12:00:00Z');
    const insertCall = db.prepare(
      `INSERT INTO calls (call_id, account_id, direction, call_status, from_number, to_number, started_at, charged_minutes, created_at)
       VALUES (?, ?, ?, 'completed', '+14155550100', '+14155550101', ?, ?, ?)`,
    );
    insertCall.run('CA1', a.accountId, 'inbound', at, 1.5, at);
    insertCall.run('CA2', a.accountId, 'outbound', at + 1000, 0.25, at);
    insertCall.run('CA3', b.accountId, 'outbound', at, 9, at);
    insertCall.run('CA4', a.accountId, 'outbound', Date.parse('2026-05-01T00:00:00Z'), 3, at);
    db.prepare(
      `INSERT INTO sms_messages (message_id, account_id, direction, from_number, to_number, body, status, created_at)
       VALUES ('msg_1', ?, 'outbound', '+1', '+2', 'hi', 'delivered', ?), ('msg_2', ?, 'inbound', '+2', '+1', 'yo', 'received', ?)`,
    ).run(a.accountId, at, a.accountId, at);
    const res = await server.request('GET', '/v1/usage?since=2026-03-01T00:00:00Z&until=2026-04-01T00:00:00Z', { key: a.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      calls: 2,
      inbound_calls: 1,
      outbound_calls: 1,
      charged_minutes: 1.75,
      sms_sent: 1,
      sms_received: 1,
      since: '2026-03-01T00:00:00.000Z',
      until: '2026-04-01T00:00:00.000Z',
    });
    const bad = await server.request('GET', '/v1/usage?since=yesterday', { key: a.key });
    expectError(bad, 400, 'invalid_request', 'invalid_request');
    expect(bad.body.error.details).toEqual({ field: 'since' });
  });

  it('starts at zero for a new account', async () => {
    const a = await server.newAccount();
    const res = await server.request('GET', '/v1/usage', { key: a.key });
    expect(res.body).toMatchObject({ calls: 0, inbound_calls: 0, outbound_calls: 0, charged_minutes: 0, sms_sent: 0, sms_received: 0 });
  });

  it('erases the account only with confirm=true', async () => {
    const a = await server.newAccount();
    await server.request('POST', '/v1/keys', { key: a.key });
    expectError(await server.request('DELETE', '/v1/account', { key: a.key }), 400, 'invalid_request', 'confirmation_required');
    expect((await server.request('GET', '/v1/account', { key: a.key })).status).toBe(200);
    const res = await server.request('DELETE', '/v1/account?confirm=true', { key: a.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: true });
    expectError(await server.request('GET', '/v1/account', { key: a.key }), 401, 'authentication_error', 'invalid_api_key');
    const left = server.storage.db.prepare('SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?').get(a.accountId) as { n: number };
    expect(left.n).toBe(0);
  });
});
