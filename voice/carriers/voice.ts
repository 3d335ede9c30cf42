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

/** A call as the carrier describes it when asked. */
export interface CarrierCallInfo {
  status: CarrierCallStatus;
  /** When the carrier says the call ended (epoch ms); absent while it lasts or when the carrier does not say. */
  endedAt?: number;
  /**
   * Connected seconds as the carrier counts them, once the call is over. Carrier A only
   * (the Call resource's `duration`); carrier B's `call_duration` runs from the call's
   * start, ringing included, so it is not passed on as connected time.
   */
  durationSec?: number;
}

/** Which dial `findDialedCall` looks for: the values the dial was sent with. */
export interface DialLookup {
  /** Our internal id `call_…` (carrier B: matched through client_state). */
  callId: string;
  to: string;
  from: string;
  /** Epoch ms at or just before the dial request left (the intent's time). */
  since: number;
  /** The dial's command_id, when one was sent (carrier B); informational, see the implementations. */
  commandId?: string;
  /** Carrier call ids already known to belong to other calls: never returned (carrier A). */
  exclude?: readonly string[];
}

export type DialedCall =
  | ({ found: true; carrierCallId: string } & CarrierCallInfo)
  | {
      found: false;
      /**
       * What the answer covers: `all-calls` (carrier A: the carrier keeps every call, so
       * the dial was not placed), `live-calls` (carrier B: no *live* call has our
       * client_state; a call that was placed and has already ended is not listed and is
       * only known from its call.hangup webhook).
       */
      searched: 'all-calls' | 'live-calls';
    };

export interface CarrierVoice {
  /**
   * Places the call; resolves with the carrier's call id (accepted). Rejects with
   * DialRejected (errors.ts) when the carrier certainly did not place it, and with
   * DialOutcomeUnknown when it may have (timeout, connection lost after sending, 5xx,
   * unreadable answer): such a dial must not be sent again, but reconciled with
   * findDialedCall. The request is bounded by the voice's dial timeout (default 10 s).
   * A plain Error (no events token, carrier B) means nothing was sent.
   */
  dial(req: DialRequest): Promise<{ carrierCallId: string }>;
  /** Ends the call; a call that is already over counts as success. */
  hangup(carrierCallId: string): Promise<void>;
  /** The call's status: `(await fetchCall(id)).status`. */
  fetchStatus(carrierCallId: string): Promise<CarrierCallStatus>;
  /** The call's status with the carrier's end time and duration once it is over. Throws a CarrierError when the carrier cannot be asked. */
  fetchCall(carrierCallId: string): Promise<CarrierCallInfo>;
  /**
   * Reconciles a dial whose outcome is unknown: the call the carrier placed for it, if
   * any. Read-only, safe to repeat. Throws a CarrierError when the carrier cannot be asked
   * (then nothing is known yet: ask again later, never dial again).
   */
  findDialedCall(lookup: DialLookup): Promise<DialedCall>;
}

/** A carrier webhook turned into what the service acts on. */
export type CarrierWebhook =
  /** A call to one of our numbers that we must answer or refuse. */
  | { kind: 'incoming'; carrierCallId: string; from: string; to: string }
  /** An event of a call we know by internal id (from the URL or client_state). */
  | { kind: 'event'; callId: string | null; carrierCallId: string; event: CallEvent }
  /** Something the service does not act on (acknowledged with 200). */
  | { kind: 'ignored'; reason: string };
