// Request and response schemas of the phone-number routes, and the views that turn a
// stored row into the API's number object (credentials never leave storage this way).
import { z } from 'zod';
import { isoTime, pagination } from '../schemas.ts';
import { settingsOf, type PhoneNumberRow } from '../../storage/phone-numbers.ts';

export const CUSTOM_PROMPT_MAX = 8000;
export const SMS_PROMPT_MAX = 20000;
export const WEB_PROMPT_MAX = 20000;
export const VOICEMAIL_MESSAGE_MAX = 2000;
export const SPEAKING_RATE_MIN = 0.5;
export const SPEAKING_RATE_MAX = 1.5;

const credential = (description: string) => z.string().max(512).nullable().optional().meta({ description });

export const importBody = z
  .object({
    phone_number: z.string().meta({ description: 'E.164, e.g. +14155550123.' }),
    agent_id: z.string().meta({ description: 'The agent of your account that answers this number.' }),
    // A string first, so a missing provider is missing_field (a bare enum reports it as a bad value).
    provider: z
      .string()
      .pipe(z.enum(['twilio', 'telnyx']))
      .meta({ type: 'string', enum: ['twilio', 'telnyx'], description: '`twilio` (carrier A) or `telnyx` (carrier B).' }),
    inbound_enabled: z.boolean().optional().meta({ description: 'Default true. On a re-import, omitted keeps the current value.' }),
    outbound_enabled: z.boolean().optional().meta({ description: 'Default true. On a re-import, omitted keeps the current value.' }),
    twilio_account_sid: credential('Carrier A: the account SID, AC followed by 32 hex characters.'),
    twilio_auth_token: credential('Carrier A: the auth token. Stored encrypted, never returned.'),
    telnyx_api_key: credential('Carrier B: an API key of the account. Stored encrypted, never returned.'),
    telnyx_connection_id: credential('Carrier B: the Call Control application that carries the number’s calls.'),
    telnyx_public_key: credential(
      'Carrier B, required: the account’s base64 Ed25519 public key (44 characters), from the carrier portal (Mission Control: Account Settings > ' +
        'Keys & Credentials > Public Key). Every call event’s signature is verified with it; missing, null or empty is carrier_invalid_credentials. ' +
        'It can be changed only by importing the number again with it, never removed.',
    ),
  })
  .strict();

// `null` and "" both clear a nullable text field (contract §11); the handler folds "" into null.
const clearableText = (max: number, description: string) => z.string().max(max).nullable().optional().meta({ description });

export const patchBody = z
  .object({
    agent_id: z
      .string()
      .nullable()
      .optional()
      .meta({ description: 'Move the number to another agent of your account (e.g. re-attach an orphaned number); null detaches it.' }),
    inbound_enabled: z.boolean().optional().meta({ description: 'Accept incoming calls.' }),
    outbound_enabled: z.boolean().optional().meta({ description: 'Allow outgoing calls from this number.' }),
    custom_prompt: clearableText(CUSTOM_PROMPT_MAX, 'Phone-call prompt layered on the agent prompt; max 8000; null or "" clears.'),
    voice_id: z.string().nullable().optional().meta({ description: 'A voice of GET /v1/voices; null or "" falls back to the agent’s voice.' }),
    sms_reply_enabled: z.boolean().optional().meta({ description: 'SMS auto-reply on this number.' }),
    sms_prompt: clearableText(SMS_PROMPT_MAX, 'Instructions for the SMS agent; max 20000; null or "" clears.'),
    web_prompt: clearableText(WEB_PROMPT_MAX, 'Instructions for the web agent; max 20000; null or "" clears.'),
    speaking_rate: z
      .number()
      .nullable()
      .optional()
      .meta({ description: 'Clamped to 0.5..1.5, not rejected; null inherits the agent’s speed; 1 forces normal.' }),
    dtmf_enabled: z.boolean().nullable().optional().meta({ description: 'null inherits the agent; false switches keypad input off here.' }),
    record_call: z.boolean().nullable().optional().meta({ description: 'null inherits the agent; false stops recording this number.' }),
    voicemail_leave_enabled: z
      .boolean()
      .nullable()
      .optional()
      .meta({ description: 'true speaks voicemail_message on an answering machine found by the agent’s screen of an outbound call (after the beep, or once the greeting falls quiet), then hangs up; false or null hang up silently. Either way ended_reason is voicemail_detected. The only voicemail setting that applies (every number is API-imported); with the agent’s amd_enabled the carrier detects and no message is left.' }),
    voicemail_message: clearableText(VOICEMAIL_MESSAGE_MAX, 'Spoken word for word on detected voicemail; max 2000; null or "" clears.'),
    require_booking_confirmation: z
      .boolean()
      .nullable()
      .optional()
      .meta({ description: 'null inherits the agent; true reads each booking change back and waits for a clear yes on calls of this number.' }),
  })
  .strict();

