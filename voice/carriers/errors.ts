// Typed failures of the carrier REST clients. The API layer maps them to its own
// codes (carrier_auth_failed, a 502-style "carrier unavailable", or the carrier's
// own complaint), so each class says which carrier answered and whether a retry
// can help.

export type CarrierName = 'twilio' | 'telnyx';

/** Carrier error code as sent: carrier A uses numbers (20003), carrier B strings ("10009"). */
export type CarrierErrorCode = number | string | null;

export abstract class CarrierError extends Error {
  abstract readonly retryable: boolean;
  readonly carrier: CarrierName;

  constructor(carrier: CarrierName, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.carrier = carrier;
    this.name = new.target.name;
  }
}

/** The carrier answered 401 or 403: the credentials are wrong, revoked or lack rights. */
export class CarrierAuthError extends CarrierError {
  readonly retryable = false;
  readonly status: number;
  readonly code: CarrierErrorCode;
  /** The carrier's parsed error body, or the raw text when it was not JSON. */
  readonly carrierError: unknown;

  constructor(carrier: CarrierName, status: number, code: CarrierErrorCode, message: string, carrierError: unknown) {
    super(carrier, message);
    this.status = status;
    this.code = code;
    this.carrierError = carrierError;
  }
}

/**
 * No usable answer: connection refused or reset, DNS failure, timeout, a 5xx, or a
 * success response that could not be parsed. `status` is set only for HTTP answers.
 */
export class CarrierUnreachableError extends CarrierError {
  readonly retryable = true;
  readonly status: number | null;
  /**
   * What went wrong, for a caller that must know whether the request may have been
   * acted on (a dial): `not-sent` means it provably never left this host; every other
   * kind leaves that open. Defaults from `status`: none → connection-lost, 2xx →
   * bad-answer, other → carrier-error.
   */
  readonly kind: UnreachableKind;

  constructor(carrier: CarrierName, message: string, status: number | null = null, cause?: unknown, kind?: UnreachableKind) {
    super(carrier, message, cause === undefined ? undefined : { cause });
    this.status = status;
    this.kind = kind ?? (status === null ? 'connection-lost' : status >= 200 && status < 300 ? 'bad-answer' : 'carrier-error');
  }

  /** True when the request never left this host: no carrier can have acted on it. */
  get notSent(): boolean {
    return this.kind === 'not-sent';
  }
}

export type UnreachableKind = 'not-sent' | DialUnknownReason;

/** Any other 4xx: the carrier understood the request and refused it. `message` is the carrier's. */
export class CarrierRequestError extends CarrierError {
  readonly retryable = false;
  readonly status: number;
  readonly code: CarrierErrorCode;
  readonly carrierError: unknown;

  constructor(carrier: CarrierName, status: number, code: CarrierErrorCode, message: string, carrierError: unknown) {
    super(carrier, message);
    this.status = status;
    this.code = code;
    this.carrierError = carrierError;
  }
}

// --- Dial outcomes ------------------------------------------------------------------
//
// A dial ends one of three ways, and only two of them are errors:
//   accepted  dial() resolves with the carrier's call id;
//   rejected  DialRejected: the carrier did not place the call, for certain;
//   unknown   DialOutcomeUnknown: it may or may not have. Such a dial must never be
//             sent again blindly: reconcile it with CarrierVoice.findDialedCall().
// Both classes keep the fields the API layer shows as `details.carrier_error`
// (carrier, status, code, message, carrierError); the CarrierError they were made from
// is their `cause` (not enumerable, so it stays out of snapshots).

export type DialOutcome = 'accepted' | 'rejected' | 'unknown';

/**
 * Why a dial was rejected:
 * - `refused`: the carrier answered 4xx: it understood the request and refused it
 *   (invalid number, unowned From, rate limit, bad credentials: 401/403 are refusals
 *   too, the carrier does nothing for a request it could not authenticate);
 * - `not-sent`: the request never left this host (connection refused, the host name
 *   did not resolve), so no carrier can have acted on it.
 */
export type DialRejectedReason = 'refused' | 'not-sent';

/** The carrier did not place the call, for certain. Safe to report as failed (and to dial anew). */
export class DialRejected extends CarrierError {
  readonly outcome = 'rejected' as const;
  readonly retryable = false;
  readonly reason: DialRejectedReason;
  /** The carrier's HTTP status; null when nothing was sent. */
  readonly status: number | null;
  readonly code: CarrierErrorCode;
  /** The carrier's parsed error body (raw text when not JSON); null when nothing was sent. */
  readonly carrierError: unknown;

  constructor(
    carrier: CarrierName,
    reason: DialRejectedReason,
    message: string,
    fields: { status: number | null; code: CarrierErrorCode; carrierError: unknown },
    cause?: unknown,
  ) {
    super(carrier, message, cause === undefined ? undefined : { cause });
    this.reason = reason;
    this.status = fields.status;
    this.code = fields.code;
    this.carrierError = fields.carrierError;
  }
}

/**
 * Why a dial's outcome is unknown:
 * - `timeout`: no complete answer within the dial timeout;
 * - `connection-lost`: the connection broke after the request may have left (reset,
 *   closed without an answer);
 * - `carrier-error`: the carrier answered 5xx (or an HTTP status no API answers with): it
 *   may have created the call before failing;
 * - `bad-answer`: a 2xx that could not be read as the call it should describe.
 */
export type DialUnknownReason = 'timeout' | 'connection-lost' | 'carrier-error' | 'bad-answer';

/**
 * The carrier may or may not have placed the call. Never dial it again automatically:
 * ask the carrier (CarrierVoice.findDialedCall) what it did. `retryable` is false on
 * purpose: a blind retry is exactly how a second call gets placed.
 */
export class DialOutcomeUnknown extends CarrierError {
  readonly outcome = 'unknown' as const;
  readonly retryable = false;
  readonly reason: DialUnknownReason;
  /** The HTTP status when an answer came (5xx, or 2xx for `bad-answer`); null otherwise. */
  readonly status: number | null;
  readonly code: CarrierErrorCode = null;
  readonly carrierError: unknown = null;

  constructor(carrier: CarrierName, reason: DialUnknownReason, message: string, status: number | null, cause?: unknown) {
    super(carrier, message, cause === undefined ? undefined : { cause });
    this.reason = reason;
    this.status = status;
  }
}

/**
 * Sorts what a dial request threw into rejected or unknown. A CarrierAuthError or
 * CarrierRequestError (4xx) is a refusal; a CarrierUnreachableError is unknown unless
 * its request provably never left (`notSent`); anything else (a bug, an unexpected
 * throw mid-request) is unknown, because nothing proves the carrier did not act.
 */
export function classifyDialError(carrier: CarrierName, err: unknown): DialRejected | DialOutcomeUnknown {
  if (err instanceof DialRejected || err instanceof DialOutcomeUnknown) return err;
  if (err instanceof CarrierAuthError || err instanceof CarrierRequestError) {
    return new DialRejected(carrier, 'refused', err.message, { status: err.status, code: err.code, carrierError: err.carrierError }, err);
  }
  if (err instanceof CarrierUnreachableError) {
    if (err.notSent) return new DialRejected(carrier, 'not-sent', err.message, { status: null, code: null, carrierError: null }, err);
    return new DialOutcomeUnknown(carrier, err.kind === 'not-sent' ? 'connection-lost' : err.kind, err.message, err.status, err);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new DialOutcomeUnknown(carrier, 'connection-lost', `${carrier} dial failed mid-request: ${message}`, null, err);
}
