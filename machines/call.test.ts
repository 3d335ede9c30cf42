// The call machine driven the way the supervisor drives it: pure transitions whose effects
// come back as named actions (test/model/call-driver.ts keeps the snapshot, the pending
// intents, the armed deadlines and the slot). Covers every row of the final-values table,
// the happy paths, queueing, the three dial outcomes and the reconciliation of an unknown
// one, hang-up outcomes and retries, AMD, reordered and repeated carrier events, the
// deadline of every waiting state, reconciliation after a restart, billing, persistence
// round trips and snapshots of older versions.
import { initialTransition, transition } from 'xstate';
import { describe, expect, it } from 'vitest';
import type { CallContext } from './call-outcome.ts';
import type { CallEvent, CallInput, FinalCallStatus } from './call-events.ts';
import { CALL_MACHINE_VERSION, CALL_TAGS, LIVENESS, MAX_DURATION_DEADLINE, callMachine, callRecordOf, chargedMinutes } from './call.ts';
import { publicIdOf } from '../actors/calls/call-kind.ts';
import { CallDriver, T0, callInput, inboundInput } from '../test/model/call-driver.ts';

const MAX = 600;
const { queueCheckMs, dialMs, ringMs, connectedCheckMs, hangupMs, retryMs, dialGiveUpMs, hangupAttempts } = LIVENESS;

// ---- paths to a state ----

const start = (over: Partial<CallInput> = {}): CallDriver => CallDriver.start(callInput(over));

/** An outbound call dialed at once, its dial accepted as `id` at T0+100. */
function accepted(over: Partial<CallInput> = {}, id = 'CA1'): CallDriver {
  const c = start(over);
  c.settle('dial', { type: 'DIAL.ACCEPTED', at: T0 + 100, carrierCallId: id });
  expect(c.value).toBe('initiated');
  return c;
}

/** Accepted, ringing at T0+1 s. */
function ringingOutbound(over: Partial<CallInput> = {}): CallDriver {
  const c = accepted(over);
  c.send({ type: 'CARRIER.RINGING', at: T0 + 1_000 });
  expect(c.value).toBe('ringing');
  return c;
}

/** Accepted, ringing, answered at `answeredAt`. */
function connectedOutbound(over: Partial<CallInput> = {}, answeredAt = T0 + 5_000): CallDriver {
  const c = ringingOutbound(over);
  c.send({ type: 'CARRIER.ANSWERED', at: answeredAt });
  expect(c.value).toEqual({ 'in-progress': 'listening' });
  return c;
}

/** Dialed at T0, the dial's answer lost at T0+2 s: the carrier is being asked. */
function unknownDial(over: Partial<CallInput> = {}): CallDriver {
  const c = start(over);
  c.settle('dial', { type: 'DIAL.UNKNOWN', at: T0 + 2_000, carrierError: { outcome: 'unknown', message: 'socket hang up' } });
  expect(c.value).toEqual({ 'dial-unknown': 'asking' });
  return c;
}

/** The call ended with exactly this status and reason, released its slot once and left no deadline behind. */
function expectEnded(c: CallDriver, callStatus: FinalCallStatus, endedReason: string): void {
  expect(c.finished).toBe(true);
  expect(c.value).toBe('post-call');
  expect([c.ctx.callStatus, c.ctx.endedReason]).toEqual([callStatus, endedReason]);
  expect(c.ctx.endedAt).not.toBeNull();
  expect(c.slot).toMatchObject({ held: false, queued: false, releases: 1, strayReleases: 0 });
  // Only post-call's own finishing deadline, due at once, is left.
  expect(Object.keys(c.armed())).toEqual(['stale']);
  expect(c.tags()).toEqual([CALL_TAGS.finished]);
}

const hangupReasonOf = (c: CallDriver): Array<[string | null, string | null]> => c.pending('hangup').map((i) => [i.context.carrierCallId, i.context.hangupReason]);

// ---- the final-values table ----

