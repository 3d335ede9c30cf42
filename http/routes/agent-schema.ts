// The agent's request and response schemas: every settable field with its type, range
// and default (api.md "Agent"), the codes a bad value answers with, and the views.
import { isIP } from 'node:net';
import { z } from 'zod';
import type { FieldCodes } from '../validation.ts';
import { E164, isoTime } from '../schemas.ts';
import { LANGUAGES, VOICES } from '../../voice/voices.ts';
import { nonPublicReason } from '../../voice/url-safety.ts';
import { AGENT_DEFAULTS, type Agent } from '../../storage/agents.ts';

export const PROMPT_MAX = 16_000;
export const MAX_BOOSTED_KEYWORDS = 50;
export const MAX_EXTRACTION_FIELDS = 20;
/** Limits the spec leaves open; generous, they only stop runaway payloads. */
export const TEXT_LIMITS = {
  welcome_message: 2000,
  fallback_message: 1000,
  transfer_whisper: 2000,
  voicemail_message: 2000,
  boosted_keywords: 5000,
  boosted_keyword: 100,
  webhook_url: 2048,
  extraction_description: 500,
  extraction_enum_value: 100,
  extraction_enum_values: 50,
} as const;

/** Carrier credentials moved to the phone-number import; sending them on an agent is a mistake to flag. */
export const DEPRECATED_FIELDS = ['twilio_account_sid', 'twilio_auth_token'] as const;
/** Read-only fields of the agent response that an update ignores, so a fetched agent can be sent back. */
export const READ_ONLY_FIELDS = ['id', 'agent_id', 'api_key_id', 'created_at', 'updated_at'];

const VOICE_IDS = VOICES.map((v) => v.voice_id) as [string, ...string[]];
const LANGUAGE_CODES = [...LANGUAGES] as [string, ...string[]];

const d = (description: string, extra: Record<string, unknown> = {}) => ({ description, ...extra });

/** A nullable string where "" also clears it: both read back as null. */
const clearable = <T extends z.ZodType<string, string>>(s: T, meta: Record<string, unknown>) =>
  z.preprocess((v) => (v === '' ? null : v), s.nullable().meta({ ...meta, default: null }));

const keywordCount = (s: string): number => s.split(',').filter((w) => w.trim() !== '').length;

export function isIanaZone(tz: string): boolean {
  // Intl also takes offsets such as +01:00 in some versions; only zone names are kept.
  if (!/^[A-Za-z][A-Za-z0-9_+\-]*(\/[A-Za-z0-9_+\-]+)*$/.test(tz) || tz.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * The synchronous part of the target-URL rules (contract.md section 9): https, no
 * credentials, and no loopback, private or link-local address literal. Host names are
 * not resolved here (that would make agent writes wait on DNS); the sender checks the
 * resolved addresses again at delivery time, as it must anyway since DNS can change.
 */
function webhookUrlProblem(value: string, allowPrivate: boolean): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'webhook_url must be an absolute https URL, e.g. https://example.com/hooks/calls.';
  }
  if (/\s/.test(value)) return 'webhook_url must not contain spaces or line breaks.';
  if (url.protocol !== 'https:') return `webhook_url must use https, not ${url.protocol.replace(/:$/, '')}.`;
  if (url.username || url.password) return 'webhook_url must not carry a user name or password; put a token in the path or query instead.';
  if (allowPrivate) return null;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return 'webhook_url must be on a public host, not localhost.';
  const why = isIP(host) === 0 ? null : nonPublicReason(host);
  return why ? `webhook_url points to ${why}; only public hosts are allowed.` : null;
}

const extractionField = z
  .object({
    name: z
      .string()
      .max(64)
      .regex(/^[a-z][a-z0-9_]*$/, 'must be snake_case: a lowercase letter, then lowercase letters, digits or underscores')
      .meta(d('Key of the value in the call record\'s `extracted` object; snake_case, at most 64 characters.')),
    type: z.enum(['string', 'number', 'integer', 'boolean']).meta(d('JSON type of the extracted value.')),
    description: z.string().min(1).max(TEXT_LIMITS.extraction_description).meta(d('What to extract; the analysis model reads it.')),
    enum: z
      .array(z.string().min(1).max(TEXT_LIMITS.extraction_enum_value))
      .min(1)
      .max(TEXT_LIMITS.extraction_enum_values)
      .refine((vs) => new Set(vs).size === vs.length, 'must not repeat a value')
      .optional()
      .meta(d('Allowed values (string fields only).')),
  })
  .strict()
  .refine((f) => f.enum === undefined || f.type === 'string', { message: 'enum is allowed only when type is "string"', path: ['enum'] });

