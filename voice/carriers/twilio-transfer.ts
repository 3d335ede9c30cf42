// Carrier A (Twilio) transfers: the live call's TwiML is replaced with a `<Dial>` of the
// target (carriers.md §1 "Update … transfer", §3). That ends our media stream; the carrier
// rings the number (the caller hears its ringback), and then:
// - cold: `<Number statusCallback>` reports the target's answer to
//   /carrier/twilio/transfer-status: the handoff (carrier A has no bridge event);
// - warm: `<Number url>` is fetched from /carrier/twilio/whisper when the target answers
//   (the handoff: the whisper, a few seconds of the target's time, follows), and its
//   `<Say>` plays to the target only, before the two are connected;
// - `<Dial action>` posts the dial's outcome to /carrier/twilio/transfer-done: busy,
//   no-answer or failed brings the caller back to the agent with a new media stream.
// Every URL carries `cid` (the call) and `attempt` (which transfer of it). Carrier A has no
// idempotency key for a call update, so a request whose answer was lost is checked: the
// call's child legs (`ParentCallSid`) say whether the `<Dial>` ran and how it went.
import { createTwilioRest, type TwilioCall, type TwilioRestOptions } from './twilio-rest.ts';
import { createTwilioVoice } from './twilio-voice.ts';
import { dialNumber } from './twiml.ts';
import { failureOf, type CarrierTransfer, type TransferLeg, type TransferPlan } from './call-transfer.ts';
import { TRANSFER_RING_SECONDS } from '../../machines/transfer-events.ts';

/** How far before the request a child leg's creation may lie and still be this transfer's (the carrier's clock, whole seconds). */
const CHILD_SLACK_MS = 5_000;

export type TwilioTransferHook = 'transfer-status' | 'transfer-done' | 'whisper';

/** `${PUBLIC_BASE_URL}/carrier/twilio/<hook>?cid=…&attempt=…`. */
export function twilioTransferUrl(publicBaseUrl: string, hook: TwilioTransferHook, callId: string, attempt: number): string {
  const q = new URLSearchParams({ cid: callId, attempt: String(attempt) });
  return `${publicBaseUrl.replace(/\/+$/, '')}/carrier/twilio/${hook}?${q.toString()}`;
}

/** The `<Dial>` that carries out a transfer. */
export function transferTwiml(plan: TransferPlan): string {
  const url = (hook: TwilioTransferHook) => twilioTransferUrl(plan.publicBaseUrl, hook, plan.callId, plan.attempt);
  // The target's answer is reported once: by the whisper's fetch when there is one (the
  // whisper must be read while the call is still ours), else by the answered callback.
  const whisper = plan.mode === 'warm' && plan.whisper;
  return dialNumber(plan.to, {
    action: url('transfer-done'),
    timeout: TRANSFER_RING_SECONDS,
    ...(whisper ? { whisperUrl: url('whisper') } : { statusCallback: url('transfer-status') }),
  });
}

export function createTwilioTransfer(opts: TwilioRestOptions): CarrierTransfer {
  const rest = createTwilioRest(opts);
  const voice = createTwilioVoice(opts);
  return {
    async place(plan) {
      await rest.updateCall(plan.carrierCallId, { Twiml: transferTwiml(plan) });
      // The child leg's sid is learnt from its status callback, if at all.
      return { legId: null };
    },
    // The carrier whispers (<Number url>) and bridges by itself, and our stream already ended with the old TwiML.
    async whisper() {},
    async bridge() {},
    async releaseMedia() {},
    async check(plan) {
      const [call, children] = await Promise.all([voice.fetchCall(plan.carrierCallId), rest.listCalls({ ParentCallSid: plan.carrierCallId })]);
      const mine = children
        .filter((c) => c.to === plan.to && Date.parse(c.date_created ?? '') >= plan.requestedAt - CHILD_SLACK_MS)
        .sort((a, b) => Date.parse(b.date_created ?? '') - Date.parse(a.date_created ?? ''));
      const child = mine[0];
      return { call, leg: child ? legOf(child) : { state: 'none' } };
    },
    async hangupLeg(legId) {
      await voice.hangup(legId);
    },
  };
}

function legOf(child: TwilioCall): TransferLeg {
  switch (child.status) {
    case 'queued':
    case 'ringing':
      return { state: 'ringing', legId: child.sid };
    case 'in-progress':
      return { state: 'connected' };
    case 'completed': {
      // Answered, talked, over: it was answered `duration` seconds before it ended.
      const end = Date.parse(child.end_time ?? '');
      const sec = Number(child.duration);
      return Number.isFinite(end) && Number.isFinite(sec) ? { state: 'connected', at: end - sec * 1000 } : { state: 'connected' };
    }
    default:
      return { state: 'failed', reason: failureOf(child.status) };
  }
}
