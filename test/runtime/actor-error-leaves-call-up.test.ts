// Counterpart of repro/runtime/actor-error-leaves-call-up: an actor whose transition
// fails must not leave its carrier leg up. The call machine is pure and total over the
// events its schema accepts (a fuzz of every event type with edge values in every
// state finds no transition that throws), so there is no honest way to make a real
// call's transition throw from outside. Two in-process tests on the real runtime
// (createCallSystem on a real SQLite file, carrier B's simulator):
// 1. the supervisor's crash path, with a minimal second kind registered on the same
//    supervisor whose action throws: the actor stops, nothing of the failed transition
//    is committed, the kind's onCrash gets the last committed snapshot, other actors
//    go on;
// 2. the call kind's own crash path: a live call whose next transition throws (fault
//    injected: its in-memory context is poisoned so reading it throws, as a defect in
//    an action would) has its carrier leg hung up, its record ended `failed`, its slot
//    released, and nothing left to restore.
import { join } from 'node:path';
import pino from 'pino';
import { assign, setup } from 'xstate';
import { z } from 'zod';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCallSystem, type CallSystem } from '../../actors/calls/call-system.ts';
import type { ActorKind } from '../../actors/runtime/actor-kind.ts';
import { Metrics } from '../../metrics.ts';
import { openDatabase, type Db } from '../../storage/db.ts';
import { createStorage, type Storage } from '../../storage/index.ts';
import { createSecretBox, loadSecretsKey } from '../../storage/secret-box.ts';
import { startTestServer } from '../helpers/server.ts';
import { eventually, newCustomer, PUBLIC_BASE, startSims, type CallStack, type Customer } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { closedPort } from '../sim/sim-http.ts';
import { tempDir } from './support.ts';

let sims: Awaited<ReturnType<typeof startSims>>;
const data = tempDir('runtime-crash-');
let db: Db;
let storage: Storage;
let system: CallSystem;
let c: Customer;

beforeAll(async () => {
  sims = await startSims(40);
  // The account, agent and carrier B number are made through the API, then the server
  // stops and the runtime is brought up alone on its database file.
  const server = await startTestServer({ ...sims.env, MEDIA_ENGINE: 'echo', DATA_DIR: data.dir });
  c = await newCustomer({ sims, server } as CallStack, 'telnyx');
  await server.stop();
  // The carrier's webhooks find nobody listening: this runtime has no HTTP side.
  sims.telnyx.redirect(PUBLIC_BASE, `http://127.0.0.1:${await closedPort()}`);
  db = openDatabase(join(data.dir, 'switchboard.db'));
  storage = createStorage(db, createSecretBox(loadSecretsKey(data.dir, undefined)));
  system = createCallSystem({
    storage,
    config: { publicBaseUrl: PUBLIC_BASE, twilioApiBase: sims.twilio.baseUrl, telnyxApiBase: sims.telnyx.baseUrl },
    clock: Date.now,
    log: pino({ level: 'silent' }),
    metrics: new Metrics(),
  });
  await system.restore();
  system.scheduler.start();
});
afterAll(async () => {
  system?.stop();
  db?.close();
  await sims?.close();
  data.remove();
});

/** Places a real outbound call through the runtime, as the outbound route does; resolves once the carrier accepted it. */
async function placeCall(): Promise<{ id: string; carrierCallId: string }> {
  const id = `call_crash${Math.random().toString(36).slice(2, 10)}`;
  expect(system.concurrency.tryAcquire(c.accountId, id)).toBe(true);
  system.start(
    {
      id,
      accountId: c.accountId,
      agentId: c.agentId,
      direction: 'outbound',
      provider: 'telnyx',
      phoneNumber: c.number,
      from: c.number,
      to: nextNumber(),
      carrierCallId: null,
      amdEnabled: false,
      maxDurationSec: 60,
      campaignId: null,
      queued: false,
      createdAt: Date.now(),
    },
    { prompt: 'Confirm the appointment.' },
  );
  const outcome = await system.dialOutcome(id);
  if (outcome.outcome !== 'accepted') throw new Error(`dial ${outcome.outcome}`);
  return { id, carrierCallId: outcome.carrierCallId };
}

