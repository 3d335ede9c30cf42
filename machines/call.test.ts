// The call machine as pure transitions: every row of the final-values table, the happy
// paths, queueing, dial and hang-up outcomes, AMD, reordered and repeated carrier
// events, reconciliation after a restart, billing, and persistence of snapshots.
import { createActor, fromPromise, getNextSnapshot, initialTransition, transition, type Snapshot } from 'xstate';
import { describe, expect, it } from 'vitest';
import type { CallEvent, CallInput, FinalCallStatus } from './call-events.ts';
import {
  MAX_DURATION_DEADLINE,
  callMachine,
  callRecordOf,
  callStatusOf,
  chargedMinutes,
  isFinished,
  type CallContext,
  type CallSnapshot,
  type DeadlineParams,
  type DialOutput,
  type HangupInput,
  type HangupOutput,
} from './call.ts';

// ---- harness: effects recorded, dial / hang-up promises settled by the test ----

const T0 = 1_700_000_000_000;
const MAX = 600;

function callInput(over: Partial<CallInput> = {}): CallInput {
  return {
    id: 'call_0123456789abcdefghijklmn',
    accountId: 'acct_1',
    agentId: 'agent_1',
    direction: 'outbound',
    provider: 'twilio',
    phoneNumber: '+15550000001',
    from: '+15550000001',
    to: '+15550000002',
    carrierCallId: null,
    amdEnabled: false,
    maxDurationSec: MAX,
    campaignId: null,
    queued: false,
    createdAt: T0,
    ...over,
  };
}
const inboundInput = (over: Partial<CallInput> = {}) =>
  callInput({ direction: 'inbound', carrierCallId: 'CA_in', from: '+15550000009', to: '+15550000001', ...over });

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}
function deferred<T>(): Deferred<T> {
  const d = {} as Deferred<T>;
  d.promise = new Promise<T>((res, rej) => Object.assign(d, { resolve: res, reject: rej }));
  return d;
}

interface EffectLog {
  dials: CallContext[];
  hangups: HangupInput[];
  scheduled: DeadlineParams[];
  canceled: string[];
  releases: number;
  dialPromises: Array<Deferred<DialOutput>>;
  hangupPromises: Array<Deferred<HangupOutput>>;
}

function effectsInto(log: EffectLog) {
  return callMachine.provide({
    actors: {
      dial: fromPromise<DialOutput, CallContext>(({ input }) => {
        log.dials.push(input);
        const d = deferred<DialOutput>();
        log.dialPromises.push(d);
        return d.promise;
      }),
      hangup: fromPromise<HangupOutput, HangupInput>(({ input }) => {
        log.hangups.push(input);
        const d = deferred<HangupOutput>();
        log.hangupPromises.push(d);
        return d.promise;
      }),
    },
    actions: {
      scheduleDeadline: (_, params) => void log.scheduled.push(params),
      cancelDeadline: (_, params) => void log.canceled.push(params.name),
      releaseSlot: () => void (log.releases += 1),
    },
  });
}

function startCall(init: { input: CallInput } | { snapshot: Snapshot<unknown> }) {
  const log: EffectLog = { dials: [], hangups: [], scheduled: [], canceled: [], releases: 0, dialPromises: [], hangupPromises: [] };
  const errors: unknown[] = [];
  const actor = createActor(effectsInto(log), init as { input: CallInput });
  actor.subscribe({ error: (e) => errors.push(e) });
  actor.start();
  return {
    log,
    actor,
    errors,
    send: (...events: CallEvent[]) => events.forEach((e) => actor.send(e)),
    snap: (): CallSnapshot => actor.getSnapshot(),
    ctx: (): CallContext => actor.getSnapshot().context,
    /** Persisted snapshot as it comes back from the database. */
    persisted: (): Snapshot<unknown> => JSON.parse(JSON.stringify(actor.getPersistedSnapshot())) as Snapshot<unknown>,
  };
}
type Call = ReturnType<typeof startCall>;

/** Lets settled effect promises reach the actor. */
const flush = () => new Promise((r) => setTimeout(r, 0));

/** An outbound call dialed at once, accepted as CA1, ringing at +1 s, answered at `answeredAt`. */
async function connectedOutbound(over: Partial<CallInput> = {}, answeredAt = T0 + 5_000): Promise<Call> {
  const c = startCall({ input: callInput(over) });
  c.log.dialPromises[0]!.resolve({ carrierCallId: 'CA1' });
  await flush();
  c.send({ type: 'CARRIER.RINGING', at: T0 + 1_000 }, { type: 'CARRIER.ANSWERED', at: answeredAt });
  expect(c.snap().value).toEqual({ 'in-progress': 'listening' });
  return c;
}

