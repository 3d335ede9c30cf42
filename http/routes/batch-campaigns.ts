// Batch call campaigns (api.md "POST /v1/calls/batch", contract.md 4 and 7): create, list,
// read, launch and cancel. Creating commits the campaign, every valid recipient and the
// campaign actor's first snapshot in one transaction with the idempotent answer
// (actors/campaigns/campaign-system.ts); the actor then places the calls. The record's
// counts are the recipient rows counted by state, so they always add up to valid_count.
// Another account's campaign id is a 404 campaign_not_found, like a missing one.
import { ApiError, referenceError } from '../errors.ts';
import { created, defineRoute, ok } from '../route.ts';
import { isoOrNull, isoTime, page, paginationQuery } from '../schemas.ts';
import type { AppDeps } from '../deps.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import type { CampaignRow } from '../../storage/campaigns.ts';
import { batchBody, batchCampaignList, batchCampaignRecord, batchCancelled, batchCreated, batchFieldCodes, batchLaunched } from './batch-schema.ts';
import { checkRecipients, recipientsError } from './batch-recipients.ts';
import { resolveWindowZone, scheduledDateDue, type Weekday } from '../../machines/batch-campaign-events.ts';
import { campaignSlotsOf } from '../../actors/campaigns/place-recipient.ts';

const WINDOW_RULES =
  'Calls are placed only while the calling window is open: window_start_minutes to window_end_minutes of local time (start after end: overnight), on window_days (the days the window opens), ' +
  "in `timezone` (else the agent's, else Europe/London); a running campaign whose window closes stops placing calls until it opens again, at the minute. " +
  'A campaign never has more than max_concurrent calls up at once, nor more than the account’s concurrency limit less one slot kept free for inbound calls (limits of 2 or more).';

/**
 * A failed campaign's reason as the record shows it: always `campaign_launch_failed` (the
 * code api.md names for a campaign that passed validation but cannot launch), then the
 * calls kind's own refusal (`from_number_not_found`, `agent_missing_carrier_credentials`, …)
 * and its message, so a client can branch on the prefix and a person can act on the rest.
 */
function failureReason(error: { code: string; message: string } | null): string | null {
  if (error === null) return null;
  if (error.code === 'campaign_launch_failed') return `campaign_launch_failed: ${error.message}`;
  return `campaign_launch_failed: ${error.code}: ${error.message}`;
}

