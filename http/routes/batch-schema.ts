// The batch campaign API's schemas (issue 20): the body of POST /v1/calls/batch, the
// codes its failures answer with, and the answers of create, get, list, launch and
// cancel (contract.md §7). Recipient phone numbers are not judged here: a row with a
// missing, malformed, unreal or repeated number is a reason in the answer, not a body
// error (batch-recipients.ts `checkRecipients`); this schema only checks that each row
// has the right shape.
import { z } from 'zod';
import type { FieldCodes } from '../validation.ts';
import { E164 } from '../schemas.ts';
import { isIanaZone, PROMPT_MAX } from './agent-schema.ts';
import { filledPromptLength, MAX_FILLED_PROMPT } from './call-schema.ts';

/**
 * Limits of the batch body. api.md states none for batch recipients; 10,000 is the SMS
 * campaign's limit, applied to the rows of the request (valid or not), so a request is
 * bounded before a number is checked. The rest are the spec's limits for the same kind
 * of text elsewhere, or generous bounds that only stop runaway payloads.
 */
export const BATCH_LIMITS = {
  /** Rows of `recipients`, valid or not (else `too_many_recipients`). */
  recipients: 10_000,
  /** The outbound call prompt's limit. */
  prompt: PROMPT_MAX,
  promptOverride: PROMPT_MAX,
  /** The agent name's limit. */
  name: 100,
  agentId: 200,
  /** Longer than any phone number however it is written. */
  phone: 64,
  variableNames: 50,
  variableName: 64,
  variableValue: 1000,
  /** Names and values of one recipient's variables, counted as text. */
  variablesChars: 8000,
  /** Far above every plan's concurrency (10, 25, 100): the campaign runs at min(account limit, max_concurrent). */
  maxConcurrent: 1000,
} as const;

export const WINDOW_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type WindowDay = (typeof WINDOW_DAYS)[number];
/**
 * Window minutes, as machines/calling-window.ts takes them: a start is a time of day,
 * 00:00 (0) to 23:59 (1439); an end may also be 1440, the midnight that ends the day.
 */
export const LAST_START_MINUTE = 1439;
export const LAST_END_MINUTE = 1440;
export const INVALID_REASONS = ['missing', 'invalid_format', 'invalid_number', 'duplicate'] as const;
export type InvalidReason = (typeof INVALID_REASONS)[number];

const d = (description: string, extra: Record<string, unknown> = {}) => ({ description, ...extra });

/** A real day of the Gregorian calendar, `YYYY-MM-DD`, from 2000 on. */
function isCalendarDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [y, mo, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 2000 || mo < 1 || mo > 12 || day < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]!;
  return day <= days;
}

/** The zone's canonical IANA name (`us/eastern` → `America/New_York`); only called on a valid zone. */
const canonicalZone = (tz: string): string => new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;

const variableValue = z.union([z.string().max(BATCH_LIMITS.variableValue), z.number(), z.boolean()], {
  error: 'must be a string, number or boolean (variables are flat: no objects, arrays or null)',
});

const variables = z
  .record(z.string().min(1).max(BATCH_LIMITS.variableName), variableValue, {
    error: (issue) => (issue.code === 'invalid_key' ? `variable names must be 1 to ${BATCH_LIMITS.variableName} characters` : undefined),
  })
  .meta(
    d(
      "Facts about this recipient, given to the agent as context for the call (e.g. `{\"first_name\": \"Ada\", \"balance\": 42.5}`): no placeholders needed in the prompt; a `{name}` in the prompt is also filled with the value of `name`. " +
        `Flat: each value a string (at most ${BATCH_LIMITS.variableValue} characters), number or boolean. At most ${BATCH_LIMITS.variableNames} names of 1 to ${BATCH_LIMITS.variableName} characters, ${BATCH_LIMITS.variablesChars} characters of names and values in all, ` +
        `and the prompt with the values filled in at most ${MAX_FILLED_PROMPT} characters.`,
    ),
  );
export type RecipientVariables = z.output<typeof variables>;