async function ringingOutbound(over: Partial<CallInput> = {}): Promise<Call> {
  const c = startCall({ input: callInput(over) });
  c.log.dialPromises[0]!.resolve({ carrierCallId: 'CA1' });
  await flush();
  c.send({ type: 'CARRIER.RINGING', at: T0 + 1_000 });
  expect(c.snap().value).toBe('ringing');
  return c;
}

function expectEnded(c: Call, callStatus: FinalCallStatus, endedReason: string) {
  expect(isFinished(c.snap())).toBe(true);
  expect(c.snap().value).toBe('post-call');
  expect(callStatusOf(c.snap())).toBe(callStatus);
  expect(c.ctx().endedReason).toBe(endedReason);
  expect(c.log.releases).toBe(1);
  expect(c.errors).toEqual([]);
}

// ---- the final-values table ----

describe('final values', () => {
  it('inbound, connected, the caller hangs up: completed / caller_hangup', () => {
    const c = startCall({ input: inboundInput() });
    c.send({ type: 'CARRIER.ENDED', at: T0 + 30_000, status: 'completed', hangupSource: 'caller' });
    expectEnded(c, 'completed', 'caller_hangup');
    expect(callRecordOf(c.ctx())).toMatchObject({ started_at: T0, ended_at: T0 + 30_000, duration_ms: 30_000, charged_minutes: 0.5 });
  });

  it('outbound, connected, the callee hangs up: completed / callee_hangup', async () => {
    const c = await connectedOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 65_000, status: 'completed' });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(callRecordOf(c.ctx())).toMatchObject({ duration_ms: 60_000, duration_seconds: 60, charged_minutes: 1 });
  });

  it.each(['agent_hangup', 'silence_timeout', 'max_duration_reached', 'voicemail_detected', 'transferred'] as const)(
    'connected, we hang up for %s: completed with that reason',
    async (reason) => {
      const c = await connectedOutbound();
      c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason });
      expect(c.snap().value).toBe('hanging-up');
      expect(c.log.hangups).toEqual([{ callId: c.ctx().id, accountId: 'acct_1', provider: 'twilio', carrierCallId: 'CA1', reason }]);
      expect(isFinished(c.snap())).toBe(false);
      // The carrier's own word (completed, far end unknown) does not replace our reason.
      c.send({ type: 'CARRIER.ENDED', at: T0 + 20_400, status: 'completed', hangupSource: 'callee' });
      expectEnded(c, 'completed', reason);
      expect(c.ctx().voicemailDetected).toBe(reason === 'voicemail_detected');
      expect(c.ctx().endedAt).toBe(T0 + 20_400);
    },
  );

  it('max duration: the scheduled deadline event, once fired, ends the call as max_duration_reached', async () => {
    const c = await connectedOutbound({ maxDurationSec: 60 });
    expect(c.log.scheduled).toEqual([
      {
        name: MAX_DURATION_DEADLINE,
        dueAt: T0 + 5_000 + 60_000,
        event: { type: 'HANGUP.REQUESTED', at: T0 + 65_000, reason: 'max_duration_reached' },
      },
    ]);
    c.send(c.log.scheduled[0]!.event);
    c.log.hangupPromises[0]!.resolve({ at: T0 + 65_300 });
    await flush();
    expectEnded(c, 'completed', 'max_duration_reached');
    expect(callRecordOf(c.ctx())).toMatchObject({ duration_ms: 60_300, duration_seconds: 61, charged_minutes: 1.02 });
  });

  it('carrier AMD says machine with amd_enabled: we hang up, completed / voicemail_detected', async () => {
    const c = await connectedOutbound({ amdEnabled: true });
    c.send({ type: 'CARRIER.AMD', at: T0 + 9_000, result: 'machine' });
    expect(c.snap().value).toBe('hanging-up');
    expect(c.ctx().voicemailDetected).toBe(true);
    expect(c.log.hangups.map((h) => h.reason)).toEqual(['voicemail_detected']);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 9_500, status: 'completed' });
    expectEnded(c, 'completed', 'voicemail_detected');
    expect(callRecordOf(c.ctx()).voicemail_detected).toBe(true);
  });

  it.each(['busy', 'no-answer', 'failed', 'canceled'] as const)('never connected, the carrier says %s: that status and reason', async (status) => {
    const c = await ringingOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 25_000, status });
    expectEnded(c, status, status);
    expect(callRecordOf(c.ctx())).toMatchObject({ started_at: null, ended_at: T0 + 25_000, duration_ms: 0, duration_seconds: 0, charged_minutes: 0 });
  });

  it('dial refused by the carrier for a queued call: failed / failed with the carrier error', async () => {
    class CarrierRequestError extends Error {
      readonly status = 400;
      readonly code = 21211;
      readonly carrierError = { code: 21211, message: "The 'To' number is not a valid phone number." };
      constructor() {
        super('The carrier refused the call');
        this.name = 'CarrierRequestError';
      }
    }
    const c = startCall({ input: callInput({ queued: true }) });
    c.send({ type: 'SLOT.GRANTED', at: T0 + 7_000 });
    c.log.dialPromises[0]!.reject(new CarrierRequestError());
    await flush();
    expectEnded(c, 'failed', 'failed');
    expect(c.ctx().carrierError).toEqual({
      name: 'CarrierRequestError',
      message: 'The carrier refused the call',
      status: 400,
      code: 21211,
      carrierError: { code: 21211, message: "The 'To' number is not a valid phone number." },
    });
    expect(c.ctx().endedAt).toBe(T0 + 7_000);
    expect(callRecordOf(c.ctx()).charged_minutes).toBe(0);
  });

  it('cancelled while queued: canceled / canceled at once, never dialed, taken out of the queue', () => {
    const c = startCall({ input: callInput({ queued: true }) });
    expect(callStatusOf(c.snap())).toBe('queued');
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 3_000, reason: 'canceled' });
    expectEnded(c, 'canceled', 'canceled');
    expect(c.ctx().endedAt).toBe(T0 + 3_000);
    expect(c.log.dials).toEqual([]);
    expect(c.log.hangups).toEqual([]);
  });

  it('restored after a crash, the carrier says still up: we hang up, completed / media_lost', async () => {
    const before = await connectedOutbound();
    const c = startCall({ snapshot: before.persisted() });
    before.actor.stop();
    c.send({ type: 'RECONCILED', at: T0 + 40_000, carrierStatus: 'active' });
    expect(c.log.hangups.map((h) => [h.carrierCallId, h.reason])).toEqual([['CA1', 'media_lost']]);
    c.log.hangupPromises[0]!.resolve(undefined);
    await flush();
    expectEnded(c, 'completed', 'media_lost');
    expect(c.ctx().endedAt).toBe(T0 + 40_000);
  });

  it.each(['completed', 'busy', 'no-answer', 'failed', 'canceled'] as const)(
    'restored, the carrier says it ended with %s: completed / far-end hang-up if it had connected',
    async (status) => {
      const inbound = startCall({ input: inboundInput() });
      const outbound = await connectedOutbound();
      for (const [before, reason] of [[inbound, 'caller_hangup'], [outbound, 'callee_hangup']] as const) {
        const c = startCall({ snapshot: before.persisted() });
        c.send({ type: 'RECONCILED', at: T0 + 50_000, carrierStatus: status });
        expectEnded(c, 'completed', reason);
        expect(c.log.hangups).toEqual([]);
      }
    },
  );

  it.each(['busy', 'no-answer', 'failed', 'canceled'] as const)('restored, never connected, the carrier says %s: that status and reason', async (status) => {
    const c = startCall({ snapshot: (await ringingOutbound()).persisted() });
    c.send({ type: 'RECONCILED', at: T0 + 50_000, carrierStatus: status });
    expectEnded(c, status, status);
  });
});

