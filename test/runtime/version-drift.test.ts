// Counterpart of repro/runtime/version-drift: a snapshot written by another version of
// the call machine restored as an errored actor. Here the service (a real child
// process) is SIGKILLed with three calls up, their snapshots are then rewritten the way
// other versions would have left them, and the service starts again on the file:
// - X, an outbound call, as the previous version (1) stored it: XState's persisted
//   snapshot, no `version`, none of the new context fields;
// - Y, an inbound call, stamped with this version but naming a state this machine lacks
//   ({"in-progress": "speaking"}, the repro's case);
// - Z, a call that had waited in its queue, as version 1 stored it mid-dial: `dialing`
//   with the invoked dial persisted as active and no carrier call id yet.
// Each is migrated into a state of this machine (none abandoned or errored), is
// reconciled with the carrier (Z is never dialed again), and ends as the carrier ended
// it, at the carrier's end time.
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { callReaches, dial, newCustomer, startSims, type CallStack } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { serviceRig, twilioDials, type ServiceRig } from './support.ts';

let sims: Awaited<ReturnType<typeof startSims>>;
let rig: ServiceRig;
afterAll(async () => {
  await rig?.close();
  await sims?.close();
});

/** A call context as version 1 of the machine kept it (before dialOutcome, restored, hangupAttempts). */
function v1Context(ctx: Record<string, unknown>): Record<string, unknown> {
  const { dialOutcome: _a, restored: _b, hangupAttempts: _c, ...rest } = ctx;
  return rest;
}

it('snapshots of an older version, or naming a state the machine lacks, come back in a sensible state and end honestly', { timeout: 30_000 }, async () => {
  sims = await startSims(40);
  rig = await serviceRig(sims);
  let server = await rig.start();
  const p = await newCustomer({ sims, server } as CallStack, 'twilio');
  const q = await newCustomer({ sims, server } as CallStack, 'twilio');
  let side = new Database(rig.dbFile);
  side.prepare('UPDATE accounts SET concurrency_limit = 1 WHERE id = ?').run(q.accountId);
  side.close();

  const x = (await dial(server, p, nextNumber())).call_id as string;
  await callReaches(server, p.key, x, 'in-progress');
  const inbound = await sims.twilio.placeInboundCall({ from: nextNumber(), to: p.number });
  const y = inbound.callSid;
  await callReaches(server, p.key, y, 'in-progress');
  // Z waits behind Q's only slot, then is dialed when the first call ends.
  const z0 = (await dial(server, q, nextNumber())).call_id as string;
  await callReaches(server, q.key, z0, 'in-progress');
  const toZ = nextNumber();
  const z = await dial(server, q, toZ);
  expect(z.status).toBe('queued');
  await sims.twilio.hangup(z0);
  await callReaches(server, q.key, z.call_id, 'in-progress');

  await rig.kill();

  // What other versions of the machine would have left in the database.
  side = new Database(rig.dbFile);
  const internal = (publicId: string) => (side.prepare('SELECT internal_id FROM calls WHERE call_id = ?').get(publicId) as { internal_id: string }).internal_id;
  const stored = (id: string) => JSON.parse((side.prepare('SELECT snapshot FROM actor_snapshots WHERE actor_id = ?').get(id) as { snapshot: string }).snapshot);
  const write = (id: string, snap: unknown) => side.prepare('UPDATE actor_snapshots SET snapshot = ?, done = 0 WHERE actor_id = ?').run(JSON.stringify(snap), id);
  const [ix, iy, iz] = [internal(x), internal(y), internal(z.call_id)];
  const sx = stored(ix);
  write(ix, { status: 'active', value: { 'in-progress': 'listening' }, historyValue: {}, context: v1Context(sx.context), children: {} });
  const sy = stored(iy);
  write(iy, { ...sy, value: { 'in-progress': 'speaking' } });
  const sz = stored(iz);
  const zContext = { ...v1Context(sz.context), carrierCallId: null, callStatus: 'initiated', startedAt: null };
  write(iz, {
    status: 'active',
    value: 'dialing',
    historyValue: {},
    context: zContext,
    children: { dial: { snapshot: { status: 'active', input: zContext }, src: 'dial', syncSnapshot: false } },
  });
  side.close();

  server = await rig.start();
  const restoredLine = rig.current!.lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'actors restored');
  expect(restoredLine).toMatchObject({ abandoned: 0 });
  expect(restoredLine.restored).toBeGreaterThanOrEqual(3);

  // Each ends as the carrier ended it (its stream died with the process, so the carrier hung up).
  const carrier = (sid: string) => sims.twilio.calls.get(sid)!;
  const zSid = [...sims.twilio.calls.values()].find((c) => c.to === toZ)!.sid;
  for (const [key, id, sid] of [
    [p.key, x, x],
    [p.key, y, y],
    [q.key, z.call_id, zSid],
  ] as const) {
    const status = await carrier(sid).ended;
    const rec = await callReaches(server, key, id, (s) => ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(s), 8000);
    expect(rec.call_status, `${id}`).toBe(status);
    expect(Math.abs(Date.parse(rec.ended_at) - carrier(sid).endedAt!), `${id} ended_at`).toBeLessThan(1000);
  }
  // Z's interrupted dial was reconciled, never dialed again.
  expect(twilioDials(sims, toZ)).toBe(1);
  expect(sims.twilio.placedTo(toZ)).toBe(1);
});
