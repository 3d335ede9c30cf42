// Upgrades (issue 23): a database written by the first release migrates forward when
// the service starts on it, and every row arrives. The first release's schema is
// migration 1 alone (storage/migrations/001-foundation.ts; the first commit to touch the
// migrations had only it): accounts, API keys, idempotency records, and the call and
// SMS tables usage read. The test writes rows into each as that release wrote them (keys
// hashed with SHA-256, idempotent answers sealed with the data folder's secrets key),
// starts the real service on the folder, and checks every row and field through SQL and
// the API: user_version is the latest, old keys authenticate (a revoked one does not),
// an idempotent answer is replayed, old calls are listed and counted, old texts listed.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { migrations } from '../../storage/migrations/index.ts';
import { createSecretBox } from '../../storage/secret-box.ts';
import { newAccountId, newKeyId, newKeySecret } from '../../storage/ids.ts';

const FIRST_RELEASE = migrations.filter((m) => m.version === 1);
const LATEST = migrations.at(-1)!.version;
const sha256 = (s: string | Buffer): Buffer => createHash('sha256').update(s).digest();

const NOW = Date.now();
const HOUR = 3_600_000;
const THIS_MONTH = Date.UTC(new Date(NOW).getUTCFullYear(), new Date(NOW).getUTCMonth(), 1);
// Inside this month, and before now.
const T = (offsetMs: number) => Math.max(THIS_MONTH + 1000, NOW - 2 * HOUR) + offsetMs;

const acctA = newAccountId();
const acctB = newAccountId();
const keys = {
  a: { id: newKeyId(), secret: newKeySecret() },
  aRevoked: { id: newKeyId(), secret: newKeySecret() },
  b: { id: newKeyId(), secret: newKeySecret() },
};
const bearer = (k: { id: string; secret: string }) => `${k.id}:${k.secret}`;

/** The rows, column by column, as the first release stored them. */
const rows = {
  accounts: [
    { id: acctA, plan: 'starter', concurrency_limit: 25, created_at: T(-HOUR) },
    { id: acctB, plan: 'enterprise', concurrency_limit: 250, created_at: T(-HOUR + 1) },
  ],
  api_keys: [
    { id: keys.a.id, account_id: acctA, name: 'production', email: 'ops@example.com', secret_hash: sha256(keys.a.secret), created_at: T(-HOUR), last_used_at: T(-60_000), revoked_at: null },
    { id: keys.aRevoked.id, account_id: acctA, name: 'old laptop', email: null, secret_hash: sha256(keys.aRevoked.secret), created_at: T(-HOUR + 5), last_used_at: null, revoked_at: T(-30 * 60_000) },
    { id: keys.b.id, account_id: acctB, name: null, email: null, secret_hash: sha256(keys.b.secret), created_at: T(-HOUR + 1), last_used_at: null, revoked_at: null },
  ],
  calls: [
    {
      call_id: 'CA0123456789abcdef0123456789abcdef', account_id: acctA, agent_id: null, direction: 'inbound', call_status: 'completed',
      from_number: '+14155550111', to_number: '+14155550100', started_at: T(-50 * 60_000), ended_at: T(-50 * 60_000 + 90_500),
      duration_ms: 90_500, ended_reason: 'caller_hangup', charged_minutes: 1.52, campaign_id: null, created_at: T(-50 * 60_000 - 2000),
    },
    {
      call_id: 'CAfedcba9876543210fedcba9876543210', account_id: acctA, agent_id: null, direction: 'outbound', call_status: 'no-answer',
      from_number: '+14155550100', to_number: '+14155550122', started_at: null, ended_at: T(-40 * 60_000 + 30_000),
      duration_ms: 0, ended_reason: 'no-answer', charged_minutes: 0, campaign_id: null, created_at: T(-40 * 60_000),
    },
    {
      call_id: 'CA11111111111111111111111111111111', account_id: acctB, agent_id: null, direction: 'outbound', call_status: 'completed',
      from_number: '+14155550200', to_number: '+14155550233', started_at: T(-30 * 60_000), ended_at: T(-30 * 60_000 + 12_000),
      duration_ms: 12_000, ended_reason: 'callee_hangup', charged_minutes: 0.2, campaign_id: null, created_at: T(-30 * 60_000 - 1500),
    },
  ],
  sms_messages: [
    { message_id: 'msg_AAAAAAAAAAAAAAAAAAAAAAAA', account_id: acctA, direction: 'outbound', from_number: '+14155550100', to_number: '+14155550111', body: 'See you at eight.', status: 'delivered', created_at: T(-20 * 60_000) },
    { message_id: 'msg_BBBBBBBBBBBBBBBBBBBBBBBB', account_id: acctA, direction: 'inbound', from_number: '+14155550111', to_number: '+14155550100', body: 'Thanks!', status: 'received', created_at: T(-19 * 60_000) },
    { message_id: 'msg_CCCCCCCCCCCCCCCCCCCCCCCC', account_id: acctB, direction: 'outbound', from_number: '+14155550200', to_number: '+14155550233', body: 'Your order shipped.', status: 'sent', created_at: T(-10 * 60_000) },
  ],
};

