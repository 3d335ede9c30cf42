// What the call actors need from a carrier, whichever it is: place a call, hang it up,
// ask how it is, and understand the carrier's webhooks. One implementation per
// carrier (`twilio-voice.ts`, `telnyx-voice.ts`); both run through one contract suite.
import type { CallEvent } from '../../machines/call-events.ts';

export interface DialRequest {
  /** Our internal id `call_…`: put in every webhook URL / client_state, and used to de-duplicate. */
  callId: string;
  from: string;
  to: string;
  amdEnabled: boolean;
  /** Hard cap the carrier enforces too (carrier A TimeLimit, carrier B time_limit_secs). */
  timeLimitSec: number;
  /** `PUBLIC_BASE_URL` of this service. */
  publicBaseUrl: string;
  /** Carrier B: the number's events token (the URL path of its webhooks). */
  eventsToken: string | null;
  /** One-time token the media websocket must present for this call. */
  mediaToken: string;
}

/** What the carrier says of a call when asked (after a restart). */
export type CarrierCallStatus = 'active' | 'completed' | 'busy' | 'no-answer' | 'failed' | 'canceled' | 'unknown';

export interface CarrierVoice {
  /** Places the call; resolves with the carrier's call id. Rejects with a CarrierError. */
  dial(req: DialRequest): Promise<{ carrierCallId: string }>;
  /** Ends the call; a call that is already over counts as success. */
  hangup(carrierCallId: string): Promise<void>;
  fetchStatus(carrierCallId: string): Promise<CarrierCallStatus>;
}

/** A carrier webhook turned into what the service acts on. */
export type CarrierWebhook =
  /** A call to one of our numbers that we must answer or refuse. */
  | { kind: 'incoming'; carrierCallId: string; from: string; to: string }
  /** An event of a call we know by internal id (from the URL or client_state). */
  | { kind: 'event'; callId: string | null; carrierCallId: string; event: CallEvent }
  /** Something the service does not act on (acknowledged with 200). */
  | { kind: 'ignored'; reason: string };
