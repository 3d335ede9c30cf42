// Counterpart of repro/runtime/account-delete-live-call: DELETE /v1/account first hangs
// up the account's live carrier calls, empties its queue and stops its actors, then the
// rows go. By the time the 200 is sent the carrier has the hang-up; afterwards nothing
// of the account is left (no call, snapshot, deadline or intent rows, no live actor or
// slot), a queued call is never dialed, and the carrier's late events recreate nothing.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { callReaches, dial, eventually, metric, newCustomer, startCallStack, type CallStack, type Customer } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { sleep, telnyxDialBodies } from './support.ts';

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack();
});
afterAll(async () => {
  await stack.close();
});

const count = (sql: string, ...args: unknown[]) => (stack.server.storage.db.prepare(sql).get(...args) as { n: number }).n;

/** Nothing of the account is left in the database. */
function expectNoRows(c: Customer): void {
  for (const table of ['calls', 'actor_snapshots', 'deadlines', 'effect_intents']) {
    expect(count(`SELECT COUNT(*) AS n FROM ${table} WHERE account_id = ?`, c.accountId), table).toBe(0);
  }
}

/** The account's carrier calls that are still up. */
const upAtCarrier = (c: Customer) => [...stack.sims.telnyx.calls.calls.values()].filter((x) => x.from === c.number && x.status !== 'ended').map((x) => x.to);

it('hangs up the live call at the carrier before answering, and leaves no actor, slot or row', async () => {
  const { server, sims } = stack;
  const c = await newCustomer(stack, 'telnyx');
  const { call_id } = await dial(server, c, nextNumber());
  await callReaches(server, c.key, call_id, 'in-progress');
  const internal = (server.storage.db.prepare('SELECT internal_id FROM calls WHERE call_id = ?').get(call_id) as { internal_id: string }).internal_id;
  expect(count('SELECT COUNT(*) AS n FROM deadlines WHERE actor_id = ?', internal)).toBeGreaterThan(0);
  const actorsBefore = await metric(server, 'switchboard_call_actors');

  const res = await server.request('DELETE', '/v1/account?confirm=true', { key: c.key });
  expect(res.status).toBe(200);
  // Before the answer: the carrier was told to hang up.
  const carrier = sims.telnyx.calls.calls.get(call_id)!;
  expect(carrier.commands.map((x) => x.action)).toContain('hangup');
  await eventually(() => (carrier.status === 'ended' ? true : undefined), 3000, 'the carrier call ends');

  await sleep(1000); // the carrier's hang-up events arrive for an account that is gone
  expectNoRows(c);
  expect(await metric(server, 'switchboard_call_actors')).toBe(actorsBefore - 1);
  expect(await metric(server, 'switchboard_live_calls')).toBe(0);
  expect(upAtCarrier(c)).toEqual([]);
  expect((await server.request('GET', '/v1/account', { key: c.key })).status).toBe(401);
});

it('empties the queue: a call queued behind the live one is never dialed', async () => {
  const { server, sims } = stack;
  const c = await newCustomer(stack, 'telnyx');
  server.storage.accounts.setPlan(c.accountId, 'enterprise', 1);
  const { call_id } = await dial(server, c, nextNumber());
  await callReaches(server, c.key, call_id, 'in-progress');
  const queuedTo = nextNumber();
  const queued = await dial(server, c, queuedTo);
  expect(queued.status).toBe('queued');
  const actorsBefore = await metric(server, 'switchboard_call_actors');

  expect((await server.request('DELETE', '/v1/account?confirm=true', { key: c.key })).status).toBe(200);
  expect(sims.telnyx.calls.calls.get(call_id)!.commands.map((x) => x.action)).toContain('hangup');
  await sleep(1500);
  expect.soft(telnyxDialBodies(sims, queuedTo), 'the deleted account’s queued call was dialed').toHaveLength(0);
  expect.soft(upAtCarrier(c), 'carrier calls of the deleted account still up').toEqual([]);
  expect.soft(await metric(server, 'switchboard_call_actors')).toBe(actorsBefore - 2);
  expect.soft(await metric(server, 'switchboard_queued_calls')).toBe(0);
  expect.soft(await metric(server, 'switchboard_live_calls')).toBe(0);
  expectNoRows(c);
});
