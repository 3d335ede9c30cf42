// The API's answer to each way a number import fails (voice/carriers/number-import.ts
// says what went wrong in carrier terms; the codes, messages and details are the API's
// and live here, at the edge). Every code is in the import route's `errors` list.
import { NumberImportError, type CredentialField, type NumberImportFailure } from '../../voice/carriers/number-import.ts';
import type { CarrierName } from '../../voice/carriers/errors.ts';
import { ApiError } from '../errors.ts';

/** The credential to check again when the carrier refuses them. */
const AUTH_FIELD: Record<CarrierName, CredentialField> = { twilio: 'twilio_auth_token', telnyx: 'telnyx_api_key' };
const AUTH_HINT: Record<CarrierName, string> = { twilio: 'twilio_account_sid and twilio_auth_token', telnyx: 'telnyx_api_key' };

/** Messages for a credential that is absent, null or blank; by default the generic one. */
const MISSING: Partial<Record<CredentialField, string>> = {
  telnyx_public_key:
    'telnyx_public_key is required to import a telnyx number: every call event is checked against it. Copy the public key ' +
    '(base64, 44 characters) from the carrier portal (Mission Control: Account Settings > Keys & Credentials > Public Key).',
};

/** Messages (and codes) for a credential that cannot be right. */
const MALFORMED: Partial<Record<CredentialField, { code: 'invalid_carrier_sid' | 'carrier_invalid_credentials'; message: string }>> = {
  twilio_account_sid: {
    code: 'invalid_carrier_sid',
    message: 'twilio_account_sid must be AC followed by 32 hex characters, as shown in the carrier console.',
  },
  telnyx_public_key: {
    code: 'carrier_invalid_credentials',
    message: "telnyx_public_key must be the account's base64 Ed25519 public key from the carrier portal (32 bytes, 44 characters).",
  },
};

function apiErrorOf(failure: NumberImportFailure): ApiError {
  switch (failure.reason) {
    case 'credential_missing': {
      const { field, provider } = failure;
      const message = MISSING[field] ?? `${field} is required to import a ${provider} number and must not be empty.`;
      return new ApiError('carrier_invalid_credentials', message, { field });
    }
    case 'credential_of_other_provider': {
      const { field, provider, belongsTo } = failure;
      return new ApiError('invalid_request', `${field} belongs to provider '${belongsTo}'; this import is for provider '${provider}'.`, { field });
    }
    case 'credential_malformed': {
      const { field } = failure;
      const spec = MALFORMED[field] ?? { code: 'carrier_invalid_credentials', message: `${field} is not in the format the carrier issues.` };
      return new ApiError(spec.code, spec.message, { field });
    }
    case 'carrier_auth_failed':
      return new ApiError('carrier_auth_failed', `The carrier rejected these credentials (HTTP ${failure.status}). Check ${AUTH_HINT[failure.carrier]}.`, {
        field: AUTH_FIELD[failure.carrier],
        carrier_status: failure.status,
      });
    case 'carrier_unreachable':
      return new ApiError(
        'carrier_unreachable',
        `The carrier (${failure.carrier}) could not be reached or failed to answer. Nothing was imported; try again shortly.`,
        { carrier_status: failure.status },
      );
    case 'connection_not_found':
      return new ApiError('carrier_invalid_credentials', 'telnyx_connection_id is not a Call Control application of this carrier account.', {
        field: 'telnyx_connection_id',
        carrier_status: failure.status,
      });
    case 'number_not_in_carrier':
      return new ApiError(
        'number_not_in_carrier',
        `The carrier account behind these credentials does not own ${failure.phoneNumber}. Buy or port it there first.`,
        { field: 'phone_number' },
      );
    case 'number_gone_from_carrier':
      return new ApiError('number_not_in_carrier', `The carrier account no longer has ${failure.phoneNumber}.`, { field: 'phone_number' });
    case 'carrier_refused':
      return new ApiError(
        'carrier_unreachable',
        `The carrier (${failure.carrier}) refused the request (HTTP ${failure.status}): ${failure.carrierMessage}`,
        { carrier_status: failure.status },
      );
  }
}

/** A NumberImportError as the API answers it; anything else unchanged (the pipeline logs it and answers 500). */
export function numberImportApiError(err: unknown): unknown {
  return err instanceof NumberImportError ? apiErrorOf(err.failure) : err;
}