describe('final values', () => {
  it('inbound, connected, the caller hangs up: completed / caller_hangup', () => {
    const c = CallDriver.start(inboundInput());
    c.send({ type: 'CARRIER.ENDED', at: T0 + 30_000, status: 'completed', hangupSource: 'caller' });
    expectEnded(c, 'completed', 'caller_hangup');
    expect(callRecordOf(c.ctx)).toMatchObject({ started_at: T0, ended_at: T0 + 30_000, duration_ms: 30_000, charged_minutes: 0.5 });
  });

  it('outbound, connected, the callee hangs up: completed / callee_hangup', () => {
    const c = connectedOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 65_000, status: 'completed' });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(callRecordOf(c.ctx)).toMatchObject({ duration_ms: 60_000, duration_seconds: 60, charged_minutes: 1 });
  });

  it.each(['agent_hangup', 'silence_timeout', 'max_duration_reached', 'voicemail_detected', 'transferred'] as const)(
    'connected, we hang up for %s: completed with that reason',
    (reason) => {
      const c = connectedOutbound();
      c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason });
      expect(c.value).toBe('hanging-up');
      expect(hangupReasonOf(c)).toEqual([['CA1', reason]]);
      expect(c.finished).toBe(false);
      // The carrier's own word (completed, the callee hung up) does not replace our reason.
      c.send({ type: 'CARRIER.ENDED', at: T0 + 20_400, status: 'completed', hangupSource: 'callee' });
      expectEnded(c, 'completed', reason);
      expect(c.ctx.voicemailDetected).toBe(reason === 'voicemail_detected');
      expect(c.ctx.endedAt).toBe(T0 + 20_400);
    },
  );

  it('max duration: the armed deadline, once due, hangs up and ends the call as max_duration_reached', () => {
    const c = connectedOutbound({ maxDurationSec: 60 });
    expect(c.deadlines.get(MAX_DURATION_DEADLINE)).toEqual({
      dueAt: T0 + 5_000 + 60_000,
      event: { type: 'HANGUP.REQUESTED', at: T0 + 65_000, reason: 'max_duration_reached' },
    });
    // The scheduler delivers it a little late; the request time is the delivery time.
    c.fire(MAX_DURATION_DEADLINE, T0 + 65_300);
    expect(hangupReasonOf(c)).toEqual([['CA1', 'max_duration_reached']]);
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 65_900 });
    expectEnded(c, 'completed', 'max_duration_reached');
    // Billed to the moment we asked for the hang-up.
    expect(callRecordOf(c.ctx)).toMatchObject({ ended_at: T0 + 65_300, duration_ms: 60_300, duration_seconds: 61, charged_minutes: 1.02 });
  });

  it('carrier AMD says machine with amd_enabled: we hang up, completed / voicemail_detected', () => {
    const c = connectedOutbound({ amdEnabled: true });
    c.send({ type: 'CARRIER.AMD', at: T0 + 9_000, result: 'machine' });
    expect(c.value).toBe('hanging-up');
    expect(c.ctx.voicemailDetected).toBe(true);
    expect(hangupReasonOf(c)).toEqual([['CA1', 'voicemail_detected']]);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 9_500, status: 'completed' });
    expectEnded(c, 'completed', 'voicemail_detected');
    expect(callRecordOf(c.ctx).voicemail_detected).toBe(true);
  });

  it.each(['busy', 'no-answer', 'failed', 'canceled'] as const)('never connected, the carrier says %s: that status and reason', (status) => {
    const c = ringingOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 25_000, status });
    expectEnded(c, status, status);
    expect(callRecordOf(c.ctx)).toMatchObject({ started_at: null, ended_at: T0 + 25_000, duration_ms: 0, duration_seconds: 0, charged_minutes: 0 });
  });

  it('dial refused by the carrier for a queued call: failed / failed with the carrier error', () => {
    const carrierError = {
      name: 'CarrierRequestError',
      message: 'The carrier refused the call',
      status: 400,
      code: 21211,
      carrierError: { code: 21211, message: "The 'To' number is not a valid phone number." },
    };
    const c = start({ queued: true });
    c.grant(T0 + 7_000);
    c.settle('dial', { type: 'DIAL.REJECTED', at: T0 + 7_400, carrierError });
    expectEnded(c, 'failed', 'failed');
    expect(c.ctx.carrierError).toEqual(carrierError);
    expect(c.ctx.dialOutcome).toBe('rejected');
    expect(c.ctx.endedAt).toBe(T0 + 7_400);
    expect(callRecordOf(c.ctx).charged_minutes).toBe(0);
  });

  it('cancelled while queued: canceled / canceled at once, never dialed, taken out of the queue', () => {
    const c = start({ queued: true });
    expect(c.ctx.callStatus).toBe('queued');
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 3_000, reason: 'canceled' });
    expectEnded(c, 'canceled', 'canceled');
    expect(c.ctx.endedAt).toBe(T0 + 3_000);
    expect(c.issued).toMatchObject({ dial: 0, hangup: 0 });
  });

  it('restored after a crash, the carrier says still up: we hang up, completed / media_lost', () => {
    const c = connectedOutbound();
    c.restart(T0 + 40_000);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 40_100, carrierStatus: 'active' });
    expect(hangupReasonOf(c)).toEqual([['CA1', 'media_lost']]);
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 40_300 });
    expectEnded(c, 'completed', 'media_lost');
    expect(c.ctx.endedAt).toBe(T0 + 40_100);
  });

  it.each(['completed', 'busy', 'no-answer', 'failed', 'canceled'] as const)(
    'restored, the carrier says it ended with %s: completed / far-end hang-up if it had connected',
    (status) => {
      for (const [c, reason] of [[CallDriver.start(inboundInput()), 'caller_hangup'], [connectedOutbound(), 'callee_hangup']] as const) {
        c.restart(T0 + 50_000);
        c.settle('checkCall', { type: 'RECONCILED', at: T0 + 50_100, carrierStatus: status });
        expectEnded(c, 'completed', reason);
        expect(c.issued.hangup).toBe(0);
      }
    },
  );

  it.each(['busy', 'no-answer', 'failed', 'canceled'] as const)('restored, never connected, the carrier says %s: that status and reason', (status) => {
    const c = ringingOutbound();
    c.restart(T0 + 50_000);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 50_100, carrierStatus: status });
    expectEnded(c, status, status);
  });

  it('an unknown dial the carrier never placed: failed / failed, carrier_error outcome not_placed', () => {
    const c = unknownDial();
    c.settle('findDial', { type: 'DIAL.NOT_FOUND', at: T0 + 3_000 });
    expectEnded(c, 'failed', 'failed');
    expect(c.ctx.carrierError).toMatchObject({ outcome: 'not_placed' });
    expect(c.ctx.endedAt).toBe(T0 + 3_000);
  });

  it('an unknown dial the carrier cannot tell about until the give-up: failed / failed, carrier_error outcome unknown', () => {
    const c = unknownDial();
    c.settle('findDial', { type: 'CARRIER.UNREACHABLE', at: T0 + 3_000 });
    c.fire('give_up');
    expectEnded(c, 'failed', 'failed');
    expect(c.ctx.carrierError).toMatchObject({ outcome: 'unknown' });
    expect(c.ctx.endedAt).toBe(T0 + dialGiveUpMs);
  });
});

// ---- paths ----

describe('happy paths', () => {
  it('inbound: starts connected with its deadlines, ends, releases, then post-call to done', () => {
    const c = CallDriver.start(inboundInput());
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx.callStatus).toBe('in-progress');
    expect(c.ctx.startedAt).toBe(T0);
    expect(c.tags()).toEqual([CALL_TAGS.holdsSlot]);
    expect(c.issued.dial).toBe(0);
    expect(c.deadlines.get(MAX_DURATION_DEADLINE)).toEqual({ dueAt: T0 + MAX * 1000, event: { type: 'HANGUP.REQUESTED', at: T0 + MAX * 1000, reason: 'max_duration_reached' } });
    expect(c.armed()).toEqual({ [MAX_DURATION_DEADLINE]: T0 + MAX * 1000, stale: T0 + connectedCheckMs });
    // Media events change nothing the machine keeps.
    expect(c.send({ type: 'MEDIA.STARTED', at: T0 + 100 }).taken).toBe(false);
    expect(c.send({ type: 'DTMF', at: T0 + 2_000, digit: '5' }).taken).toBe(false);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 61_200, status: 'completed' });
    expectEnded(c, 'completed', 'caller_hangup');
    expect(c.cancelled()).toEqual(expect.arrayContaining([MAX_DURATION_DEADLINE, 'stale']));
    expect(c.snapshot.status).toBe('active');
    c.send({ type: 'POSTCALL.DONE', at: T0 + 70_000 });
    expect([c.value, c.snapshot.status, c.finished]).toEqual(['done', 'done', true]);
    expect(callRecordOf(c.ctx)).toEqual({
      call_status: 'completed',
      ended_reason: 'caller_hangup',
      carrier_call_id: 'CA_in',
      started_at: T0,
      ended_at: T0 + 61_200,
      duration_ms: 61_200,
      duration_seconds: 62,
      charged_minutes: 1.03,
      voicemail_detected: false,
      transcript: null,
      avg_latency_ms: null,
      bookings: [],
    });
    // A done actor is not live: it takes nothing more.
    expect(c.send({ type: 'CARRIER.ENDED', at: T0 + 80_000, status: 'failed' }).taken).toBe(false);
  });

  it('outbound: dialing → initiated → ringing → in-progress → ended, each status visible', () => {
    const c = start();
    expect(c.value).toBe('dialing');
    expect(c.ctx.callStatus).toBe('initiated');
    expect(c.tags()).toEqual([CALL_TAGS.dialing, CALL_TAGS.holdsSlot]);
    expect(c.pending().map((i) => i.effect)).toEqual(['dial']);
    expect(c.pending('dial')[0]!.context).toMatchObject({ id: 'call_0123456789abcdefghijklmn', to: '+15550000002', from: '+15550000001', dialedAt: T0 });
    c.settle('dial', { type: 'DIAL.ACCEPTED', at: T0 + 100, carrierCallId: 'CA1' });
    expect([c.value, c.ctx.carrierCallId, c.ctx.dialOutcome]).toEqual(['initiated', 'CA1', 'accepted']);
    expect(c.tags()).toEqual([CALL_TAGS.holdsSlot]);
    c.send({ type: 'CARRIER.RINGING', at: T0 + 1_000, carrierCallId: 'CA1' });
    expect([c.value, c.ctx.callStatus]).toEqual(['ringing', 'ringing']);
    c.send({ type: 'CARRIER.ANSWERED', at: T0 + 4_000 });
    expect(c.ctx.callStatus).toBe('in-progress');
    expect(c.ctx.startedAt).toBe(T0 + 4_000);
    expect(c.armed()[MAX_DURATION_DEADLINE]).toBe(T0 + 4_000 + MAX * 1000);
    expect(callRecordOf(c.ctx)).toMatchObject({ duration_ms: null, duration_seconds: null, charged_minutes: 0, ended_at: null });
    c.send({ type: 'CARRIER.ENDED', at: T0 + 10_000, status: 'completed' });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(c.ctx.hangupReason).toBeNull();
    expect(c.issued).toMatchObject({ dial: 1, findDial: 0, checkCall: 0, hangup: 0, placeTransfer: 0 });
  });

  it('queued: nothing is dialed until the slot is granted, then the dial starts once', () => {
    const c = start({ queued: true });
    expect([c.value, c.ctx.callStatus, c.tags()]).toEqual(['queued', 'queued', [CALL_TAGS.queued]]);
    expect(c.slot).toMatchObject({ queued: true, held: false });
    // No carrier leg exists yet, so nothing a carrier says can be about this call.
    c.sendAll(
      { type: 'CARRIER.ENDED', at: T0 + 1, status: 'busy' },
      { type: 'DIAL.ACCEPTED', at: T0 + 2, carrierCallId: 'CAx' },
      { type: 'RECONCILED', at: T0 + 3, carrierStatus: 'active' },
    );
    expect(c.value).toBe('queued');
    expect(c.ctx.carrierCallId).toBeNull();
    expect(c.issued.dial).toBe(0);
    c.grant(T0 + 9_000);
    // A repeated grant is nothing new.
    c.send({ type: 'SLOT.GRANTED', at: T0 + 9_500 });
    expect(c.value).toBe('dialing');
    expect(c.ctx.callStatus).toBe('initiated');
    expect(c.ctx.dialedAt).toBe(T0 + 9_000);
    expect(c.issued.dial).toBe(1);
    expect(c.slot).toMatchObject({ held: true, queued: false, releases: 0 });
  });

  it('queued: the queue check asks the pool again and re-arms; a cancel leaves the queue', () => {
    const c = start({ queued: true });
    expect(c.armed()).toEqual({ queue_check: T0 + queueCheckMs });
    c.fire('queue_check');
    expect(c.value).toBe('queued');
    expect(c.slot).toMatchObject({ requests: 1, queued: true });
    expect(c.armed()).toEqual({ queue_check: T0 + 2 * queueCheckMs });
    expect(c.issued.dial).toBe(0);
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 130_000, reason: 'canceled' });
    expectEnded(c, 'canceled', 'canceled');
  });

  it('DIAL.REJECTED ends a dialing call failed / failed with the carrier error', () => {
    const c = start();
    c.settle('dial', { type: 'DIAL.REJECTED', at: T0 + 800, carrierError: { status: 400, code: 21215 } });
    expectEnded(c, 'failed', 'failed');
    expect(c.ctx.carrierError).toEqual({ status: 400, code: 21215 });
    expect(c.ctx.endedAt).toBe(T0 + 800);
  });

  it('DIAL.ACCEPTED moves a dialing call on with the carrier id', () => {
    const c = start();
    c.settle('dial', { type: 'DIAL.ACCEPTED', at: T0 + 300, carrierCallId: 'CA7' });
    expect(c.value).toBe('initiated');
    expect(c.ctx.carrierCallId).toBe('CA7');
    expect(publicIdOf(c.ctx)).toBe('CA7');
  });
});

