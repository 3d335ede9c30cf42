// What the SMS sender needs from a carrier, whichever it is: send one message, and find a
// message sent before whose answer was lost. One implementation per carrier
// (twilio-sms.ts, telnyx-sms.ts). A send ends one of three ways, as a dial does
// (errors.ts): accepted (the carrier's message id), refused for certain (SmsRefused: the
// carrier answered 4xx, or the request never left this host), or unknown (SmsOutcomeUnknown:
// a timeout, a lost connection, a 5xx): such a message is never sent again blindly but
// looked for with `findSent`.
import { CarrierAuthError, CarrierRequestError, CarrierUnreachableError, type CarrierName } from './errors.ts';

export interface SmsSend {
  from: string;
  to: string;
  body: string;
  /** Where the carrier posts the message's delivery status. */
  statusCallbackUrl: string;
}

export interface SmsLookup {
  from: string;
  to: string;
  /** Epoch ms at or just before the send request left (its `sending` commit). */
  since: number;
  /** Carrier ids already known to belong to other messages: never returned. */
  exclude: readonly string[];
}

export interface CarrierSms {
  readonly carrier: CarrierName;
  /** Resolves with the carrier's message id; rejects with SmsRefused or SmsOutcomeUnknown. */
  send(m: SmsSend): Promise<{ carrierMessageId: string }>;
  /**
   * The carrier's message for a send whose outcome is unknown, or null when it has none
   * (it was never sent). Throws when the carrier cannot be asked (ask again later).
   */
  findSent(lookup: SmsLookup): Promise<SentMessage | null>;
  /** How the carrier says a message it took went (its delivery report, asked for). Throws when it cannot be asked. */
  fetchStatus(carrierMessageId: string): Promise<SentMessage>;
}

/** A message the carrier has, with its delivery status now (its callbacks may have gone unheard). */
export interface SentMessage {
  carrierMessageId: string;
  status: 'sent' | 'delivered' | 'undelivered' | 'failed';
  /** `carrier:<code>` when it failed. */
  errorCode: string | null;
}

/**
 * Why a send was refused, as the API names it: an unregistered US sender
 * (`sms_not_supported_in_region`), a recipient who opted out at the carrier
 * (`recipient_unsubscribed`), credentials the carrier refused (`carrier_auth_failed`), a
 * request that never left (`carrier_unreachable`), anything else (`carrier_refused`).
 */
export type SmsRefusalCode = 'sms_not_supported_in_region' | 'recipient_unsubscribed' | 'carrier_auth_failed' | 'carrier_unreachable' | 'carrier_refused';

/** The carrier certainly did not send the message. */
export class SmsRefused extends Error {
  constructor(
    readonly code: SmsRefusalCode,
    message: string,
    /** The carrier's own error code, when it answered. */
    readonly carrierCode: string | null,
  ) {
    super(message);
    this.name = 'SmsRefused';
  }
}

/** The carrier may or may not have taken the message. */
export class SmsOutcomeUnknown extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SmsOutcomeUnknown';
  }
}

/** Carrier error codes with a meaning of their own (carriers.md; the rest are `carrier_refused`). */
const REFUSALS: Record<string, SmsRefusalCode> = {
  // Carrier A: 30034 "Message from an Unregistered Number" (US A2P 10DLC); 21610 the recipient replied STOP.
  'twilio:30034': 'sms_not_supported_in_region',
  'twilio:21610': 'recipient_unsubscribed',
  // Carrier B: 40010 "Not 10DLC registered"; 40300 "Blocked due to STOP message".
  'telnyx:40010': 'sms_not_supported_in_region',
  'telnyx:40300': 'recipient_unsubscribed',
};

/** Turns a carrier client's failure into a refusal or an unknown outcome. */
export function classifySendError(carrier: CarrierName, err: unknown): SmsRefused | SmsOutcomeUnknown {
  if (err instanceof CarrierAuthError) return new SmsRefused('carrier_auth_failed', `${carrier} refused the number's credentials (HTTP ${err.status})`, err.code === null ? null : String(err.code));
  if (err instanceof CarrierRequestError) {
    const code = err.code === null ? null : String(err.code);
    return new SmsRefused(REFUSALS[`${carrier}:${code}`] ?? 'carrier_refused', err.message, code);
  }
  if (err instanceof CarrierUnreachableError && err.notSent) return new SmsRefused('carrier_unreachable', err.message, null);
  return new SmsOutcomeUnknown(err instanceof Error ? err.message : String(err), { cause: err });
}

/** How far the carrier's clock may run behind ours when matching a message to its send. */
export const CLOCK_SLACK_MS = 10_000;

/**
 * The carrier message a send whose answer was lost became: of the carrier's messages from
 * the sender to the recipient (`at`: when the carrier created it, NaN when it does not
 * say), those not known to be another message's and created no earlier than the send
 * (less the clock slack), the earliest. The sender sends one message at a time per
 * number, so that one is this send's.
 */
export function earliestUnknown(
  candidates: readonly { id: string; at: number; status: SentMessage['status']; errorCode: string | null }[],
  lookup: SmsLookup,
): SentMessage | null {
  const from = lookup.since - CLOCK_SLACK_MS;
  const found = candidates.filter((c) => !lookup.exclude.includes(c.id) && (Number.isNaN(c.at) || c.at >= from)).sort((a, b) => a.at - b.at)[0];
  return found ? { carrierMessageId: found.id, status: found.status, errorCode: found.errorCode } : null;
}
