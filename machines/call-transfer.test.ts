// The transfer part of the call machine, driven the way the supervisor drives it (pure
// transitions; test/model/call-driver.ts keeps intents, deadlines and the slot): each
// carrier's steps to the handoff, the meter stopping there, failures bringing the call
// back to the agent, late webhooks of an earlier attempt, lost answers checked instead of
// resent, restarts at every step, and older snapshots.
import { describe, expect, it } from 'vitest';
import type { CallInput } from './call-events.ts';
import { CALL_TAGS, callRecordOf } from './call.ts';
import { TRANSFER_LIVENESS } from './call-transfer.ts';
import { migrateCallSnapshot } from './call-migrate.ts';
import { CallDriver, T0, inboundInput } from '../test/model/call-driver.ts';

const TO = '+14155550999';
const ANSWERED_AT = T0; // inbound calls are connected from their creation

/** An inbound call on `provider`, connected since T0, asked to transfer at T0+20 s. */
function transferring(provider: CallInput['provider'], mode: 'cold' | 'warm', whisper: string | null = mode === 'warm' ? 'Dana wants a refund.' : null): CallDriver {
  const c = CallDriver.start(inboundInput({ provider }));
  c.send({ type: 'CONVERSATION.LINE', at: T0 + 5_000, speaker: 'caller', text: 'Can I talk to a person?' });
  c.send({ type: 'TRANSFER.REQUESTED', at: T0 + 20_000, to: TO, mode, whisper });
  expect(c.value).toEqual({ 'in-progress': { transferring: 'placing' } });
  expect(c.pending('placeTransfer')).toHaveLength(1);
  return c;
}

function expectTransferred(c: CallDriver, handoffAt: number): void {
  expect(c.finished).toBe(true);
  expect([c.ctx.callStatus, c.ctx.endedReason]).toEqual(['completed', 'transferred']);
  expect(c.ctx.endedAt).toBe(handoffAt);
  expect(c.ctx.transfer?.outcome).toBe('connected');
  expect(c.slot).toMatchObject({ held: false, queued: false, releases: 1, strayReleases: 0 });
  // The meter stops at the handoff.
  const r = callRecordOf(c.ctx);
  expect(r.duration_ms).toBe(handoffAt - ANSWERED_AT);
  expect(r.charged_minutes).toBe(Math.round((Math.ceil((handoffAt - ANSWERED_AT) / 1000) * 100) / 60) / 100);
  // The caller's stream is let go (carrier B), and nothing of the transfer waits any more.
  expect(c.pending('releaseMedia')).toHaveLength(1);
  expect(Object.keys(c.armed())).toEqual(['stale']);
}