// An idempotent POST /v1/keys of account A, answered and stored an hour ago (replays last 24 h).
const IDEM = { key: 'create-ci-key-1', body: JSON.stringify({ name: 'ci' }), answer: { message: 'API key created.', key_id: newKeyId(), key_secret: newKeySecret(), account_id: acctA } };

let dataDir: string;
let server: TestServer;

function writeFirstReleaseDatabase(): void {
  const secretsKey = randomBytes(32);
  // As the first release's loadSecretsKey left it on first start.
  writeFileSync(join(dataDir, 'secrets.key'), `${secretsKey.toString('hex')}\n`, { mode: 0o600 });
  const db = new Database(join(dataDir, 'switchboard.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  for (const m of FIRST_RELEASE) {
    db.exec(m.sql);
    db.pragma(`user_version = ${m.version}`);
  }
  const insertAll = (table: string, list: Record<string, unknown>[]) => {
    const cols = Object.keys(list[0]!);
    const stmt = db.prepare(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`);
    for (const r of list) stmt.run(r);
  };
  db.transaction(() => {
    for (const [table, list] of Object.entries(rows)) insertAll(table, list);
    const sealed = createSecretBox(secretsKey).seal(JSON.stringify({ b: JSON.stringify(IDEM.answer) }));
    db.prepare('INSERT INTO idempotency_keys (scope, method, path, key, body_hash, status, response, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
      acctA, 'POST', '/v1/keys', IDEM.key, sha256(IDEM.body), 201, sealed, NOW - HOUR,
    );
  })();
  expect(db.pragma('user_version', { simple: true })).toBe(1);
  db.close();
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-upgrade-'));
  writeFirstReleaseDatabase();
  server = await startTestServer({ DATA_DIR: dataDir });
});
afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

describe('a database of the first release, opened by this one', () => {
  it('is migrated to the latest schema with every row and field as it was', () => {
    const db = server.storage.db;
    expect(db.pragma('user_version', { simple: true })).toBe(LATEST);
    for (const [table, list] of Object.entries(rows)) {
      const cols = Object.keys(list[0]!);
      const key = cols[0]!;
      const stored = db.prepare(`SELECT ${cols.join(', ')} FROM ${table} ORDER BY ${key}`).all();
      // SQLite orders text by its bytes (BINARY): the same order here, not the locale's.
      const byKey = (r: Record<string, unknown>) => String(r[key]);
      expect(stored, table).toEqual([...list].sort((x, y) => (byKey(x) < byKey(y) ? -1 : byKey(x) > byKey(y) ? 1 : 0)));
    }
    expect(db.prepare('SELECT scope, method, path, key, body_hash, status, created_at FROM idempotency_keys').all()).toEqual([
      { scope: acctA, method: 'POST', path: '/v1/keys', key: IDEM.key, body_hash: sha256(IDEM.body), status: 201, created_at: NOW - HOUR },
    ]);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  });

  it('authenticates the old keys (not the revoked one) and shows each account’s plan and keys', async () => {
    expect((await server.request('GET', '/v1/account', { key: bearer(keys.a) })).body).toEqual({
      account_id: acctA, plan: 'starter', concurrency_limit: 25, created_at: iso(rows.accounts[0]!.created_at),
    });
    expect((await server.request('GET', '/v1/account', { key: bearer(keys.b) })).body).toMatchObject({ account_id: acctB, plan: 'enterprise', concurrency_limit: 250 });
    expect((await server.request('GET', '/v1/account', { key: bearer(keys.aRevoked) })).status).toBe(401);
    const listed = (await server.request('GET', '/v1/keys', { key: bearer(keys.a) })).body.keys;
    expect(listed).toEqual([
      { key_id: keys.aRevoked.id, name: 'old laptop', email: null, created_at: iso(rows.api_keys[1]!.created_at), last_used_at: null, revoked_at: iso(rows.api_keys[1]!.revoked_at) },
      { key_id: keys.a.id, name: 'production', email: 'ops@example.com', created_at: iso(rows.api_keys[0]!.created_at), last_used_at: expect.any(String), revoked_at: null },
    ]);
  });

  it('replays the idempotent answer stored by the first release', async () => {
    const res = await server.request('POST', '/v1/keys', {
      key: bearer(keys.a),
      rawBody: IDEM.body,
      headers: { 'content-type': 'application/json', 'idempotency-key': IDEM.key },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBe('true');
    expect(res.body).toEqual(IDEM.answer);
  });

  it('lists and shows the old calls, counts them in usage, and lists the old texts', async () => {
    const list = (await server.request('GET', '/v1/calls', { key: bearer(keys.a) })).body;
    expect(list.count).toBe(2);
    expect(list.calls.map((c: { call_id: string }) => c.call_id)).toEqual([rows.calls[1]!.call_id, rows.calls[0]!.call_id]);
    const old = rows.calls[0]!;
    const res = await server.request('GET', `/v1/calls/${old.call_id}`, { key: bearer(keys.a) });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      call_id: old.call_id,
      agent_id: null,
      direction: 'inbound',
      call_status: 'completed',
      from_number: old.from_number,
      to_number: old.to_number,
      started_at: iso(old.started_at),
      ended_at: iso(old.ended_at),
      duration_ms: 90_500,
      ended_reason: 'caller_hangup',
      charged_minutes: 1.52,
      created_at: iso(old.created_at),
      // Columns later releases added, at their defaults.
      transcript: null,
      bookings: [],
      voicemail_detected: false,
      recording_url: null,
    });
    expect((await server.request('GET', `/v1/calls/${rows.calls[2]!.call_id}`, { key: bearer(keys.a) })).status).toBe(404);

    const usage = (await server.request('GET', '/v1/usage', { key: bearer(keys.a) })).body;
    expect(usage).toMatchObject({ calls: 2, inbound_calls: 1, outbound_calls: 1, charged_minutes: 1.52, sms_sent: 1, sms_received: 1 });
    expect((await server.request('GET', '/v1/usage', { key: bearer(keys.b) })).body).toMatchObject({ calls: 1, charged_minutes: 0.2, sms_sent: 1, sms_received: 0 });

    const texts = await server.request('GET', '/v1/sms', { key: bearer(keys.a) });
    expect(texts.status, texts.text).toBe(200);
    expect(texts.body.messages.map((m: { message_id: string; body: string; status: string }) => [m.message_id, m.body, m.status])).toEqual([
      [rows.sms_messages[1]!.message_id, 'Thanks!', 'received'],
      [rows.sms_messages[0]!.message_id, 'See you at eight.', 'delivered'],
    ]);
  });

  it('works: the old key makes new things, and a restart migrates nothing twice', async () => {
    const agent = await server.request('POST', '/v1/agents', { key: bearer(keys.a), body: { name: 'After the upgrade' } });
    expect(agent.status, agent.text).toBe(201);
    await server.stop();
    server = await startTestServer({ DATA_DIR: dataDir });
    expect(server.storage.db.pragma('user_version', { simple: true })).toBe(LATEST);
    expect((await server.request('GET', `/v1/agents/${agent.body.agent_id}`, { key: bearer(keys.a) })).status).toBe(200);
    expect((await server.request('GET', '/v1/calls', { key: bearer(keys.a) })).body.count).toBe(2);
  });
});