// ---- paths ----

describe('happy paths', () => {
  it('inbound: starts connected, schedules max duration, ends, releases, then post-call to done', () => {
    const c = startCall({ input: inboundInput() });
    expect(c.snap().value).toEqual({ 'in-progress': 'listening' });
    expect(callStatusOf(c.snap())).toBe('in-progress');
    expect(c.ctx().startedAt).toBe(T0);
    expect(c.log.dials).toEqual([]);
    expect(c.log.scheduled).toEqual([
      { name: MAX_DURATION_DEADLINE, dueAt: T0 + MAX * 1000, event: { type: 'HANGUP.REQUESTED', at: T0 + MAX * 1000, reason: 'max_duration_reached' } },
    ]);
    c.send({ type: 'MEDIA.STARTED', at: T0 + 100 }, { type: 'DTMF', at: T0 + 2_000, digit: '5' });
    expect(c.snap().value).toEqual({ 'in-progress': 'listening' });
    c.send({ type: 'CARRIER.ENDED', at: T0 + 61_200, status: 'completed' });
    expectEnded(c, 'completed', 'caller_hangup');
    expect(c.log.canceled).toEqual([MAX_DURATION_DEADLINE]);
    expect(c.snap().status).toBe('active');
    c.send({ type: 'POSTCALL.DONE', at: T0 + 70_000 });
    expect(c.snap().value).toBe('done');
    expect(c.snap().status).toBe('done');
    expect(isFinished(c.snap())).toBe(true);
    expect(callRecordOf(c.ctx())).toEqual({
      call_status: 'completed',
      ended_reason: 'caller_hangup',
      carrier_call_id: 'CA_in',
      started_at: T0,
      ended_at: T0 + 61_200,
      duration_ms: 61_200,
      duration_seconds: 62,
      charged_minutes: 1.03,
      voicemail_detected: false,
    });
  });

  it('outbound: dialing → initiated → ringing → in-progress → ended, each status visible', async () => {
    const c = startCall({ input: callInput() });
    expect(c.snap().value).toBe('dialing');
    expect(callStatusOf(c.snap())).toBe('initiated');
    expect(c.log.dials).toHaveLength(1);
    expect(c.log.dials[0]).toMatchObject({ id: 'call_0123456789abcdefghijklmn', to: '+15550000002', from: '+15550000001', dialedAt: T0 });
    c.log.dialPromises[0]!.resolve({ carrierCallId: 'CA1' });
    await flush();
    expect(c.snap().value).toBe('initiated');
    expect(c.ctx().carrierCallId).toBe('CA1');
    c.send({ type: 'CARRIER.RINGING', at: T0 + 1_000, carrierCallId: 'CA1' });
    expect([c.snap().value, callStatusOf(c.snap())]).toEqual(['ringing', 'ringing']);
    c.send({ type: 'CARRIER.ANSWERED', at: T0 + 4_000 });
    expect(callStatusOf(c.snap())).toBe('in-progress');
    expect(c.ctx().startedAt).toBe(T0 + 4_000);
    expect(c.log.scheduled.map((s) => s.dueAt)).toEqual([T0 + 4_000 + MAX * 1000]);
    expect(callRecordOf(c.ctx())).toMatchObject({ duration_ms: null, duration_seconds: null, charged_minutes: 0, ended_at: null });
    c.send({ type: 'CARRIER.ENDED', at: T0 + 10_000, status: 'completed' });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(c.ctx().hangupReason).toBeNull();
  });

  it('queued: nothing is dialed until SLOT.GRANTED, then the dial starts once', () => {
    const c = startCall({ input: callInput({ queued: true }) });
    expect([c.snap().value, callStatusOf(c.snap())]).toEqual(['queued', 'queued']);
    // No carrier leg exists yet, so nothing a carrier says can be about this call.
    c.send({ type: 'CARRIER.ENDED', at: T0 + 1, status: 'busy' }, { type: 'DIAL.ACCEPTED', at: T0 + 2, carrierCallId: 'CAx' }, { type: 'RECONCILED', at: T0 + 3, carrierStatus: 'active' });
    expect(c.snap().value).toBe('queued');
    expect(c.ctx().carrierCallId).toBeNull();
    expect(c.log.dials).toEqual([]);
    c.send({ type: 'SLOT.GRANTED', at: T0 + 9_000 }, { type: 'SLOT.GRANTED', at: T0 + 9_500 });
    expect(c.snap().value).toBe('dialing');
    expect(callStatusOf(c.snap())).toBe('initiated');
    expect(c.ctx().dialedAt).toBe(T0 + 9_000);
    expect(c.log.dials).toHaveLength(1);
  });

  it('DIAL.REJECTED event ends a dialing call failed / failed with the carrier error', () => {
    const c = startCall({ input: callInput() });
    c.send({ type: 'DIAL.REJECTED', at: T0 + 800, carrierError: { status: 400, code: 21215 } });
    expectEnded(c, 'failed', 'failed');
    expect(c.ctx().carrierError).toEqual({ status: 400, code: 21215 });
    expect(c.ctx().endedAt).toBe(T0 + 800);
  });

  it('DIAL.ACCEPTED event moves a dialing call on like the dial effect would', () => {
    const c = startCall({ input: callInput() });
    c.send({ type: 'DIAL.ACCEPTED', at: T0 + 300, carrierCallId: 'CA7' });
    expect(c.snap().value).toBe('initiated');
    expect(c.ctx().carrierCallId).toBe('CA7');
  });
});