describe('the handoff', () => {
  it('carrier A, cold: <Dial> placed, the target answers, the call ends transferred there', () => {
    const c = transferring('twilio', 'cold');
    expect(c.ctx.transfer).toMatchObject({ attempt: 1, to: TO, mode: 'cold', whisper: null, outcome: 'pending' });
    c.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 20_300, attempt: 1 });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'waiting' } });
    expect(c.armed()['transfer']).toBe(T0 + 20_300 + TRANSFER_LIVENESS.waitMs);
    c.send({ type: 'TRANSFER.CONNECTED', at: T0 + 31_000, attempt: 1 });
    expectTransferred(c, T0 + 31_000);
    expect(callRecordOf(c.ctx).charged_minutes).toBe(0.52);
    // The caller and the target talk on; the carrier's end of the call changes nothing.
    c.send({ type: 'CARRIER.ENDED', at: T0 + 600_000, status: 'completed' });
    expect(c.ctx.endedAt).toBe(T0 + 31_000);
  });

  it('carrier B, warm: the new leg answers, hears the whisper, is bridged', () => {
    const c = transferring('telnyx', 'warm');
    c.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 20_200, attempt: 1, legId: 'v3:leg' });
    expect(c.ctx.transfer?.legId).toBe('v3:leg');
    c.send({ type: 'TRANSFER.ANSWERED', at: T0 + 25_000, attempt: 1, legId: 'v3:leg' });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'whispering' } });
    expect(c.pending('whisperTransfer')).toHaveLength(1);
    // A repeated answer does not whisper twice.
    c.send({ type: 'TRANSFER.ANSWERED', at: T0 + 25_100, attempt: 1 });
    expect(c.issued.whisperTransfer).toBe(1);
    c.settle('whisperTransfer', { type: 'TRANSFER.SENT', at: T0 + 25_200, attempt: 1 });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'whispering' } });
    c.send({ type: 'TRANSFER.WHISPERED', at: T0 + 29_000, attempt: 1 });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'bridging' } });
    c.settle('bridgeTransfer', { type: 'TRANSFER.SENT', at: T0 + 29_100, attempt: 1 });
    c.send({ type: 'TRANSFER.CONNECTED', at: T0 + 29_300, attempt: 1 });
    expectTransferred(c, T0 + 29_300);
  });

  it('carrier B, cold: the target answering is noted; the bridge is the handoff', () => {
    const c = transferring('telnyx', 'cold');
    c.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 20_100, attempt: 1 });
    c.send({ type: 'TRANSFER.ANSWERED', at: T0 + 24_000, attempt: 1, legId: 'v3:b' });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'waiting' } });
    expect(c.issued.whisperTransfer).toBe(0);
    c.send({ type: 'TRANSFER.CONNECTED', at: T0 + 24_100, attempt: 1 });
    expectTransferred(c, T0 + 24_100);
  });

  it('a webhook overtaking the request’s own answer moves the transfer on', () => {
    const c = transferring('twilio', 'warm');
    c.send({ type: 'TRANSFER.CONNECTED', at: T0 + 26_000, attempt: 1 });
    expectTransferred(c, T0 + 26_000);
    // The request's answer, late: recorded, nothing moves.
    c.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 26_100, attempt: 1 });
    expect(c.ctx.endedReason).toBe('transferred');
  });

  it('transcript lines said before the handoff stay; the conversation asks for one transfer at a time', () => {
    const c = transferring('twilio', 'cold');
    c.send({ type: 'TRANSFER.REQUESTED', at: T0 + 21_000, to: '+14155550111', mode: 'cold', whisper: null });
    expect(c.ctx.transfer?.to).toBe(TO);
    expect(c.issued.placeTransfer).toBe(1);
    c.send({ type: 'CONVERSATION.LINE', at: T0 + 21_500, speaker: 'agent', text: 'One moment please.' });
    c.send({ type: 'TRANSFER.CONNECTED', at: T0 + 30_000, attempt: 1 });
    expect(c.ctx.transcript).toBe('Caller: Can I talk to a person?\nAgent: One moment please.');
  });
});