const extractionFields = z
  .array(extractionField)
  .max(MAX_EXTRACTION_FIELDS)
  .superRefine((fields, ctx) => {
    const seen = new Set<string>();
    fields.forEach((f, i) => {
      if (seen.has(f.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `the name "${f.name}" is used twice`, input: f.name });
      seen.add(f.name);
    });
  });

/** Every settable field, optional: create fills the defaults, update keeps the stored values. */
export function agentFieldsSchema(opts: { allowPrivateTargets: boolean }) {
  const D = AGENT_DEFAULTS;
  const fields = z
    .object({
      name: z.string().min(1).max(100).meta(d('Display name, 1 to 100 characters.', { default: D.name })),
      system_prompt: z.string().max(PROMPT_MAX).meta(d('Instructions for the conversation; at most 16000 characters (longer: `prompt_too_long`).', { default: D.system_prompt })),
      welcome_message: z.string().max(TEXT_LIMITS.welcome_message).meta(d('First line spoken on inbound calls.', { default: D.welcome_message })),
      voice_id: z.enum(VOICE_IDS).meta(d('A voice of GET /v1/voices, exact case (else `invalid_voice_id`).', { default: D.voice_id })),
      language: z.enum(LANGUAGE_CODES).meta(d('`multi` follows the caller across English, Spanish, French, German, Italian, Portuguese, Dutch, Hindi, Russian and Japanese; Arabic, Hebrew, Korean, Chinese and Polish need their own code (else `invalid_language`).', { default: D.language })),
      is_active: z.boolean().meta(d('false disables the agent without deleting it.', { default: D.is_active })),
      temperature: z.number().min(0).max(1).meta(d('0 to 1.', { default: D.temperature })),
      response_length: z.enum(['short', 'medium', 'long']).meta({ default: D.response_length }),
      ai_speaks_first: z.boolean().meta(d('The agent greets the caller immediately.', { default: D.ai_speaks_first })),
      dynamic_greeting: z.boolean().meta(d('The AI improvises the greeting per call instead of the welcome message.', { default: D.dynamic_greeting })),
      interruption_sensitivity: z.number().int().min(0).max(100).meta(d('0 to 100; lower means harder to interrupt.', { default: D.interruption_sensitivity })),
      response_eagerness: z.number().int().min(0).max(1000).meta(d('Milliseconds the agent waits after the caller stops speaking, 0 to 1000.', { default: D.response_eagerness })),
      boosted_keywords: clearable(
        z
          .string()
          .max(TEXT_LIMITS.boosted_keywords)
          .refine((s) => keywordCount(s) <= MAX_BOOSTED_KEYWORDS, `can list at most ${MAX_BOOSTED_KEYWORDS} comma-separated keywords`)
          .refine((s) => s.split(',').every((w) => w.trim().length <= TEXT_LIMITS.boosted_keyword), `each keyword can be at most ${TEXT_LIMITS.boosted_keyword} characters`),
        d('Comma-separated words speech recognition might mishear, at most 50.'),
      ),
      pickup_delay: z.number().int().min(5).max(30).meta(d('Seconds the agent waits after pickup before speaking, 5 to 30.', { default: D.pickup_delay })),
      max_call_duration_seconds: z.number().int().min(60).max(1800).meta(d('Hard cap on call length, 60 to 1800.', { default: D.max_call_duration_seconds })),
      silence_hangup_seconds: z.number().int().min(5).max(45).meta(d('Hang up after this many seconds of caller silence, 5 to 45.', { default: D.silence_hangup_seconds })),
      record_call: z.boolean().meta(d('Save call audio (kept 90 days); a number can override it.', { default: D.record_call })),
      recording_source: z.enum(['provider', 'platform']).meta(d('`provider`: the carrier records the whole call; `platform`: the voice engine records the conversation (a transfer is not included). Anything else: `invalid_recording_source`.', { default: D.recording_source })),
      amd_enabled: z.boolean().meta(d('Carrier answering-machine detection on outbound calls with a fast hang-up and no message. When false the agent screens the call itself (beep, greeting words, one model classification) before it greets, and can leave the number’s voicemail_message.', { default: D.amd_enabled })),
      dtmf_enabled: z
        .boolean()
        .nullable()
        .meta(d('Callers may type digits: each entry (up to a 1.5 s pause or `#`) reaches the model as "The caller pressed … on the keypad." null means not set (off). A number can override it.', { default: null })),
      require_booking_confirmation: z.boolean().meta(d('Read the appointment back and wait for a clear yes before any calendar change.', { default: D.require_booking_confirmation })),
      webhook_url: clearable(
        z
          .string()
          .max(TEXT_LIMITS.webhook_url)
          .superRefine((s, ctx) => {
            const problem = webhookUrlProblem(s, opts.allowPrivateTargets);
            if (problem) ctx.addIssue({ code: 'custom', message: problem, input: s });
          }),
        d('Where post-call data is POSTed: https on a public host (else `invalid_url`).'),
      ),
      func_end_call: z.boolean().meta(d('The agent can end the call cleanly.', { default: D.func_end_call })),
      transfer_whisper: clearable(
        z.string().max(TEXT_LIMITS.transfer_whisper),
        d('Warm-transfer briefing, heard by the person who answers before the caller is connected (never by the caller); null: the AI writes one from the conversation.'),
      ),
      func_send_sms: z.boolean().meta(d('Accepted and returned; has no effect.', { default: D.func_send_sms })),
      incall_sms_enabled: z.boolean().meta(d('The agent may text the caller during a call and send booking confirmations by text.', { default: D.incall_sms_enabled })),
      func_cold_transfer: z.boolean().meta(d('Accepted and returned; has no effect.', { default: D.func_cold_transfer })),
      transfer_type: z
        .enum(['cold', 'warm'])
        .meta(
          d(
            'Applies to inbound, outbound and batch calls by this agent. `cold`: the caller is handed to the number and the AI leaves the call. `warm`: the caller holds (hold audio), ' +
              'the number is dialed, the person who answers hears the whisper, then the two are connected. Transfers are offered to the model only when the ' +
              'prompt mentions transferring (README "Transfers"); the meter stops at the handoff (`charged_minutes`, `ended_reason` `transferred`).',
            { default: D.transfer_type },
          ),
        ),
      transfer_number: clearable(
        z.string().regex(E164, 'must be E.164, e.g. +14155550123'),
        d('Default transfer destination, E.164 (else `invalid_phone_format`). The model may name another number only when the prompt writes it (+… form).'),
      ),
      voice_speed: z.number().meta(d('Ignored; accepted and returned for backwards compatibility.', { default: D.voice_speed })),
      speaking_rate: z
        .number()
        .nullable()
        .meta(d('1 is normal speed; values outside 0.5 to 1.5 are clamped to the nearest limit. null (normal speed) is kept distinct from 1. A number can override it.', { default: null }))
        .transform((v) => (v === null ? null : Math.min(1.5, Math.max(0.5, v)))),
      greet_by_name: z.boolean().meta(d('Greet a recognised returning caller by the name on file.', { default: D.greet_by_name })),
      fallback_message: z.string().max(TEXT_LIMITS.fallback_message).meta(d('Said when transcription fails.', { default: D.fallback_message })),
      phone_number: clearable(z.string().regex(E164, 'must be E.164, e.g. +14155550123'), d('Legacy, stored and returned only; numbers are managed through /v1/phone-numbers.')),
      voicemail_leave_enabled: z.boolean().meta(d('Speak voicemail_message on a detected answering machine, then hang up; applies to numbers an operator added with the admin command (`source: dashboard`) that have no voicemail setting of their own. API-imported numbers (`source: api`) use only their own voicemail_leave_enabled. Needs a non-empty voicemail_message (else `voicemail_message_required`).', { default: D.voicemail_leave_enabled })),
      voicemail_message: clearable(z.string().max(TEXT_LIMITS.voicemail_message), d('Spoken word for word on a detected voicemail.')),
      timezone: clearable(z.string().refine(isIanaZone, 'must be an IANA time zone such as America/New_York'), d('IANA time zone of the agent, e.g. America/New_York (else `invalid_timezone`).')),
      extraction_fields: extractionFields.meta(d(`Values post-call analysis extracts into the call record's \`extracted\`; at most ${MAX_EXTRACTION_FIELDS}.`, { default: [] })),
    })
    .partial()
    .strict();

  return z.preprocess((input, ctx) => {
    // Flagged before anything else: the fix (move them to the number import) beats any other complaint.
    if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
      for (const f of DEPRECATED_FIELDS) {
        if (Object.hasOwn(input, f)) {
          ctx.addIssue({
            code: 'custom',
            path: [f],
            message: `${f} is no longer an agent field: send carrier credentials with the phone number import (POST /v1/phone-numbers).`,
            input: (input as Record<string, unknown>)[f],
          });
        }
      }
    }
    return input;
  }, fields);
}

