// Counterpart of repro/runtime/immediate-dial-crash: the service (a real child process)
// is SIGKILLed while an immediate outbound dial is in flight at carrier A. The call's
// row, snapshot, dial intent and a provisional answer under the Idempotency-Key were
// committed before the dial left, so after the restart the record exists, the client's
// retry with the same key is answered for that same call without a second dial, and
// the record ends saying what the carrier did (reconciled from its Calls list).
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { nextNumber } from '../helpers/fixtures.ts';
import { callReaches, eventually, newCustomer, startSims, type CallStack } from '../helpers/calls.ts';
import { carrierIdOf, countOr0, serviceRig, twilioDials, type ServiceRig } from './support.ts';

let sims: Awaited<ReturnType<typeof startSims>>;
let rig: ServiceRig;
afterAll(async () => {
  await rig?.close();
  await sims?.close();
});

it('SIGKILL during an immediate dial: the record survives, the retry names the same call, one dial, the record follows the carrier', { timeout: 30_000 }, async () => {
  sims = await startSims(1500); // the carrier's first callback comes 1.5 s after the dial
  rig = await serviceRig(sims);
  let server = await rig.start();
  const c = await newCustomer({ sims, server } as CallStack, 'twilio');
  const to = nextNumber();
  const body = { agent_id: c.agentId, to_number: to, prompt: 'Confirm the appointment.' };
  const headers = { 'idempotency-key': 'retry-me-1' };

  // What is durable at the instant the dial reaches the carrier (read before it is processed).
  let durableAtDial: { calls: number; snapshots: number; intents: number; idempotency: number } | null = null;
  const reader = new Database(rig.dbFile, { readonly: true });
  sims.twilio.fail({
    delayMs: 4000, // the carrier places the call; its answer is slow
    match: (req) => {
      if (!(req.method === 'POST' && req.path.endsWith('/Calls.json') && req.body['To'] === to)) return false;
      const n = (sql: string) => countOr0(reader, sql, c.accountId);
      durableAtDial = {
        calls: n('SELECT COUNT(*) AS n FROM calls WHERE account_id = ?'),
        snapshots: n('SELECT COUNT(*) AS n FROM actor_snapshots WHERE account_id = ?'),
        intents: n("SELECT COUNT(*) AS n FROM effect_intents WHERE account_id = ? AND effect = 'dial' AND sent_at IS NOT NULL"),
        idempotency: n('SELECT COUNT(*) AS n FROM idempotency_keys WHERE scope = ?'),
      };
      return true;
    },
  });
  const first = server.request('POST', '/v1/calls/outbound', { key: c.key, body, headers }).catch((e: unknown) => e);
  await eventually(() => (twilioDials(sims, to) === 1 ? true : undefined), 5000, 'dial reached the carrier');
  reader.close();
  // Commit, then act: everything a restart needs was durable before the request left.
  expect.soft(durableAtDial).toEqual({ calls: 1, snapshots: 1, intents: 1, idempotency: 1 });

  await rig.kill();
  await first; // the client saw its connection die
  const carrierCall = [...sims.twilio.calls.values()].find((x) => x.to === to)!;
  expect(carrierCall).toBeDefined(); // the carrier placed it

  server = await rig.start();
  const list = await server.request('GET', '/v1/calls', { key: c.key });
  expect(list.body.count).toBe(1);
  const recordedId = list.body.calls[0].call_id as string;

  const retry = await server.request('POST', '/v1/calls/outbound', { key: c.key, body, headers });
  // Either the stored "outcome unknown" answer or a 201 once reconciled: both name the same call.
  if (retry.status === 502) {
    expect(retry.body.error.code).toBe('outbound_failed');
    expect(retry.body.error.details).toMatchObject({ outcome: 'unknown', call_id: recordedId });
  } else {
    expect(retry.status).toBe(201);
    expect(retry.body.call_id).toBe(recordedId);
  }
  const again = await server.request('POST', '/v1/calls/outbound', { key: c.key, body, headers });
  expect([again.status, again.body]).toEqual([retry.status, retry.body]);

  // The record learns the carrier's call (never by dialing again) ...
  await eventually(() => (carrierIdOf(rig.dbFile, recordedId) === carrierCall.sid ? true : undefined), 8000, 'reconciled with the carrier');
  // ... and ends as the carrier ends it.
  const over = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
  await eventually(() => (carrierCall.status === 'in-progress' || over.includes(carrierCall.status) ? true : undefined), 8000, 'carrier call answered');
  const status = over.includes(carrierCall.status) ? await carrierCall.ended : await sims.twilio.hangup(carrierCall.sid);
  const rec = await callReaches(server, c.key, recordedId, (s) => s === status, 8000);
  expect(rec.call_status).toBe(status);
  expect(carrierIdOf(rig.dbFile, recordedId)).toBe(carrierCall.sid);
  expect(twilioDials(sims, to)).toBe(1);
  expect(sims.twilio.placedTo(to)).toBe(1);
  expect((await server.request('GET', '/v1/calls', { key: c.key })).body.count).toBe(1);
});
