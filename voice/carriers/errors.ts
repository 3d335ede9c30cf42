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

  constructor(carrier: CarrierName, message: string, status: number | null = null, cause?: unknown) {
    super(carrier, message, cause === undefined ? undefined : { cause });
    this.status = status;
  }
}

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
