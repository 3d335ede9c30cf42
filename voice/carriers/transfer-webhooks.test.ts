// How transfers look on the wire: carrier A's `<Dial>` of a transfer (read back with the
// simulator's TwiML reader), and carrier B's webhooks about a transfer's target leg read
// as call events (their own client_state; the caller leg's call.bridged; and, should the
// carrier copy the caller leg's client_state onto the new leg, its other call_control_id).
import { describe, expect, it } from 'vitest';
import { readTwiml } from '../../test/sim/twiml-reader.ts';
import { dialNumber, say } from './twiml.ts';
import { transferTwiml, twilioTransferUrl } from './twilio-transfer.ts';
import { decodeTransferState, encodeTransferState, failureOfCause, transferEventOf } from './telnyx-transfer-state.ts';
import { decodeClientState, encodeClientState, parseTelnyxWebhook } from './telnyx-voice.ts';
import type { TransferPlan } from './call-transfer.ts';

const plan: TransferPlan = {
  callId: 'call_abc123',
  attempt: 2,
  carrierCallId: 'CA0123',
  from: '+14155550100',
  to: '+12125550188',
  mode: 'warm',
  whisper: 'Maria & her order <1042>.',
  legId: null,
  requestedAt: 0,
  publicBaseUrl: 'https://switchboard.test/',
  eventsToken: 'tok',
};

describe('carrier A', () => {
  it('a warm transfer is a <Dial> with an action, a ring timeout and the whisper URL', () => {
    const [dial] = readTwiml(transferTwiml(plan))!;
    expect(dial!.name).toBe('Dial');
    expect(dial!.attrs).toEqual({ action: 'https://switchboard.test/carrier/twilio/transfer-done?cid=call_abc123&attempt=2', method: 'POST', timeout: '30' });
    const number = dial!.children[0]!;
    expect(number.text).toBe('+12125550188');
    expect(number.attrs).toEqual({ url: twilioTransferUrl(plan.publicBaseUrl, 'whisper', 'call_abc123', 2), method: 'POST' });
  });

  it('a cold one reports the answer to the status URL instead', () => {
    const [dial] = readTwiml(transferTwiml({ ...plan, mode: 'cold', whisper: null }))!;
    expect(dial!.children[0]!.attrs).toEqual({
      statusCallback: 'https://switchboard.test/carrier/twilio/transfer-status?cid=call_abc123&attempt=2',
      statusCallbackEvent: 'answered',
      statusCallbackMethod: 'POST',
    });
  });

  it('the plain dial (pre-call gate) is unchanged; the whisper is escaped', () => {
    expect(readTwiml(dialNumber('+12125550188'))).toEqual([{ name: 'Dial', attrs: {}, text: '', children: [{ name: 'Number', attrs: {}, children: [], text: '+12125550188' }] }]);
    expect(readTwiml(say(plan.whisper!))![0]!.text).toBe('Maria & her order <1042>.');
  });
});

const envelope = (eventType: string, payload: Record<string, unknown>) =>
  JSON.stringify({ data: { record_type: 'event', event_type: eventType, id: 'e1', occurred_at: '2026-01-01T00:00:00Z', payload: { call_leg_id: 'l', call_session_id: 's', ...payload } } });

describe('carrier B', () => {
  const leg = encodeTransferState('call_abc123', 2);

  it('a target leg’s client_state names the call and the attempt, and is never taken for the call’s own', () => {
    expect(decodeTransferState(leg)).toEqual({ callId: 'call_abc123', attempt: 2 });
    expect(decodeClientState(leg)).toBeNull();
    expect(decodeTransferState(encodeClientState('call_abc123'))).toBeNull();
    expect(decodeTransferState('bm9wZQ==')).toBeNull();
  });

  it('the target leg’s events are transfer steps; the caller leg’s bridge is the handoff', () => {
    const at = 1000;
    const ofLeg = (type: string, extra: Record<string, unknown> = {}) => parseTelnyxWebhook(envelope(type, { call_control_id: 'v3:leg', client_state: leg, ...extra }), at);
    expect(ofLeg('call.answered')).toEqual({ kind: 'transfer', callId: 'call_abc123', attempt: 2, carrierCallId: 'v3:leg', step: 'answered', cause: null });
    expect(ofLeg('call.hangup', { hangup_cause: 'user_busy' })).toMatchObject({ step: 'hangup', cause: 'user_busy' });
    expect(ofLeg('call.speak.ended')).toMatchObject({ step: 'speak-ended' });
    expect(ofLeg('call.machine.detection.ended').kind).toBe('ignored');
    const bridged = parseTelnyxWebhook(envelope('call.bridged', { call_control_id: 'v3:caller', client_state: encodeClientState('call_abc123') }), at);
    expect(bridged).toEqual({ kind: 'transfer', callId: 'call_abc123', attempt: null, carrierCallId: 'v3:caller', step: 'bridged', cause: null });

    const call = { carrierCallId: 'v3:caller', transfer: { attempt: 2, outcome: 'pending' } };
    expect(transferEventOf(ofLeg('call.answered'), call, at)).toEqual({ type: 'TRANSFER.ANSWERED', at, attempt: 2, legId: 'v3:leg' });
    expect(transferEventOf(ofLeg('call.hangup', { hangup_cause: 'timeout' }), call, at)).toEqual({ type: 'TRANSFER.FAILED', at, attempt: 2, reason: 'no-answer' });
    expect(transferEventOf(bridged, call, at)).toEqual({ type: 'TRANSFER.CONNECTED', at, attempt: 2 });
  });

  it('a new leg carrying the caller leg’s client_state is read by its call_control_id', () => {
    const at = 5;
    const call = { carrierCallId: 'v3:caller', transfer: { attempt: 1, outcome: 'pending' } };
    const state = encodeClientState('call_abc123');
    const hangup = parseTelnyxWebhook(envelope('call.hangup', { call_control_id: 'v3:other', client_state: state, hangup_cause: 'user_busy' }), at);
    expect(transferEventOf(hangup, call, at)).toEqual({ type: 'TRANSFER.FAILED', at, attempt: 1, reason: 'busy' });
    // The caller's own hang-up is the call's, not the transfer's.
    const own = parseTelnyxWebhook(envelope('call.hangup', { call_control_id: 'v3:caller', client_state: state, hangup_cause: 'normal_clearing' }), at);
    expect(transferEventOf(own, call, at)).toBeNull();
    // Without a running transfer nothing is a transfer step.
    expect(transferEventOf(hangup, { ...call, transfer: null }, at)).toBeNull();
  });

  it('hang-up causes before the bridge, as failures', () => {
    expect(['user_busy', 'timeout', 'no_answer', 'call_rejected', 'normal_clearing', 'unspecified'].map(failureOfCause)).toEqual(['busy', 'no-answer', 'no-answer', 'rejected', 'rejected', 'failed']);
  });
});
