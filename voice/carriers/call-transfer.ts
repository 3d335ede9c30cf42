// What a call's transfer needs from a carrier (the effects in actors/calls/transfer-effects.ts
// drive it), whichever carrier it is: place the transfer, whisper to and bridge the
// target's leg where the carrier leaves that to us, let the caller's media stream go at
// the handoff, and say where a transfer stands when its own events were lost (a restart,
// a lost answer). One implementation per carrier: twilio-transfer.ts, telnyx-transfer.ts.
import type { TransferFailure, TransferMode } from '../../machines/transfer-events.ts';
import type { CarrierCallInfo } from './voice.ts';

/** One transfer of one call, as the carrier adapters need it. */
export interface TransferPlan {
  /** Internal id `call_…`: in the transfer's webhook URLs (carrier A) or client_state (carrier B). */
  callId: string;
  attempt: number;
  /** The caller's leg. */
  carrierCallId: string;
  /** Our number on the call: the caller id the target sees. */
  from: string;
  to: string;
  mode: TransferMode;
  whisper: string | null;
  /** The target's leg, once known. */
  legId: string | null;
  /** When the conversation asked for it (epoch ms). */
  requestedAt: number;
  publicBaseUrl: string;
  /** Carrier B: the number's events token (the URL path of its webhooks). */
  eventsToken: string | null;
}

/** Where a transfer stands, as far as the carrier can tell. */
export type TransferLeg =
  /** No leg of this transfer is known to the carrier. */
  | { state: 'none' }
  | { state: 'ringing'; legId?: string }
  /** Answered, not yet connected to the caller (carrier B warm: whisper and bridge are ours to do). */
  | { state: 'answered'; legId?: string }
  /** The caller is connected to the target; `at` when the carrier says (else unknown). */
  | { state: 'connected'; at?: number }
  | { state: 'failed'; reason: TransferFailure };

export interface TransferCheck {
  leg: TransferLeg;
  /** The caller's own leg. */
  call: CarrierCallInfo;
}

export interface CarrierTransfer {
  /**
   * Sends the transfer. Resolves with the target's leg id when the carrier names it.
   * Rejects like a dial (errors.ts classifyDialError): a refusal is certain, anything
   * else leaves open whether the carrier acted, and must be checked, never resent blindly.
   */
  place(plan: TransferPlan): Promise<{ legId: string | null }>;
  /** Carrier B warm: speaks the whisper on the target's leg. */
  whisper(plan: TransferPlan): Promise<void>;
  /** Carrier B warm: joins the caller's leg and the target's. */
  bridge(plan: TransferPlan): Promise<void>;
  /** At the handoff: stops the caller's media stream to us where the carrier keeps it running. */
  releaseMedia(plan: TransferPlan): Promise<void>;
  /** Read-only, safe to repeat. Throws a CarrierError when the carrier cannot be asked. */
  check(plan: TransferPlan): Promise<TransferCheck>;
  /** Ends the target's leg (the call was hung up before the handoff); an ended leg counts as done. */
  hangupLeg(legId: string): Promise<void>;
}

/** A leg's final call status as a transfer failure. */
export function failureOf(status: string): TransferFailure {
  if (status === 'busy') return 'busy';
  if (status === 'no-answer') return 'no-answer';
  return 'failed';
}