describe('hanging up', () => {
  it('requested, then the carrier says ended: the call ends on the carrier event', async () => {
    const c = await connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' });
    expect(callStatusOf(c.snap())).toBe('in-progress');
    expect(c.log.canceled).toEqual([MAX_DURATION_DEADLINE]);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 20_700, status: 'completed' });
    expectEnded(c, 'completed', 'agent_hangup');
    expect(c.ctx().endedAt).toBe(T0 + 20_700);
    // The effect settling afterwards changes nothing.
    c.log.hangupPromises[0]!.resolve({ at: T0 + 99_000 });
    await flush();
    expect(c.ctx().endedAt).toBe(T0 + 20_700);
  });

  it('requested, then HANGUP.DONE with no carrier event: ends at the HANGUP.DONE time', async () => {
    const c = await connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'silence_timeout' }, { type: 'HANGUP.DONE', at: T0 + 20_250 });
    expectEnded(c, 'completed', 'silence_timeout');
    expect(c.ctx().endedAt).toBe(T0 + 20_250);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 21_000, status: 'completed' });
    expect(c.ctx().endedAt).toBe(T0 + 20_250);
  });

  it('the hang-up effect resolving without a time ends the call at the request time', async () => {
    const c = await connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' });
    c.log.hangupPromises[0]!.resolve(undefined);
    await flush();
    expectEnded(c, 'completed', 'agent_hangup');
    expect(c.ctx().endedAt).toBe(T0 + 20_000);
  });

  it('a failing hang-up effect still counts as done (the call may already be gone)', async () => {
    const c = await connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'transferred' });
    c.log.hangupPromises[0]!.reject(new Error('call not found'));
    await flush();
    expectEnded(c, 'completed', 'transferred');
  });

  it('the first requested reason wins and the effect runs once', async () => {
    const c = await connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' }, { type: 'HANGUP.REQUESTED', at: T0 + 20_001, reason: 'max_duration_reached' });
    expect(c.log.hangups).toHaveLength(1);
    c.send({ type: 'HANGUP.DONE', at: T0 + 20_100 });
    expectEnded(c, 'completed', 'agent_hangup');
  });

  it('cancelled while ringing: the carrier says canceled, the call is canceled / canceled', async () => {
    const c = await ringingOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 2_000, reason: 'canceled' });
    c.send({ type: 'CARRIER.ENDED', at: T0 + 2_300, status: 'canceled' });
    expectEnded(c, 'canceled', 'canceled');
    expect(callRecordOf(c.ctx()).charged_minutes).toBe(0);
  });

  it('answered while our hang-up is on its way: the connected time counts', async () => {
    const c = await ringingOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 2_000, reason: 'canceled' }, { type: 'CARRIER.ANSWERED', at: T0 + 2_100 });
    expect(c.snap().value).toBe('hanging-up');
    c.send({ type: 'HANGUP.DONE', at: T0 + 3_500 });
    expectEnded(c, 'completed', 'canceled');
    expect(callRecordOf(c.ctx())).toMatchObject({ duration_ms: 1_400, duration_seconds: 2, charged_minutes: 0.03 });
    expect(c.log.scheduled).toEqual([]);
  });

  it('requested while dialing: waits for the carrier id, then hangs that call up', async () => {
    const c = startCall({ input: callInput() });
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 200, reason: 'canceled' }, { type: 'HANGUP.DONE', at: T0 + 250 });
    expect(c.snap().value).toBe('dialing');
    expect(c.log.hangups).toEqual([]);
    c.log.dialPromises[0]!.resolve({ carrierCallId: 'CA3' });
    await flush();
    expect(c.snap().value).toBe('hanging-up');
    expect(c.log.hangups.map((h) => h.carrierCallId)).toEqual(['CA3']);
    c.send({ type: 'HANGUP.DONE', at: T0 + 900 });
    expectEnded(c, 'canceled', 'canceled');
    expect(c.ctx().carrierCallId).toBe('CA3');
  });

  it('HANGUP.DONE without a request is ignored', async () => {
    const c = await connectedOutbound();
    const before = c.ctx();
    c.send({ type: 'HANGUP.DONE', at: T0 + 8_000 });
    expect(c.ctx()).toBe(before);
    expect(c.snap().value).toEqual({ 'in-progress': 'listening' });
  });
});