it('supervisor: an action that throws stops that actor only, commits nothing of it, and hands the kind its last committed snapshot', async () => {
  const crashes: { value: unknown; error: string }[] = [];
  const probeMachine = setup({
    types: { context: {} as { accountId: string; armed: number }, events: {} as { type: 'ARM' } | { type: 'BOOM' }, input: {} as { accountId: string } },
    actions: {
      scheduleDeadline: (_, _params: { name: string; event: unknown; dueAt: number }) => {},
      explode: assign(() => {
        throw new Error('a defect in a transition');
      }),
    },
  }).createMachine({
    context: ({ input }) => ({ accountId: input.accountId, armed: 0 }),
    initial: 'idle',
    states: {
      idle: {
        on: {
          ARM: {
            target: 'armed',
            actions: [
              assign({ armed: ({ context }) => context.armed + 1 }),
              { type: 'scheduleDeadline', params: { name: 'wake', event: { type: 'ARM' }, dueAt: Date.now() + 3_600_000 } },
            ],
          },
        },
      },
      armed: { on: { BOOM: { target: 'idle', actions: 'explode' } } },
    },
  });
  const probe: ActorKind<typeof probeMachine> = {
    kind: 'crash-probe',
    machine: probeMachine,
    version: 1,
    eventSchema: z.object({ type: z.enum(['ARM', 'BOOM']) }),
    accountOf: (ctx) => ctx.accountId,
    write() {},
    effects: {},
    migrate: (p) => p,
    onCrash: (snap, err) => crashes.push({ value: snap.value, error: String(err) }),
  };
  system.supervisor.register(probe);
  const bystander = await placeCall();

  system.supervisor.start('crash-probe', 'probe_1', { accountId: c.accountId });
  expect(system.supervisor.send('probe_1', { type: 'ARM' })).toBe('taken');
  const row = () => JSON.parse((db.prepare('SELECT snapshot FROM actor_snapshots WHERE actor_id = ?').get('probe_1') as { snapshot: string }).snapshot);
  expect(row()).toMatchObject({ value: 'armed', context: { armed: 1 } });

  expect(system.supervisor.send('probe_1', { type: 'BOOM' })).toBe('crashed');
  expect(system.supervisor.isLive('probe_1')).toBe(false);
  expect(system.supervisor.send('probe_1', { type: 'ARM' })).toBe('not_live');
  expect(crashes).toEqual([{ value: 'armed', error: 'Error: a defect in a transition' }]);
  // Nothing of the failed transition reached the database.
  expect(row()).toMatchObject({ value: 'armed', context: { armed: 1 } });
  // The other actors of the supervisor go on.
  expect(system.isLive(bystander.id)).toBe(true);
  expect(system.send(bystander.id, { type: 'HANGUP.REQUESTED', at: Date.now(), reason: 'agent_hangup' })).toBe('taken');
  await eventually(() => (storage.calls.getByInternalId(bystander.id)?.ended_at != null ? true : undefined), 5000, 'the bystander call ends');
});

it('call kind: a call whose transition throws has its carrier leg hung up, its record ended failed and its slot freed', async () => {
  const { id, carrierCallId } = await placeCall();
  const carrier = sims.telnyx.calls.calls.get(carrierCallId)!;
  expect(carrier.status).not.toBe('ended');
  expect(system.concurrency.held(c.accountId)).toBe(1);

  // The fault: the live call's context throws when read, so its next transition throws.
  const snap = system.supervisor.snapshotOf(id)!;
  Object.defineProperty(snap.context, 'hangupAttempts', {
    enumerable: true,
    get() {
      throw new Error('a defect in a transition');
    },
  });
  expect(system.send(id, { type: 'HANGUP.REQUESTED', at: Date.now(), reason: 'agent_hangup' })).toBe('crashed');

  // The carrier leg goes down.
  await eventually(() => (carrier.commands.some((x) => x.action === 'hangup') ? true : undefined), 5000, 'a hang-up at the carrier');
  await eventually(() => (carrier.status === 'ended' ? true : undefined), 5000, 'the carrier call ends');
  // The record says it failed, the slot is free, nothing is left to restore or fire.
  const rec = storage.calls.getByInternalId(id)!;
  expect(rec).toMatchObject({ ended_reason: 'failed' });
  expect(rec.ended_at).not.toBeNull();
  expect(system.isLive(id)).toBe(false);
  expect(system.concurrency.held(c.accountId)).toBe(0);
  const n = (sql: string) => (db.prepare(sql).get(id) as { n: number }).n;
  expect(n('SELECT COUNT(*) AS n FROM actor_snapshots WHERE actor_id = ? AND done = 0')).toBe(0);
  expect(n('SELECT COUNT(*) AS n FROM deadlines WHERE actor_id = ?')).toBe(0);
  expect(n('SELECT COUNT(*) AS n FROM effect_intents WHERE actor_id = ?')).toBe(0);
});
