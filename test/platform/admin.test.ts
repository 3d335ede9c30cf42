// The operator's admin command through its real command line, beside a running service on
// the same data folder: help and exit codes, accounts with this month's usage, plan
// changes and key revocations the running service sees within a second or so.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../helpers/admin.ts';
import { eventually } from '../helpers/calls.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const admin = (...args: string[]) => runAdmin(server.dataDir, args);

describe('npm run admin: help and exit codes', () => {
  it('prints usage on stderr and exits 2 without arguments; --help and help print it on stdout and exit 0', async () => {
    const none = await admin();
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/^usage: npm run admin -- <command>/);
    for (const args of [['--help'], ['help'], ['backup', '--help']]) {
      const help = await admin(...args);
      expect(help.code, args.join(' ')).toBe(0);
      for (const command of ['list-accounts', 'show-account', 'set-plan', 'revoke-key', 'add-number', 'export-account', 'erase-account', 'backup']) {
        expect(help.stdout).toContain(command);
      }
      // It says it runs beside the service, and how long it waits for a lock.
      expect(help.stdout).toMatch(/beside the running service/);
      expect(help.stdout).toContain('SQLITE_BUSY_TIMEOUT_MS');
    }
  });

  it.each([
    [['no-such-command'], /unknown command no-such-command/],
    [['show-account'], /wrong number of arguments\nusage: npm run admin -- show-account <account_id>/],
    [['show-account', 'a', 'b'], /wrong number of arguments/],
    [['list-accounts', '--yes'], /list-accounts takes no --yes/],
    [['backup', 'x.db', '--colour'], /unknown option --colour/],
    [['export-account', 'acct_x', '--out'], /--out needs a value/],
  ])('%j is a usage error (exit 2)', async (args, message) => {
    const run = await admin(...args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
  });

  it('refuses a data folder without a database instead of creating one (exit 1)', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'switchboard-admin-'));
    try {
      const run = await runAdmin(empty, ['list-accounts']);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/no database at .*switchboard\.db: set DATA_DIR/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('npm run admin: accounts', () => {
  it('lists every account with plan, limit, creation time and this month’s usage', async () => {
    const a = await server.newAccount();
    const b = await server.newAccount();
    const now = Date.now();
    // Usage as the service records it: a connected call of 90 s and two texts this month, one call last month.
    const db = server.storage.db;
    const call = db.prepare(
      `INSERT INTO calls (call_id, account_id, direction, call_status, from_number, to_number, started_at, ended_at, duration_ms, charged_minutes, created_at)
       VALUES (?, ?, 'outbound', 'completed', '+14155550100', '+14155550101', ?, ?, 90000, 1.5, ?)`,
    );
    call.run(`CA${now}a`, a.accountId, now - 60_000, now - 1000, now - 60_000);
    call.run(`CA${now}b`, a.accountId, now - 40 * 86_400_000, now - 40 * 86_400_000 + 5000, now - 40 * 86_400_000);
    const sms = db.prepare(
      `INSERT INTO sms_messages (message_id, account_id, direction, from_number, to_number, body, status, created_at) VALUES (?, ?, ?, '+14155550100', '+14155550101', 'hi', ?, ?)`,
    );
    sms.run(`msg_${now}a`, a.accountId, 'outbound', 'delivered', now - 1000);
    sms.run(`msg_${now}b`, a.accountId, 'inbound', 'received', now - 1000);

    const run = await admin('list-accounts');
    expect(run.code, run.stderr).toBe(0);
    const out = run.json();
    const first = new Date(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1)).toISOString();
    expect(out.usage_since).toBe(first);
    expect(out.count).toBe(out.accounts.length);
    const byId = new Map(out.accounts.map((x: { account_id: string }) => [x.account_id, x]));
    const apiA = (await server.request('GET', '/v1/account', { key: a.key })).body;
    expect(byId.get(a.accountId)).toEqual({
      account_id: a.accountId,
      plan: 'payg',
      concurrency_limit: 10,
      created_at: apiA.created_at,
      usage: { calls: 1, charged_minutes: 1.5, sms_sent: 1, sms_received: 1 },
    });
    // The same figures GET /v1/usage gives for the month.
    const usage = (await server.request('GET', '/v1/usage', { key: a.key })).body;
    expect(usage).toMatchObject({ calls: 1, charged_minutes: 1.5, sms_sent: 1, sms_received: 1 });
    expect(byId.get(b.accountId)).toMatchObject({ account_id: b.accountId, usage: { calls: 0, charged_minutes: 0, sms_sent: 0, sms_received: 0 } });

    const one = await admin('show-account', a.accountId);
    expect(one.code).toBe(0);
    expect(one.json()).toEqual(byId.get(a.accountId));
    const missing = await admin('show-account', 'acct_missing');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/show-account: no account acct_missing/);
  });

  it('sets a plan and the running service reports it', async () => {
    const a = await server.newAccount();
    await server.request('GET', '/v1/account', { key: a.key });
    const out = await admin('set-plan', a.accountId, 'scale');
    expect(out.code, out.stderr).toBe(0);
    expect(out.json()).toEqual({ account_id: a.accountId, plan: 'scale', concurrency_limit: 100 });
    const body = await eventually(async () => {
      const res = (await server.request('GET', '/v1/account', { key: a.key })).body;
      return res.plan === 'scale' ? res : undefined;
    }, 3000, 'the new plan', 100);
    expect(body).toMatchObject({ plan: 'scale', concurrency_limit: 100 });
  });

  it('takes an explicit limit for enterprise and refuses one without', async () => {
    const a = await server.newAccount();
    const out = await admin('set-plan', a.accountId, 'enterprise', '250');
    expect(out.json()).toMatchObject({ plan: 'enterprise', concurrency_limit: 250 });
    const noLimit = await admin('set-plan', a.accountId, 'enterprise');
    expect(noLimit.code).toBe(2);
    expect(noLimit.stderr).toMatch(/concurrency limit/);
    const missing = await admin('set-plan', 'acct_missing', 'starter');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no account acct_missing/);
    const gold = await admin('set-plan', a.accountId, 'gold');
    expect(gold.code).toBe(2);
    expect(gold.stderr).toMatch(/plan must be one of payg, starter, scale, enterprise\nusage:/);
  });
});