describe('answering-machine detection', () => {
  it('machine without amd_enabled: the call goes on (the agent handles voicemail later)', async () => {
    const c = await connectedOutbound({ amdEnabled: false });
    c.send({ type: 'CARRIER.AMD', at: T0 + 9_000, result: 'machine' });
    expect(c.snap().value).toEqual({ 'in-progress': 'listening' });
    expect(c.log.hangups).toEqual([]);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 30_000, status: 'completed' });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(c.ctx().voicemailDetected).toBe(false);
  });

  it.each(['human', 'fax', 'unknown'] as const)('%s with amd_enabled: the call goes on', async (result) => {
    const c = await connectedOutbound({ amdEnabled: true });
    c.send({ type: 'CARRIER.AMD', at: T0 + 9_000, result });
    expect(c.snap().value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx().voicemailDetected).toBe(false);
  });

  it('an AMD result before the answer event means answered (callbacks race)', async () => {
    const c = await ringingOutbound({ amdEnabled: true });
    c.send({ type: 'CARRIER.AMD', at: T0 + 6_000, result: 'machine' }, { type: 'CARRIER.ANSWERED', at: T0 + 6_100 });
    expect(c.snap().value).toBe('hanging-up');
    expect(c.ctx().startedAt).toBe(T0 + 6_000);
    c.send({ type: 'HANGUP.DONE', at: T0 + 7_000 });
    expectEnded(c, 'completed', 'voicemail_detected');
    expect(callRecordOf(c.ctx()).duration_ms).toBe(1_000);
  });

  it('a human AMD result before the answer event starts the conversation', async () => {
    const c = await ringingOutbound({ amdEnabled: true });
    c.send({ type: 'CARRIER.AMD', at: T0 + 6_000, result: 'human' });
    expect(c.snap().value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx().startedAt).toBe(T0 + 6_000);
  });
});

