// The calls API's schemas and views: the outbound request (checked in api.md's order),
// the list query, the list shape and the full record of contract.md §6.
import { z } from 'zod';
import type { FieldCodes } from '../validation.ts';
import { E164, isoOrNull, isoTime, pagination, queryBool, queryDate } from '../schemas.ts';
import { precallRecordView, precallView } from './precall-schema.ts';
import { bookingView, type BookingView } from './booking-schema.ts';
import type { CallRow } from '../../storage/calls.ts';
import { CALL_STATUSES, ENDED_REASONS } from '../../machines/call-events.ts';

/**
 * The longest prompt a call may carry once its `{name}` references are filled from
 * dynamic_vars. Without it, 5000 references to one 1 MB variable asked for a 5 GB string
 * (a 500 when V8 refused it, and hundreds of MB held and sealed per call below that).
 */
export const MAX_FILLED_PROMPT = 32_000;

/**
 * The length of `prompt` with `{name}` replaced by dynamic_vars[name], counted without
 * building it: the substitution of fillPrompt (voice/conversation/fill-prompt.ts), a reference without a
 * key staying as written.
 */
export function filledPromptLength(prompt: string, vars: Record<string, string>): number {
  let length = prompt.length;
  for (const m of prompt.matchAll(/\{([^{}]+)\}/g)) {
    if (Object.hasOwn(vars, m[1]!)) length += vars[m[1]!]!.length - m[0].length;
  }
  return length;
}

const present = (hint: string) =>
  z.any().refine((v) => v !== undefined && v !== null, { message: `is required; ${hint}` });

/**
 * Step (1) of api.md's order runs first, on its own: agent_id, to_number and prompt
 * present and prompt not blank. Only then are types, the E.164 shape of to_number and
 * unknown fields checked, so `{to: …}` instead of `{to_number: …}` is missing_field for
 * to_number, not an unknown field.
 */
const presence = z
  .looseObject({
    agent_id: present('send the agent that places the call.').meta({ type: 'string', description: 'The agent that talks on the call; must be yours.' }),
    to_number: present('send the number to call in E.164 as to_number (not to).').meta({
      type: 'string',
      description: 'The number to call, E.164 (e.g. +14155550123). The field is `to_number`; `to` is rejected as missing to_number.',
    }),
    prompt: present('send the purpose of this call.')
      .refine((v) => typeof v !== 'string' || v.trim() !== '', { message: 'must not be blank; say what this call is for.' })
      .meta({ type: 'string', maxLength: 16000, description: 'The purpose of this call, for this call only: stored nowhere (not in the call record). At most 16000 characters.' }),
    dynamic_vars: z.any().optional().meta({
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        'Each `{name}` in the prompt is replaced by the value of `name`; a reference with no key stays as written. ' +
        `The prompt with the values filled in can be at most ${MAX_FILLED_PROMPT} characters (invalid_request naming dynamic_vars).`,
    }),
    from_number: z.any().optional().meta({
      type: 'string',
      description: "The dialing number: an outbound-enabled number of this agent. Default: the agent's first (oldest) outbound-enabled number.",
    }),
    campaign_id: z.any().optional().meta({ type: 'string', description: 'Links the call to a batch campaign for reporting.' }),
  })
  .meta({ additionalProperties: false });

/** Step (2): the E.164 shape of to_number, before any other type or unknown-field problem. */
const e164Step = z.looseObject({
  to_number: z.string().regex(E164, 'must be E.164: a leading + and country code, e.g. +14155550123'),
});

const typed = z
  .object({
    agent_id: z.string().max(200),
    to_number: z.string(),
    prompt: z.string().max(16_000),
    dynamic_vars: z.record(z.string(), z.string()).optional(),
    from_number: z.string().max(32).optional(),
    campaign_id: z.string().max(200).optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    const length = filledPromptLength(b.prompt, b.dynamic_vars ?? {});
    if (length > MAX_FILLED_PROMPT) {
      ctx.addIssue({
        code: 'custom',
        path: ['dynamic_vars'],
        message: `The prompt with dynamic_vars filled in would be ${length} characters; it can be at most ${MAX_FILLED_PROMPT}.`,
      });
    }
  });

export type OutboundBody = z.infer<typeof typed>;
// The stages accept anything the one before let through; the casts only tell TypeScript so.
export const outboundBody = presence.pipe(e164Step as z.ZodType<unknown, any>).pipe(typed as z.ZodType<OutboundBody, any>);

