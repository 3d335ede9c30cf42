// The SMS API's schemas (issue 21, api.md "SMS", contract.md 4, 8 and 11): the bodies of a
// single send and of an SMS campaign's create and PATCH, the codes their failures answer
// with, and the message and campaign records. Campaign recipients' numbers are judged by
// sms-routes' recipient check (libphonenumber-js), not here.
import { z } from 'zod';
import type { FieldCodes } from '../validation.ts';
import { e164 } from '../schemas.ts';
import { SMS_PROMPT_MAX } from './phone-number-schema.ts';

export const SMS_LIMITS = {
  /** api.md Limits: an SMS body. */
  body: 1600,
  /** api.md Limits: SMS campaign recipients. */
  recipients: 10_000,
  name: 200,
  agentId: 200,
  phone: 64,
  contextPrompt: SMS_PROMPT_MAX,
  /** Replies within this many hours of a campaign text use its context_prompt (default 72; at most 30 days). */
  replyWindowHoursMax: 720,
  variableNames: 50,
  variableName: 64,
  variableValue: 1000,
} as const;

export const DEFAULT_REPLY_WINDOW_HOURS = 72;

const d = (description: string, extra: Record<string, unknown> = {}) => ({ description, ...extra });

const isoDate = z
  .string()
  .refine((s) => !Number.isNaN(Date.parse(s)) && /^\d{4}-\d{2}-\d{2}T/.test(s), 'must be an ISO 8601 date-time with a zone, e.g. 2026-12-01T15:00:00Z');

// ---- Single send ------------------------------------------------------------------

/**
 * Not strict: contract.md 11 answers `to_number` (the voice API's name) with
 * `missing_field` for `to`, so an unknown field is ignored rather than reported first.
 */
export const smsSendBody = z
  .object({
    from_number: e164().meta(d('The sending number: one of yours, on either carrier.')),
    to: e164().meta(d('The recipient, E.164. (Not `to_number`.)')),
    body: z.string().min(1).max(SMS_LIMITS.body).meta(d(`The text, 1 to ${SMS_LIMITS.body} characters.`)),
    agent_id: z.string().max(SMS_LIMITS.agentId).optional().meta(d('The agent the message is recorded under (and whose prompt answers replies); default the number’s agent.')),
  })
  .meta(d('One SMS. Fields other than these are ignored.'));

export const smsSendFieldCodes: FieldCodes = {
  from_number: { invalid_format: 'invalid_phone_format' },
  to: { invalid_format: 'invalid_phone_format' },
  body: { too_big: 'message_too_long', too_small: 'missing_field' },
};

export const SMS_STATUSES = ['queued', 'sending', 'sent', 'delivered', 'undelivered', 'failed', 'cancelled', 'received'] as const;
export const SMS_ORIGINS = ['api', 'campaign', 'reply', 'call', 'booking', 'opt_out', 'inbound'] as const;

export const smsMessage = z.object({
  message_id: z.string().meta(d('`msg_…`')),
  from: z.string(),
  to: z.string(),
  body: z.string(),
  status: z.enum(SMS_STATUSES).meta(
    d(
      '`queued`: stored, waiting for its turn on the sending number (1 per second per number). `sending`: asked of the carrier, its answer not known yet ' +
        '(a lost answer is reconciled with the carrier’s own list, never sent twice). `sent`: the carrier took it. `delivered` / `undelivered`: the carrier’s delivery report. ' +
        '`failed`: refused (see error_code). `cancelled`: its campaign was cancelled before its turn. `received`: an inbound text.',
    ),
  ),
  direction: z.enum(['inbound', 'outbound']),
  origin: z.enum(SMS_ORIGINS).meta(d('What sent it: `api` (POST /v1/sms), `campaign`, `reply` (the SMS agent), `call` (send_sms during a call), `booking` (a booking confirmation), `opt_out` (the STOP/START confirmation), `inbound`.')),
  agent_id: z.string().nullable(),
  campaign_id: z.string().nullable(),
  call_id: z.string().nullable(),
  error_code: z.string().nullable().meta(d('Why it failed: `recipient_unsubscribed`, `sms_not_supported_in_region`, `carrier_unreachable`, `carrier_refused`, or the carrier’s delivery error code.')),
  error_message: z.string().nullable(),
  created_at: z.string(),
  sent_at: z.string().nullable().meta(d('When the carrier took it.')),
  updated_at: z.string().nullable(),
});

export const smsListQuery = z.object({
  phone_number: e164().optional().meta(d('Messages from or to this number.')),
  direction: z.enum(['inbound', 'outbound']).optional(),
});

// ---- Campaigns --------------------------------------------------------------------

const variables = z
  .record(z.string().min(1).max(SMS_LIMITS.variableName), z.union([z.string().max(SMS_LIMITS.variableValue), z.number(), z.boolean()]))
  .refine((v) => Object.keys(v).length <= SMS_LIMITS.variableNames, `at most ${SMS_LIMITS.variableNames} variables`)
  .meta(d('Values for the template’s `{{name}}` placeholders; flat strings, numbers or booleans.'));