describe('duplicate, late and out-of-order events', () => {
  it('a late RINGING or a second ANSWERED after the answer is ignored', async () => {
    const c = await connectedOutbound();
    const before = c.ctx();
    c.send({ type: 'CARRIER.RINGING', at: T0 + 9_000 }, { type: 'CARRIER.ANSWERED', at: T0 + 9_500 }, { type: 'SLOT.GRANTED', at: T0 + 9_600 });
    expect(c.ctx()).toBe(before);
    expect(c.log.scheduled).toHaveLength(1);
  });

  it('a second CARRIER.ENDED changes nothing; nothing after the end does', async () => {
    const c = await connectedOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 30_000, status: 'completed' });
    const ended = c.ctx();
    c.send(
      { type: 'CARRIER.ENDED', at: T0 + 31_000, status: 'failed' },
      { type: 'HANGUP.REQUESTED', at: T0 + 31_100, reason: 'agent_hangup' },
      { type: 'RECONCILED', at: T0 + 31_200, carrierStatus: 'active' },
      { type: 'CARRIER.ANSWERED', at: T0 + 31_300 },
      { type: 'DIAL.REJECTED', at: T0 + 31_400, carrierError: {} },
    );
    expect(c.ctx()).toBe(ended);
    expectEnded(c, 'completed', 'callee_hangup');
    expect(c.log.hangups).toEqual([]);
  });

  it('DIAL.ACCEPTED after a carrier event moved the call on only records the carrier id', () => {
    const c = startCall({ input: callInput() });
    c.send({ type: 'CARRIER.RINGING', at: T0 + 500 });
    expect(c.snap().value).toBe('ringing');
    expect(c.ctx().carrierCallId).toBeNull();
    c.send({ type: 'DIAL.ACCEPTED', at: T0 + 600, carrierCallId: 'CA5' });
    expect(c.snap().value).toBe('ringing');
    expect(c.ctx().carrierCallId).toBe('CA5');
    // A contradicting rejection after the carrier showed the call exists is ignored.
    c.send({ type: 'DIAL.REJECTED', at: T0 + 700, carrierError: { message: 'late' } });
    expect(c.snap().value).toBe('ringing');
  });

  it('the carrier id from a webhook is kept; a later different one does not replace it', () => {
    const c = startCall({ input: callInput() });
    c.send({ type: 'CARRIER.ANSWERED', at: T0 + 500, carrierCallId: 'CA8' }, { type: 'DIAL.ACCEPTED', at: T0 + 600, carrierCallId: 'CA9' });
    expect(c.snap().value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx().carrierCallId).toBe('CA8');
  });

  it('a late DIAL.ACCEPTED after the call ended still records an unknown carrier id', () => {
    const c = startCall({ input: callInput() });
    c.send({ type: 'CARRIER.ENDED', at: T0 + 500, status: 'busy' });
    const ended = c.ctx();
    c.send({ type: 'DIAL.ACCEPTED', at: T0 + 600, carrierCallId: 'CA6' });
    expect(c.ctx()).toEqual({ ...ended, carrierCallId: 'CA6' });
    expectEnded(c, 'busy', 'busy');
  });

  it('CARRIER.ENDED completed before the answer event: completed, connected time from the carrier duration', async () => {
    const c = await ringingOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 50_000, status: 'completed', durationSec: 42 });
    c.send({ type: 'CARRIER.ANSWERED', at: T0 + 50_100 });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(callRecordOf(c.ctx())).toMatchObject({ started_at: T0 + 8_000, duration_ms: 42_000, charged_minutes: 0.7 });
  });

  it('CARRIER.ENDED completed with no answer seen and no duration: completed, zero connected time', async () => {
    const c = await ringingOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 50_000, status: 'completed' });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(callRecordOf(c.ctx())).toMatchObject({ started_at: T0 + 50_000, duration_ms: 0, charged_minutes: 0 });
  });

  it('an end stamped before the answer never gives a negative duration', async () => {
    const c = await connectedOutbound({}, T0 + 5_000);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 4_000, status: 'completed' });
    expect(c.ctx().endedAt).toBe(T0 + 5_000);
    expect(callRecordOf(c.ctx()).duration_ms).toBe(0);
  });

  it('the dial effect settling after a carrier event moved the call on changes nothing', async () => {
    const c = startCall({ input: callInput() });
    c.send({ type: 'CARRIER.RINGING', at: T0 + 500, carrierCallId: 'CA2' });
    c.log.dialPromises[0]!.reject(new Error('timeout'));
    await flush();
    expect(c.snap().value).toBe('ringing');
    expect(c.ctx().carrierError).toBeNull();
    expect(c.errors).toEqual([]);
  });
});