export type AgentBody = z.output<ReturnType<typeof agentFieldsSchema>>;

/** zod issues on these fields answer with the field's own code instead of invalid_request. */
export const AGENT_FIELD_CODES: FieldCodes = {
  twilio_account_sid: { '*': 'deprecated_field' },
  twilio_auth_token: { '*': 'deprecated_field' },
  system_prompt: { too_big: 'prompt_too_long' },
  voice_id: { '*': 'invalid_voice_id' },
  language: { '*': 'invalid_language' },
  recording_source: { '*': 'invalid_recording_source' },
  timezone: { '*': 'invalid_timezone' },
  webhook_url: { '*': 'invalid_url' },
  transfer_number: { '*': 'invalid_phone_format' },
  phone_number: { '*': 'invalid_phone_format' },
};

const extractionFieldView = z.object({
  name: z.string(),
  type: z.enum(['string', 'number', 'integer', 'boolean']),
  description: z.string(),
  enum: z.array(z.string()).optional(),
});

const nullableString = () => z.string().nullable();

export const agentView = z
  .object({
    id: z.uuid().meta(d('Internal identifier.')),
    agent_id: z.string().meta(d('The identifier every other operation uses.', { example: 'agent_3x9QeYbJw1mZkR2aTt8uVn4s' })),
    api_key_id: z.string().meta(d('The key that created the agent.')),
    name: z.string(),
    system_prompt: z.string(),
    welcome_message: z.string(),
    voice_id: z.string(),
    language: z.string(),
    is_active: z.boolean(),
    temperature: z.number(),
    response_length: z.enum(['short', 'medium', 'long']),
    ai_speaks_first: z.boolean(),
    dynamic_greeting: z.boolean(),
    interruption_sensitivity: z.number().int(),
    response_eagerness: z.number().int().meta(d('Milliseconds.')),
    boosted_keywords: nullableString(),
    pickup_delay: z.number().int().meta(d('Seconds.')),
    max_call_duration_seconds: z.number().int(),
    silence_hangup_seconds: z.number().int(),
    record_call: z.boolean(),
    recording_source: z.enum(['provider', 'platform']),
    amd_enabled: z.boolean(),
    dtmf_enabled: z.boolean().nullable().meta(d('null: not set.')),
    require_booking_confirmation: z.boolean(),
    webhook_url: nullableString(),
    func_end_call: z.boolean(),
    transfer_whisper: nullableString(),
    func_send_sms: z.boolean().meta(d('No effect.')),
    incall_sms_enabled: z.boolean(),
    func_cold_transfer: z.boolean().meta(d('No effect.')),
    transfer_type: z.enum(['cold', 'warm']),
    transfer_number: nullableString(),
    voice_speed: z.number().meta(d('Ignored.')),
    speaking_rate: z.number().nullable().meta(d('Clamped to 0.5 to 1.5; null is normal speed.')),
    greet_by_name: z.boolean(),
    fallback_message: z.string(),
    phone_number: nullableString().meta(d('Legacy.')),
    voicemail_leave_enabled: z.boolean(),
    voicemail_message: nullableString(),
    timezone: nullableString().meta(d('IANA time zone.')),
    extraction_fields: z.array(extractionFieldView),
    created_at: z.string().meta(d('ISO 8601 UTC.')),
    updated_at: z.string().meta(d('ISO 8601 UTC.')),
  })
  .meta({ description: 'An agent. Never includes carrier credentials.' });

export const agentSummaryView = z.object({
  agent_id: z.string(),
  name: z.string(),
  language: z.string(),
  voice_id: z.string(),
  is_active: z.boolean(),
  created_at: z.string(),
});

/** The agent as the API shows it: account id out, times as ISO 8601. */
export function viewAgent(a: Agent): z.output<typeof agentView> {
  const { account_id: _account, id, agent_id, api_key_id, name, is_active, created_at, updated_at, ...settings } = a;
  return { id, agent_id, api_key_id, name, is_active, ...settings, created_at: isoTime(created_at), updated_at: isoTime(updated_at) };
}

export function viewAgentSummary(a: Agent): z.output<typeof agentSummaryView> {
  return { agent_id: a.agent_id, name: a.name, language: a.language, voice_id: a.voice_id, is_active: a.is_active, created_at: isoTime(a.created_at) };
}
