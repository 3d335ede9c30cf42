// How carrier B's webhooks about a transfer are told apart and turned into call events.
// The target's leg carries its own client_state, base64 of `call_…#t<attempt>`, so its
// events name our call and the attempt without being taken for the caller's own (that
// leg hanging up is a failed transfer, not the end of the call); the caller's own leg
// reports the bridge (call.bridged) with the call's usual client_state. Should the carrier
// instead copy the caller leg's client_state onto the new leg (its docs leave this
// open), that leg's events still differ from the call's by their call_control_id, and
// are read the same way (`transferEventOf`).
import type { CallEvent } from '../../machines/call-events.ts';
import type { TransferFailure } from '../../machines/transfer-events.ts';
import type { CarrierWebhook } from './voice.ts';

/** A step of a transfer's target leg, or (`bridged`) of the caller's leg joined to it. */
export type TelnyxLegStep = 'initiated' | 'answered' | 'bridged' | 'speak-ended' | 'hangup';

/** A carrier B webhook about a transfer. `attempt` null: the caller's own leg (the running attempt is meant). */
export interface TelnyxTransferWebhook {
  kind: 'transfer';
  callId: string | null;
  carrierCallId: string;
  attempt: number | null;
  step: TelnyxLegStep;
  /** call.hangup's hangup_cause. */
  cause: string | null;
}

/** What parseTelnyxWebhook returns: the carrier-neutral kinds, or a transfer step. */
export type TelnyxWebhook = CarrierWebhook | TelnyxTransferWebhook | TelnyxRecordingWebhook;

/** `call.recording.saved`: the carrier's recording of a call (record_start) is ready at `url` (MP3, pre-signed). */
export interface TelnyxRecordingWebhook {
  kind: 'recording';
  callId: string | null;
  carrierCallId: string;
  url: string;
  /** From recording_started_at to recording_ended_at; null when the carrier did not say. */
  seconds: number | null;
}

const MARKER = /^(call_[0-9A-Za-z]{1,64})#t([1-9][0-9]{0,5})$/;

/** The client_state of a transfer's target leg. */
export function encodeTransferState(callId: string, attempt: number): string {
  return Buffer.from(`${callId}#t${attempt}`, 'utf8').toString('base64');
}

/** The call and attempt a target leg's client_state names, or null for any other client_state. */
export function decodeTransferState(clientState: string | null | undefined): { callId: string; attempt: number } | null {
  if (typeof clientState !== 'string' || clientState === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(clientState)) return null;
  const m = MARKER.exec(Buffer.from(clientState, 'base64').toString('utf8'));
  return m ? { callId: m[1]!, attempt: Number(m[2]) } : null;
}

/** A target leg's hang-up cause, before it was connected, as the transfer's failure. */
export function failureOfCause(cause: string): TransferFailure {
  switch (cause) {
    case 'user_busy':
      return 'busy';
    case 'timeout':
    case 'no_answer':
      return 'no-answer';
    case 'call_rejected':
    // Answered, then hung up before the bridge (during the whisper): the person declined.
    case 'normal_clearing':
      return 'rejected';
    default:
      return 'failed';
  }
}

function legEvent(step: TelnyxLegStep, attempt: number, at: number, legId: string, cause: string | null): CallEvent {
  switch (step) {
    case 'initiated':
      return { type: 'TRANSFER.PLACED', at, attempt, legId };
    case 'answered':
      return { type: 'TRANSFER.ANSWERED', at, attempt, legId };
    case 'bridged':
      return { type: 'TRANSFER.CONNECTED', at, attempt };
    case 'speak-ended':
      return { type: 'TRANSFER.WHISPERED', at, attempt };
    case 'hangup':
      return { type: 'TRANSFER.FAILED', at, attempt, reason: failureOfCause(cause ?? '') };
  }
}

/** The call as far as reading its transfer webhooks goes. */
export interface TransferCallView {
  carrierCallId: string | null;
  transfer: { attempt: number; outcome: string } | null;
}

/**
 * The call event a carrier B webhook means for a call's transfer, or null when it is not
 * about one: a transfer step (from the target leg's client_state, or the caller's
 * call.bridged), or an event of another leg than the call's own while a transfer runs.
 */
export function transferEventOf(hook: TelnyxWebhook, call: TransferCallView, at: number): CallEvent | null {
  const t = call.transfer;
  if (hook.kind === 'transfer') {
    const attempt = hook.attempt ?? t?.attempt ?? null;
    return attempt === null ? null : legEvent(hook.step, attempt, at, hook.carrierCallId, hook.cause);
  }
  if (hook.kind !== 'event' || t === null || t.outcome !== 'pending' || call.carrierCallId === null || hook.carrierCallId === call.carrierCallId) return null;
  // The target's leg, carrying the caller leg's client_state.
  const e = hook.event;
  if (e.type === 'CARRIER.RINGING') return legEvent('initiated', t.attempt, at, hook.carrierCallId, null);
  if (e.type === 'CARRIER.ANSWERED') return legEvent('answered', t.attempt, at, hook.carrierCallId, null);
  if (e.type === 'CARRIER.ENDED') {
    const reason: TransferFailure = e.status === 'busy' ? 'busy' : e.status === 'no-answer' ? 'no-answer' : e.status === 'completed' ? 'rejected' : 'failed';
    return { type: 'TRANSFER.FAILED', at, attempt: t.attempt, reason };
  }
  return null;
}