// ---- the dial's three outcomes ----

describe('a dial whose outcome is unknown is reconciled, never dialed again', () => {
  it('DIAL.UNKNOWN: the carrier is asked (findDial), the slot stays held, no second dial', () => {
    const c = unknownDial();
    expect(c.tags()).toEqual([CALL_TAGS.dialing, CALL_TAGS.holdsSlot]);
    expect(c.ctx.dialOutcome).toBe('unknown');
    expect(c.ctx.carrierError).toEqual({ outcome: 'unknown', message: 'socket hang up' });
    expect(c.pending().map((i) => i.effect)).toEqual(['findDial']);
    expect(c.armed()).toEqual({ give_up: T0 + dialGiveUpMs });
    expect(c.issued.dial).toBe(1);
    // Its public id is its own: the carrier's may never be learned.
    expect(publicIdOf(c.ctx)).toBe(c.ctx.id);
  });

  it('a dial whose answer never came is treated as unknown at its deadline', () => {
    const c = start();
    c.fire('stale', T0 + dialMs);
    expect(c.value).toEqual({ 'dial-unknown': 'asking' });
    expect(c.ctx.carrierError).toMatchObject({ outcome: 'unknown' });
    expect(c.pending().map((i) => i.effect)).toEqual(['dial', 'findDial']);
    expect(c.issued.dial).toBe(1);
  });

  it('found, still ringing at the carrier: initiated with the carrier id', () => {
    const c = unknownDial();
    c.settle('findDial', { type: 'DIAL.FOUND', at: T0 + 3_000, carrierCallId: 'CA9', carrierStatus: 'active' });
    expect([c.value, c.ctx.carrierCallId, c.ctx.carrierError]).toEqual(['initiated', 'CA9', null]);
    expect(c.armed()).toEqual({ stale: T0 + 3_000 + ringMs });
    expect(c.cancelled()).toContain('give_up');
    expect(c.issued.dial).toBe(1);
  });

  it('found, answered: in-progress from the moment it was found', () => {
    const c = unknownDial();
    c.settle('findDial', { type: 'DIAL.FOUND', at: T0 + 3_000, carrierCallId: 'CA9', carrierStatus: 'active', answered: true });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx.startedAt).toBe(T0 + 3_000);
    expect(c.armed()).toEqual({ [MAX_DURATION_DEADLINE]: T0 + 3_000 + MAX * 1000, stale: T0 + 3_000 + connectedCheckMs });
  });

  it('found, already ended: billed to the carrier’s own end time and duration', () => {
    const c = unknownDial();
    c.settle('findDial', { type: 'DIAL.FOUND', at: T0 + 90_000, carrierCallId: 'CA9', carrierStatus: 'completed', endedAt: T0 + 70_000, durationSec: 42 });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(c.ctx.carrierCallId).toBe('CA9');
    expect(callRecordOf(c.ctx)).toMatchObject({ started_at: T0 + 28_000, ended_at: T0 + 70_000, duration_ms: 42_000, charged_minutes: 0.7 });
  });

  it('found, ended busy: busy / busy at the carrier’s end time', () => {
    const c = unknownDial();
    c.settle('findDial', { type: 'DIAL.FOUND', at: T0 + 90_000, carrierCallId: 'CA9', carrierStatus: 'busy', endedAt: T0 + 20_000 });
    expectEnded(c, 'busy', 'busy');
    expect(callRecordOf(c.ctx)).toMatchObject({ ended_at: T0 + 20_000, duration_ms: 0, charged_minutes: 0 });
  });

  it('the carrier cannot be asked: asked again after the retry deadline, until the give-up', () => {
    const c = unknownDial();
    c.settle('findDial', { type: 'CARRIER.UNREACHABLE', at: T0 + 3_000 });
    expect(c.value).toEqual({ 'dial-unknown': 'waiting' });
    expect(c.pending()).toEqual([]);
    expect(c.armed()).toEqual({ give_up: T0 + dialGiveUpMs, retry: T0 + 3_000 + retryMs });
    c.fire('retry');
    expect(c.value).toEqual({ 'dial-unknown': 'asking' });
    expect(c.pending().map((i) => i.effect)).toEqual(['findDial']);
    expect(c.armed()).toEqual({ give_up: T0 + dialGiveUpMs });
    c.settle('findDial', { type: 'CARRIER.UNREACHABLE', at: T0 + 20_000 });
    c.fire('give_up', T0 + dialGiveUpMs + 10);
    expectEnded(c, 'failed', 'failed');
    expect(c.ctx.carrierError).toMatchObject({ outcome: 'unknown' });
    expect(c.issued).toMatchObject({ dial: 1, findDial: 2 });
  });

  it('a hang-up asked for meanwhile waits for the carrier id, then hangs that call up', () => {
    const c = unknownDial();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 2_500, reason: 'canceled' });
    expect(c.value).toEqual({ 'dial-unknown': 'asking' });
    expect(c.issued.hangup).toBe(0);
    c.settle('findDial', { type: 'DIAL.FOUND', at: T0 + 3_000, carrierCallId: 'CA9', carrierStatus: 'active' });
    expect(c.value).toBe('hanging-up');
    expect(hangupReasonOf(c)).toEqual([['CA9', 'canceled']]);
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 3_400 });
    expectEnded(c, 'canceled', 'canceled');
  });

  it('a carrier webhook overtaking the reconciliation moves the call on; the late answer changes nothing', () => {
    const c = unknownDial();
    c.send({ type: 'CARRIER.RINGING', at: T0 + 2_500, carrierCallId: 'CA9' });
    expect([c.value, c.ctx.carrierCallId]).toEqual(['ringing', 'CA9']);
    expect(c.armed()).toEqual({ stale: T0 + 2_500 + ringMs });
    expect(c.settle('findDial', { type: 'DIAL.NOT_FOUND', at: T0 + 3_000 }).taken).toBe(false);
    expect(c.value).toBe('ringing');
  });

  it('the dial’s own answer arriving late is taken: initiated with its carrier id', () => {
    const c = start();
    c.fire('stale', T0 + dialMs);
    c.settle('dial', { type: 'DIAL.ACCEPTED', at: T0 + dialMs + 500, carrierCallId: 'CA4' });
    expect([c.value, c.ctx.carrierCallId]).toEqual(['initiated', 'CA4']);
    expect(c.issued.dial).toBe(1);
  });

  it('restored while unknown: the carrier is asked again, never dialed', () => {
    const c = unknownDial();
    c.settle('findDial', { type: 'CARRIER.UNREACHABLE', at: T0 + 3_000 });
    c.restart(T0 + 60_000);
    expect(c.value).toEqual({ 'dial-unknown': 'asking' });
    expect(c.pending().map((i) => i.effect)).toEqual(['findDial']);
    expect(c.armed()).toHaveProperty('give_up');
    expect(c.armed()).not.toHaveProperty('retry');
    expect(c.slot).toMatchObject({ held: true, queued: false });
    expect(c.issued.dial).toBe(1);
  });

  it('restored while dialing: no second dial; the surviving dial intent’s outcome moves the call on', () => {
    const c = start();
    expect(c.restart(T0 + 5_000).taken).toBe(false);
    expect(c.value).toBe('dialing');
    expect(c.slot).toMatchObject({ held: true });
    expect(c.pending().map((i) => i.effect)).toEqual(['dial']);
    // The dial may have left before the crash: resumed, its outcome is unknown.
    c.settle('dial', { type: 'DIAL.UNKNOWN', at: T0 + 5_100, carrierError: { outcome: 'unknown', message: 'the service stopped while this call was being dialed' } });
    expect(c.pending().map((i) => i.effect)).toEqual(['findDial']);
    expect(c.issued.dial).toBe(1);
  });

  // Found by this suite: a slow carrier refusal arriving after the dial's stale deadline
  // must still end the call with the carrier's error (and free its slot).
  it('a refusal arriving after the dial was given up as unknown ends the call with the carrier’s error', () => {
    const c = start();
    c.fire('stale', T0 + dialMs);
    c.settle('dial', { type: 'DIAL.REJECTED', at: T0 + dialMs + 2_000, carrierError: { status: 400, code: 21215 } });
    expectEnded(c, 'failed', 'failed');
    expect(c.ctx.carrierError).toEqual({ status: 400, code: 21215 });
  });
});

