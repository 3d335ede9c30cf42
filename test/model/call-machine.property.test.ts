// Model test of the call machine: random interleavings of carrier, dial, hang-up and
// reconciliation events (duplicates, reordering and late callbacks included) run
// through a real actor and are compared with a small model of how a call must end,
// and with the same events replayed from a persisted snapshot taken at every step.
import fc from 'fast-check';
import { createActor, fromPromise, type Snapshot } from 'xstate';
import { expect, it } from 'vitest';
import { FINAL_CALL_STATUSES, HANGUP_REASONS, type CallEvent, type CallInput } from '../../machines/call-events.ts';
import {
  callMachine,
  callRecordOf,
  callStatusOf,
  isFinished,
  type CallContext,
  type DialOutput,
  type HangupInput,
  type HangupOutput,
} from '../../machines/call.ts';

const T0 = 1_700_000_000_000;

// ---- the model: a few lines over the event sequence, independent of the machine ----

type Phase = 'queued' | 'dialing' | 'up' | 'hanging' | 'over' | 'done';
interface Model {
  phase: Phase;
  connected: boolean;
  requested: string | null;
  status: string | null;
  reason: string | null;
}

function startModel(input: CallInput): Model {
  const phase: Phase = input.direction === 'inbound' ? 'up' : input.queued ? 'queued' : 'dialing';
  return { phase, connected: input.direction === 'inbound', requested: null, status: null, reason: null };
}

function stepModel(m: Model, e: CallEvent, input: CallInput): Model {
  const n = { ...m };
  const over = (status: string, reason: string) => Object.assign(n, { phase: 'over', status, reason });
  const carrierEnd = (s: string) => {
    n.connected = n.connected || s === 'completed';
    const farEnd = input.direction === 'inbound' ? 'caller_hangup' : 'callee_hangup';
    return over(n.connected ? 'completed' : s, n.requested ?? (n.connected ? farEnd : s));
  };
  const final = e.type === 'RECONCILED' && (FINAL_CALL_STATUSES as readonly string[]).includes(e.carrierStatus);
  const voicemail = e.type === 'CARRIER.AMD' && e.result === 'machine' && input.amdEnabled;
  const live = n.phase === 'dialing' || n.phase === 'up' || n.phase === 'hanging';

  if (n.phase === 'queued') {
    if (e.type === 'SLOT.GRANTED') n.phase = 'dialing';
    if (e.type === 'HANGUP.REQUESTED') over('canceled', 'canceled');
    return n;
  }
  if (n.phase === 'over') {
    if (e.type === 'POSTCALL.DONE') n.phase = 'done';
    return n;
  }
  if (!live) return n;
  if (e.type === 'CARRIER.ENDED') return carrierEnd(e.status);
  if (e.type === 'RECONCILED' && final) return carrierEnd(e.carrierStatus);
  if (e.type === 'CARRIER.ANSWERED' || e.type === 'CARRIER.AMD') n.connected = true;

  if (n.phase === 'hanging') {
    if (e.type === 'HANGUP.DONE') over(n.connected ? 'completed' : 'canceled', n.requested!);
    return n;
  }
  const wantsHangup =
    e.type === 'HANGUP.REQUESTED' ? e.reason : voicemail ? 'voicemail_detected' : e.type === 'RECONCILED' ? 'media_lost' : null;
  if (n.phase === 'dialing') {
    if (e.type === 'DIAL.REJECTED') return over('failed', n.requested ?? 'failed');
    if (wantsHangup) n.requested ??= wantsHangup;
    // Any sign of the carrier leg ends the wait for the dial's answer.
    if (['DIAL.ACCEPTED', 'CARRIER.RINGING', 'CARRIER.ANSWERED', 'CARRIER.AMD'].includes(e.type)) n.phase = n.requested ? 'hanging' : 'up';
    return n;
  }
  // up: initiated, ringing or in-progress; nothing is requested yet in this phase
  if (wantsHangup) Object.assign(n, { phase: 'hanging', requested: wantsHangup });
  return n;
}

// ---- arbitraries ----

const eventBody = fc.oneof(
  { arbitrary: fc.constant({ type: 'SLOT.GRANTED' as const }), weight: 2 },
  { arbitrary: fc.record({ type: fc.constant('DIAL.ACCEPTED' as const), carrierCallId: fc.constantFrom('CA1', 'CA2') }), weight: 3 },
  { arbitrary: fc.record({ type: fc.constant('DIAL.REJECTED' as const), carrierError: fc.constant({ status: 400, code: 21211 }) }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant('CARRIER.RINGING' as const), carrierCallId: fc.constantFrom('CA1', 'CA3') }, { requiredKeys: ['type'] }), weight: 3 },
  { arbitrary: fc.record({ type: fc.constant('CARRIER.ANSWERED' as const), carrierCallId: fc.constant('CA1') }, { requiredKeys: ['type'] }), weight: 3 },
  { arbitrary: fc.record({ type: fc.constant('CARRIER.AMD' as const), result: fc.constantFrom('human', 'machine', 'fax', 'unknown') }), weight: 2 },
  {
    arbitrary: fc.record(
      {
        type: fc.constant('CARRIER.ENDED' as const),
        status: fc.constantFrom(...FINAL_CALL_STATUSES),
        hangupSource: fc.constantFrom('caller', 'callee', 'unknown'),
        durationSec: fc.integer({ min: 0, max: 600 }),
      },
      { requiredKeys: ['type', 'status'] },
    ),
    weight: 2,
  },
  { arbitrary: fc.constantFrom({ type: 'MEDIA.STARTED' as const }, { type: 'MEDIA.STOPPED' as const }, { type: 'DTMF' as const, digit: '7' }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant('HANGUP.REQUESTED' as const), reason: fc.constantFrom(...HANGUP_REASONS) }), weight: 2 },
  { arbitrary: fc.constant({ type: 'HANGUP.DONE' as const }), weight: 2 },
  { arbitrary: fc.record({ type: fc.constant('RECONCILED' as const), carrierStatus: fc.constantFrom(...FINAL_CALL_STATUSES, 'active', 'unknown') }), weight: 1 },
  { arbitrary: fc.constant({ type: 'POSTCALL.DONE' as const }), weight: 1 },
);