export const outboundFieldCodes: FieldCodes = {
  agent_id: { custom: 'missing_field' },
  prompt: { custom: 'missing_field' },
  to_number: { custom: 'missing_field', invalid_type: 'invalid_phone_format', invalid_format: 'invalid_phone_format' },
};

export const outboundCreated = z.object({
  call_id: z.string().meta({
    description:
      "The carrier's call id (carrier A CallSid, carrier B call_control_id); a call that had to wait for a slot keeps a `call_…` id for life.",
  }),
  status: z.enum(['initiated', 'queued']),
  to: z.string(),
  from: z.string(),
});

export const listQuery = z.object({
  ...pagination,
  agent_id: z.string().optional().meta({ description: 'Only calls of this agent.' }),
  direction: z.enum(['inbound', 'outbound']).optional(),
  since: queryDate().optional().meta({ description: 'Calls that started (or, never connected, were created) at or after this time.' }),
  until: queryDate().optional().meta({ description: 'Calls that started (or were created) before this time.' }),
  caller_sentiment: z.enum(['happy', 'neutral', 'frustrated']).optional(),
  call_successful: queryBool().optional(),
  voicemail_detected: queryBool().optional(),
  campaign_id: z.string().optional().meta({ description: 'Only calls of this batch campaign.' }),
  phone_number: z.string().optional().meta({ description: 'Only calls on this number of yours (the from number outbound, the to number inbound).' }),
});

/** How the caller reached the agent: `web` for a browser's web call (its row's provider is `web`), `phone` for every carrier call. */
export const channelOf = (r: Pick<CallRow, 'provider'>): 'phone' | 'web' => (r.provider === 'web' ? 'web' : 'phone');
const channel = z.enum(['phone', 'web']).meta({
  description:
    '`web`: a web call from a browser (POST /v1/web-calls): `direction` is `inbound` (the person called the agent), `from_number` is `"web"`, `to_number` the number it was made on or `"web"` when made to an agent. `phone`: a call through a carrier.',
});

const durationSeconds = (r: CallRow): number | null => (r.duration_ms === null ? null : Math.ceil(r.duration_ms / 1000));
const bool = (v: number | null): boolean | null => (v === null ? null : v === 1);

export const listItem = z.object({
  call_id: z.string(),
  agent_id: z.string().nullable(),
  direction: z.enum(['inbound', 'outbound']),
  channel,
  from_number: z.string(),
  to_number: z.string(),
  started_at: z.string().nullable().meta({ description: 'When the call connected; null if it never did.' }),
  ended_at: z.string().nullable(),
  duration_seconds: z.number().int().nullable().meta({ description: 'Connected seconds, rounded up; null while the call is live.' }),
  ended_reason: z.string().nullable(),
  call_summary: z.string().nullable(),
  caller_sentiment: z.string().nullable(),
  call_successful: z.boolean().nullable(),
  recording_url: z.string().nullable(),
});

export function listItemView(r: CallRow) {
  return {
    call_id: r.call_id,
    agent_id: r.agent_id,
    direction: r.direction,
    channel: channelOf(r),
    from_number: r.from_number,
    to_number: r.to_number,
    started_at: isoOrNull(r.started_at),
    ended_at: isoOrNull(r.ended_at),
    duration_seconds: durationSeconds(r),
    ended_reason: r.ended_reason,
    call_summary: r.summary,
    caller_sentiment: r.sentiment,
    call_successful: bool(r.successful),
    recording_url: r.recording_url,
  };
}