// ---- liveness ----

interface WaitingState {
  name: string;
  reach: () => CallDriver;
  armed: (c: CallDriver) => Record<string, number>;
  leave: (c: CallDriver) => void;
  cancels: string[];
}

const WAITING: WaitingState[] = [
  { name: 'queued', reach: () => start({ queued: true }), armed: () => ({ queue_check: T0 + queueCheckMs }), leave: (c) => c.grant(T0 + 50), cancels: ['queue_check'] },
  { name: 'dialing', reach: () => start(), armed: () => ({ stale: T0 + dialMs }), leave: (c) => c.settle('dial', { type: 'DIAL.REJECTED', at: T0 + 50, carrierError: {} }), cancels: ['stale'] },
  { name: 'dial-unknown (asking)', reach: () => unknownDial(), armed: () => ({ give_up: T0 + dialGiveUpMs }), leave: (c) => c.settle('findDial', { type: 'DIAL.NOT_FOUND', at: T0 + 2_500 }), cancels: ['give_up'] },
  {
    name: 'dial-unknown (waiting)',
    reach: () => {
      const c = unknownDial();
      c.settle('findDial', { type: 'CARRIER.UNREACHABLE', at: T0 + 3_000 });
      return c;
    },
    armed: () => ({ give_up: T0 + dialGiveUpMs, retry: T0 + 3_000 + retryMs }),
    leave: (c) => c.send({ type: 'CARRIER.ENDED', at: T0 + 4_000, status: 'no-answer' }),
    cancels: ['give_up', 'retry'],
  },
  { name: 'initiated', reach: () => accepted(), armed: () => ({ stale: T0 + 100 + ringMs }), leave: (c) => c.send({ type: 'CARRIER.ENDED', at: T0 + 900, status: 'busy' }), cancels: ['stale'] },
  { name: 'ringing', reach: () => ringingOutbound(), armed: () => ({ stale: T0 + 1_000 + ringMs }), leave: (c) => c.send({ type: 'CARRIER.ENDED', at: T0 + 9_000, status: 'no-answer' }), cancels: ['stale'] },
  {
    name: 'in-progress',
    reach: () => connectedOutbound(),
    armed: () => ({ [MAX_DURATION_DEADLINE]: T0 + 5_000 + MAX * 1000, stale: T0 + 5_000 + connectedCheckMs }),
    leave: (c) => c.send({ type: 'CARRIER.ENDED', at: T0 + 9_000, status: 'completed' }),
    cancels: [MAX_DURATION_DEADLINE, 'stale'],
  },
  {
    name: 'hanging-up',
    reach: () => {
      const c = connectedOutbound();
      c.send({ type: 'HANGUP.REQUESTED', at: T0 + 8_000, reason: 'agent_hangup' });
      return c;
    },
    armed: () => ({ stale: T0 + 8_000 + hangupMs }),
    leave: (c) => c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 8_500 }),
    cancels: ['stale'],
  },
];

