// Counterpart of repro/runtime/restore-reruns-dial: XState persisted an invoked dial as
// active and ran it again on restore, and started it before anyone could persist the
// `dialing` snapshot. In the new runtime a dial is an intent committed (and marked
// sent) before the request leaves, and a call restored in `dialing` (the carrier's
// answer and its first callbacks not yet heard) is:
// - carrier A (no idempotency key): never dialed again; reconciled from the carrier's
//   Calls list, the record learns the call the carrier placed and ends as it ends;
// - carrier B: sent again only inside the carrier's command_id memory (60 s), with the
//   same command_id, so the carrier places nothing new; past it, reconciled instead
//   (its live calls, by client_state), never sent again.
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { callReaches, dial, eventually, newCustomer, PUBLIC_BASE, startSims, type CallStack } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { RecordedRequest } from '../sim/sim-http.ts';
import { carrierIdOf, countOr0, serviceRig, sleep, telnyxDialBodies, tempDir, twilioDials, webhookProxy, type ServiceRig } from './support.ts';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const f of cleanups.reverse()) await f();
});

interface Durable {
  snapshot: unknown;
  dialIntentsSent: number;
}

/**
 * What the service had committed for the call to `to` (not the account's newest
 * snapshot: the call that freed the slot may still be writing its post-call state).
 */
function durableAt(dbFile: string, accountId: string, to: string): Durable {
  const db = new Database(dbFile, { readonly: true });
  try {
    const snap = db
      .prepare('SELECT s.actor_id, s.snapshot FROM actor_snapshots s JOIN calls c ON s.actor_id IN (c.call_id, c.internal_id) WHERE s.account_id = ? AND c.to_number = ?')
      .get(accountId, to) as { actor_id: string; snapshot: string } | undefined;
    const sent = countOr0(db, "SELECT COUNT(*) AS n FROM effect_intents WHERE account_id = ? AND actor_id = ? AND effect = 'dial' AND sent_at IS NOT NULL", accountId, snap?.actor_id ?? '');
    return { snapshot: snap ? JSON.parse(snap.snapshot).value : null, dialIntentsSent: sent };
  } finally {
    db.close();
  }
}

/** A fault for the next dial matching `is`: answered `delayMs` late; records what was durable when it arrived. */
function slowDial(to: string, is: (r: RecordedRequest<any>) => boolean, record: (d: Durable) => void, dbFile: string, accountId: string, delayMs = 8000) {
  return {
    delayMs,
    match: (r: RecordedRequest<any>) => {
      if (!is(r)) return false;
      record(durableAt(dbFile, accountId, to));
      return true;
    },
  };
}

it('carrier A: SIGKILL mid-dial of a call that waited in its queue; after the restart it is not dialed again, and its record follows the carrier', { timeout: 30_000 }, async () => {
  const sims = await startSims(1500); // the carrier's callbacks come 1.5 s after the dial: the call is still `dialing` here
  const rig: ServiceRig = await serviceRig(sims);
  cleanups.push(() => sims.close(), () => rig.close());
  let server = await rig.start();
  const a = await newCustomer({ sims, server } as CallStack, 'twilio');
  const side = new Database(rig.dbFile);
  side.prepare('UPDATE accounts SET concurrency_limit = 1 WHERE id = ?').run(a.accountId);
  side.close();
  const first = await dial(server, a, nextNumber()); // holds the only slot
  const to = nextNumber();
  const queued = await dial(server, a, to);
  expect(queued.status).toBe('queued');

  let seen: Durable | null = null;
  sims.twilio.fail(slowDial(to, (r) => r.method === 'POST' && r.path.endsWith('/Calls.json') && r.body['To'] === to, (d) => (seen = d), rig.dbFile, a.accountId));
  await sims.twilio.hangup(first.call_id); // the slot frees: the queued call is dialed
  await eventually(() => (twilioDials(sims, to) === 1 ? true : undefined), 5000, 'the dial is in flight');
  // The dialing snapshot and its sent dial intent were durable before the request left.
  expect.soft(seen).toEqual({ snapshot: 'dialing', dialIntentsSent: 1 });

  await rig.kill();
  const carrierCall = [...sims.twilio.calls.values()].find((x) => x.to === to)!;
  expect(carrierCall).toBeDefined();

  server = await rig.start();
  await eventually(() => (carrierIdOf(rig.dbFile, queued.call_id) === carrierCall.sid ? true : undefined), 8000, 'reconciled with the carrier');
  const over = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
  await eventually(() => (carrierCall.status === 'in-progress' || over.includes(carrierCall.status) ? true : undefined), 8000, 'the carrier call answered');
  const status = over.includes(carrierCall.status) ? await carrierCall.ended : await sims.twilio.hangup(carrierCall.sid);
  expect((await callReaches(server, a.key, queued.call_id, (s) => s === status, 8000)).call_status).toBe(status);
  expect(twilioDials(sims, to)).toBe(1);
  expect(sims.twilio.placedTo(to)).toBe(1);
});