const recipient = z
  .object({
    phone: z
      .string()
      .max(BATCH_LIMITS.phone)
      .nullable()
      .optional()
      .meta(
        d(
          'The number to call, E.164 (e.g. +14155550123), checked against the numbering rules of its country (libphonenumber-js). Surrounding spaces are ignored. ' +
            'A row without a phone, or with one that is not E.164, not a real number or a repeat of an earlier row, is listed in `invalid` with its reason.',
        ),
      ),
    variables: variables.optional(),
    prompt_override: z
      .string()
      .max(BATCH_LIMITS.promptOverride)
      .optional()
      .meta(d(`Replaces the campaign's prompt for this recipient; at most ${BATCH_LIMITS.promptOverride} characters, not blank.`)),
  })
  .strict()
  .meta(d('One number to call.'));
export type BatchRecipient = z.output<typeof recipient>;

/** The body's fields, typed: required ones plain, so the document lists them as required. */
const fields = {
  agent_id: z.string().max(BATCH_LIMITS.agentId).meta(d('The agent that talks on every call; must be yours.')),
  prompt: z
    .string()
    .max(BATCH_LIMITS.prompt)
    .meta(d(`The purpose of every call (a recipient's \`prompt_override\` replaces it for that recipient); at most ${BATCH_LIMITS.prompt} characters, not blank (else \`missing_field\`).`)),
  name: z
    .string()
    .max(BATCH_LIMITS.name)
    .refine((s) => s.trim() !== '', 'name must not be blank; leave it out for a campaign without a name.')
    .optional()
    .meta(d(`Display name, 1 to ${BATCH_LIMITS.name} characters, not blank.`, { minLength: 1 })),
  from_number: z
    .string()
    .regex(E164, 'must be E.164, e.g. +14155550123: a number imported on your account and attached to this agent')
    .meta(d('The dialing number, E.164: imported on your account and attached to this agent. Missing or not E.164: `campaign_creation_failed`, like one that is not yours or is on another agent.')),
  recipients: z
    .array(recipient)
    .max(BATCH_LIMITS.recipients)
    .refine((rows) => rows.length > 0, 'recipients must hold at least one recipient, e.g. [{"phone": "+14155550123"}].')
    .meta(
      d(
        `The numbers to call, 1 to ${BATCH_LIMITS.recipients} rows (more: \`too_many_recipients\`); each becomes one call. A row's \`row_index\` in answers is its 0-based index here. ` +
          'Duplicates are compared after normalisation: the first row with a number is called, later ones are listed as `duplicate`.',
      ),
    ),
  skip_invalid: z
    .boolean()
    .default(false)
    .meta(
      d(
        'false: any invalid recipient rejects the request (`invalid_phone_format`, with every invalid row in `details.invalid`). true: only the valid ones are called and the invalid ones are listed in the answer. ' +
          'A request with no valid recipient is rejected either way.',
      ),
    ),
  schedule_type: z.enum(['now', 'schedule']).default('now').meta(d('`now`: the campaign starts at once (status `running`). `schedule`: it waits for `scheduled_date` (status `scheduled`).')),
  scheduled_date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'must be a date as YYYY-MM-DD, e.g. 2026-03-14', abort: true })
    .refine(isCalendarDate, { error: (issue) => `scheduled_date ${String(issue.input)} is not a day of the calendar (from 2000-01-01 on).` })
    .optional()
    .meta(
      d(
        'The day the campaign becomes due, in the window\'s time zone; required with schedule_type `schedule` (else `missing_field`), refused with `now`. ' +
          'It fires at the first scheduler check (every 60 s) that day inside the calling window, or at once when the day has passed.',
        { format: 'date' },
      ),
    ),
  window_start_minutes: z
    .number()
    .int()
    .min(0)
    .max(LAST_START_MINUTE)
    .optional()
    .meta(
      d(
        'Start of the daily calling window, minutes since midnight in the window\'s time zone: 0 (00:00) to 1439 (23:59). Given with window_end_minutes or not at all (no window: any time of day). ' +
          'Calls start at or after the start and before the end; a start later than the end is an overnight window (1320 to 480 is 22:00 to 08:00 the next day). Start and end must differ.',
      ),
    ),
  window_end_minutes: z
    .number()
    .int()
    .min(0)
    .max(LAST_END_MINUTE)
    .optional()
    .meta(
      d(
        'End of the daily calling window (exclusive), minutes since midnight: 0 to 1440, where 1440 is the midnight that ends the day (540 to 1440 is 09:00 to 24:00; an overnight window ending at 0 ends at that same midnight). ' +
          'Required with window_start_minutes, and different from it.',
      ),
    ),
  window_days: z
    .array(z.enum(WINDOW_DAYS))
    .max(WINDOW_DAYS.length)
    .refine((days) => days.length > 0, 'window_days must name at least one day; leave it out for every day.')
    .refine((days) => new Set(days).size === days.length, 'window_days must not repeat a day.')
    .optional()
    .meta(
      d('The weekdays on which the calling window opens, in its time zone, as `mon` … `sun`, each at most once (an overnight window opening on `fri` runs into Saturday morning). Leave it out for every day. Without start and end minutes: all day on those days.', {
        minItems: 1,
        uniqueItems: true,
      }),
    ),
  timezone: z
    .string()
    .refine(isIanaZone, 'must be an IANA time zone such as America/New_York')
    .transform(canonicalZone)
    .optional()
    .meta(d("IANA time zone of the calling window and of scheduled_date (else `invalid_timezone`); stored under its canonical name. Default: the agent's timezone, else Europe/London.")),
  max_concurrent: z
    .number()
    .int()
    .min(1)
    .max(BATCH_LIMITS.maxConcurrent)
    .optional()
    .meta(d(`Calls of this campaign up at once, 1 to ${BATCH_LIMITS.maxConcurrent}; the campaign never exceeds the account's concurrency limit either. Default: that limit.`)),
};

