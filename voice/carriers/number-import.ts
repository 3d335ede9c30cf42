// Importing a number: checks the shape of the credentials, asks the carrier whether
// they work and whether its account owns the number, points the number's voice and SMS
// webhooks at this service, and stores it (importNumber, the one path of the API's
// import and the operator's `add-number`). Every carrier failure is a NumberImportError
// saying what went wrong in carrier terms; the API layer maps it to its codes and
// messages (http/routes/number-import-errors.ts), the admin command prints it.
import type { CarrierCredentials, ImportResult, NumberSource, PhoneNumbersRepo, Provider } from '../../storage/phone-numbers.ts';
import { CarrierAuthError, CarrierRequestError, CarrierUnreachableError, type CarrierName } from './errors.ts';
import { createTelnyxRest } from './telnyx-rest.ts';
import { createTwilioRest } from './twilio-rest.ts';

export const TWILIO_ACCOUNT_SID = /^AC[0-9a-fA-F]{32}$/;
// An Ed25519 public key is 32 bytes: 43 base64 characters and one pad.
const ED25519_BASE64 = /^[A-Za-z0-9+/]{43}=?$/;

export interface CredentialFields {
  twilio_account_sid?: string | null | undefined;
  twilio_auth_token?: string | null | undefined;
  telnyx_api_key?: string | null | undefined;
  telnyx_connection_id?: string | null | undefined;
  telnyx_public_key?: string | null | undefined;
}

export type CredentialField = keyof CredentialFields;

/**
 * Why an import failed. The credential failures are found from the fields alone, before
 * any network; the others are the carrier's answers, read in the light of the step that
 * got them.
 */
export type NumberImportFailure =
  /** A credential of `provider` is absent, null or blank. */
  | { reason: 'credential_missing'; provider: Provider; field: CredentialField }
  /** A field of the other carrier was sent (it would be silently dropped). */
  | { reason: 'credential_of_other_provider'; provider: Provider; field: CredentialField; belongsTo: Provider }
  /** A credential is present but cannot be right (carrier A's account SID, carrier B's public key). */
  | { reason: 'credential_malformed'; provider: Provider; field: CredentialField }
  /** The carrier answered 401 or 403. */
  | { reason: 'carrier_auth_failed'; carrier: CarrierName; status: number }
  /** No usable answer (network, timeout, 5xx, unreadable success); `status` only for HTTP answers. */
  | { reason: 'carrier_unreachable'; carrier: CarrierName; status: number | null }
  /** Carrier B's connection id names no Call Control application of the account. */
  | { reason: 'connection_not_found'; carrier: CarrierName; status: number }
  /** The carrier's account does not own the number. */
  | { reason: 'number_not_in_carrier'; phoneNumber: string }
  /** The carrier listed the number, then said it does not exist when it was moved. */
  | { reason: 'number_gone_from_carrier'; phoneNumber: string }
  /** Any other 4xx: the carrier refused the request; `carrierMessage` is its own words. */
  | { reason: 'carrier_refused'; carrier: CarrierName; status: number; carrierMessage: string };

/** A number import that failed; nothing was stored. `failure` says why. */
export class NumberImportError extends Error {
  readonly failure: NumberImportFailure;

  constructor(failure: NumberImportFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NumberImportError';
    this.failure = failure;
  }
}

const FIELDS: Record<Provider, (keyof CredentialFields)[]> = {
  twilio: ['twilio_account_sid', 'twilio_auth_token'],
  telnyx: ['telnyx_api_key', 'telnyx_connection_id', 'telnyx_public_key'],
};

function required(fields: CredentialFields, field: CredentialField, provider: Provider): string {
  const v = fields[field];
  if (v === undefined || v === null || v.trim() === '') {
    throw new NumberImportError({ reason: 'credential_missing', provider, field }, `${field} is required to import a ${provider} number`);
  }
  return v;
}

const malformed = (provider: Provider, field: CredentialField, message: string) =>
  new NumberImportError({ reason: 'credential_malformed', provider, field }, message);

