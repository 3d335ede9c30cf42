// Counterpart of repro/runtime/dial-timeout-ghost: carrier A places the call but answers
// the dial after the service's 10 s dial deadline. The outcome is unknown, not "not
// placed": the API answers 502 outbound_failed with details.outcome "unknown" and the
// call's id, the retry with the same Idempotency-Key replays that answer without a
// second dial, and the record learns the carrier's call from its Calls list and ends as
// the carrier ends it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { callReaches, eventually, getCall, newCustomer, startCallStack, type CallStack } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { carrierIdOf, twilioDials } from './support.ts';
import { join } from 'node:path';

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack({}, 12_000); // the carrier's first callback comes after our deadline
});
afterAll(async () => {
  await stack.close();
});

it('a dial answered too late is "outcome unknown" with its call_id; the retry replays it; one dial; the record follows the carrier', { timeout: 25_000 }, async () => {
  const { sims, server } = stack;
  const dbFile = join(server.dataDir, 'switchboard.db');
  const c = await newCustomer(stack, 'twilio');
  const to = nextNumber();
  const body = { agent_id: c.agentId, to_number: to, prompt: 'hi' };
  const headers = { 'idempotency-key': 'k-timeout' };
  sims.twilio.fail({ delayMs: 10_500, match: 'dial' });

  const res = await server.request('POST', '/v1/calls/outbound', { key: c.key, body, headers });
  expect(res.status, res.text).toBe(502);
  expect(res.body.error.code).toBe('outbound_failed');
  const callId = res.body.error.details.call_id as string;
  expect(res.body.error.details.outcome).toBe('unknown');
  expect(callId).toMatch(/^call_/);
  const carrierCall = [...sims.twilio.calls.values()].find((x) => x.to === to)!;
  expect(carrierCall).toBeDefined(); // the carrier did place it

  // The answer is stored under the key: the retry replays it and dials nothing.
  const retry = await server.request('POST', '/v1/calls/outbound', { key: c.key, body, headers });
  expect(retry.status).toBe(502);
  expect(retry.headers.get('idempotent-replayed')).toBe('true');
  expect(retry.body).toEqual(res.body);

  // The call is on record under that id, and learns the carrier's call without dialing again.
  expect((await getCall(server, c.key, callId)).status).toBe(200);
  await eventually(() => (carrierIdOf(dbFile, callId) === carrierCall.sid ? true : undefined), 5000, 'reconciled with the carrier');
  // The far end gives up before it answers: the record ends as the carrier says.
  const status = await sims.twilio.hangup(carrierCall.sid);
  const rec = await callReaches(server, c.key, callId, (s) => s === status, 5000);
  expect(rec.call_status).toBe(status);
  expect(twilioDials(sims, to)).toBe(1);
  expect(sims.twilio.placedTo(to)).toBe(1);
  expect((await server.request('GET', '/v1/calls', { key: c.key })).body.count).toBe(1);
});