/** A missing conditionally-required field, as the pipeline reports a missing one: `missing_field`, "X is required.". */
function requireField(ctx: z.RefinementCtx, field: string): void {
  ctx.addIssue({ code: 'invalid_type', expected: field === 'scheduled_date' ? 'string' : 'number', input: undefined, path: [field] });
}

/** Occurrences of each `{name}` of a prompt (fill-prompt's references), to size every row's filled prompt without building it. */
function promptReferences(prompt: string): Map<string, number> {
  const refs = new Map<string, number>();
  for (const m of prompt.matchAll(/\{([^{}]+)\}/g)) refs.set(m[1]!, (refs.get(m[1]!) ?? 0) + 1);
  return refs;
}

const typed = z
  .object(fields)
  .strict()
  .superRefine((b, ctx) => {
    if (b.schedule_type === 'schedule' && b.scheduled_date === undefined) requireField(ctx, 'scheduled_date');
    if (b.schedule_type === 'now' && b.scheduled_date !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['schedule_type'],
        message: 'scheduled_date is set but schedule_type is "now" (the default): send schedule_type "schedule" to start on that date, or leave scheduled_date out to start now.',
      });
    }
    const start = b.window_start_minutes;
    const end = b.window_end_minutes;
    if (start !== undefined && end === undefined) requireField(ctx, 'window_end_minutes');
    if (end !== undefined && start === undefined) requireField(ctx, 'window_start_minutes');
    if (start !== undefined && start === end) {
      ctx.addIssue({
        code: 'custom',
        path: ['window_end_minutes'],
        message: `window_start_minutes and window_end_minutes are both ${start}: a calling window needs a start and an end that differ. Leave both out to call at any time of day.`,
      });
    }

    const refs = promptReferences(b.prompt);
    b.recipients.forEach((r, i) => {
      const row = `Row ${i + 1}:`;
      if (r.prompt_override !== undefined && r.prompt_override.trim() === '') {
        ctx.addIssue({ code: 'custom', path: ['recipients', i, 'prompt_override'], message: `${row} prompt_override must not be blank; leave it out to use the campaign's prompt.` });
      }
      if (r.variables === undefined) return;
      const names = Object.keys(r.variables);
      if (names.length > BATCH_LIMITS.variableNames) {
        ctx.addIssue({ code: 'custom', path: ['recipients', i, 'variables'], message: `${row} variables can have at most ${BATCH_LIMITS.variableNames} names; it has ${names.length}.` });
        return;
      }
      let chars = 0;
      for (const k of names) chars += k.length + String(r.variables[k]).length;
      if (chars > BATCH_LIMITS.variablesChars) {
        ctx.addIssue({
          code: 'custom',
          path: ['recipients', i, 'variables'],
          message: `${row} variables hold ${chars} characters of names and values; at most ${BATCH_LIMITS.variablesChars}.`,
        });
        return;
      }
      // The filled prompt's bound (MAX_FILLED_PROMPT): many references to a long value must
      // not make one call's prompt huge. The campaign prompt's references are counted once.
      let filled: number;
      if (r.prompt_override !== undefined) {
        filled = filledPromptLength(r.prompt_override, Object.fromEntries(names.map((k) => [k, String(r.variables![k])])));
      } else {
        filled = b.prompt.length;
        for (const k of names) {
          const n = refs.get(k);
          if (n) filled += n * (String(r.variables[k]).length - (k.length + 2));
        }
      }
      if (filled > MAX_FILLED_PROMPT) {
        ctx.addIssue({
          code: 'custom',
          path: ['recipients', i, 'variables'],
          message: `${row} the prompt with this recipient's variables filled in would be ${filled} characters; it can be at most ${MAX_FILLED_PROMPT}.`,
        });
      }
    });
  });

