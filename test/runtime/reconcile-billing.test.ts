// Counterpart of repro/runtime/reconcile-billing: calls on the line when the service (a
// real child process) is SIGKILLed, ended by the far end during the outage, are
// reconciled after the restart with the carrier's own end time: ended_at, duration and
// charged minutes stop where the carrier says the call stopped, not at the restart.
// Both carriers: A reports end_time and duration on the Call resource, B the end time
// of a call it no longer has up.
import { afterAll, expect, it } from 'vitest';
import { callReaches, dial, newCustomer, startSims, type CallStack } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { serviceRig, sleep, type ServiceRig } from './support.ts';

let sims: Awaited<ReturnType<typeof startSims>>;
let rig: ServiceRig;
afterAll(async () => {
  await rig?.close();
  await sims?.close();
});

const OUTAGE_MS = 4000;

it('calls ended at the carrier during the outage are billed to the carrier’s end time', { timeout: 30_000 }, async () => {
  sims = await startSims(40);
  rig = await serviceRig(sims);
  let server = await rig.start();
  const a = await newCustomer({ sims, server } as CallStack, 'twilio');
  const b = await newCustomer({ sims, server } as CallStack, 'telnyx');
  const callA = (await dial(server, a, nextNumber())).call_id as string;
  const callB = (await dial(server, b, nextNumber())).call_id as string;
  const startA = Date.parse((await callReaches(server, a.key, callA, 'in-progress')).started_at);
  const startB = Date.parse((await callReaches(server, b.key, callB, 'in-progress')).started_at);
  await sleep(1200); // some connected time

  await rig.kill();
  await sims.twilio.hangup(callA);
  await sims.telnyx.hangup(callB);
  const endA = sims.twilio.calls.get(callA)!.endedAt!;
  const endB = sims.telnyx.calls.calls.get(callB)!.endedAt!;
  await sleep(OUTAGE_MS);

  server = await rig.start();
  const recA = await callReaches(server, a.key, callA, 'completed');
  const recB = await callReaches(server, b.key, callB, 'completed');
  for (const [rec, carrierEnd, start] of [
    [recA, endA, startA],
    [recB, endB, startB],
  ] as const) {
    const recEnd = Date.parse(rec.ended_at);
    // The carrier's clock writes whole seconds (carrier A): within a second of its end, never the restart's.
    expect(Math.abs(recEnd - carrierEnd), `${rec.call_id} ended_at`).toBeLessThan(1000);
    expect(rec.duration_ms).toBeLessThan(carrierEnd - start + 1000);
    expect(rec.duration_ms).toBeGreaterThan(0);
    expect(rec.charged_minutes).toBeLessThanOrEqual(Math.round((Math.ceil((carrierEnd - start + 1000) / 1000) * 100) / 60) / 100);
  }
});