describe('every waiting state has a deadline, cancelled when it is left', () => {
  it.each(WAITING)('$name', ({ reach, armed, leave, cancels }) => {
    const c = reach();
    expect(c.armed()).toEqual(armed(c));
    const before = c.cancelled().length;
    leave(c);
    expect(c.cancelled().slice(before).sort()).toEqual(expect.arrayContaining(cancels));
    // post-call arms its own finishing deadline (also named stale), due at once.
    for (const name of cancels) if (!(c.finished && name === 'stale')) expect(c.armed()).not.toHaveProperty(name);
  });

  it('a quiet initiated call is asked about at its deadline; still up, it waits again', () => {
    const c = accepted();
    c.fire('stale');
    expect(c.value).toBe('initiated');
    expect(c.pending().map((i) => i.effect)).toEqual(['checkCall']);
    expect(c.armed()).toEqual({ stale: T0 + 100 + 2 * ringMs });
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 100 + ringMs + 200, carrierStatus: 'active' });
    expect(c.value).toBe('initiated');
    expect(c.issued.hangup).toBe(0);
    // The carrier says the far end answered: the callback was lost.
    c.fire('stale');
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 100 + 2 * ringMs + 200, carrierStatus: 'active', answered: true });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx.startedAt).toBe(T0 + 100 + 2 * ringMs + 200);
  });

  it('a quiet ringing call whose end callback was lost ends with the carrier’s status', () => {
    const c = ringingOutbound();
    c.fire('stale');
    expect(c.pending().map((i) => i.effect)).toEqual(['checkCall']);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 1_000 + ringMs + 300, carrierStatus: 'no-answer', endedAt: T0 + 61_000 });
    expectEnded(c, 'no-answer', 'no-answer');
    expect(c.ctx.endedAt).toBe(T0 + 61_000);
  });

  it('a connected call is checked now and then; a carrier that cannot be asked changes nothing', () => {
    const c = connectedOutbound();
    c.fire('stale');
    expect(c.pending().map((i) => i.effect)).toEqual(['checkCall']);
    expect(c.armed()).toEqual({ [MAX_DURATION_DEADLINE]: T0 + 5_000 + MAX * 1000, stale: T0 + 5_000 + 2 * connectedCheckMs });
    // Unreachable: asked again after the retry deadline; nothing else changes.
    c.settle('checkCall', { type: 'CARRIER.UNREACHABLE', at: T0 + 5_000 + connectedCheckMs + 100 });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.armed()).toHaveProperty('retry', T0 + 5_000 + connectedCheckMs + 100 + retryMs);
    c.fire('retry');
    expect(c.pending().map((i) => i.effect)).toEqual(['checkCall']);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 5_000 + connectedCheckMs + retryMs + 200, carrierStatus: 'active' });
    // The hang-up callback was lost: the check finds the call over, billed to its end.
    c.fire('stale');
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 700_000, carrierStatus: 'completed', endedAt: T0 + 400_000, durationSec: 395 });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(callRecordOf(c.ctx)).toMatchObject({ ended_at: T0 + 400_000, duration_ms: 395_000 });
  });

  it('a hang-up the carrier does not confirm is asked again, and after a few the call ends on our word', () => {
    const c = connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 8_000, reason: 'agent_hangup' });
    expect(c.settle('hangup', { type: 'CARRIER.UNREACHABLE', at: T0 + 8_200 }).taken).toBe(false);
    expect(c.slot.held).toBe(true);
    for (let attempt = 2; attempt <= hangupAttempts; attempt++) {
      c.fire('stale');
      expect(c.value).toBe('hanging-up');
      expect(c.issued.hangup).toBe(attempt);
    }
    c.fire('stale');
    expectEnded(c, 'completed', 'agent_hangup');
    expect(c.issued.hangup).toBe(hangupAttempts);
    // Ended at the moment we asked, not when we gave up asking.
    expect(c.ctx.endedAt).toBe(T0 + 8_000);
  });
});

// ---- hanging up ----

describe('hanging up', () => {
  it('requested, then the carrier says ended: the call ends on the carrier event', () => {
    const c = connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' });
    expect(c.ctx.callStatus).toBe('in-progress');
    expect(c.cancelled()).toContain(MAX_DURATION_DEADLINE);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 20_700, status: 'completed' });
    expectEnded(c, 'completed', 'agent_hangup');
    expect(c.ctx.endedAt).toBe(T0 + 20_700);
    // The hang-up's own outcome coming afterwards changes nothing.
    expect(c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 99_000 }).taken).toBe(false);
    expect(c.ctx.endedAt).toBe(T0 + 20_700);
  });

  it('requested, then confirmed with no carrier event: billed to the request', () => {
    const c = connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'silence_timeout' });
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 20_250 });
    expectEnded(c, 'completed', 'silence_timeout');
    expect(c.ctx.endedAt).toBe(T0 + 20_000);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 21_000, status: 'completed' });
    expect(c.ctx.endedAt).toBe(T0 + 20_000);
  });

  it('the first requested reason wins and the hang-up is asked for once', () => {
    const c = connectedOutbound();
    c.sendAll({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' }, { type: 'HANGUP.REQUESTED', at: T0 + 20_001, reason: 'max_duration_reached' });
    expect(c.issued.hangup).toBe(1);
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 20_100 });
    expectEnded(c, 'completed', 'agent_hangup');
  });

  it('cancelled while ringing: the carrier says canceled, the call is canceled / canceled', () => {
    const c = ringingOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 2_000, reason: 'canceled' });
    c.send({ type: 'CARRIER.ENDED', at: T0 + 2_300, status: 'canceled' });
    expectEnded(c, 'canceled', 'canceled');
    expect(callRecordOf(c.ctx).charged_minutes).toBe(0);
  });

  it('answered while our hang-up is on its way: the connected time counts', () => {
    const c = ringingOutbound();
    c.sendAll({ type: 'HANGUP.REQUESTED', at: T0 + 2_000, reason: 'canceled' }, { type: 'CARRIER.ANSWERED', at: T0 + 2_100 });
    expect(c.value).toBe('hanging-up');
    // It never was in conversation: no max-duration deadline.
    expect(c.deadlineLog.map((e) => e.name)).not.toContain(MAX_DURATION_DEADLINE);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 3_500, status: 'completed' });
    expectEnded(c, 'completed', 'canceled');
    expect(callRecordOf(c.ctx)).toMatchObject({ duration_ms: 1_400, duration_seconds: 2, charged_minutes: 0.03 });
  });

  it('requested while dialing: waits for the carrier id, then hangs that call up', () => {
    const c = start();
    c.sendAll({ type: 'HANGUP.REQUESTED', at: T0 + 200, reason: 'canceled' }, { type: 'HANGUP.DONE', at: T0 + 250 });
    expect(c.value).toBe('dialing');
    expect(c.issued.hangup).toBe(0);
    c.settle('dial', { type: 'DIAL.ACCEPTED', at: T0 + 300, carrierCallId: 'CA3' });
    expect(c.value).toBe('hanging-up');
    expect(hangupReasonOf(c)).toEqual([['CA3', 'canceled']]);
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 900 });
    expectEnded(c, 'canceled', 'canceled');
    expect(c.ctx.carrierCallId).toBe('CA3');
  });

  it('HANGUP.DONE without a request is ignored', () => {
    const c = connectedOutbound();
    const before = c.ctx;
    expect(c.send({ type: 'HANGUP.DONE', at: T0 + 8_000 }).taken).toBe(false);
    expect(c.ctx).toBe(before);
  });
});

