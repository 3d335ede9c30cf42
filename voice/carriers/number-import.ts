// The carrier side of importing a number: checks the shape of the credentials, asks
// the carrier whether they work and whether its account owns the number, and points
// the number's voice and SMS webhooks at this service. Carrier failures become API codes here.
import { ApiError } from '../../http/errors.ts';
import { randomBase62 } from '../../storage/ids.ts';
import type { CarrierCredentials, Provider } from '../../storage/phone-numbers.ts';
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

const FIELDS: Record<Provider, (keyof CredentialFields)[]> = {
  twilio: ['twilio_account_sid', 'twilio_auth_token'],
  telnyx: ['telnyx_api_key', 'telnyx_connection_id', 'telnyx_public_key'],
};

function required(fields: CredentialFields, name: keyof CredentialFields, provider: Provider): string {
  const v = fields[name];
  if (v === undefined || v === null || v.trim() === '') {
    throw new ApiError('carrier_invalid_credentials', `${name} is required to import a ${provider} number and must not be empty.`, { field: name });
  }
  return v;
}

/** The credentials of the body in stored form; throws the format errors, no network. */
export function credentialsFrom(provider: Provider, fields: CredentialFields): CarrierCredentials {
  // The other carrier's fields would be silently dropped; saying so beats a confusing import.
  const other: Provider = provider === 'twilio' ? 'telnyx' : 'twilio';
  for (const name of FIELDS[other]) {
    if (fields[name] !== undefined) {
      throw new ApiError('invalid_request', `${name} belongs to provider '${other}'; this import is for provider '${provider}'.`, { field: name });
    }
  }
  if (provider === 'twilio') {
    const accountSid = required(fields, 'twilio_account_sid', provider);
    const authToken = required(fields, 'twilio_auth_token', provider);
    if (!TWILIO_ACCOUNT_SID.test(accountSid)) {
      throw new ApiError('invalid_carrier_sid', 'twilio_account_sid must be AC followed by 32 hex characters, as shown in the carrier console.', {
        field: 'twilio_account_sid',
      });
    }
    return { provider, account_sid: accountSid, auth_token: authToken };
  }
  const apiKey = required(fields, 'telnyx_api_key', provider);
  const connectionId = required(fields, 'telnyx_connection_id', provider);
  // Required although contract.md §5 calls it optional: without it an event's only proof
  // is the URL token, and an unsigned call.initiated would record and bill a call
  // (issue 11). The events endpoint refuses events of a stored number that lacks one.
  const publicKey = fields.telnyx_public_key;
  if (publicKey === undefined || publicKey === null || publicKey.trim() === '') {
    throw new ApiError(
      'carrier_invalid_credentials',
      'telnyx_public_key is required to import a telnyx number: every call event is checked against it. Copy the public key ' +
        '(base64, 44 characters) from the carrier portal (Mission Control: Account Settings > Keys & Credentials > Public Key).',
      { field: 'telnyx_public_key' },
    );
  }
  if (!ED25519_BASE64.test(publicKey) || Buffer.from(publicKey, 'base64').length !== 32) {
    throw new ApiError(
      'carrier_invalid_credentials',
      "telnyx_public_key must be the account's base64 Ed25519 public key from the carrier portal (32 bytes, 44 characters).",
      { field: 'telnyx_public_key' },
    );
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

const AUTH_FIELD: Record<CarrierName, string> = { twilio: 'twilio_auth_token', telnyx: 'telnyx_api_key' };

function translate(err: unknown, step: Step, phoneNumber: string): unknown {
  if (err instanceof CarrierAuthError) {
    const which = err.carrier === 'twilio' ? 'twilio_account_sid and twilio_auth_token' : 'telnyx_api_key';
    return new ApiError('carrier_auth_failed', `The carrier rejected these credentials (HTTP ${err.status}). Check ${which}.`, {
      field: AUTH_FIELD[err.carrier],
      carrier_status: err.status,
    });
  }
  if (err instanceof CarrierUnreachableError) {
    return new ApiError('carrier_unreachable', `The carrier (${err.carrier}) could not be reached or failed to answer. Nothing was imported; try again shortly.`, {
      carrier_status: err.status,
    });
  }
  if (err instanceof CarrierRequestError) {
    if (step === 'application' || (step === 'number' && err.status === 422)) {
      return new ApiError(
        'carrier_invalid_credentials',
        'telnyx_connection_id is not a Call Control application of this carrier account.',
        { field: 'telnyx_connection_id', carrier_status: err.status },
      );
    }
    if (step === 'number' && err.status === 404) {
      return new ApiError('number_not_in_carrier', `The carrier account no longer has ${phoneNumber}.`, { field: 'phone_number' });
    }
    // Any other refusal is the carrier's own problem as far as the caller can act on it.
    return new ApiError('carrier_unreachable', `The carrier (${err.carrier}) refused the request (HTTP ${err.status}): ${err.message}`, {
      carrier_status: err.status,
    });
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
  new ApiError('number_not_in_carrier', `The carrier account behind these credentials does not own ${phoneNumber}. Buy or port it there first.`, {
    field: 'phone_number',
  });

/**
 * Verifies the credentials and ownership, then points the number at this service.
 * Carrier B keeps `existingToken` on a re-import so a call in progress keeps its event URL.
 */
export async function connectNumber(
  endpoints: CarrierEndpoints,
  phoneNumber: string,
  credentials: CarrierCredentials,
  existingToken: string | null,
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
  const token = existingToken ?? randomBase62(32);
  const eventsUrl = `${base}/carrier/telnyx/events/${token}`;
  // The application is set first: a wrong connection id then fails before the number is moved.
  await step('application', phoneNumber, () => rest.setCallControlWebhook(credentials.connection_id, eventsUrl));
  await step('number', phoneNumber, () => rest.setNumberConnection(found.id, credentials.connection_id));
  const profile = found.messaging_profile_id;
  if (profile) await step('messaging', phoneNumber, () => rest.setMessagingWebhook(profile, eventsUrl));
  return { carrierNumberSid: null, carrierNumberId: found.id, eventsToken: token };
}