export type BatchBody = z.output<typeof typed>;

/** Each field's input schema as the document shows it, from the typed fields themselves. */
const docs = (
  z.toJSONSchema(z.object(fields), { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as { properties: Record<string, Record<string, unknown>> }
).properties;

const present = (hint: string) => z.any().refine((v) => v !== undefined && v !== null, { message: `is required; ${hint}` });

/**
 * Step one, on its own: agent_id, prompt (not blank), from_number and recipients present.
 * Only then are types, ranges and unknown fields checked (`typed`), so a body that names
 * `from` instead of `from_number` answers that from_number is missing, not that `from` is
 * unknown. The document shows this stage, its fields described by their typed schemas.
 */
const presence = z
  .looseObject({
    agent_id: present('send the agent that places the calls.').meta(docs['agent_id']!),
    prompt: present('send the purpose of these calls.')
      .refine((v) => typeof v !== 'string' || v.trim() !== '', { message: 'must not be blank; say what these calls are for.' })
      .meta(docs['prompt']!),
    name: z.any().optional().meta(docs['name']!),
    from_number: present('send the number that places the calls: imported on your account and attached to this agent.').meta(docs['from_number']!),
    // Missing recipients: plain missing_field ("recipients is required."), left to the pipeline.
    recipients: z
      .any()
      .superRefine((v, ctx) => {
        if (v === undefined) ctx.addIssue({ code: 'invalid_type', expected: 'array', input: v });
      })
      .meta(docs['recipients']!),
    ...Object.fromEntries(
      (['skip_invalid', 'schedule_type', 'scheduled_date', 'window_start_minutes', 'window_end_minutes', 'window_days', 'timezone', 'max_concurrent'] as const).map((k) => [
        k,
        z.any().optional().meta(docs[k]!),
      ]),
    ),
  })
  .meta({ additionalProperties: false });

// The stages accept anything the one before let through; the cast only tells TypeScript so.
export const batchBody = presence.pipe(typed as z.ZodType<BatchBody, any>);

/**
 * Codes per field, for the pipeline (validation.ts). Everything else answers
 * `missing_field` when absent and `invalid_request` when wrong; a recipient row's phone
 * problems are not body errors at all (batch-recipients.ts).
 */
export const batchFieldCodes: FieldCodes = {
  agent_id: { custom: 'missing_field' },
  prompt: { custom: 'missing_field' },
  // contract.md: "a batch without from_number" is campaign_creation_failed; so is one that is not E.164.
  from_number: { '*': 'campaign_creation_failed' },
  recipients: { too_big: 'too_many_recipients' },
  timezone: { '*': 'invalid_timezone' },
};

// ---- Answers ----------------------------------------------------------------------

export const invalidRecipientView = z
  .object({
    phone: z.string().nullable().meta(d('The phone as sent; null when the row had none.')),
    reason: z.enum(INVALID_REASONS).meta(
      d(
        '`missing`: no phone. `invalid_format`: not E.164 (+, country code, 8 to 15 digits in all). `invalid_number`: E.164 but not a number of its country\'s numbering plan. ' +
          '`duplicate`: the same number as an earlier row after normalisation (that row is called).',
      ),
    ),
    row_index: z.number().int().meta(d('0-based index of the row in the request\'s `recipients` (messages say "Row <row_index + 1>").')),
  })
  .meta(d('A recipient that is not called.'));

export const batchCreated = z.object({
  campaign_id: z.string().meta(d('`batch_…`', { example: 'batch_7Hq2mNcVx9LpR4sT1wYzKb3d' })),
  status: z.enum(['running', 'scheduled']).meta(d('`running` for schedule_type `now`, `scheduled` for `schedule`.')),
  valid_count: z.number().int().meta(d('Recipients that will be called.')),
  invalid_count: z.number().int(),
  invalid: z.array(invalidRecipientView).meta(d('Every row not called, in row order (empty unless skip_invalid was true).')),
});

export const BATCH_STATUSES = ['scheduled', 'running', 'completed', 'cancelled', 'failed'] as const;

const nullableInt = () => z.number().int().nullable();

/** The campaign as lists show it (contract.md §7, plus cancelled_count and failure_reason). */
export const batchCampaignView = z
  .object({
    campaign_id: z.string(),
    name: z.string().nullable(),
    agent_id: z.string(),
    from_number: z.string(),
    status: z.enum(BATCH_STATUSES).meta(
      d('`scheduled` (waiting for its date or a launch), `running`, `completed` (no recipient left to call), `cancelled`, or `failed` (could not launch: see failure_reason).'),
    ),
    total_count: z.number().int().meta(d('Rows in the request: valid_count + invalid_count.')),
    valid_count: z.number().int().meta(d('Recipients to call: pending + in progress + completed + failed + voicemail + cancelled.')),
    invalid_count: z.number().int(),
    pending_count: z.number().int().meta(d('Not called yet.')),
    in_progress_count: z.number().int().meta(d('Call placed and not ended.')),
    completed_count: z.number().int().meta(d('Call ended after a conversation.')),
    failed_count: z.number().int().meta(d('Call failed (not answered, busy, rejected by the carrier…).')),
    voicemail_count: z.number().int().meta(d('An answering machine answered (ended_reason voicemail_detected).')),
    cancelled_count: z.number().int().meta(d('Never called because the campaign was cancelled first.')),
    schedule_type: z.enum(['now', 'schedule']),
    scheduled_date: z.string().nullable().meta(d('YYYY-MM-DD; null for `now`.', { format: 'date' })),
    window_start_minutes: nullableInt().meta(d('null: no calling window.')),
    window_end_minutes: nullableInt(),
    window_days: z.array(z.enum(WINDOW_DAYS)).nullable().meta(d('null: every day.')),
    timezone: z.string().meta(d("The window's zone as resolved at creation: the campaign's timezone, else the agent's, else Europe/London.")),
    max_concurrent: nullableInt().meta(d("null: the account's concurrency limit.")),
    failure_reason: z
      .string()
      .nullable()
      .meta(d('Why a `failed` campaign could not launch: `campaign_launch_failed: ` followed by the refusal (e.g. `campaign_launch_failed: agent_missing_carrier_credentials: …`); null otherwise.')),
    created_at: z.string().meta(d('ISO 8601 UTC.')),
    started_at: z.string().nullable().meta(d('When it started running; null before.')),
    completed_at: z.string().nullable().meta(d('When it completed, was cancelled or failed; null before.')),
  })
  .meta(d('A batch campaign.'));

/** The campaign as GET /v1/calls/batch/{campaign_id} shows it: the list's fields and the invalid rows. */
export const batchCampaignRecord = batchCampaignView.extend({
  invalid: z.array(invalidRecipientView).meta(d('The rows not called, as the creation answer listed them.')),
});

export const batchCampaignList = z.object({
  campaigns: z.array(batchCampaignView).meta(d('Newest first.')),
  count: z.number().int().meta(d('Campaigns of the account in all, not just on this page.')),
  limit: z.number().int(),
  offset: z.number().int(),
});

export const batchLaunched = z.object({
  campaign_id: z.string(),
  status: z.literal('running'),
});

export const batchCancelled = z.object({
  campaign_id: z.string(),
  cancelled: z.literal(true),
  cancelled_count: z.number().int().meta(d('Recipients that will not be called; calls already connected finish.')),
});