/** A fresh event, or a repeat of one sent `back` steps earlier (a duplicated or late callback). */
const step = fc.oneof(
  { arbitrary: fc.record({ body: eventBody, dt: fc.integer({ min: -3_000, max: 90_000 }) }), weight: 5 },
  { arbitrary: fc.record({ back: fc.integer({ min: 1, max: 6 }) }), weight: 1 },
);

const scenario = fc.record({
  kind: fc.constantFrom('inbound', 'outbound', 'queued'),
  amdEnabled: fc.boolean(),
  maxDurationSec: fc.integer({ min: 60, max: 1800 }),
  steps: fc.array(step, { maxLength: 24 }),
});

function materialise(steps: Array<{ body: object; dt: number } | { back: number }>): CallEvent[] {
  const events: CallEvent[] = [];
  let at = T0;
  for (const s of steps) {
    if ('back' in s) {
      const earlier = events[events.length - s.back];
      if (earlier) events.push(earlier);
      continue;
    }
    at = Math.max(0, at + s.dt);
    events.push({ ...s.body, at } as CallEvent);
  }
  return events;
}

// Effects never settle: the events alone drive the call, so every run replays exactly.
const machine = callMachine.provide({
  actors: {
    dial: fromPromise<DialOutput, CallContext>(() => new Promise(() => {})),
    hangup: fromPromise<HangupOutput, HangupInput>(() => new Promise(() => {})),
  },
});

function run(init: { input: CallInput } | { snapshot: Snapshot<unknown> }) {
  const errors: unknown[] = [];
  const actor = createActor(machine, init as { input: CallInput });
  actor.subscribe({ error: (e) => errors.push(e) });
  actor.start();
  return { actor, errors };
}

it('a call reaches exactly one final state, agreeing with the model, and replays equal from any persisted snapshot', () => {
  fc.assert(
    fc.property(scenario, ({ kind, amdEnabled, maxDurationSec, steps }) => {
      const input: CallInput = {
        id: 'call_0123456789abcdefghijklmn',
        accountId: 'acct_1',
        agentId: 'agent_1',
        direction: kind === 'inbound' ? 'inbound' : 'outbound',
        provider: 'telnyx',
        phoneNumber: '+15550000001',
        from: '+15550000001',
        to: '+15550000002',
        carrierCallId: kind === 'inbound' ? 'CA_in' : null,
        amdEnabled,
        maxDurationSec,
        campaignId: null,
        queued: kind === 'queued',
        createdAt: T0,
      };
      const events = materialise(steps);
      const { actor, errors } = run({ input });
      const persisted: string[] = [JSON.stringify(actor.getPersistedSnapshot())];
      let model = startModel(input);
      let firstFinal: { status: string; reason: string | null; endedAt: number | null } | null = null;

      for (const e of events) {
        // A done actor takes no events (XState would only warn); the model ignores them too.
        if (actor.getSnapshot().status !== 'done') actor.send(e);
        persisted.push(JSON.stringify(actor.getPersistedSnapshot()));
        model = stepModel(model, e, input);
        const snap = actor.getSnapshot();
        const ctx = snap.context;
        const modelOver = model.phase === 'over' || model.phase === 'done';

        expect(isFinished(snap)).toBe(modelOver);
        expect(snap.status).toBe(model.phase === 'done' ? 'done' : 'active');
        expect(ctx.endedAt !== null).toBe(modelOver);
        if (ctx.startedAt !== null && ctx.endedAt !== null) expect(ctx.startedAt).toBeLessThanOrEqual(ctx.endedAt);
        if (!modelOver) {
          expect((FINAL_CALL_STATUSES as readonly string[]).includes(callStatusOf(snap))).toBe(false);
          continue;
        }
        expect([callStatusOf(snap), ctx.endedReason]).toEqual([model.status, model.reason]);
        expect(ctx.startedAt !== null).toBe(model.connected);
        expect(ctx.voicemailDetected).toBe(ctx.endedReason === 'voicemail_detected');
        const record = callRecordOf(ctx);
        expect(record.duration_ms).toBeGreaterThanOrEqual(0);
        if (!model.connected) expect(record.charged_minutes).toBe(0);
        // Once final, the final values never change.
        firstFinal ??= { status: ctx.callStatus, reason: ctx.endedReason, endedAt: ctx.endedAt };
        expect({ status: ctx.callStatus, reason: ctx.endedReason, endedAt: ctx.endedAt }).toEqual(firstFinal);
      }
      expect(errors).toEqual([]);

      const final = actor.getSnapshot();
      persisted.forEach((json, i) => {
        const restored = run({ snapshot: JSON.parse(json) as Snapshot<unknown> });
        for (const e of events.slice(i)) if (restored.actor.getSnapshot().status !== 'done') restored.actor.send(e);
        const snap = restored.actor.getSnapshot();
        expect(snap.context).toEqual(final.context);
        expect([snap.value, snap.status]).toEqual([final.value, final.status]);
        expect(restored.errors).toEqual([]);
        restored.actor.stop();
      });
      actor.stop();
    }),
    { numRuns: 150 },
  );
});
