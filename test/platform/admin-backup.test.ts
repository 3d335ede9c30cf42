// `npm run admin -- backup <file>` through the real command line while the running service
// keeps committing writes acknowledged over its API: the copy opens, passes
// `PRAGMA integrity_check`, holds every write acknowledged before the command started, and
// a service started on it (with the data folder's secrets key) serves them with the old
// key. It refuses to replace a file without --force.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../helpers/admin.ts';
import { createAgent } from '../helpers/fixtures.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { migrations } from '../../storage/migrations/index.ts';

const NUMBER = '+14155550177';
const LATEST = migrations.at(-1)!.version;

let server: TestServer;
let outDir: string;
beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_WRITES_PER_MIN: '100000000', RATE_LIMIT_READS_PER_MIN: '100000000' });
  outDir = mkdtempSync(join(tmpdir(), 'switchboard-backup-'));
});
afterAll(async () => {
  await server.close();
  rmSync(outDir, { recursive: true, force: true });
});

/** An account with a number whose caller records the load writes (no carrier is needed for those). */
async function accountWithNumber(): Promise<{ key: string; accountId: string }> {
  const a = await server.newAccount();
  const agentId = await createAgent(server, a.key);
  const imported = server.storage.numbers.import({
    accountId: a.accountId,
    phoneNumber: NUMBER,
    agentId,
    credentials: { provider: 'twilio', account_sid: `AC${'1'.repeat(32)}`, auth_token: 'x'.repeat(32) },
    source: 'api',
    carrierNumberSid: 'PN1',
    carrierNumberId: 'PN1',
    eventsToken: null,
    inboundEnabled: undefined,
    outboundEnabled: undefined,
    now: Date.now(),
  });
  expect(imported.kind).toBe('created');
  return a;
}

/**
 * Writers that PUT caller records one after another until stopped; every answered 200 is an
 * acknowledged write, recorded with when it was acknowledged.
 */
function writeLoad(key: string, workers: number) {
  const acked: { caller: string; at: number }[] = [];
  let stop = false;
  let seq = 0;
  const run = async (w: number) => {
    while (!stop) {
      const caller = `+1628${String(w).padStart(2, '0')}${String(++seq).padStart(5, '0')}`;
      const res = await server.request('PUT', `/v1/phone-numbers/${encodeURIComponent(NUMBER)}/callers/${encodeURIComponent(caller)}`, {
        key,
        body: { name: `Caller ${seq}`, preference: 'written under load' },
      });
      if (res.status !== 200) throw new Error(`write failed: ${res.status} ${res.text}`);
      acked.push({ caller, at: Date.now() });
    }
  };
  const done = Promise.all(Array.from({ length: workers }, (_, w) => run(w)));
  return {
    acked,
    async stop() {
      stop = true;
      await done;
    },
  };
}

describe('npm run admin -- backup', () => {
  it('takes a consistent copy while the service commits writes, holding every write acknowledged before it started', async () => {
    const a = await accountWithNumber();
    // Some weight first: many pages to copy while the writes go on.
    const db = server.storage.db;
    const insert = db.prepare(
      `INSERT INTO callers (phone_number, caller_number, account_id, name, location, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    db.transaction(() => {
      for (let i = 0; i < 30_000; i++) insert.run(NUMBER, `+1999${String(i).padStart(7, '0')}`, a.accountId, `Prefilled ${i}`, 'x'.repeat(200), Date.now(), Date.now());
    })();

    // A reader holds a read transaction, as Litestream does while it copies the WAL: the
    // service's checkpoints cannot move later commits into the main file, so the writes
    // below sit in the WAL, where only a copy that reads through SQLite finds them.
    const reader = new Database(join(server.dataDir, 'switchboard.db'), { readonly: true });
    reader.exec('BEGIN');
    reader.prepare('SELECT COUNT(*) FROM accounts').get();
    const load = writeLoad(a.key, 6);
    let run;
    let startedAt: number;
    let endedAt: number;
    let ackedBefore: string[];
    const file = join(outDir, 'under-load.db');
    try {
      await new Promise((r) => setTimeout(r, 500));
      startedAt = Date.now();
      ackedBefore = load.acked.filter((x) => x.at <= startedAt).map((x) => x.caller);
      run = await runAdmin(server.dataDir, ['backup', file]);
      endedAt = Date.now();
    } finally {
      await load.stop();
      reader.exec('COMMIT');
      reader.close();
    }
    expect(run.code, run.stderr).toBe(0);

    // The writes went on while the command ran.
    expect(ackedBefore.length).toBeGreaterThan(50);
    expect(load.acked.filter((x) => x.at > startedAt && x.at < endedAt).length).toBeGreaterThan(20);

    const out = run.json();
    expect(out).toEqual({ file, bytes: statSync(file).size, pages: expect.any(Number), page_size: expect.any(Number), user_version: LATEST });
    expect(out.pages * out.page_size).toBe(out.bytes);
    // One self-contained file: nothing beside it.
    expect(existsSync(`${file}-wal`)).toBe(false);
    expect(existsSync(join(outDir, `.under-load.db.${process.pid}.partial`))).toBe(false);

    const copy = new Database(file, { readonly: true });
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(copy.pragma('foreign_key_check')).toEqual([]);
      expect(copy.pragma('user_version', { simple: true })).toBe(LATEST);
      const inCopy = new Set((copy.prepare('SELECT caller_number FROM callers WHERE account_id = ?').all(a.accountId) as { caller_number: string }[]).map((r) => r.caller_number));
      const missing = ackedBefore.filter((c) => !inCopy.has(c));
      expect(missing, `${missing.length} of ${ackedBefore.length} writes acknowledged before the backup are missing`).toEqual([]);
      expect(inCopy.size).toBeGreaterThanOrEqual(30_000 + ackedBefore.length);
    } finally {
      copy.close();
    }

    // The copy is a working database for the service: restored into a fresh data folder
    // with the secrets key, the old key reads what was written.
    const restored = join(outDir, 'restored');
    mkdirSync(restored);
    copyFileSync(file, join(restored, 'switchboard.db'));
    copyFileSync(join(server.dataDir, 'secrets.key'), join(restored, 'secrets.key'));
    const again = await startTestServer({ DATA_DIR: restored });
    try {
      const last = ackedBefore.at(-1)!;
      const res = await again.request('GET', `/v1/phone-numbers/${encodeURIComponent(NUMBER)}/callers/${encodeURIComponent(last)}`, { key: a.key });
      expect(res.status, res.text).toBe(200);
      expect(res.body.caller.context).toMatchObject({ preference: 'written under load' });
    } finally {
      await again.close();
    }
  }, 60_000);

  it('refuses to replace a file without --force, and a folder that does not exist (exit 1)', async () => {
    const file = join(outDir, 'existing.db');
    writeFileSync(file, 'not a database');
    const refused = await runAdmin(server.dataDir, ['backup', file]);
    expect([refused.code, refused.stdout]).toEqual([1, '']);
    expect(refused.stderr).toMatch(/backup: .*existing\.db exists; pass --force to replace it/);
    const forced = await runAdmin(server.dataDir, ['backup', file, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    const copy = new Database(file, { readonly: true });
    expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
    copy.close();
    const nowhere = await runAdmin(server.dataDir, ['backup', join(outDir, 'no', 'such', 'folder.db')]);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/the folder .* does not exist/);
    expect((await runAdmin(server.dataDir, ['backup'])).code).toBe(2);
  });
});
