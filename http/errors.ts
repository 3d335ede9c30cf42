// The one error registry: every code the API can answer with, its type, HTTP status
// and a default message. Handlers throw `apiError(code)`; the pipeline turns it into
// the envelope `{error:{type, code, message, details}}`. A test checks that every code
// of api.md is here and that every code here is in the OpenAPI document.

export type ErrorType =
  | 'authentication_error'
  | 'permission_error'
  | 'invalid_request'
  | 'not_found'
  | 'conflict'
  | 'rate_limit_error'
  | 'provider_error'
  | 'server_error';

interface ErrorSpec {
  type: ErrorType;
  status: number;
  message: string;
}

const bad = (message: string): ErrorSpec => ({ type: 'invalid_request', status: 400, message });
const missing = (message: string): ErrorSpec => ({ type: 'not_found', status: 404, message });

export const ERRORS = {
  // Authentication and access
  invalid_api_key: { type: 'authentication_error', status: 401, message: 'Invalid or missing API key. Send Authorization: Bearer KEY_ID:KEY_SECRET.' },
  key_secret_required: { type: 'authentication_error', status: 401, message: 'The Authorization header has no secret. Send Bearer KEY_ID:KEY_SECRET, the two halves joined by a colon.' },
  invalid_signature: { type: 'permission_error', status: 403, message: 'The carrier request signature is missing or does not verify.' },

  // Request shape
  route_not_found: missing('No such route. Check the method and path against GET /v1/openapi.json.'),
  method_not_allowed: { type: 'invalid_request', status: 405, message: 'This path does not support that method; the Allow header lists the methods it does.' },
  invalid_json: bad('The request body is not valid JSON.'),
  invalid_content_type: bad('Send Content-Type: application/json with a JSON body.'),
  payload_too_large: { type: 'invalid_request', status: 413, message: 'The request body is larger than the 5 MiB limit.' },
  invalid_path: bad('The path is not in canonical form. Use single slashes, no "." or ".." segments and no encoded slashes.'),
  malformed_request: bad('The request framing is ambiguous (conflicting Content-Length headers, or a Transfer-Encoding other than chunked). Send one Content-Length, or Transfer-Encoding: chunked alone.'),
  invalid_request: bad('The request is not valid.'),
  missing_field: bad('A required field is missing.'),
  unknown_field: bad('The body has a field this endpoint does not accept.'),
  invalid_body: bad('The request body does not have the expected shape.'),
  invalid_idempotency_key: bad('Idempotency-Key must be 1 to 255 characters.'),
  idempotency_key_reused: bad('This Idempotency-Key was already used with a different request body. Use a new key for a different request.'),
  idempotency_key_in_use: { type: 'conflict', status: 409, message: 'A request with this Idempotency-Key is still being processed. Retry after it finishes.' },

  // Rate limits
  rate_limit_exceeded: { type: 'rate_limit_error', status: 429, message: 'Rate limit exceeded, try again in a few seconds.' },
  concurrent_call_limit: { type: 'rate_limit_error', status: 429, message: 'The account is at its concurrent call limit.' },

  // Keys and account
  key_not_found: missing('No API key with this id on your account.'),
  last_active_key: bad('This is the last active key of the account; create another key before revoking it.'),
  confirmation_required: bad('Deleting the account erases everything. Repeat the request with ?confirm=true.'),

  // Agents
  agent_not_found: missing('No agent with this id on your account.'),
  agent_not_owned: bad('The agent does not exist on your account.'),
  prompt_too_long: bad('system_prompt can be at most 16000 characters.'),
  invalid_voice_id: bad('voice_id is not a supported voice; GET /v1/voices lists them.'),
  invalid_language: bad('language is not a supported language code.'),
  deprecated_field: bad('Carrier credentials are not agent fields any more; send them when importing a phone number.'),
  invalid_recording_source: bad("recording_source must be 'provider' or 'platform'."),
  voicemail_message_required: bad('voicemail_leave_enabled needs a voicemail_message.'),

  // Phone numbers
  invalid_phone_format: bad('Phone numbers must be E.164: a leading + and country code, e.g. +14155550123.'),
  invalid_carrier_sid: bad('twilio_account_sid must be AC followed by 32 hex characters.'),
  number_not_in_carrier: bad('The carrier account does not own this phone number.'),
  carrier_invalid_credentials: bad('The carrier credentials are missing or empty.'),
  carrier_auth_failed: bad('The carrier rejected these credentials.'),
  carrier_unreachable: { type: 'provider_error', status: 502, message: 'The carrier could not be reached. Try again shortly.' },
  number_already_imported: { type: 'conflict', status: 409, message: 'This phone number is already imported on another agent.' },
  number_not_found: missing('No phone number like this on your account.'),
  phone_number_not_found: missing('No phone number like this on your account.'),
  custom_prompt_too_long: bad('custom_prompt can be at most 8000 characters.'),
  sms_prompt_too_long: bad('sms_prompt can be at most 20000 characters.'),
  web_prompt_too_long: bad('web_prompt can be at most 20000 characters.'),

  // Calls and batch campaigns
  call_not_found: missing('No call with this id on your account.'),
  recording_not_found: missing('No recording at this link: it was never made, was deleted with its call, or is past its retention.'),
  recording_store_unreachable: { type: 'provider_error', status: 502, message: 'The store that keeps the recording did not answer. Try again shortly.' },
  outbound_failed: { type: 'provider_error', status: 502, message: 'The carrier rejected the call.' },
  from_number_not_owned: bad('from_number is not a number on your account.'),
  from_number_not_found: bad('from_number is not an outbound-enabled number of this agent.'),
  agent_missing_phone_number: bad('The agent has no outbound-enabled phone number.'),
  agent_missing_carrier_credentials: bad('The dialing number has no carrier credentials.'),
  agent_no_phone: bad('The agent has no phone number.'),
  campaign_creation_failed: bad('The campaign could not be created.'),
  campaign_launch_failed: bad('The campaign could not be launched.'),
  invalid_timezone: bad('timezone must be an IANA time zone such as America/New_York.'),

  // Caller context
  caller_not_found: missing('No caller context record for this caller on this number.'),
  engine_only_field: bad('last_call and open_item are written by the engine and cannot be set.'),
  invalid_email: bad('email is not a valid address.'),
  field_too_long: bad('A field is longer than its limit.'),
  too_many_rows: bad('An import takes at most 1000 rows.'),

  // SMS
  campaign_not_found: missing('No campaign with this id on your account.'),
  campaign_already_running: bad('The campaign is already running.'),
  campaign_already_done: bad('The campaign has already finished.'),
  campaign_no_recipients: bad('The campaign has no recipients.'),
  campaign_not_editable: bad('Only context_prompt can change once a campaign has launched.'),
  too_many_recipients: bad('A campaign takes at most 10000 recipients.'),
  invalid_schedule: bad('schedule_type schedule needs a valid scheduled_at.'),
  sms_not_supported_in_region: bad('This number cannot send application-to-person SMS in its region without carrier registration.'),
  message_too_long: bad('An SMS body can be at most 1600 characters.'),
  recipient_unsubscribed: bad('The recipient texted STOP to this number and is unsubscribed.'),
  message_not_found: missing('No message with this id on your account.'),
  carrier_refused: bad('The carrier refused the message.'),

  // Integrations
  invalid_url: bad('The URL must be a valid https URL on a public host.'),
  invalid_function_name: bad('Function names are snake_case (lowercase letters, digits, underscores), at most 64 characters.'),
  function_exists: { type: 'conflict', status: 409, message: 'A custom function with this name already exists on this number.' },
  function_not_found: missing('No custom function with this id on this number.'),
  webhook_not_configured: bad('The number has no webhook URL to send to. Set one with PUT /v1/integrations/webhook/number/{phone_number} (or webhook2) first.'),

  server_busy: { type: 'server_error', status: 503, message: 'The server is holding as much request data as it allows right now. Retry after the number of seconds in Retry-After.' },
  server_error: { type: 'server_error', status: 500, message: 'Something went wrong on our side. The request changed nothing; it is safe to retry.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;
export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

/** The error every handler throws; it knows its own HTTP response. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly type: ErrorType;
  readonly status: number;
  /** Set when the code is answered as a body reference (400) instead of its registry status. */
  readonly asReference: boolean;
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    message?: string,
    details?: Record<string, unknown>,
    headers?: Record<string, string>,
    asReference = false,
  ) {
    const spec: ErrorSpec = ERRORS[code];
    super(message ?? spec.message);
    this.code = code;
    this.asReference = asReference;
    this.type = asReference ? 'invalid_request' : spec.type;
    this.status = asReference ? 400 : spec.status;
    this.details = details;
    this.headers = headers;
  }

  toBody(): { error: { type: ErrorType; code: ErrorCode; message: string; details?: Record<string, unknown> } } {
    const error: { type: ErrorType; code: ErrorCode; message: string; details?: Record<string, unknown> } = {
      type: this.type,
      code: this.code,
      message: this.message,
    };
    if (this.details) error.details = this.details;
    return { error };
  }
}

export function apiError(
  code: ErrorCode,
  message?: string,
  details?: Record<string, unknown>,
): ApiError {
  return new ApiError(code, message, details);
}

/**
 * A resource referenced from the request body that is missing or foreign (contract.md
 * section 1): its `*_not_found` code, answered 400 `invalid_request` because the
 * request, not the URL, is wrong. Routes list such codes in `referenceErrors`.
 */
export function referenceError(code: ErrorCode, field: string, message?: string): ApiError {
  return new ApiError(code, message, { field }, undefined, true);
}

/** A validation failure that names the offending field in `details.field`. */
export function fieldError(code: ErrorCode, field: string, message?: string): ApiError {
  return new ApiError(code, message, { field });
}
