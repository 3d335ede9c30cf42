// The account's webhook signing secret through the real server: its format, made on
// first read and stable after, rotation, one per account, and sealed in the database.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from './helpers/server.ts';

const FORMAT = /^whsec_[A-Za-z0-9+/]{43}=$/;
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const getSecret = async (key: string): Promise<string> => {
  const res = await server.request('GET', '/v1/webhooks/secret', { key });
  expect(res.status).toBe(200);
  expect(Object.keys(res.body)).toEqual(['secret']);
  return res.body.secret as string;
};

/** A rotate as a client without a JSON library sends it: no body, no Content-Type. */
const rotate = (key: string, headers: Record<string, string> = {}) => server.request('POST', '/v1/webhooks/secret/rotate', { key, headers });

describe('webhook signing secret', () => {
  it('is whsec_ + base64 of 32 bytes, made on the first GET and the same on every GET after', async () => {
    const { key } = await server.newAccount();
    const first = await getSecret(key);
    expect(first).toMatch(FORMAT);
    expect(Buffer.from(first.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(await getSecret(key)).toBe(first);
    expect(await getSecret(key)).toBe(first);
  });

  it('rotate answers 200 with a new secret, which GET then returns', async () => {
    const { key } = await server.newAccount();
    const old = await getSecret(key);
    const res = await rotate(key);
    expect(res.status).toBe(200);
    expect(res.body.secret).toMatch(FORMAT);
    expect(res.body.secret).not.toBe(old);
    expect(await getSecret(key)).toBe(res.body.secret);
    const again = await rotate(key);
    expect(again.body.secret).not.toBe(res.body.secret);
    expect(await getSecret(key)).toBe(again.body.secret);
  });

  it('rotate works before any GET, and takes an empty JSON object too', async () => {
    const { key } = await server.newAccount();
    const res = await rotate(key);
    expect(res.status).toBe(200);
    expect(await getSecret(key)).toBe(res.body.secret);
    const json = await server.request('POST', '/v1/webhooks/secret/rotate', { key, body: {} });
    expect(json.status).toBe(200);
    expect(json.body.secret).not.toBe(res.body.secret);
  });

  it('rotate refuses a body with fields, naming the field, and keeps the secret', async () => {
    const { key } = await server.newAccount();
    const before = await getSecret(key);
    const res = await server.request('POST', '/v1/webhooks/secret/rotate', { key, body: { secret: 'whsec_mine' } });
    expectError(res, 400, 'invalid_request', 'invalid_request');
    expect(res.body.error.details).toEqual({ field: 'secret' });
    expect(await getSecret(key)).toBe(before);
  });

  it('a rotate repeated with the same Idempotency-Key replays the same secret and rotates once', async () => {
    const { key } = await server.newAccount();
    const a = await rotate(key, { 'idempotency-key': 'rotate-1' });
    const b = await rotate(key, { 'idempotency-key': 'rotate-1' });
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.body.secret).toBe(a.body.secret);
    expect(await getSecret(key)).toBe(a.body.secret);
  });

  it('is per account: each account has its own, and rotating one leaves the other', async () => {
    const a = await server.newAccount();
    const b = await server.newAccount();
    const sa = await getSecret(a.key);
    const sb = await getSecret(b.key);
    expect(sa).not.toBe(sb);
    await rotate(a.key);
    expect(await getSecret(b.key)).toBe(sb);
    expect(await getSecret(a.key)).not.toBe(sa);

    // Another key of the same account sees the same secret.
    const second = await server.request('POST', '/v1/keys', { key: a.key, body: { name: 'second' } });
    expect(await getSecret(`${second.body.key_id}:${second.body.key_secret}`)).toBe(await getSecret(a.key));
  });

  it('needs a key', async () => {
    expectError(await server.request('GET', '/v1/webhooks/secret'), 401, 'authentication_error', 'invalid_api_key');
    expectError(await server.request('POST', '/v1/webhooks/secret/rotate'), 401, 'authentication_error', 'invalid_api_key');
  });

  it('is not stored in clear', async () => {
    const { key } = await server.newAccount();
    const secrets = [await getSecret(key), (await rotate(key)).body.secret as string];
    const files = ['switchboard.db', 'switchboard.db-wal'].map((f) => join(server.dataDir, f)).filter(existsSync);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const bytes = readFileSync(f);
      for (const s of secrets) {
        expect(bytes.includes(Buffer.from(s))).toBe(false);
        expect(bytes.includes(Buffer.from(s.slice('whsec_'.length)))).toBe(false);
      }
    }
  });
});
