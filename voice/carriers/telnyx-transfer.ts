// Carrier B (Telnyx) transfers, with Call Control commands (carriers.md §5):
// - cold: the `transfer` command on the caller's leg: the carrier dials the target and
//   bridges it on answer (call.bridged); a target that does not answer ends its leg
//   (call.hangup) and the caller's leg stays up for us;
// - warm: we dial the target as a new leg without a media stream, `speak` the whisper on
//   it once it answers (call.speak.ended), then `bridge` the caller's leg to it. The
//   caller stays on our media stream meanwhile, hearing our hold audio.
// At the handoff the caller's stream is stopped (`streaming_stop`): the caller and the
// target talk without us. The target's leg carries its own client_state, base64 of
// `call_…#t<attempt>`, so its events name our call and the attempt without being taken
// for the caller's own (a leg's hang-up is a failed transfer, not the end of the call).
// Every command carries a command_id of the call and attempt: the carrier drops a repeat
// within about 60 s, so a restart may resend inside that window (actors/calls/transfer-effects.ts).
import { TRANSFER_RING_SECONDS } from '../../machines/transfer-events.ts';
import { CarrierRequestError } from './errors.ts';
import { createTelnyxRest } from './telnyx-rest.ts';
import { createTelnyxVoice, telnyxEventsUrl, TELNYX_CALL_ENDED_CODE, type TelnyxVoiceOptions } from './telnyx-voice.ts';
import type { CarrierTransfer, TransferLeg, TransferPlan } from './call-transfer.ts';
import { encodeTransferState } from './telnyx-transfer-state.ts';

export { decodeTransferState, encodeTransferState } from './telnyx-transfer-state.ts';

/** A target leg alive this long after the request has been answered: the carrier rings it TRANSFER_RING_SECONDS at most. */
const RING_WINDOW_MS = (TRANSFER_RING_SECONDS + 10) * 1000;

const commandId = (step: string, plan: TransferPlan) => `${step}-${plan.callId}-${plan.attempt}`;

export function createTelnyxTransfer(opts: TelnyxVoiceOptions): CarrierTransfer {
  const rest = createTelnyxRest({ baseUrl: opts.baseUrl, apiKey: opts.apiKey, ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }) });
  const voice = createTelnyxVoice(opts);

  function eventsUrl(plan: TransferPlan): string {
    if (plan.eventsToken === null) throw new Error('telnyx transfer needs the number events token');
    return telnyxEventsUrl(plan.publicBaseUrl, plan.eventsToken);
  }

  async function legOf(plan: TransferPlan, now: number): Promise<TransferLeg> {
    let legId = plan.legId;
    if (legId === null) {
      const state = encodeTransferState(plan.callId, plan.attempt);
      legId = (await rest.listActiveCalls(opts.connectionId)).find((c) => c.client_state === state)?.call_control_id ?? null;
      if (legId === null) return { state: 'none' };
    }
    const info = await voice.fetchCall(legId);
    if (info.status !== 'active') return { state: 'failed', reason: 'failed' };
    // The carrier's record says alive or not, never answered or bridged: a leg alive past
    // the ring time has answered; a cold transfer's carrier bridges on answer by itself.
    if (now - plan.requestedAt < RING_WINDOW_MS) return { state: 'ringing', legId };
    return plan.mode === 'warm' ? { state: 'answered', legId } : { state: 'connected' };
  }

  return {
    async place(plan) {
      const common = {
        to: plan.to,
        from: plan.from,
        webhook_url: eventsUrl(plan),
        client_state: encodeTransferState(plan.callId, plan.attempt),
        command_id: commandId('transfer', plan),
        timeout_secs: TRANSFER_RING_SECONDS,
      };
      if (plan.mode === 'cold') {
        await rest.transfer(plan.carrierCallId, common);
        return { legId: null };
      }
      const leg = await rest.dialLeg({ ...common, connection_id: opts.connectionId });
      return { legId: leg.call_control_id };
    },
    async whisper(plan) {
      if (plan.legId === null || !plan.whisper) throw new Error('no target leg to whisper to');
      await rest.speak(plan.legId, { payload: plan.whisper, voice: 'female', language: 'en-US', command_id: commandId('whisper', plan) });
    },
    async bridge(plan) {
      if (plan.legId === null) throw new Error('no target leg to bridge');
      await rest.bridge(plan.carrierCallId, { call_control_id: plan.legId, command_id: commandId('bridge', plan) });
    },
    async releaseMedia(plan) {
      try {
        await rest.streamingStop(plan.carrierCallId, { command_id: commandId('release', plan) });
      } catch (err) {
        // A call already over has no stream to stop.
        if (err instanceof CarrierRequestError && err.status === 422 && String(err.code) === TELNYX_CALL_ENDED_CODE) return;
        throw err;
      }
    },
    async check(plan) {
      const now = Date.now();
      const [call, leg] = await Promise.all([voice.fetchCall(plan.carrierCallId), legOf(plan, now)]);
      return { call, leg };
    },
    async hangupLeg(legId) {
      await voice.hangup(legId);
    },
  };
}