it('carrier B: a call restored mid-dial is sent again with its command_id inside the 60 s window, reconciled past it; one carrier call each', { timeout: 25_000 }, async () => {
  const sims = await startSims(40);
  const data = tempDir('runtime-rerun-');
  const proxy = await webhookProxy();
  cleanups.push(() => sims.close(), () => data.remove(), () => proxy.close());
  sims.telnyx.redirect(PUBLIC_BASE, proxy.url);
  const dbFile = join(data.dir, 'switchboard.db');
  let offset = 0;
  const clock = () => Date.now() + offset;
  const env = { ...sims.env, MEDIA_ENGINE: 'echo', DATA_DIR: data.dir, SHUTDOWN_GRACE_MS: '0' };
  let server: TestServer | null = null;
  cleanups.push(() => server?.stop());
  const start = async () => {
    server = await startTestServer(env, { clock });
    proxy.target = server.url;
    return server;
  };
  const stop = async () => {
    proxy.target = null; // the carrier's callbacks find nobody while the service is down
    await server!.stop();
    server = null;
  };
  const s0 = await start();
  const c = await newCustomer({ sims, server: s0 } as CallStack, 'telnyx');

  /** Dials `to` with a slow answer and the carrier's callbacks lost; stops the service mid-dial. */
  const dialThenStop = async (to: string) => {
    let seen: Durable | null = null;
    sims.telnyx.fail(slowDial(to, (r) => r.method === 'POST' && r.path === '/v2/calls' && r.body?.to === to, (d) => (seen = d), dbFile, c.accountId));
    proxy.drop = () => true;
    // The client's request is left to die with the service (an in-process stop does not close its socket).
    void server!.request('POST', '/v1/calls/outbound', { key: c.key, body: { agent_id: c.agentId, to_number: to, prompt: 'hi' } }).catch(() => null);
    await eventually(() => (telnyxDialBodies(sims, to).length === 1 ? true : undefined), 5000, 'the dial is in flight');
    expect.soft(seen).toEqual({ snapshot: 'dialing', dialIntentsSent: 1 });
    await stop();
    proxy.drop = null;
  };
  const callIdTo = async (to: string) => {
    const list = await server!.request('GET', '/v1/calls?limit=100', { key: c.key });
    return (list.body.calls as { call_id: string; to_number: string }[]).find((x) => x.to_number === to)?.call_id;
  };

  // Inside the window: the same dial again, the same command_id; the carrier answers with the same call.
  const inside = nextNumber();
  await dialThenStop(inside);
  await start();
  const insideCall = [...sims.telnyx.calls.calls.values()].find((x) => x.to === inside)!;
  const insideId = await eventually(() => callIdTo(inside), 3000, 'the call is on record');
  await eventually(() => (carrierIdOf(dbFile, insideId) === insideCall.callControlId ? true : undefined), 8000, 'the carrier’s call recorded');
  const bodies = telnyxDialBodies(sims, inside);
  expect(bodies.length).toBeLessThanOrEqual(2);
  expect(new Set(bodies.map((b) => b['command_id'])).size).toBe(1);
  expect(sims.telnyx.placedTo(inside)).toBe(1);

  // Past the window (both clocks 61 s on while the service is down): not sent again, reconciled.
  const past = nextNumber();
  await dialThenStop(past);
  offset += 61_000;
  sims.telnyx.advanceClock(61_000);
  await start();
  const pastCall = [...sims.telnyx.calls.calls.values()].find((x) => x.to === past)!;
  const pastId = await eventually(() => callIdTo(past), 3000, 'the call is on record');
  await eventually(() => (carrierIdOf(dbFile, pastId) === pastCall.callControlId ? true : undefined), 8000, 'reconciled with the carrier');
  await sleep(500);
  expect(telnyxDialBodies(sims, past)).toHaveLength(1);
  expect(sims.telnyx.placedTo(past)).toBe(1);
});
