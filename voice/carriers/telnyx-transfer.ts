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
// Where a transfer stands when its webhooks were lost (they went to a process that was
// down) is read from the carrier's own log of the legs (`GET /v2/call_events`), which
// keeps every webhook it sent, delivered or not: the caller's leg `call.bridged` is the
// handoff, at the time the carrier logged it; the target's `call.answered` says it
// answered. The call records say only alive or not.
import { TRANSFER_RING_SECONDS } from '../../machines/transfer-events.ts';
import { CarrierAuthError, CarrierRequestError } from './errors.ts';
import { createTelnyxRest } from './telnyx-rest.ts';
import { createTelnyxVoice, telnyxEventsUrl, TELNYX_CALL_ENDED_CODE, type TelnyxVoiceOptions } from './telnyx-voice.ts';
import type { CarrierTransfer, TransferLeg, TransferPlan } from './call-transfer.ts';
import { encodeTransferState } from './telnyx-transfer-state.ts';

export { decodeTransferState, encodeTransferState } from './telnyx-transfer-state.ts';

/** A target leg alive this long after the request has been answered: the carrier rings it TRANSFER_RING_SECONDS at most. */
const RING_WINDOW_MS = (TRANSFER_RING_SECONDS + 10) * 1000;

/** How far before the request a logged event may lie and still be this transfer's (the two clocks differ). */
const CLOCK_SLACK_MS = 5_000;

const commandId = (step: string, plan: TransferPlan) => `${step}-${plan.callId}-${plan.attempt}`;

export function createTelnyxTransfer(opts: TelnyxVoiceOptions): CarrierTransfer {
  const rest = createTelnyxRest({ baseUrl: opts.baseUrl, apiKey: opts.apiKey, ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }) });
  const voice = createTelnyxVoice(opts);

  function eventsUrl(plan: TransferPlan): string {
    if (plan.eventsToken === null) throw new Error('telnyx transfer needs the number events token');
    return telnyxEventsUrl(plan.publicBaseUrl, plan.eventsToken);
  }

  /** A leg's record, or null once the carrier no longer has it (its retention is over). */
  async function recordOf(callControlId: string) {
    try {
      return await rest.getCall(callControlId);
    } catch (err) {
      if (err instanceof CarrierRequestError && err.status === 404) return null;
      throw err;
    }
  }

  /**
   * When the carrier logged `name` on a leg for this transfer (the earliest, epoch ms), or
   * null: not logged, or the log cannot be read (refused: what the records say is used
   * then). An unreachable carrier throws: the check is asked again.
   */
  async function logged(callLegId: string, name: string, plan: TransferPlan): Promise<number | null> {
    let events;
    try {
      events = await rest.listCallEvents(callLegId, { name });
    } catch (err) {
      if (err instanceof CarrierRequestError || err instanceof CarrierAuthError) return null;
      throw err;
    }
    const times = events.map((e) => Date.parse(e.event_timestamp)).filter((t) => Number.isFinite(t) && t >= plan.requestedAt - CLOCK_SLACK_MS);
    return times.length === 0 ? null : Math.min(...times);
  }

  /** The caller's leg was bridged (the handoff: cold by the carrier, warm by our bridge), and when. */
  async function bridgedAt(plan: TransferPlan): Promise<number | null> {
    const caller = await recordOf(plan.carrierCallId);
    return caller === null ? null : logged(caller.call_leg_id, 'call.bridged', plan);
  }

  async function legOf(plan: TransferPlan, now: number): Promise<TransferLeg> {
    let legId = plan.legId;
    if (legId === null) {
      const state = encodeTransferState(plan.callId, plan.attempt);
      legId = (await rest.listActiveCalls(opts.connectionId)).find((c) => c.client_state === state)?.call_control_id ?? null;
      if (legId === null) return { state: 'none' };
    }
    const leg = await recordOf(legId);
    if (leg === null || !leg.is_alive) return { state: 'failed', reason: 'failed' };
    // Its answer, from the carrier's log: a cold transfer's carrier bridges on answer by itself.
    const answeredAt = await logged(leg.call_leg_id, 'call.answered', plan);
    if (answeredAt !== null) return plan.mode === 'warm' ? { state: 'answered', legId } : { state: 'connected', at: answeredAt };
    // Not in the log (yet): a leg alive past the ring time has answered, else it rings.
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
      const [call, bridged, leg] = await Promise.all([voice.fetchCall(plan.carrierCallId), bridgedAt(plan), legOf(plan, now)]);
      // Bridged is the handoff, whatever became of the legs since (they may both be over).
      return { call, leg: bridged === null ? leg : { state: 'connected', at: bridged } };
    },
    async hangupLeg(legId) {
      await voice.hangup(legId);
    },
  };
}
