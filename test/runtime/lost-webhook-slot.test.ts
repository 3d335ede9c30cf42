// Counterpart of repro/runtime/lost-webhook-slot: carrier A's final status callback of a
// ringing call is lost (carrier A does not retry it). The ringing state's durable
// deadline comes due (the service's injectable clock is moved past it), the call is
// reconciled with the carrier and ends as the carrier says, and its slot goes to the
// queued call behind it, which is dialed exactly once.
import { afterAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { callReaches, dial, eventually, newCustomer, startSims, PUBLIC_BASE, type CallStack } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { sleep, twilioDials, webhookProxy } from './support.ts';

let sims: Awaited<ReturnType<typeof startSims>>;
let server: TestServer;
let proxy: Awaited<ReturnType<typeof webhookProxy>>;
afterAll(async () => {
  await proxy?.close();
  await sims?.close();
  await server?.close();
});

it('a lost final callback: the stale deadline reconciles the call, frees its slot, and the queued call dials once', { timeout: 30_000 }, async () => {
  let offset = 0;
  sims = await startSims(40);
  server = await startTestServer({ ...sims.env, MEDIA_ENGINE: 'echo' }, { clock: () => Date.now() + offset });
  // A forwarding proxy between the carrier and us that can lose one callback.
  proxy = await webhookProxy();
  proxy.target = server.url;
  sims.twilio.route(PUBLIC_BASE, proxy.url);

  const c = await newCustomer({ sims, server } as CallStack, 'twilio');
  server.storage.accounts.setPlan(c.accountId, 'enterprise', 1);
  const firstTo = nextNumber();
  sims.twilio.scenario(firstTo, { name: 'no-answer', ringMs: 800 });
  const first = await dial(server, c, firstTo);
  await callReaches(server, c.key, first.call_id, 'ringing');
  proxy.drop = (_path, body) => body.includes('CallStatus=no-answer');
  expect(await sims.twilio.calls.get(first.call_id)!.ended).toBe('no-answer');
  proxy.drop = null;
  expect(proxy.dropped).toBe(1);

  const to = nextNumber();
  const queued = await dial(server, c, to);
  expect(queued.status).toBe('queued');
  await sleep(1500);
  // Nothing told us: the call still rings here and holds the slot.
  expect((await callReaches(server, c.key, first.call_id, () => true)).call_status).toBe('ringing');
  expect(twilioDials(sims, to)).toBe(0);

  // Time passes beyond what the carrier rings for (2 minutes on the service's clock).
  offset += 125_000;
  const rec = await callReaches(server, c.key, first.call_id, 'no-answer', 5000);
  expect(rec.ended_reason).toBe('no-answer');
  await callReaches(server, c.key, queued.call_id, (s) => s !== 'queued', 5000);
  await eventually(() => (twilioDials(sims, to) === 1 ? true : undefined), 5000, 'the queued call is dialed');
  await sleep(1000);
  expect(twilioDials(sims, to)).toBe(1);
  expect(sims.twilio.placedTo(to)).toBe(1);
});