describe('answering-machine detection', () => {
  it('machine without amd_enabled: the call goes on (the agent handles voicemail later)', () => {
    const c = connectedOutbound({ amdEnabled: false });
    c.send({ type: 'CARRIER.AMD', at: T0 + 9_000, result: 'machine' });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.issued.hangup).toBe(0);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 30_000, status: 'completed' });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(c.ctx.voicemailDetected).toBe(false);
  });

  it.each(['human', 'fax', 'unknown'] as const)('%s with amd_enabled: the call goes on', (result) => {
    const c = connectedOutbound({ amdEnabled: true });
    c.send({ type: 'CARRIER.AMD', at: T0 + 9_000, result });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx.voicemailDetected).toBe(false);
  });

  it('an AMD result before the answer event means answered (callbacks race)', () => {
    const c = ringingOutbound({ amdEnabled: true });
    c.sendAll({ type: 'CARRIER.AMD', at: T0 + 6_000, result: 'machine' }, { type: 'CARRIER.ANSWERED', at: T0 + 6_100 });
    expect(c.value).toBe('hanging-up');
    expect(c.ctx.startedAt).toBe(T0 + 6_000);
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 7_000 });
    expectEnded(c, 'completed', 'voicemail_detected');
    // Billed to our request, made on the AMD result.
    expect(callRecordOf(c.ctx).duration_ms).toBe(0);
  });

  it('a human AMD result before the answer event starts the conversation', () => {
    const c = ringingOutbound({ amdEnabled: true });
    c.send({ type: 'CARRIER.AMD', at: T0 + 6_000, result: 'human' });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx.startedAt).toBe(T0 + 6_000);
  });

  it('a machine AMD result while the dial’s answer is still out hangs up once the call is known', () => {
    const c = start({ amdEnabled: true });
    c.send({ type: 'CARRIER.AMD', at: T0 + 6_000, result: 'machine' });
    expect(c.value).toBe('hanging-up');
    expect(c.ctx.voicemailDetected).toBe(true);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 6_500, status: 'completed' });
    expectEnded(c, 'completed', 'voicemail_detected');
  });
});

describe('duplicate, late and out-of-order events', () => {
  it('a late RINGING, a second ANSWERED or a stray grant after the answer is ignored', () => {
    const c = connectedOutbound();
    const before = c.ctx;
    for (const e of [{ type: 'CARRIER.RINGING', at: T0 + 9_000 }, { type: 'CARRIER.ANSWERED', at: T0 + 9_500 }, { type: 'SLOT.GRANTED', at: T0 + 9_600 }] as const) {
      expect(c.send(e).taken).toBe(false);
    }
    expect(c.ctx).toBe(before);
  });

  it('a second CARRIER.ENDED changes nothing; nothing after the end does', () => {
    const c = connectedOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 30_000, status: 'completed' });
    const ended = c.ctx;
    const late: CallEvent[] = [
      { type: 'CARRIER.ENDED', at: T0 + 31_000, status: 'failed' },
      { type: 'HANGUP.REQUESTED', at: T0 + 31_100, reason: 'agent_hangup' },
      { type: 'RECONCILED', at: T0 + 31_200, carrierStatus: 'active' },
      { type: 'CARRIER.ANSWERED', at: T0 + 31_300 },
      { type: 'DIAL.REJECTED', at: T0 + 31_400, carrierError: {} },
      { type: 'DIAL.FOUND', at: T0 + 31_500, carrierCallId: 'CA1', carrierStatus: 'active' },
    ];
    for (const e of late) expect(c.send(e).taken).toBe(false);
    expect(c.ctx).toBe(ended);
    expectEnded(c, 'completed', 'callee_hangup');
    expect(c.issued.hangup).toBe(0);
  });

  it('DIAL.ACCEPTED after a carrier event moved the call on only records the carrier id', () => {
    const c = start();
    c.send({ type: 'CARRIER.RINGING', at: T0 + 500 });
    expect(c.value).toBe('ringing');
    expect(c.ctx.carrierCallId).toBeNull();
    c.settle('dial', { type: 'DIAL.ACCEPTED', at: T0 + 600, carrierCallId: 'CA5' });
    expect([c.value, c.ctx.carrierCallId]).toEqual(['ringing', 'CA5']);
    // A contradicting rejection after the carrier showed the call exists is ignored.
    expect(c.send({ type: 'DIAL.REJECTED', at: T0 + 700, carrierError: { message: 'late' } }).taken).toBe(false);
  });

  it('the carrier id from a webhook is kept; a later different one does not replace it', () => {
    const c = start();
    c.send({ type: 'CARRIER.ANSWERED', at: T0 + 500, carrierCallId: 'CA8' });
    c.settle('dial', { type: 'DIAL.ACCEPTED', at: T0 + 600, carrierCallId: 'CA9' });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx.carrierCallId).toBe('CA8');
  });

  it('a late DIAL.ACCEPTED after the call ended still records an unknown carrier id', () => {
    const c = start();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 500, status: 'busy' });
    const ended = c.ctx;
    c.settle('dial', { type: 'DIAL.ACCEPTED', at: T0 + 600, carrierCallId: 'CA6' });
    expect(c.ctx).toEqual({ ...ended, carrierCallId: 'CA6' });
    expectEnded(c, 'busy', 'busy');
  });

  it('CARRIER.ENDED completed before the answer event: completed, connected time from the carrier duration', () => {
    const c = ringingOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 50_000, status: 'completed', durationSec: 42 });
    expect(c.send({ type: 'CARRIER.ANSWERED', at: T0 + 50_100 }).taken).toBe(false);
    expectEnded(c, 'completed', 'callee_hangup');
    expect(callRecordOf(c.ctx)).toMatchObject({ started_at: T0 + 8_000, duration_ms: 42_000, charged_minutes: 0.7 });
  });

  it('CARRIER.ENDED completed with no answer seen and no duration: completed, zero connected time', () => {
    const c = ringingOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 50_000, status: 'completed' });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(callRecordOf(c.ctx)).toMatchObject({ started_at: T0 + 50_000, duration_ms: 0, charged_minutes: 0 });
  });

  it('an end stamped before the answer never gives a negative duration', () => {
    const c = connectedOutbound({}, T0 + 5_000);
    c.send({ type: 'CARRIER.ENDED', at: T0 + 4_000, status: 'completed' });
    expect(c.ctx.endedAt).toBe(T0 + 5_000);
    expect(callRecordOf(c.ctx).duration_ms).toBe(0);
  });

  it('the dial’s outcome arriving after a carrier event moved the call on changes nothing', () => {
    const c = start();
    c.send({ type: 'CARRIER.RINGING', at: T0 + 500, carrierCallId: 'CA2' });
    expect(c.settle('dial', { type: 'DIAL.UNKNOWN', at: T0 + 30_000 }).taken).toBe(false);
    expect(c.value).toBe('ringing');
    expect(c.ctx.carrierError).toBeNull();
    expect(c.issued.findDial).toBe(0);
  });
});