describe('npm run admin: revoke-key', () => {
  it('revokes a key the running service has cached, and the service refuses it within a second or so', async () => {
    const a = await server.newAccount();
    const second = await server.request('POST', '/v1/keys', { key: a.key, body: { name: 'leaked' } });
    const leaked = `${second.body.key_id}:${second.body.key_secret}`;
    // Used, so its row sits in the service's key cache.
    expect((await server.request('GET', '/v1/account', { key: leaked })).status).toBe(200);

    // The key is used every 50 ms while the command runs, as a busy client would: its cached
    // row never goes cold, and the first refusal is timed against the revocation's commit.
    let refusedAt: number | null = null;
    let polling = true;
    const poller = (async () => {
      while (polling && refusedAt === null) {
        if ((await server.request('GET', '/v1/account', { key: leaked })).status === 401) refusedAt = Date.now();
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const run = await admin('revoke-key', second.body.key_id);
    expect(run.code, run.stderr).toBe(0);
    const out = run.json();
    expect(out).toEqual({ key_id: second.body.key_id, account_id: a.accountId, revoked_at: expect.any(String), already_revoked: false });
    await eventually(() => refusedAt ?? undefined, 5000, 'the revoked key refused', 50);
    polling = false;
    await poller;
    // Bounded by the cache's one second, plus a poll's step and a request.
    expect(refusedAt! - Date.parse(out.revoked_at)).toBeLessThan(1500);
    expect((await server.request('GET', '/v1/account', { key: a.key })).status).toBe(200);
    const keys = (await server.request('GET', '/v1/keys', { key: a.key })).body.keys;
    expect(keys.find((k: { key_id: string }) => k.key_id === second.body.key_id).revoked_at).toBe(out.revoked_at);

    const again = await admin('revoke-key', second.body.key_id);
    expect(again.code).toBe(0);
    expect(again.json()).toMatchObject({ already_revoked: true, revoked_at: out.revoked_at });
  });

  it('refuses the last active key unless --force, and a key that does not exist', async () => {
    const a = await server.newAccount();
    const refused = await admin('revoke-key', a.keyId);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/last active key of account .*--force/);
    expect((await server.request('GET', '/v1/account', { key: a.key })).status).toBe(200);
    const forced = await admin('revoke-key', a.keyId, '--force');
    expect(forced.code, forced.stderr).toBe(0);
    await eventually(async () => ((await server.request('GET', '/v1/account', { key: a.key })).status === 401 ? true : undefined), 3000, 'the key refused', 50);
    const missing = await admin('revoke-key', 'key_000000000000000000000000');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no key key_000000000000000000000000/);
  });
});
