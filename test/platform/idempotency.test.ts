// Idempotency-Key: a repeat within 24 hours replays the stored answer; a different
// body under the same key is refused; entries are per account, method and path,
// survive a restart, and are not readable in the database file.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';

const START = Date.parse('2026-11-22T09:00:00.000Z');
let now = START;
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { clock: () => now });
});
afterAll(() => server.close());

const idem = (k: string) => ({ 'idempotency-key': k });

describe('Idempotency-Key', () => {
  it('replays the original response with Idempotent-Replayed and does the work once', async () => {
    const a = await server.newAccount();
    const first = await server.request('POST', '/v1/keys', { key: a.key, body: { name: 'ci' }, headers: idem('create-ci-key') });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await server.request('POST', '/v1/keys', { key: a.key, body: { name: 'ci' }, headers: idem('create-ci-key') });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const list = await server.request('GET', '/v1/keys', { key: a.key });
    expect(list.body.count).toBe(2);
  });

  it('refuses the same key with a different body: idempotency_key_reused', async () => {
    const a = await server.newAccount();
    await server.request('POST', '/v1/keys', { key: a.key, body: { name: 'one' }, headers: idem('k1') });
    const res = await server.request('POST', '/v1/keys', { key: a.key, body: { name: 'two' }, headers: idem('k1') });
    expectError(res, 400, 'invalid_request', 'idempotency_key_reused');
    expect((await server.request('GET', '/v1/keys', { key: a.key })).body.count).toBe(2);
  });

  it('stores 4xx answers too', async () => {
    const a = await server.newAccount();
    const first = await server.request('DELETE', '/v1/account', { key: a.key, headers: idem('erase') });
    expectError(first, 400, 'invalid_request', 'confirmation_required');
    const again = await server.request('DELETE', '/v1/account', { key: a.key, headers: idem('erase') });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('is scoped to account, method and path', async () => {
    const a = await server.newAccount();
    const b = await server.newAccount();
    const ra = await server.request('POST', '/v1/keys', { key: a.key, body: {}, headers: idem('same') });
    const rb = await server.request('POST', '/v1/keys', { key: b.key, body: {}, headers: idem('same') });
    expect(rb.headers.get('idempotent-replayed')).toBeNull();
    expect(rb.body.account_id).toBe(b.accountId);
    expect(rb.body.key_id).not.toBe(ra.body.key_id);
    const otherPath = await server.request('DELETE', `/v1/keys/${ra.body.key_id}`, { key: a.key, headers: idem('same') });
    expect(otherPath.status).toBe(200);
    expect(otherPath.headers.get('idempotent-replayed')).toBeNull();
  });

  it('is shared by every key of the account', async () => {
    const a = await server.newAccount();
    const second = await server.request('POST', '/v1/keys', { key: a.key });
    const secondKey = `${second.body.key_id}:${second.body.key_secret}`;
    const first = await server.request('POST', '/v1/keys', { key: a.key, body: {}, headers: idem('acct-wide') });
    const again = await server.request('POST', '/v1/keys', { key: secondKey, body: {}, headers: idem('acct-wide') });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.key_id).toBe(first.body.key_id);
  });

  it('expires after 24 hours', async () => {
    const a = await server.newAccount();
    const first = await server.request('POST', '/v1/keys', { key: a.key, body: {}, headers: idem('daily') });
    now = START + 24 * 3600 * 1000 - 1;
    const within = await server.request('POST', '/v1/keys', { key: a.key, body: {}, headers: idem('daily') });
    expect(within.body.key_id).toBe(first.body.key_id);
    now = START + 24 * 3600 * 1000 + 1;
    const after = await server.request('POST', '/v1/keys', { key: a.key, body: {}, headers: idem('daily') });
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect(after.body.key_id).not.toBe(first.body.key_id);
    now = START;
  });

  it('rejects keys longer than 255 characters', async () => {
    const a = await server.newAccount();
    const res = await server.request('POST', '/v1/keys', { key: a.key, body: {}, headers: idem('x'.repeat(256)) });
    expectError(res, 400, 'invalid_request', 'invalid_idempotency_key');
    expect((await server.request('GET', '/v1/keys', { key: a.key })).body.count).toBe(1);
    const max = await server.request('POST', '/v1/keys', { key: a.key, body: {}, headers: idem('y'.repeat(255)) });
    expect(max.status).toBe(201);
  });

  it('keeps stored answers encrypted: a replayed secret is not in the database file', async () => {
    const a = await server.newAccount();
    const res = await server.request('POST', '/v1/keys', { key: a.key, body: {}, headers: idem('secret-check') });
    const secret: string = res.body.key_secret;
    const files = ['switchboard.db', 'switchboard.db-wal'].map((f) => join(server.dataDir, f)).filter((f) => existsSync(f));
    for (const f of files) expect(readFileSync(f).includes(Buffer.from(secret))).toBe(false);
  });
});

describe('after a restart', () => {
  it('still replays', async () => {
    const first = await startTestServer();
    const a = await first.newAccount();
    const created = await first.request('POST', '/v1/keys', { key: a.key, body: { name: 'r' }, headers: idem('restart') });
    await first.stop();
    const second = await startTestServer({ DATA_DIR: first.dataDir });
    try {
      const again = await second.request('POST', '/v1/keys', { key: a.key, body: { name: 'r' }, headers: idem('restart') });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(created.body);
    } finally {
      await second.close();
    }
  });
});

describe('a request still running', () => {
  it('answers 409 idempotency_key_in_use to a repeat, then replays once it finished', async () => {
    const { startCarrierSims, createAgent, nextNumber } = await import('../helpers/fixtures.ts');
    const { twilioSid } = await import('../sim/twilio-sim.ts');
    const sims = await startCarrierSims();
    const slow = await startTestServer(sims.env);
    try {
      const a = await slow.newAccount();
      const agentId = await createAgent(slow, a.key);
      const accountSid = twilioSid('AC');
      const token = 'a'.repeat(32);
      const phone = nextNumber();
      sims.twilio.addAccount(accountSid, token);
      sims.twilio.addNumber(accountSid, phone);
      // The carrier takes a while to answer the ownership check.
      sims.twilio.fail({ delayMs: 700 });
      const body = { phone_number: phone, agent_id: agentId, provider: 'twilio', twilio_account_sid: accountSid, twilio_auth_token: token };
      const first = slow.request('POST', '/v1/phone-numbers', { key: a.key, body, headers: idem('import-1') });
      await new Promise((r) => setTimeout(r, 150));
      const during = await slow.request('POST', '/v1/phone-numbers', { key: a.key, body, headers: idem('import-1') });
      expectError(during, 409, 'conflict', 'idempotency_key_in_use');
      const done = await first;
      expect(done.status).toBe(201);
      const after = await slow.request('POST', '/v1/phone-numbers', { key: a.key, body, headers: idem('import-1') });
      expect(after.status).toBe(201);
      expect(after.headers.get('idempotent-replayed')).toBe('true');
      expect(after.body).toEqual(done.body);
    } finally {
      await slow.close();
      await sims.close();
    }
  });
});
