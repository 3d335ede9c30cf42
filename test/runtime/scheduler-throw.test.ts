// Counterpart of repro/runtime/scheduler-throw: the database fails while the scheduler's
// timer fires deadlines (a real SQLITE_BUSY: a second connection holds the file's write
// lock past the service's busy timeout). The errors are logged, nothing escapes the
// timer (no uncaught exception: in production that would end the process), the
// service keeps answering, and once the lock goes the due deadline fires: the call
// that reached its max duration is hung up at the carrier. A deadline row of an actor
// that does not exist (no live actor, no known kind) is dropped, not fired.
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { callReaches, dial, eventually, newCustomer, startCallStack, type CallStack } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { capturingLog, sideConnection, sleep, sqliteErrors } from './support.ts';

let offset = 0;
let stack: CallStack;
const captured = capturingLog();
const uncaught: unknown[] = [];
const monitor = (err: unknown) => uncaught.push(err);
beforeAll(async () => {
  process.on('uncaughtExceptionMonitor', monitor);
  stack = await startCallStack({ SQLITE_BUSY_TIMEOUT_MS: '50' }, undefined, { clock: () => Date.now() + offset, log: captured.log });
  // The same bound for a service that does not read SQLITE_BUSY_TIMEOUT_MS.
  stack.server.storage.db.pragma('busy_timeout = 50');
});
afterAll(async () => {
  process.off('uncaughtExceptionMonitor', monitor);
  await stack.close();
});

it('a database error while firing deadlines is logged and retried; the deadline fires once the error clears', async () => {
  const { server, sims } = stack;
  const c = await newCustomer(stack, 'twilio', { max_call_duration_seconds: 60 });
  const created = await dial(server, c, nextNumber());
  await callReaches(server, c.key, created.call_id, 'in-progress');
  // The call's media stream is up (it claims its token in the database when it starts).
  const stream = await eventually(() => sims.twilio.calls.get(created.call_id)!.stream ?? undefined, 5000, 'media stream');
  await stream.opened;
  await sleep(300);

  const side = sideConnection(join(server.dataDir, 'switchboard.db'));
  try {
    const cols = (side.db.prepare('PRAGMA table_info(deadlines)').all() as { name: string }[]).map((x) => x.name);
    const due = Date.now() + 61_000;
    // In one synchronous step: an orphan deadline (its actor exists nowhere) due with the
    // max duration, then the write lock. The service can read, but not commit.
    side.lock(() => {
      const row: Record<string, unknown> = { account_id: c.accountId, actor_kind: 'gone-kind', actor_id: 'gone_actor_1', name: 'stale', event: '{"type":"TIMER","name":"stale","at":0}', due_at: due + 1 };
      const names = cols.filter((n) => n in row);
      side.db.prepare(`INSERT INTO deadlines (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`).run(...names.map((n) => row[n]));
    });
    offset += 62_000; // the call is past its max duration on the service's clock
    await sleep(2000);
    // The deadline could not be recorded: the call is still up, here and at the carrier.
    expect(uncaught).toEqual([]); // nothing escaped the timer
    expect(sqliteErrors(captured.lines).length).toBeGreaterThan(0); // it was logged
    // The service still answers (an unauthenticated read: authentication itself writes).
    expect((await server.request('GET', '/metrics')).status).toBe(200);
    const row = server.storage.db.prepare('SELECT call_status FROM calls WHERE call_id = ?').get(created.call_id) as { call_status: string };
    expect(row.call_status).toBe('in-progress');
    expect(sims.twilio.calls.get(created.call_id)!.status).toBe('in-progress');
  } finally {
    side.close();
  }

  // The error clears: the deadline fires after all.
  const record = await callReaches(server, c.key, created.call_id, 'completed', 5000);
  expect(record.ended_reason).toBe('max_duration_reached');
  expect(await sims.twilio.calls.get(created.call_id)!.ended).toBe('completed');
  await sleep(1200);
  const left = server.storage.db.prepare("SELECT COUNT(*) AS n FROM deadlines WHERE actor_id IN (?, 'gone_actor_1')").get(created.call_id) as { n: number };
  expect(left.n).toBe(0);
  expect(uncaught).toEqual([]);
});