export type PatchBody = z.infer<typeof patchBody>;

/** Read-only fields of the number object: ignored by PATCH so a fetched number can be sent back. */
export const READ_ONLY_FIELDS = ['phone_number', 'provider', 'source', 'carrier_number_sid', 'created_at', 'updated_at'];

export const patchFieldCodes = {
  custom_prompt: { too_big: 'custom_prompt_too_long' },
  sms_prompt: { too_big: 'sms_prompt_too_long' },
  web_prompt: { too_big: 'web_prompt_too_long' },
} as const;

export const listQuery = z.object({
  agent_id: z.string().optional().meta({ description: 'Only the numbers of this agent.' }),
  ...pagination,
});

const provider = z.enum(['twilio', 'telnyx']);
const source = z.enum(['api', 'dashboard']).meta({ description: '`api` when imported through this API, `dashboard` when added by an operator.' });

export const numberObject = z.object({
  phone_number: z.string().meta({ description: 'E.164.' }),
  agent_id: z.string().nullable().meta({ description: 'null once its agent is deleted: calls to it are rejected until PATCH sets an agent.' }),
  provider,
  source,
  carrier_number_sid: z.string().nullable().meta({ description: 'Carrier A’s PN… sid; null for carrier B.' }),
  inbound_enabled: z.boolean(),
  outbound_enabled: z.boolean(),
  custom_prompt: z.string().nullable(),
  voice_id: z.string().nullable().meta({ description: 'null uses the agent’s voice.' }),
  sms_reply_enabled: z.boolean(),
  sms_prompt: z.string().nullable(),
  web_prompt: z.string().nullable(),
  speaking_rate: z.number().nullable().meta({ description: 'null inherits the agent’s speed.' }),
  dtmf_enabled: z.boolean().nullable().meta({ description: 'null inherits the agent.' }),
  record_call: z.boolean().nullable().meta({ description: 'null inherits the agent.' }),
  voicemail_leave_enabled: z.boolean().nullable().meta({ description: 'true: voicemail_message is left on an answering machine; false or null: silent hang-up on voicemail.' }),
  voicemail_message: z.string().nullable(),
  require_booking_confirmation: z.boolean().nullable().meta({ description: 'null inherits the agent.' }),
  created_at: z.string(),
  updated_at: z.string(),
});

export const numberWrapper = z.object({ phone_number: numberObject });

export const listItem = numberObject.pick({
  phone_number: true,
  agent_id: true,
  provider: true,
  source: true,
  carrier_number_sid: true,
  inbound_enabled: true,
  outbound_enabled: true,
  custom_prompt: true,
  created_at: true,
});

export const listResponse = z.object({
  phone_numbers: z.array(listItem),
  count: z.number().int().meta({ description: 'How many numbers match the filter in all, not just on this page.' }),
  limit: z.number().int().optional().meta({ description: 'Present when the request paginated (sent limit or offset).' }),
  offset: z.number().int().optional().meta({ description: 'Present when the request paginated (sent limit or offset).' }),
});

/** The full number object: identity, the settings as the repository reads them, times. */
export function numberView(r: PhoneNumberRow): z.infer<typeof numberObject> {
  const { agent_id, ...settings } = settingsOf(r);
  return {
    phone_number: r.phone_number,
    agent_id,
    provider: r.provider,
    source: r.source,
    carrier_number_sid: r.carrier_number_sid,
    ...settings,
    created_at: isoTime(r.created_at),
    updated_at: isoTime(r.updated_at),
  };
}

export function listItemView(r: PhoneNumberRow): z.infer<typeof listItem> {
  const v = numberView(r);
  return {
    phone_number: v.phone_number,
    agent_id: v.agent_id,
    provider: v.provider,
    source: v.source,
    carrier_number_sid: v.carrier_number_sid,
    inbound_enabled: v.inbound_enabled,
    outbound_enabled: v.outbound_enabled,
    custom_prompt: v.custom_prompt,
    created_at: v.created_at,
  };
}