export function batchCampaignRoutes({ storage, clock, campaigns }: AppDeps) {
  /** The record of contract.md 7, counts from the rows. */
  function view(row: CampaignRow) {
    const c = storage.campaigns.counts(row.id);
    const error = row.error === null ? null : (JSON.parse(row.error) as { code: string; message: string });
    return {
      campaign_id: row.id,
      name: row.name,
      agent_id: row.agent_id,
      from_number: row.from_number,
      status: row.status,
      total_count: row.total_count,
      valid_count: row.valid_count,
      invalid_count: row.invalid_count,
      pending_count: c.pending,
      in_progress_count: c.placed,
      completed_count: c.completed,
      failed_count: c.failed,
      voicemail_count: c.voicemail,
      cancelled_count: c.cancelled,
      schedule_type: row.schedule_type,
      scheduled_date: row.scheduled_date,
      window_start_minutes: row.window_start_minutes,
      window_end_minutes: row.window_end_minutes,
      window_days: row.window_days === null ? null : (JSON.parse(row.window_days) as string[]),
      timezone: row.timezone,
      max_concurrent: row.max_concurrent,
      failure_reason: failureReason(error),
      created_at: isoTime(row.created_at),
      started_at: isoOrNull(row.started_at),
      completed_at: isoOrNull(row.completed_at),
    };
  }

  const campaignOf = (accountId: string, id: string): CampaignRow => {
    const row = storage.campaigns.get(accountId, id);
    if (!row) throw new ApiError('campaign_not_found', `No batch campaign ${JSON.stringify(id)} on your account.`);
    return row;
  };

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/calls/batch',
      summary: 'Create a batch campaign',
      tag: 'Batch campaigns',
      // The campaign and its actor are committed by the runtime in one transaction of their own (with the idempotent answer).
      async: true,
      body: batchBody,
      fieldCodes: batchFieldCodes,
      responses: {
        201: {
          description:
            'Created: every valid recipient becomes one outbound call, each placed exactly once by the same rules as POST /v1/calls/outbound, with the campaign’s prompt ' +
            '(or the recipient’s prompt_override) and the recipient’s variables given to the agent as context (a `{name}` in the prompt is filled from them). ' +
            '`status` is `running` for schedule_type `now` (or a scheduled_date already due, inside the window) and `scheduled` until the date is due in the window’s zone and the window is open, or the campaign is launched. ' +
            `${WINDOW_RULES} A failed call is recorded on its recipient and does not stop the campaign. Creating 10,000 recipients is one transaction.`,
          schema: batchCreated,
        },
      },
      errors: ['missing_field', 'invalid_phone_format', 'campaign_creation_failed', 'invalid_timezone', 'too_many_recipients', 'invalid_request'],
      referenceErrors: ['agent_not_found'],
      handler: async ({ auth, body, idempotency }) => {
        const accountId = auth!.accountId;
        const agent = storage.agents.get(accountId, body.agent_id);
        if (!agent) throw referenceError('agent_not_found', 'agent_id', `No agent ${JSON.stringify(body.agent_id)} on your account.`);
        // contract.md 1: a from_number missing, not on the account or on another agent (both carriers dial batches).
        const number = storage.numbers.get(accountId, body.from_number);
        if (!number) throw new ApiError('campaign_creation_failed', `from_number ${body.from_number} is not a number imported on your account.`, { field: 'from_number' });
        if (number.agent_id !== agent.agent_id) {
          throw new ApiError('campaign_creation_failed', `from_number ${body.from_number} is attached to ${number.agent_id ? `agent ${number.agent_id}` : 'no agent'}, not to agent ${agent.agent_id}.`, { field: 'from_number' });
        }
        if (number.outbound_enabled !== 1) {
          throw new ApiError('campaign_creation_failed', `from_number ${body.from_number} does not place outbound calls (outbound_enabled is false); enable it first.`, { field: 'from_number' });
        }
        const check = checkRecipients(body.recipients);
        const refused = recipientsError(check, body.skip_invalid ?? false);
        if (refused) throw refused;

        const now = clock();
        const id = newPrefixedId('batch');
        const timezone = resolveWindowZone(body.timezone ?? null, agent.timezone);
        const window = {
          startMinutes: body.window_start_minutes ?? null,
          endMinutes: body.window_end_minutes ?? null,
          days: (body.window_days ?? null) as Weekday[] | null,
          timezone,
        };
        const scheduled = body.schedule_type === 'schedule';
        const limit = storage.accounts.getAccount(accountId)?.concurrency_limit ?? 1;
        const answer = (status: string) =>
          created({ campaign_id: id, status, valid_count: check.valid.length, invalid_count: check.invalid.length, invalid: check.invalid });
        let result = answer('running');
        campaigns.create(
          {
            id,
            accountId,
            agentId: agent.agent_id,
            name: body.name ?? null,
            fromNumber: number.phone_number,
            prompt: body.prompt,
            scheduleType: scheduled ? 'schedule' : 'now',
            scheduledDate: scheduled ? body.scheduled_date! : null,
            windowStartMinutes: window.startMinutes,
            windowEndMinutes: window.endMinutes,
            windowDays: window.days,
            timezone,
            maxConcurrent: body.max_concurrent ?? null,
            totalCount: body.recipients.length,
            invalid: check.invalid,
            createdAt: now,
            recipients: check.valid.map((r) => ({ rowIndex: r.rowIndex, phone: r.phone, variables: r.variables, promptOverride: r.promptOverride })),
          },
          {
            id,
            accountId,
            total: check.valid.length,
            // At most the account's campaign slots at creation (a later plan change applies to later campaigns).
            maxConcurrent: Math.max(1, Math.min(body.max_concurrent ?? Number.MAX_SAFE_INTEGER, campaignSlotsOf(limit))),
            scheduleType: scheduled ? 'schedule' : 'now',
            dueAt: scheduled ? scheduledDateDue(body.scheduled_date!, timezone) : null,
            window,
            createdAt: now,
          },
          (status) => {
            result = answer(status);
            idempotency?.store(result.status, result.body);
          },
        );
        return result;
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/calls/batch',
      summary: 'List batch campaigns, newest first',
      tag: 'Batch campaigns',
      query: paginationQuery,
      responses: { 200: { description: 'The account’s batch campaigns, newest first, paginated; each with its live counts.', schema: batchCampaignList } },
      errors: ['invalid_request'],
      handler: ({ auth, query }) => {
        const { limit, offset } = page(query);
        const { rows, total } = storage.campaigns.list(auth!.accountId, limit, offset);
        return ok({ campaigns: rows.map(view), count: total, limit, offset });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/calls/batch/{campaign_id}',
      summary: 'Get a batch campaign',
      tag: 'Batch campaigns',
      responses: {
        200: {
          description:
            'The campaign (contract.md 7) with its counts as they are now: pending + in progress + completed + failed + voicemail + cancelled = valid_count. ' +
            'Its calls are listed by GET /v1/calls?campaign_id=…, each with `campaign_id`. A call whose dial’s answer was lost to a restart and that the carrier has no record of ' +
            'is listed `failed` with `carrier_error.outcome: "not_placed"`; its recipient was dialed afterwards with a call of its own (up to three such calls, then it is failed).',
          schema: batchCampaignRecord,
        },
      },
      errors: ['campaign_not_found'],
      handler: ({ auth, params }) => {
        const row = campaignOf(auth!.accountId, params['campaign_id']!);
        return ok({ ...view(row), invalid: JSON.parse(row.invalid) as unknown[] });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/calls/batch/{campaign_id}/launch',
      summary: 'Launch a scheduled batch campaign now',
      tag: 'Batch campaigns',
      async: true,
      responses: { 200: { description: 'A scheduled campaign runs now (inside its calling window).', schema: batchLaunched } },
      errors: ['campaign_not_found', 'campaign_already_running', 'campaign_already_done', 'server_error'],
      handler: ({ auth, params }) => {
        const id = params['campaign_id']!;
        const result = campaigns.launch(auth!.accountId, id);
        if (result === 'not_found') throw new ApiError('campaign_not_found', `No batch campaign ${JSON.stringify(id)} on your account.`);
        if (result === 'already_running') throw new ApiError('campaign_already_running', 'The campaign is already running.');
        if (result === 'already_done') throw new ApiError('campaign_already_done', 'The campaign has already finished (completed, cancelled or failed).');
        if (result === 'commit_failed') throw new ApiError('server_error', 'The launch could not be recorded; send it again.');
        return ok({ campaign_id: id, status: 'running' });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/calls/batch/{campaign_id}',
      summary: 'Cancel a batch campaign',
      tag: 'Batch campaigns',
      async: true,
      responses: {
        200: {
          description:
            'Cancelled: no recipient is called from now on (`cancelled_count` of them were still waiting); calls already placed go on to their end and are counted as they end. ' +
            'The campaign and its recipients stay readable with status `cancelled`.',
          schema: batchCancelled,
        },
      },
      errors: ['campaign_not_found', 'campaign_already_done', 'server_error'],
      handler: ({ auth, params }) => {
        const id = params['campaign_id']!;
        const result = campaigns.cancel(auth!.accountId, id);
        if (result === 'not_found') throw new ApiError('campaign_not_found', `No batch campaign ${JSON.stringify(id)} on your account.`);
        if (result === 'already_done') throw new ApiError('campaign_already_done', 'The campaign has already finished (completed, cancelled or failed).');
        if (result === 'commit_failed') throw new ApiError('server_error', 'The cancel could not be recorded; send it again.');
        return ok({ campaign_id: id, cancelled: true, cancelled_count: result.cancelled });
      },
    }),
  ];
}