/** The credentials of the body in stored form; throws the format errors, no network. */
export function credentialsFrom(provider: Provider, fields: CredentialFields): CarrierCredentials {
  // The other carrier's fields would be silently dropped; saying so beats a confusing import.
  const other: Provider = provider === 'twilio' ? 'telnyx' : 'twilio';
  for (const field of FIELDS[other]) {
    if (fields[field] !== undefined) {
      throw new NumberImportError(
        { reason: 'credential_of_other_provider', provider, field, belongsTo: other },
        `${field} belongs to provider '${other}', not '${provider}'`,
      );
    }
  }
  if (provider === 'twilio') {
    const accountSid = required(fields, 'twilio_account_sid', provider);
    const authToken = required(fields, 'twilio_auth_token', provider);
    if (!TWILIO_ACCOUNT_SID.test(accountSid)) throw malformed(provider, 'twilio_account_sid', 'twilio_account_sid is not AC followed by 32 hex characters');
    return { provider, account_sid: accountSid, auth_token: authToken };
  }
  const apiKey = required(fields, 'telnyx_api_key', provider);
  const connectionId = required(fields, 'telnyx_connection_id', provider);
  // Required although contract.md §5 calls it optional: without it an event's only proof
  // is the URL token, and an unsigned call.initiated would record and bill a call
  // (issue 11). The events endpoint refuses events of a stored number that lacks one.
  const publicKey = required(fields, 'telnyx_public_key', provider);
  if (!ED25519_BASE64.test(publicKey) || Buffer.from(publicKey, 'base64').length !== 32) {
    throw malformed(provider, 'telnyx_public_key', 'telnyx_public_key is not a base64 Ed25519 public key (32 bytes, 44 characters)');
  }
  return { provider, api_key: apiKey, connection_id: connectionId, public_key: publicKey };
}

export interface CarrierEndpoints {
  twilioApiBase: string;
  telnyxApiBase: string;
  /** Without a trailing slash. */
  publicBaseUrl: string;
}

export interface ConnectedNumber {
  /** Carrier A's PN… sid; null for carrier B. */
  carrierNumberSid: string | null;
  carrierNumberId: string;
  /** Carrier B's per-number token in the event URL; null for carrier A. */
  eventsToken: string | null;
}

// Which step failed decides what a carrier's 4xx means.
type Step = 'find' | 'application' | 'number' | 'messaging';

function translate(err: unknown, step: Step, phoneNumber: string): unknown {
  const fail = (failure: NumberImportFailure, message: string) => new NumberImportError(failure, message, { cause: err });
  if (err instanceof CarrierAuthError) {
    return fail({ reason: 'carrier_auth_failed', carrier: err.carrier, status: err.status }, `${err.carrier} rejected the credentials (HTTP ${err.status})`);
  }
  if (err instanceof CarrierUnreachableError) {
    return fail({ reason: 'carrier_unreachable', carrier: err.carrier, status: err.status }, `${err.carrier} could not be reached: ${err.message}`);
  }
  if (err instanceof CarrierRequestError) {
    if (step === 'application' || (step === 'number' && err.status === 422)) {
      return fail(
        { reason: 'connection_not_found', carrier: err.carrier, status: err.status },
        `the connection id is not a Call Control application of this ${err.carrier} account (HTTP ${err.status})`,
      );
    }
    if (step === 'number' && err.status === 404) {
      return fail({ reason: 'number_gone_from_carrier', phoneNumber }, `the ${err.carrier} account no longer has the number`);
    }
    // Any other refusal is the carrier's own problem as far as the caller can act on it.
    return fail(
      { reason: 'carrier_refused', carrier: err.carrier, status: err.status, carrierMessage: err.message },
      `${err.carrier} refused the ${step} step (HTTP ${err.status}): ${err.message}`,
    );
  }
  return err;
}

async function step<T>(name: Step, phoneNumber: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw translate(err, name, phoneNumber);
  }
}

const notInCarrier = (phoneNumber: string) =>
  new NumberImportError({ reason: 'number_not_in_carrier', phoneNumber }, 'the carrier account does not own the number');

/**
 * Verifies the credentials and ownership, then points the number at this service.
 * `eventsToken` is carrier B's per-number token in its event URL: the stored one on a
 * re-import, so a call in progress keeps its event URL, else a fresh one from the caller
 * (who stores it). Carrier A has none and ignores it.
 */