describe('reconciliation after a restart', () => {
  it('RESTORED asks the carrier (checkCall), re-arms the state’s deadline and dials nothing; the slot is held again', () => {
    const c = ringingOutbound();
    const step = c.restart(T0 + 40_000);
    expect(step.actions.map((a) => a.type).filter((t) => t !== 'scheduleDeadline' && t !== 'cancelDeadline')).toEqual(['checkCall']);
    expect(c.armed()).toMatchObject({ stale: T0 + 40_000 + LIVENESS.ringMs });
    expect(c.slot).toMatchObject({ held: true, queued: false, releases: 0 });
    expect(c.issued.dial).toBe(1);
  });

  it.each(['active', 'unknown'] as const)('carrier says %s for a call that never connected: hang up, end as media_lost', (carrierStatus) => {
    const c = ringingOutbound();
    c.restart(T0 + 40_000);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 40_000, carrierStatus });
    expect(hangupReasonOf(c)).toEqual([['CA1', 'media_lost']]);
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 40_300 });
    expectEnded(c, 'canceled', 'media_lost');
  });

  it.each(['active', 'unknown'] as const)('carrier says %s for a connected inbound call: completed / media_lost', (carrierStatus) => {
    const c = CallDriver.start(inboundInput());
    c.restart(T0 + 40_000);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 40_000, carrierStatus });
    c.send({ type: 'CARRIER.ENDED', at: T0 + 40_500, status: 'completed' });
    expectEnded(c, 'completed', 'media_lost');
  });

  it('the carrier no longer knows the call but says when it ended: ends then, as media_lost', () => {
    const c = connectedOutbound();
    c.restart(T0 + 900_000);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 900_100, carrierStatus: 'unknown', endedAt: T0 + 30_000 });
    expectEnded(c, 'completed', 'media_lost');
    expect(c.issued.hangup).toBe(0);
    expect(callRecordOf(c.ctx)).toMatchObject({ ended_at: T0 + 30_000, duration_ms: 25_000, charged_minutes: 0.42 });
  });

  it('a call that ended while we were down is billed to the carrier’s end time, not the restart', () => {
    const c = connectedOutbound();
    c.restart(T0 + 900_000);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 900_100, carrierStatus: 'completed', endedAt: T0 + 65_000, durationSec: 60 });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(callRecordOf(c.ctx)).toMatchObject({ ended_at: T0 + 65_000, duration_ms: 60_000, charged_minutes: 1 });
  });

  it('without a restart, a call the carrier says is gone ends at its end time with the far end’s reason', () => {
    const c = connectedOutbound();
    c.fire('stale');
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 400_000, carrierStatus: 'unknown', endedAt: T0 + 30_000 });
    expectEnded(c, 'completed', 'callee_hangup');
    expect(c.ctx.endedAt).toBe(T0 + 30_000);
  });

  it('a carrier that cannot be asked after a restart is asked again after the retry deadline', () => {
    const c = ringingOutbound();
    c.restart(T0 + 40_000);
    c.settle('checkCall', { type: 'CARRIER.UNREACHABLE', at: T0 + 40_100 });
    expect(c.value).toBe('ringing');
    expect(c.armed()).toHaveProperty('retry', T0 + 40_100 + retryMs);
    c.fire('retry');
    expect(c.pending().map((i) => i.effect)).toEqual(['checkCall']);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 1_000 + ringMs + 100, carrierStatus: 'active' });
    // Still restored: its media died with the process, so it is hung up.
    expect(hangupReasonOf(c)).toEqual([['CA1', 'media_lost']]);
  });

  // Found by this suite: an answer after the restart ends the restore's doubt.
  it('a call answered after the restart is not hung up as media_lost by a later check', () => {
    const c = ringingOutbound();
    c.restart(T0 + 20_000);
    c.settle('checkCall', { type: 'CARRIER.UNREACHABLE', at: T0 + 20_100 });
    c.send({ type: 'CARRIER.ANSWERED', at: T0 + 25_000 });
    c.fire('stale');
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 25_000 + connectedCheckMs + 100, carrierStatus: 'active' });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.issued.hangup).toBe(0);
  });

  it('a hang-up already requested keeps its reason through the restart, and is asked again', () => {
    const c = connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' });
    c.restart(T0 + 40_000);
    expect(c.value).toBe('hanging-up');
    // The pending hang-up survived and a new one was asked for: both are harmless.
    expect(hangupReasonOf(c)).toEqual([['CA1', 'agent_hangup'], ['CA1', 'agent_hangup']]);
    expect(c.armed()).toEqual({ stale: T0 + 40_000 + hangupMs });
    c.sendAll({ type: 'RECONCILED', at: T0 + 40_100, carrierStatus: 'active' }, { type: 'RECONCILED', at: T0 + 40_200, carrierStatus: 'completed' });
    expectEnded(c, 'completed', 'agent_hangup');
  });

  it('a queued call goes back to the queue with its check re-armed, never dialed', () => {
    const c = start({ queued: true });
    c.restart(T0 + 40_000);
    expect(c.value).toBe('queued');
    expect(c.slot).toMatchObject({ queued: true, held: false });
    expect(c.armed()).toEqual({ queue_check: T0 + 40_000 + queueCheckMs });
    expect(c.issued.dial).toBe(0);
  });

  it('an ended call in post-call is restored as it was: nothing released again', () => {
    const c = ringingOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 9_000, status: 'busy' });
    c.restart(T0 + 40_000);
    expectEnded(c, 'busy', 'busy');
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
    const c = CallDriver.start(inboundInput({ maxDurationSec: 3_600 }));
    c.send({ type: 'CARRIER.ENDED', at: T0 + ms, status: 'completed' });
    expect(callRecordOf(c.ctx)).toMatchObject({ duration_ms: ms, duration_seconds: seconds, charged_minutes: minutes });
  });
});

// ---- persistence ----

/** A version-1 context: the fields added by version 2 are absent. */
function v1Context(ctx: CallContext): Record<string, unknown> {
  const { dialOutcome: _d, restored: _r, hangupAttempts: _h, ...old } = JSON.parse(JSON.stringify(ctx)) as CallContext;
  return old;
}