describe('reconciliation after a restart', () => {
  it.each(['active', 'unknown'] as const)('carrier says %s for a call that never connected: hang up, end as media_lost', async (carrierStatus) => {
    const c = startCall({ snapshot: (await ringingOutbound()).persisted() });
    c.send({ type: 'RECONCILED', at: T0 + 40_000, carrierStatus });
    expect(c.log.hangups.map((h) => h.reason)).toEqual(['media_lost']);
    c.send({ type: 'HANGUP.DONE', at: T0 + 40_300 });
    expectEnded(c, 'canceled', 'media_lost');
  });

  it.each(['active', 'unknown'] as const)('carrier says %s for a connected inbound call: completed / media_lost', (carrierStatus) => {
    const c = startCall({ snapshot: startCall({ input: inboundInput() }).persisted() });
    c.send({ type: 'RECONCILED', at: T0 + 40_000, carrierStatus }, { type: 'CARRIER.ENDED', at: T0 + 40_500, status: 'completed' });
    expectEnded(c, 'completed', 'media_lost');
  });

  it('carrier says active while dialing: the hang-up waits for the re-run dial', async () => {
    const c = startCall({ snapshot: startCall({ input: callInput() }).persisted() });
    // The restored dial runs again: effects are idempotent by the call's internal id.
    expect(c.log.dials.map((d) => d.id)).toEqual(['call_0123456789abcdefghijklmn']);
    c.send({ type: 'RECONCILED', at: T0 + 40_000, carrierStatus: 'active' });
    expect(c.snap().value).toBe('dialing');
    c.log.dialPromises[0]!.resolve({ carrierCallId: 'CA4' });
    await flush();
    expect(c.log.hangups.map((h) => [h.carrierCallId, h.reason])).toEqual([['CA4', 'media_lost']]);
  });

  it('a hang-up already requested keeps its reason through reconciliation', async () => {
    const before = await connectedOutbound();
    before.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' });
    const c = startCall({ snapshot: before.persisted() });
    before.actor.stop();
    // The restored hang-up effect runs again; a second RECONCILED adds nothing.
    expect(c.log.hangups.map((h) => h.reason)).toEqual(['agent_hangup']);
    c.send({ type: 'RECONCILED', at: T0 + 40_000, carrierStatus: 'active' }, { type: 'RECONCILED', at: T0 + 40_001, carrierStatus: 'completed' });
    expectEnded(c, 'completed', 'agent_hangup');
  });
});