export async function connectNumber(
  endpoints: CarrierEndpoints,
  phoneNumber: string,
  credentials: CarrierCredentials,
  eventsToken: string,
): Promise<ConnectedNumber> {
  const base = endpoints.publicBaseUrl;
  if (credentials.provider === 'twilio') {
    const rest = createTwilioRest({ baseUrl: endpoints.twilioApiBase, accountSid: credentials.account_sid, authToken: credentials.auth_token });
    const found = await step('find', phoneNumber, () => rest.findIncomingNumber(phoneNumber));
    if (!found) throw notInCarrier(phoneNumber);
    await step('number', phoneNumber, () =>
      rest.updateIncomingNumber(found.sid, {
        voiceUrl: `${base}/carrier/twilio/voice`,
        smsUrl: `${base}/carrier/twilio/sms`,
        statusCallback: `${base}/carrier/twilio/status`,
      }),
    );
    return { carrierNumberSid: found.sid, carrierNumberId: found.sid, eventsToken: null };
  }

  const rest = createTelnyxRest({ baseUrl: endpoints.telnyxApiBase, apiKey: credentials.api_key });
  const found = await step('find', phoneNumber, () => rest.findNumber(phoneNumber));
  if (!found) throw notInCarrier(phoneNumber);
  const eventsUrl = `${base}/carrier/telnyx/events/${eventsToken}`;
  // The application is set first: a wrong connection id then fails before the number is moved.
  await step('application', phoneNumber, () => rest.setCallControlWebhook(credentials.connection_id, eventsUrl));
  await step('number', phoneNumber, () => rest.setNumberConnection(found.id, credentials.connection_id));
  const profile = found.messaging_profile_id;
  if (profile) await step('messaging', phoneNumber, () => rest.setMessagingWebhook(profile, eventsUrl));
  return { carrierNumberSid: null, carrierNumberId: found.id, eventsToken };
}

/** One number to import: credentials already checked for shape (credentialsFrom). */
export interface ImportRequest {
  accountId: string;
  phoneNumber: string;
  agentId: string;
  credentials: CarrierCredentials;
  /** `api` through POST /v1/phone-numbers, `dashboard` when an operator adds it (contract.md 5). */
  source: NumberSource;
  inboundEnabled?: boolean | undefined;
  outboundEnabled?: boolean | undefined;
}

export interface ImportDeps {
  numbers: Pick<PhoneNumbersRepo, 'holder' | 'import'>;
  endpoints: CarrierEndpoints;
  clock: () => number;
  /** A fresh carrier B events token (unguessable); a re-import keeps the stored one. */
  newEventsToken: () => string;
}

/**
 * Imports a number: the holder is checked before the carrier is bothered (a number on
 * another agent or account is a conflict), the carrier is asked and the number pointed
 * here, then the row is written, which checks holder and agent again (the carrier calls
 * ran outside any transaction). Carrier failures throw NumberImportError; nothing is
 * stored then, though earlier carrier changes stay.
 */
export async function importNumber(deps: ImportDeps, req: ImportRequest): Promise<ImportResult> {
  const holder = deps.numbers.holder(req.accountId, req.phoneNumber, req.agentId);
  if (holder.kind === 'other_account' || holder.kind === 'other_agent') return { kind: 'conflict', holder };
  // Carrier B's events token: kept on a re-import so a call in progress keeps its event URL.
  const eventsToken = (holder.kind === 'same_agent' ? holder.row.events_token : null) ?? deps.newEventsToken();
  const connected = await connectNumber(deps.endpoints, req.phoneNumber, req.credentials, eventsToken);
  return deps.numbers.import({
    accountId: req.accountId,
    phoneNumber: req.phoneNumber,
    agentId: req.agentId,
    credentials: req.credentials,
    source: req.source,
    carrierNumberSid: connected.carrierNumberSid,
    carrierNumberId: connected.carrierNumberId,
    eventsToken: connected.eventsToken,
    inboundEnabled: req.inboundEnabled,
    outboundEnabled: req.outboundEnabled,
    now: deps.clock(),
  });
}