describe('purity and persistence', () => {
  it('transitions are pure: effects come back as named actions with their params, nothing runs', () => {
    const [dialing, initial] = initialTransition(callMachine, callInput());
    expect(dialing.value).toBe('dialing');
    const byType = (actions: Array<{ type: string; params?: unknown }>) => actions.map((a) => [a.type, a.params]).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    expect(byType(initial)).toEqual([
      ['dial', undefined],
      ['scheduleDeadline', { name: 'stale', dueAt: T0 + dialMs, event: { type: 'TIMER', at: T0 + dialMs, name: 'stale' } }],
    ]);
    const [initiated] = transition(callMachine, dialing, { type: 'DIAL.ACCEPTED', at: T0 + 100, carrierCallId: 'CA1' });
    const [live, actions] = transition(callMachine, initiated, { type: 'CARRIER.ANSWERED', at: T0 + 2_000 });
    expect(live.value).toEqual({ 'in-progress': 'listening' });
    expect(byType(actions)).toEqual([
      ['cancelDeadline', { name: 'retry' }],
      ['cancelDeadline', { name: 'stale' }],
      ['scheduleDeadline', { name: MAX_DURATION_DEADLINE, dueAt: T0 + 2_000 + MAX * 1000, event: { type: 'HANGUP.REQUESTED', at: T0 + 2_000 + MAX * 1000, reason: 'max_duration_reached' } }],
      ['scheduleDeadline', { name: 'stale', dueAt: T0 + 2_000 + connectedCheckMs, event: { type: 'TIMER', at: T0 + 2_000 + connectedCheckMs, name: 'stale' } }],
    ]);
    const [ended, endActions] = transition(callMachine, live, { type: 'CARRIER.ENDED', at: T0 + 9_000, status: 'completed' });
    expect(ended.value).toBe('post-call');
    expect(endActions.map((a) => a.type).sort()).toEqual(['cancelDeadline', 'cancelDeadline', 'cancelDeadline', 'releaseSlot', 'scheduleDeadline']);
    // The snapshots given were not touched.
    expect(live.context.endedAt).toBeNull();
    expect(dialing.context.carrierCallId).toBeNull();
  });

  it('every live state survives a JSON round trip of {version, value, context} and restores equal, running nothing', () => {
    const hanging = connectedOutbound();
    hanging.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' });
    const waiting = unknownDial();
    waiting.settle('findDial', { type: 'CARRIER.UNREACHABLE', at: T0 + 3_000 });
    const postCall = CallDriver.start(inboundInput());
    postCall.send({ type: 'CARRIER.ENDED', at: T0 + 20_000, status: 'completed' });
    const all = [start({ queued: true }), start(), unknownDial(), waiting, accepted(), ringingOutbound(), connectedOutbound(), CallDriver.start(inboundInput()), hanging, postCall];
    for (const c of all) {
      const json = JSON.stringify(c.persisted());
      const p = JSON.parse(json) as ReturnType<CallDriver['persisted']>;
      expect(p.version).toBe(CALL_MACHINE_VERSION);
      const back = CallDriver.fromPersisted(p);
      expect(back.value).toEqual(c.value);
      expect(back.ctx).toEqual(c.ctx);
      expect([back.tags(), back.snapshot.status]).toEqual([c.tags(), c.snapshot.status]);
      // Resolving runs no action: deadlines, intents and the slot are durable elsewhere.
      expect(back.steps).toEqual([]);
    }
  });

  it('a version-1 snapshot in dialing becomes an unknown dial: reconciled on restore, never dialed again', () => {
    const old = start();
    const c = CallDriver.fromPersisted({ version: 1, value: 'dialing', context: v1Context(old.ctx) });
    expect(c.value).toEqual({ 'dial-unknown': 'asking' });
    expect(c.ctx).toMatchObject({ dialOutcome: 'unknown', restored: false, hangupAttempts: 0 });
    expect(c.slot).toMatchObject({ held: true });
    const step = c.restored(T0 + 60_000);
    expect(step.actions.map((a) => a.type)).toContain('findDial');
    expect(c.issued).toMatchObject({ dial: 0, findDial: 1 });
    expect(c.armed()).toEqual({ give_up: T0 + dialGiveUpMs });
    c.settle('findDial', { type: 'DIAL.FOUND', at: T0 + 60_100, carrierCallId: 'CA1', carrierStatus: 'active' });
    expect(c.value).toBe('initiated');
  });

  it('a version-1 snapshot of a connected call keeps its state and gets the new fields', () => {
    const old = connectedOutbound();
    const c = CallDriver.fromPersisted({ version: 1, value: { 'in-progress': 'listening' }, context: v1Context(old.ctx) });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx).toMatchObject({ dialOutcome: 'accepted', restored: false, hangupAttempts: 0, carrierCallId: 'CA1' });
    c.restored(T0 + 60_000);
    expect(c.pending().map((i) => i.effect)).toEqual(['checkCall']);
  });

  it('a version-1 queued snapshot goes back to the queue with its check armed', () => {
    const c = CallDriver.fromPersisted({ version: 1, value: 'queued', context: v1Context(start({ queued: true }).ctx) });
    expect(c.slot).toMatchObject({ queued: true, held: false });
    c.restored(T0 + 60_000);
    expect([c.value, c.armed()]).toEqual(['queued', { queue_check: T0 + 60_000 + queueCheckMs }]);
  });

  it.each([
    ['a connected call', () => connectedOutbound().ctx, { 'in-progress': 'listening' }],
    ['a ringing call', () => ringingOutbound().ctx, 'ringing'],
    ['an accepted call', () => accepted().ctx, 'initiated'],
    ['an ended call', () => { const c = ringingOutbound(); c.send({ type: 'CARRIER.ENDED', at: T0 + 2_000, status: 'busy' }); return c.ctx; }, 'post-call'],
    ['a call being hung up', () => { const c = connectedOutbound(); c.send({ type: 'HANGUP.REQUESTED', at: T0 + 8_000, reason: 'agent_hangup' }); return c.ctx; }, 'hanging-up'],
    ['a dialed call with no carrier id', () => start().ctx, { 'dial-unknown': 'asking' }],
    ['a queued call never dialed', () => start({ queued: true }).ctx, 'queued'],
  ] as const)('a snapshot naming a state this machine lacks is placed from its context: %s', (_name, ctxOf, placed) => {
    const c = CallDriver.fromPersisted({ version: CALL_MACHINE_VERSION, value: 'connecting', context: JSON.parse(JSON.stringify(ctxOf())) });
    expect(c.value).toEqual(placed);
    // Restored, it is never dialed: a call that may exist at the carrier is asked about.
    c.restored(T0 + 1_000_000);
    expect(c.issued.dial).toBe(0);
  });

  // Found by this suite: RESTORED re-arms the deadlines of initiated, ringing and in-progress.
  it.each([
    ['a version-1 ringing call', (): CallDriver => CallDriver.fromPersisted({ version: 1, value: 'ringing', context: v1Context(ringingOutbound().ctx) })],
    ['a version-1 initiated call', (): CallDriver => CallDriver.fromPersisted({ version: 1, value: 'initiated', context: v1Context(accepted().ctx) })],
    [
      'a connected call placed from a state this machine lacks',
      (): CallDriver => CallDriver.fromPersisted({ version: CALL_MACHINE_VERSION, value: 'connecting', context: JSON.parse(JSON.stringify(connectedOutbound().ctx)) }),
    ],
  ] as const)('%s, restored while the carrier cannot be asked, still has a deadline', (_name, restore) => {
    const c = restore();
    c.restored(T0 + 60_000);
    c.settle('checkCall', { type: 'CARRIER.UNREACHABLE', at: T0 + 60_100 });
    expect(c.finished).toBe(false);
    expect(Object.keys(c.armed()).length).toBeGreaterThan(0);
  });

  it('callRecordOf of a live call has no durations yet', () => {
    expect(callRecordOf(start({ queued: true }).ctx)).toEqual({
      call_status: 'queued',
      ended_reason: null,
      carrier_call_id: null,
      started_at: null,
      ended_at: null,
      duration_ms: null,
      duration_seconds: null,
      charged_minutes: 0,
      voicemail_detected: false,
      transcript: null,
      avg_latency_ms: null,
      bookings: [],
    });
  });
});

describe('found by the crash test', () => {
  it('a hang-up that finds the call already over at the carrier records the carrier’s final status, not canceled', () => {
    const c = ringingOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 5_000, reason: 'agent_hangup' });
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 5_200, carrierStatus: 'no-answer', endedAt: T0 + 4_900 });
    expectEnded(c, 'no-answer', 'agent_hangup');
    expect(c.ctx.endedAt).toBe(T0 + 4_900);
  });

  it('a hang-up of a connected call keeps our own ending (the carrier adds nothing we lack)', () => {
    const c = connectedOutbound();
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 20_000, reason: 'agent_hangup' });
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 20_300, carrierStatus: 'completed', endedAt: T0 + 99_000 });
    expectEnded(c, 'completed', 'agent_hangup');
    expect(c.ctx.endedAt).toBe(T0 + 20_000);
  });

  it('post-call finishes through its own durable deadline, also after a restart', () => {
    const c = ringingOutbound();
    c.send({ type: 'CARRIER.ENDED', at: T0 + 9_000, status: 'busy' });
    c.restart(T0 + 40_000);
    expect(c.armed()).toHaveProperty('stale');
    c.fire('stale');
    expect([c.value, c.snapshot.status]).toEqual(['done', 'done']);
  });

  it('an ended carrier B call reconciled after a restart ends at the carrier’s end time', () => {
    const c = connectedOutbound();
    c.restart(T0 + 100_000);
    c.settle('checkCall', { type: 'RECONCILED', at: T0 + 100_100, carrierStatus: 'unknown', endedAt: T0 + 60_000 });
    expectEnded(c, 'completed', 'media_lost');
    expect(c.ctx.endedAt).toBe(T0 + 60_000);
  });
});