describe('billing', () => {
  it.each([
    [0, 0, 0],
    [1, 1, 0.02],
    [1_000, 1, 0.02],
    [30_000, 30, 0.5],
    [59_001, 60, 1],
    [60_000, 60, 1],
    [60_001, 61, 1.02],
    [61_200, 62, 1.03],
    [90_000, 90, 1.5],
    [1_800_000, 1_800, 30],
  ])('%i ms connected: %i billed seconds, %d minutes', (ms, seconds, minutes) => {
    expect(chargedMinutes(ms)).toBe(minutes);
    const c = startCall({ input: inboundInput() });
    c.send({ type: 'CARRIER.ENDED', at: T0 + ms, status: 'completed' });
    expect(callRecordOf(c.ctx())).toMatchObject({ duration_ms: ms, duration_seconds: seconds, charged_minutes: minutes });
  });
});

describe('purity and persistence', () => {
  it('transitions are pure: effects come back as actions with their params, nothing runs', () => {
    const [dialing, initial] = initialTransition(callMachine, callInput());
    expect(dialing.value).toBe('dialing');
    expect(initial.map((a) => a.type)).toEqual(['xstate.spawnChild']);
    const initiated = getNextSnapshot(callMachine, dialing, { type: 'DIAL.ACCEPTED', at: T0 + 100, carrierCallId: 'CA1' });
    const [live, actions] = transition(callMachine, initiated, { type: 'CARRIER.ANSWERED', at: T0 + 2_000 });
    expect(live.value).toEqual({ 'in-progress': 'listening' });
    expect(actions.filter((a) => !a.type.startsWith('xstate.')).map((a) => [a.type, a.params])).toEqual([
      ['scheduleDeadline', { name: MAX_DURATION_DEADLINE, dueAt: T0 + 2_000 + MAX * 1000, event: { type: 'HANGUP.REQUESTED', at: T0 + 2_000 + MAX * 1000, reason: 'max_duration_reached' } }],
    ]);
    const [ended, endActions] = transition(callMachine, live, { type: 'CARRIER.ENDED', at: T0 + 9_000, status: 'completed' });
    expect(ended.value).toBe('post-call');
    expect(endActions.map((a) => a.type)).toEqual(['cancelDeadline', 'releaseSlot']);
    // The input snapshot was not touched.
    expect(live.context.endedAt).toBeNull();
  });

  it('every live state survives a JSON round trip of its persisted snapshot and restores equal', async () => {
    const queued = startCall({ input: callInput({ queued: true }) });
    const dialing = startCall({ input: callInput() });
    const ringing = await ringingOutbound();
    const talking = await connectedOutbound();
    const hanging = await connectedOutbound();
    hanging.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' });
    const postCall = startCall({ input: inboundInput() });
    postCall.send({ type: 'CARRIER.ENDED', at: T0 + 20_000, status: 'completed' });
    for (const c of [queued, dialing, ringing, talking, hanging, postCall]) {
      const restored = startCall({ snapshot: c.persisted() });
      expect(restored.snap().value).toEqual(c.snap().value);
      expect(restored.ctx()).toEqual(c.ctx());
      expect(JSON.parse(JSON.stringify(restored.ctx()))).toEqual(restored.ctx());
      // Restoring re-runs no entry action: the deadline and the slot are durable elsewhere.
      expect([restored.log.scheduled, restored.log.canceled, restored.log.releases]).toEqual([[], [], 0]);
    }
  });

  it('a restored hang-up effect runs again with the same input', async () => {
    const before = await connectedOutbound();
    before.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'silence_timeout' });
    const c = startCall({ snapshot: before.persisted() });
    expect(c.log.hangups).toEqual(before.log.hangups);
  });

  it('the placeholders refuse to run unprovided effects: the call ends failed', async () => {
    const actor = createActor(callMachine, { input: callInput() });
    actor.start();
    await flush();
    expect(actor.getSnapshot().context).toMatchObject({ callStatus: 'failed', endedReason: 'failed', carrierError: { message: 'dial effect not provided' } });
  });

  it('callRecordOf of a live call has no durations yet', () => {
    const c = startCall({ input: callInput({ queued: true }) });
    const record: ReturnType<typeof callRecordOf> = callRecordOf(c.ctx());
    expect(record).toEqual({
      call_status: 'queued',
      ended_reason: null,
      carrier_call_id: null,
      started_at: null,
      ended_at: null,
      duration_ms: null,
      duration_seconds: null,
      charged_minutes: 0,
      voicemail_detected: false,
    });
  });
});