describe('a transfer that fails', () => {
  it.each(['busy', 'no-answer', 'rejected', 'failed'] as const)('%s: the call goes back to the agent, and can try again', (reason) => {
    const c = transferring('twilio', 'cold');
    c.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 20_300, attempt: 1 });
    c.send({ type: 'TRANSFER.FAILED', at: T0 + 50_000, attempt: 1, reason, mediaBack: true });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
    expect(c.ctx.transfer).toMatchObject({ outcome: 'failed', failure: reason });
    expect(c.finished).toBe(false);
    expect(c.hasTag(CALL_TAGS.holdsSlot)).toBe(true);
    expect(c.armed()['transfer']).toBeUndefined();
    // A second try is attempt 2; the first attempt's late webhooks move nothing.
    c.send({ type: 'TRANSFER.REQUESTED', at: T0 + 60_000, to: TO, mode: 'cold', whisper: null });
    expect(c.ctx.transfer).toMatchObject({ attempt: 2, outcome: 'pending' });
    c.send({ type: 'TRANSFER.CONNECTED', at: T0 + 60_500, attempt: 1 });
    c.send({ type: 'TRANSFER.FAILED', at: T0 + 60_600, attempt: 1, reason: 'busy' });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'placing' } });
    c.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 61_000, attempt: 2 });
    c.send({ type: 'TRANSFER.CONNECTED', at: T0 + 70_000, attempt: 2 });
    expectTransferred(c, T0 + 70_000);
  });

  it('the carrier refuses the request itself', () => {
    const c = transferring('telnyx', 'cold');
    c.settle('placeTransfer', { type: 'TRANSFER.FAILED', at: T0 + 20_100, attempt: 1, reason: 'failed' });
    expect(c.value).toEqual({ 'in-progress': 'listening' });
  });

  it('the caller hangs up while the target rings: the call ends as the caller’s, and the target’s leg is ended', () => {
    const c = transferring('telnyx', 'warm');
    c.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 20_300, attempt: 1, legId: 'v3:leg' });
    c.send({ type: 'CARRIER.ENDED', at: T0 + 28_000, status: 'completed' });
    expect([c.ctx.callStatus, c.ctx.endedReason, c.ctx.endedAt]).toEqual(['completed', 'caller_hangup', T0 + 28_000]);
    expect(c.pending('dropTransferLeg')).toHaveLength(1);
    expect(c.slot).toMatchObject({ held: false, releases: 1 });
  });

  it('max duration (or an API cancel) during a transfer hangs up', () => {
    const c = transferring('telnyx', 'warm');
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 21_000, reason: 'max_duration_reached' });
    expect(c.value).toBe('hanging-up');
    expect(c.pending('hangup')).toHaveLength(1);
  });
});