const recipient = z
  .object({
    phone: z.string().max(SMS_LIMITS.phone).meta(d('E.164, checked against its country’s numbering rules (libphonenumber-js). A number repeated in the list is texted once.')),
    variables: variables.optional(),
  })
  .strict();
export type SmsRecipientInput = z.output<typeof recipient>;

const recipients = z.array(recipient).max(SMS_LIMITS.recipients).meta(d(`1 to ${SMS_LIMITS.recipients} recipients (over: \`too_many_recipients\`).`));
const template = z.string().min(1).max(SMS_LIMITS.body);
const contextPrompt = z.string().max(SMS_LIMITS.contextPrompt).nullable();
const replyWindow = z.number().int().min(1).max(SMS_LIMITS.replyWindowHoursMax);

export const smsCampaignBody = z
  .object({
    agent_id: z.string().max(SMS_LIMITS.agentId).meta(d('The agent whose prompt answers replies; must be yours (else `agent_not_owned`).')),
    from_number: e164().meta(d('Any number of yours on either carrier (else `from_number_not_owned`).')),
    name: z.string().min(1).max(SMS_LIMITS.name),
    message_template: template.optional().meta(d(`The text, with \`{{variable}}\` placeholders (a missing variable renders empty); at most ${SMS_LIMITS.body} characters, also once filled in (else \`message_too_long\`).`)),
    body: template.optional().meta(d('Another name for `message_template` (contract.md 1).')),
    recipients,
    schedule_type: z.enum(['now', 'schedule', 'draft']).meta(d('`now` sends at once; `schedule` at `scheduled_at`; `draft` sends nothing until launched.')),
    scheduled_at: isoDate.optional().meta(d('When schedule_type is `schedule` (else `invalid_schedule`); a time already past sends at once.')),
    context_prompt: contextPrompt.optional().meta(d(`Instructions for the agent answering replies to this campaign; at most ${SMS_LIMITS.contextPrompt} characters.`)),
    reply_window_hours: replyWindow.optional().meta(d(`Replies within this many hours of the campaign’s text are answered with its context_prompt; default ${DEFAULT_REPLY_WINDOW_HOURS}.`)),
  })
  .strict();

export const smsCampaignPatch = z
  .object({
    name: z.string().min(1).max(SMS_LIMITS.name).optional(),
    message_template: template.optional(),
    body: template.optional(),
    recipients: recipients.optional().meta(d('Replaces the whole list.')),
    context_prompt: contextPrompt.optional().meta(d('The only field editable after launch.')),
    scheduled_at: isoDate.optional(),
    reply_window_hours: replyWindow.optional(),
  })
  .strict();

export const smsCampaignFieldCodes: FieldCodes = {
  recipients: { too_big: 'too_many_recipients' },
  message_template: { too_big: 'message_too_long', too_small: 'missing_field' },
  body: { too_big: 'message_too_long', too_small: 'missing_field' },
  scheduled_at: { '*': 'invalid_schedule' },
  from_number: { invalid_format: 'from_number_not_owned' },
};

export const SMS_CAMPAIGN_STATUSES = ['draft', 'scheduled', 'running', 'done', 'cancelled'] as const;

export const smsCampaignRecord = z.object({
  campaign_id: z.string().meta(d('`smscamp_…`')),
  agent_id: z.string(),
  name: z.string(),
  status: z.enum(SMS_CAMPAIGN_STATUSES),
  total_count: z.number().int(),
  delivered_count: z.number().int().meta(d('Accepted by the carrier and not failed since.')),
  failed_count: z.number().int().meta(d('Refused (an unsubscribed recipient, the carrier’s refusal) or failed later.')),
  pending_count: z.number().int().meta(d('Not accepted by the carrier (yet); includes cancelled ones. delivered + failed + pending = total.')),
  cancelled_count: z.number().int().meta(d('Of the pending ones, those a cancel stopped: never sent.')),
  source: z.string().meta(d('`api` for campaigns created through this API.')),
  from_number: z.string(),
  message_template: z.string(),
  schedule_type: z.enum(['now', 'schedule', 'draft']),
  scheduled_at: z.string().nullable(),
  context_prompt: z.string().nullable(),
  reply_window_hours: z.number().int(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});

export const smsCampaignList = z.object({ campaigns: z.array(smsCampaignRecord), count: z.number().int(), limit: z.number().int(), offset: z.number().int() });
export const smsCampaignLaunched = z.object({
  campaign_id: z.string(),
  status: z.literal('running'),
  total_count: z.number().int(),
  pending_count: z.number().int(),
  delivered_count: z.number().int(),
  failed_count: z.number().int(),
});
export const smsCampaignCancelled = z.object({ campaign_id: z.string(), deleted: z.literal(true), cancelled_count: z.number().int() });