export const callRecord = z.object({
  call_id: z.string(),
  agent_id: z.string().nullable(),
  direction: z.enum(['inbound', 'outbound']),
  channel,
  call_status: z.enum(CALL_STATUSES),
  from_number: z.string(),
  to_number: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  duration_ms: z.number().int().nullable().meta({ description: 'Connected time in ms (0 if it never connected); null while live. Billing is based on it.' }),
  duration_seconds: z.number().int().nullable(),
  ended_reason: z.enum(ENDED_REASONS).nullable().meta({
    description:
      '`media_lost`: the call was up when the service restarted and lost its media. `precall_rejected`: the pre-call webhook answered `reject` (call_status `canceled`); `transferred` with `precall.action` `transfer`: handed to the number it gave before the agent answered. `provider_not_configured`: no model, speech-to-text or text-to-speech credentials are configured, so the call was ended at once instead of left silent. `provider_error`: a provider failed mid-call and retrying did not help (the agent apologised first where it still could).',
  }),
  charged_minutes: z.number().meta({ description: 'Connected seconds rounded up to the second, /60, rounded to 2 decimals.' }),
  transcript: z.string().nullable().meta({
    description:
      'The conversation as newline-separated lines prefixed `Agent: ` and `Caller: `, written as each line is final. An interrupted reply keeps only the words the caller heard. Null before the first line.',
  }),
  summary: z.string().nullable().meta({ description: 'Post-call analysis: what happened, in two or three sentences. Null until the analysis is done, when it failed, or when there was no conversation.' }),
  sentiment: z.enum(['happy', 'neutral', 'frustrated']).nullable().meta({ description: "Post-call analysis: the caller's mood (the list's `caller_sentiment`, and its filter)." }),
  successful: z.boolean().nullable().meta({ description: 'Post-call analysis: whether the call achieved its purpose (the list\'s `call_successful`, and its filter).' }),
  extracted: z.record(z.string(), z.unknown()).nullable().meta({
    description: "Post-call analysis: one key per the agent's `extraction_fields` (null when the call did not tell); null when the agent has none, or the analysis failed.",
  }),
  bookings: z.array(bookingView).meta({ description: 'Calendar changes made during the call through the number\'s CRM, in order; empty when none.' }),
  recording_url: z.string().nullable().meta({
    description:
      'The recording’s public link (`GET /recordings/{file}`, no API key); null when the call was not recorded, and while its recording is not stored yet. ' +
      'It is set once the recording is stored, normally before `call.completed`. When the operator keeps recordings in a bucket (RECORDINGS_BUCKET_URL) ' +
      'that has not confirmed the upload within the wait (30 s after the agent’s leg for `platform`, a minute after the call’s end for `provider`), ' +
      '`call.completed` goes with `recording_url` null, the upload is retried, and the link appears on this record once the bucket confirms it (no further event).',
  }),
  recording_duration_seconds: z.number().nullable(),
  voicemail_detected: z.boolean().meta({ description: 'Outbound calls: an answering machine answered (found by carrier AMD, or by the agent’s own screen when amd_enabled is false); ended_reason is then voicemail_detected.' }),
  campaign_id: z.string().nullable(),
  avg_latency_ms: z.number().nullable().meta({
    description: 'Mean of the turns’ latency: from the caller’s end of speech to the first audio frame of the agent’s reply sent to the carrier. Null before the first measured turn.',
  }),
  analysis_status: z.enum(['pending', 'done', 'failed']).meta({
    description:
      '`pending` until the post-call analysis has an outcome (a moment after the call ends; up to three attempts, about 35 s apart at most); `done` with the analysis fields, or with them null when the caller said nothing to analyse; `failed` when the model gave no valid answer in three attempts (the fields stay null). `call.completed` goes out once it is `done` or `failed`.',
  }),
  created_at: z.string(),
  precall: precallView,
});

export function callRecordView(r: CallRow) {
  return {
    call_id: r.call_id,
    agent_id: r.agent_id,
    direction: r.direction,
    channel: channelOf(r),
    call_status: r.call_status,
    from_number: r.from_number,
    to_number: r.to_number,
    started_at: isoOrNull(r.started_at),
    ended_at: isoOrNull(r.ended_at),
    duration_ms: r.duration_ms,
    duration_seconds: durationSeconds(r),
    ended_reason: r.ended_reason,
    charged_minutes: r.charged_minutes,
    transcript: r.transcript,
    summary: r.summary,
    sentiment: r.sentiment,
    successful: bool(r.successful),
    extracted: r.extracted === null ? null : (JSON.parse(r.extracted) as Record<string, unknown>),
    bookings: JSON.parse(r.bookings) as BookingView[],
    recording_url: r.recording_url,
    recording_duration_seconds: r.recording_duration_seconds,
    voicemail_detected: r.voicemail_detected === 1,
    campaign_id: r.campaign_id,
    avg_latency_ms: r.avg_latency_ms,
    analysis_status: r.analysis_status,
    created_at: isoTime(r.created_at),
    precall: precallRecordView(r.precall),
  };
}