describe('lost answers and restarts: checked, never sent twice', () => {
  it('an unknown request is checked; an unreachable carrier is asked again', () => {
    const c = transferring('twilio', 'cold');
    c.settle('placeTransfer', { type: 'TRANSFER.UNKNOWN', at: T0 + 30_000, attempt: 1 });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'checking' } });
    c.settle('checkTransfer', { type: 'CARRIER.UNREACHABLE', at: T0 + 30_500 });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'rechecking' } });
    c.fire('retry');
    expect(c.value).toEqual({ 'in-progress': { transferring: 'checking' } });
    c.settle('checkTransfer', { type: 'TRANSFER.PLACED', at: T0 + 46_000, attempt: 1, legId: 'CAchild' });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'waiting' } });
    expect(c.issued.placeTransfer).toBe(1);
  });

  it('every step that waits has a deadline that asks the carrier', () => {
    const c = transferring('telnyx', 'warm');
    c.fire('transfer');
    expect(c.value).toEqual({ 'in-progress': { transferring: 'checking' } });
    c.settle('checkTransfer', { type: 'TRANSFER.ANSWERED', at: T0 + 51_000, attempt: 1, legId: 'v3:leg' });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'whispering' } });
    c.fire('transfer');
    expect(c.value).toEqual({ 'in-progress': { transferring: 'checking' } });
    c.fire('transfer');
    expect(c.value).toEqual({ 'in-progress': { transferring: 'checking' } });
    expect(c.issued.checkTransfer).toBe(3);
    expect(c.issued.placeTransfer).toBe(1);
  });

  it('restored while placing: the supervisor resumes the request; no second one', () => {
    const c = transferring('twilio', 'cold');
    c.restart(T0 + 21_000);
    expect(c.value).toEqual({ 'in-progress': { transferring: 'placing' } });
    expect(c.issued.placeTransfer).toBe(1);
    expect(c.ctx.transfer?.mediaLost).toBe(true);
    expect(c.ctx.restored).toBe(false);
  });

  it('restored while placing, the request then answered (carrier B resends inside its window): the carrier is asked, not waited on', () => {
    // The target may have answered while the process was down: its webhooks went nowhere.
    const c = transferring('telnyx', 'cold');
    c.restart(T0 + 24_000);
    c.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 24_100, attempt: 1 });
    expect(c.value).toEqual({ 'in-progress': { transferring: 'checking' } });
    expect(c.pending('checkTransfer')).toHaveLength(1);
    // The carrier's log has the bridge, at T0+21 s while we were down: the handoff is then.
    c.settle('checkTransfer', { type: 'TRANSFER.CONNECTED', at: T0 + 21_000, attempt: 1 });
    expectTransferred(c, T0 + 21_000);
    expect(c.issued.placeTransfer).toBe(1);

    // Still ringing: waited on as usual, the answer's webhook reaching the live process.
    const ringing = transferring('telnyx', 'cold');
    ringing.restart(T0 + 24_000);
    ringing.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 24_100, attempt: 1 });
    ringing.settle('checkTransfer', { type: 'TRANSFER.PLACED', at: T0 + 24_300, attempt: 1, legId: 'v3:leg' });
    expect(ringing.value).toEqual({ 'in-progress': { transferring: 'waiting' } });
    ringing.send({ type: 'TRANSFER.CONNECTED', at: T0 + 27_000, attempt: 1 });
    expectTransferred(ringing, T0 + 27_000);
  });

  it('restored while waiting: the carrier is asked; the target answering then is still the handoff', () => {
    const c = transferring('twilio', 'warm');
    c.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 20_300, attempt: 1 });
    c.restart(T0 + 40_000);
    expect(c.value).toEqual({ 'in-progress': { transferring: 'checking' } });
    c.settle('checkTransfer', { type: 'TRANSFER.CONNECTED', at: T0 + 40_500, attempt: 1 });
    expect(c.ctx.endedReason).toBe('transferred');
  });

  it('a failure after a restart hangs up (media_lost), unless the webhook opens the media again', () => {
    const lost = transferring('telnyx', 'cold');
    lost.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 20_300, attempt: 1 });
    lost.restart(T0 + 30_000);
    lost.settle('checkTransfer', { type: 'TRANSFER.FAILED', at: T0 + 30_500, attempt: 1, reason: 'no-answer' });
    expect(lost.value).toBe('hanging-up');
    expect(lost.ctx.hangupReason).toBe('media_lost');

    const back = transferring('twilio', 'cold');
    back.settle('placeTransfer', { type: 'TRANSFER.PLACED', at: T0 + 20_300, attempt: 1 });
    back.restart(T0 + 30_000);
    back.send({ type: 'TRANSFER.FAILED', at: T0 + 45_000, attempt: 1, reason: 'busy', mediaBack: true });
    expect(back.value).toEqual({ 'in-progress': 'listening' });
  });

  it('the parent call over while the transfer was checked: ended by the carrier', () => {
    const c = transferring('telnyx', 'warm');
    c.settle('placeTransfer', { type: 'TRANSFER.UNKNOWN', at: T0 + 30_000, attempt: 1 });
    c.settle('checkTransfer', { type: 'RECONCILED', at: T0 + 31_000, carrierStatus: 'completed', endedAt: T0 + 29_000 });
    expect([c.ctx.callStatus, c.ctx.endedReason, c.ctx.endedAt]).toEqual(['completed', 'caller_hangup', T0 + 29_000]);
  });

  it('a stored transfer of this version comes back where it was; a version-3 snapshot gains the field', () => {
    const c = transferring('telnyx', 'warm');
    const stored = JSON.parse(JSON.stringify(c.persisted()));
    const back = CallDriver.fromPersisted(stored);
    expect(back.value).toEqual(c.value);
    expect(back.ctx).toEqual(c.ctx);

    const { transfer: _, ...v3context } = c.ctx;
    const migrated = migrateCallSnapshot({ version: 3, value: { 'in-progress': 'listening' }, context: v3context });
    expect(migrated?.version).toBe(4);
    expect((migrated?.context as { transfer: unknown }).transfer).toBeNull();
    // A state this machine lacks, with a transfer running: asked about.
    const placed = migrateCallSnapshot({ version: -1, value: { 'in-progress': 'nowhere' }, context: c.ctx });
    expect(placed?.value).toEqual({ 'in-progress': { transferring: 'checking' } });
  });
});
