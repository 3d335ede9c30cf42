// Counterpart of repro/runtime/db-failure-double-dial: the database refuses the commit
// of a queued call's move to `dialing` (a real SQLITE_BUSY: a second connection holds
// the file's write lock past the service's busy timeout). Commit, then act: nothing is
// dialed while the commit fails, the call stays queued, and after the process dies and
// comes back on the same file the call is dialed exactly once.
import { afterAll, expect, it } from 'vitest';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { callReaches, dial, eventually, newCustomer, PUBLIC_BASE, startSims, type CallStack } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { capturingLog, sideConnection, sleep, sqliteErrors, tempDir, twilioDials } from './support.ts';

const data = tempDir('runtime-dbfail-');
let sims: Awaited<ReturnType<typeof startSims>>;
let server: TestServer | null = null;
let side: ReturnType<typeof sideConnection> | null = null;
afterAll(async () => {
  side?.close();
  await server?.stop();
  await sims?.close();
  data.remove();
});

it('a failed commit dials nothing; after a restart the queued call is dialed exactly once', { timeout: 30_000 }, async () => {
  sims = await startSims(40);
  const env = { ...sims.env, MEDIA_ENGINE: 'echo', DATA_DIR: data.dir, SQLITE_BUSY_TIMEOUT_MS: '50' };
  const { log, lines } = capturingLog();
  server = await startTestServer(env, { log });
  // The same bound for a service that does not read SQLITE_BUSY_TIMEOUT_MS.
  server.storage.db.pragma('busy_timeout = 50');
  sims.twilio.route(PUBLIC_BASE, server.url);
  const c = await newCustomer({ sims, server } as CallStack, 'twilio');
  server.storage.accounts.setPlan(c.accountId, 'enterprise', 1);

  const first = await dial(server, c, nextNumber());
  await callReaches(server, c.key, first.call_id, 'in-progress');
  const to = nextNumber();
  const queued = await dial(server, c, to);
  expect(queued.status).toBe('queued');

  // In one synchronous step: the plan gets a second slot, and the database file's write
  // lock is taken. The service sees the slot (reads work) but cannot commit anything.
  side = sideConnection(join(data.dir, 'switchboard.db'));
  side.lock(() => side!.db.prepare('UPDATE accounts SET concurrency_limit = 2 WHERE id = ?').run(c.accountId));
  // The first call also ends at the carrier: its slot would free too, if that could be recorded.
  await sims.twilio.hangup(first.call_id);
  await sleep(2500);

  // The database refused the transitions; nothing was dialed.
  expect(sqliteErrors(lines).length).toBeGreaterThan(0);
  expect(twilioDials(sims, to)).toBe(0);
  const snap = side.db.prepare('SELECT snapshot FROM actor_snapshots WHERE actor_id = ?').get(queued.call_id) as { snapshot: string };
  expect(JSON.parse(snap.snapshot).value).toBe('queued');

  // The process dies while the database still refuses writes; then the lock goes.
  await server.stop();
  server = null;
  side.close();
  side = null;
  expect(twilioDials(sims, to)).toBe(0);

  server = await startTestServer(env);
  sims.twilio.route(PUBLIC_BASE, server.url);
  await eventually(() => (twilioDials(sims, to) === 1 ? true : undefined), 5000, 'the queued call is dialed');
  await callReaches(server, c.key, queued.call_id, (s) => s !== 'queued', 5000);
  await sleep(1500);
  expect(twilioDials(sims, to)).toBe(1);
  expect(sims.twilio.placedTo(to)).toBe(1);
});
