// SMS campaigns (api.md "SMS", contract.md 4, 8 and 11): create, list, get, launch,
// cancel and edit. Creating commits the campaign, every recipient and the campaign
// actor's first snapshot in one transaction with the idempotent answer
// (actors/sms/sms-system.ts); the actor then sends one text per recipient, exactly once,
// through the sending number's paced sender. The counts are the recipient rows counted by
// state, so delivered + failed + pending always equals total. Another account's campaign
// id is a 404 campaign_not_found, like a missing one.
import { ApiError, referenceError } from '../errors.ts';
import { created, defineRoute, ok } from '../route.ts';
import { isoOrNull, isoTime, page, paginationQuery } from '../schemas.ts';
import type { AppDeps } from '../deps.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import type { SmsCampaignEdit, SmsCampaignRow } from '../../storage/sms-campaigns.ts';
import {
  DEFAULT_REPLY_WINDOW_HOURS,
  smsCampaignBody,
  smsCampaignCancelled,
  smsCampaignFieldCodes,
  smsCampaignLaunched,
  smsCampaignList,
  smsCampaignPatch,
  smsCampaignRecord,
} from './sms-schema.ts';
import { checkTemplateFits, smsRecipients } from './sms-recipients.ts';

const PACE =
  'Texts go at most 1 per second per sending number (SMS_SEND_INTERVAL_MS), taking turns with the number’s other texts; each recipient is texted exactly once, whatever happens to the process. ' +
  'A recipient who texted STOP to the number is not texted: their row counts as failed (`recipient_unsubscribed`).';

export function smsCampaignRoutes({ storage, clock, sms }: AppDeps) {
  function view(row: SmsCampaignRow) {
    const c = storage.smsCampaigns.counts(row.id, row.total_count);
    return {
      campaign_id: row.id,
      agent_id: row.agent_id,
      name: row.name,
      status: sms.liveStatus(row.id) ?? row.status,
      total_count: row.total_count,
      delivered_count: c.delivered,
      failed_count: c.failed,
      pending_count: c.pending,
      cancelled_count: c.cancelled,
      source: row.source,
      from_number: row.from_number,
      message_template: row.message_template,
      schedule_type: row.schedule_type,
      scheduled_at: isoOrNull(row.scheduled_at),
      context_prompt: row.context_prompt,
      reply_window_hours: row.reply_window_hours,
      created_at: isoTime(row.created_at),
      started_at: isoOrNull(row.started_at),
      finished_at: isoOrNull(row.finished_at),
    };
  }

  const campaignOf = (accountId: string, id: string): SmsCampaignRow => {
    const row = storage.smsCampaigns.get(accountId, id);
    if (!row) throw new ApiError('campaign_not_found', `No SMS campaign ${JSON.stringify(id)} on your account.`);
    return row;
  };

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/sms/campaigns',
      summary: 'Create an SMS campaign',
      tag: 'SMS campaigns',
      async: true,
      body: smsCampaignBody,
      fieldCodes: smsCampaignFieldCodes,
      responses: {
        201: {
          description:
            'Created: `running` for schedule_type `now` (or a scheduled_at already past), `scheduled` until scheduled_at, `draft` until launched. ' +
            `Each recipient gets message_template with their variables filled in. ${PACE} Campaigns are one-time broadcasts; replies are answered by the number’s SMS agent ` +
            '(sms_reply_enabled), with the campaign’s context_prompt for replies within reply_window_hours of its text. `running` becomes `done` when no recipient is pending.',
          schema: smsCampaignRecord,
        },
      },
      errors: ['missing_field', 'agent_not_owned', 'from_number_not_owned', 'too_many_recipients', 'invalid_schedule', 'invalid_phone_format', 'message_too_long', 'invalid_request'],
      referenceErrors: ['agent_not_owned'],
      handler: async ({ auth, body, idempotency }) => {
        const accountId = auth!.accountId;
        const template = body.message_template ?? body.body;
        if (template === undefined) throw new ApiError('missing_field', 'message_template is required (or its other name, body).', { field: 'message_template' });
        if (body.message_template !== undefined && body.body !== undefined && body.message_template !== body.body) {
          throw new ApiError('invalid_request', 'message_template and body are the same field; send one of them.', { field: 'body' });
        }
        if (!storage.agents.get(accountId, body.agent_id)) throw referenceError('agent_not_owned', 'agent_id', `No agent ${JSON.stringify(body.agent_id)} on your account.`);
        const number = storage.numbers.get(accountId, body.from_number);
        if (!number) throw new ApiError('from_number_not_owned', `${body.from_number} is not a number imported on your account.`, { field: 'from_number' });
        if (body.schedule_type === 'schedule' && body.scheduled_at === undefined) {
          throw new ApiError('invalid_schedule', 'schedule_type "schedule" needs scheduled_at (an ISO 8601 date-time, e.g. 2026-12-01T15:00:00Z).', { field: 'scheduled_at' });
        }
        const recipients = smsRecipients(body.recipients, template);
        const now = clock();
        const id = newPrefixedId('smscamp');
        let result = created({});
        sms.create(
          {
            id,
            accountId,
            agentId: body.agent_id,
            fromNumber: number.phone_number,
            name: body.name,
            messageTemplate: template,
            contextPrompt: body.context_prompt === '' ? null : (body.context_prompt ?? null),
            replyWindowHours: body.reply_window_hours ?? DEFAULT_REPLY_WINDOW_HOURS,
            scheduleType: body.schedule_type,
            scheduledAt: body.schedule_type === 'schedule' ? Date.parse(body.scheduled_at!) : null,
            source: 'api',
            createdAt: now,
            recipients,
          },
          () => {
            result = created(view(storage.smsCampaigns.byId(id)!));
            idempotency?.store(result.status, result.body);
          },
        );
        // The first commit may already have moved on (a campaign with no recipients is done at once).
        return created(view(storage.smsCampaigns.byId(id)!));
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/sms/campaigns',
      summary: 'List SMS campaigns, newest first',
      tag: 'SMS campaigns',
      query: paginationQuery,
      responses: { 200: { description: 'The account’s SMS campaigns, newest first, paginated; each with its live counts.', schema: smsCampaignList } },
      errors: ['invalid_request'],
      handler: ({ auth, query }) => {
        const { limit, offset } = page(query);
        const { rows, count } = storage.smsCampaigns.list(auth!.accountId, limit, offset);
        return ok({ campaigns: rows.map(view), count, limit, offset });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/sms/campaigns/{campaign_id}',
      summary: 'Get an SMS campaign',
      tag: 'SMS campaigns',
      responses: {
        200: {
          description: 'The campaign with its counts as they are now (delivered + failed + pending = total). Its texts are listed by GET /v1/sms, each with `campaign_id`.',
          schema: smsCampaignRecord,
        },
      },
      errors: ['campaign_not_found'],
      handler: ({ auth, params }) => ok(view(campaignOf(auth!.accountId, params['campaign_id']!))),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/sms/campaigns/{campaign_id}/launch',
      summary: 'Launch a draft or scheduled SMS campaign now',
      tag: 'SMS campaigns',
      async: true,
      responses: { 200: { description: `A draft or scheduled campaign with at least one recipient starts sending now. ${PACE}`, schema: smsCampaignLaunched } },
      errors: ['campaign_not_found', 'campaign_already_running', 'campaign_already_done', 'campaign_no_recipients', 'server_error'],
      handler: ({ auth, params }) => {
        const id = params['campaign_id']!;
        const result = sms.launch(auth!.accountId, id);
        if (result === 'not_found') throw new ApiError('campaign_not_found', `No SMS campaign ${JSON.stringify(id)} on your account.`);
        if (result === 'already_running') throw new ApiError('campaign_already_running', 'The campaign is already running.');
        if (result === 'already_done') throw new ApiError('campaign_already_done', 'The campaign has already finished (done or cancelled).');
        if (result === 'no_recipients') throw new ApiError('campaign_no_recipients', 'The campaign has no recipients; add some with PATCH (recipients) first.');
        if (result === 'commit_failed') throw new ApiError('server_error', 'The launch could not be recorded; send it again.');
        const v = view(campaignOf(auth!.accountId, id));
        return ok({ campaign_id: id, status: 'running', total_count: v.total_count, pending_count: v.pending_count, delivered_count: v.delivered_count, failed_count: v.failed_count });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/sms/campaigns/{campaign_id}',
      summary: 'Cancel an SMS campaign',
      tag: 'SMS campaigns',
      async: true,
      responses: {
        200: {
          description:
            'Cancelled: nothing more is sent; `cancelled_count` recipients were never texted. A text already at the carrier (at most one per sending number) may still go through. ' +
            'The campaign stays readable with status `cancelled`.',
          schema: smsCampaignCancelled,
        },
      },
      errors: ['campaign_not_found', 'campaign_already_done', 'server_error'],
      handler: ({ auth, params }) => {
        const id = params['campaign_id']!;
        const result = sms.cancel(auth!.accountId, id);
        if (result === 'not_found') throw new ApiError('campaign_not_found', `No SMS campaign ${JSON.stringify(id)} on your account.`);
        if (result === 'already_done') throw new ApiError('campaign_already_done', 'The campaign has already finished (done or cancelled).');
        if (result === 'commit_failed') throw new ApiError('server_error', 'The cancel could not be recorded; send it again.');
        return ok({ campaign_id: id, deleted: true, cancelled_count: result.cancelled });
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/v1/sms/campaigns/{campaign_id}',
      summary: 'Edit an SMS campaign',
      tag: 'SMS campaigns',
      async: true,
      body: smsCampaignPatch,
      fieldCodes: smsCampaignFieldCodes,
      responses: {
        200: {
          description:
            'Draft or scheduled: `name`, `message_template` (or `body`), `recipients` (replaces the whole list), `context_prompt`, `scheduled_at` (a scheduled campaign then waits for the new time), `reply_window_hours`. ' +
            'Once launched (running, done, or cancelled) only `context_prompt` (it applies to replies from then on, within reply_window_hours of the campaign’s texts); anything else is `campaign_not_editable`.',
          schema: smsCampaignRecord,
        },
      },
      errors: ['campaign_not_found', 'campaign_not_editable', 'invalid_schedule', 'too_many_recipients', 'invalid_phone_format', 'message_too_long', 'invalid_request', 'server_error'],
      handler: ({ auth, params, body }) => {
        const id = params['campaign_id']!;
        const row = campaignOf(auth!.accountId, id);
        if (body.message_template !== undefined && body.body !== undefined && body.message_template !== body.body) {
          throw new ApiError('invalid_request', 'message_template and body are the same field; send one of them.', { field: 'body' });
        }
        const template = body.message_template ?? body.body;
        const edit: SmsCampaignEdit = {};
        if (body.name !== undefined) edit.name = body.name;
        if (template !== undefined) edit.messageTemplate = template;
        if (body.context_prompt !== undefined) edit.contextPrompt = body.context_prompt === '' ? null : body.context_prompt;
        if (body.scheduled_at !== undefined) edit.scheduledAt = Date.parse(body.scheduled_at);
        if (body.reply_window_hours !== undefined) edit.replyWindowHours = body.reply_window_hours;
        const status = sms.liveStatus(id) ?? row.status;
        const editable = status === 'draft' || status === 'scheduled';
        const onlyContext = Object.keys(edit).every((k) => k === 'contextPrompt') && body.recipients === undefined;
        // Once launched only context_prompt: it still shapes the answers to replies (within reply_window_hours), even after the last text went.
        if (!editable && !onlyContext) throw new ApiError('campaign_not_editable', `The campaign is ${status}: only context_prompt can change once a campaign has launched.`);
        const recipients = editable && body.recipients !== undefined ? smsRecipients(body.recipients, template ?? row.message_template) : undefined;
        // A new template must still fit every stored recipient once filled in.
        if (editable && template !== undefined && recipients === undefined) checkTemplateFits(storage.smsCampaigns.recipientsOf(id), template);
        const result = sms.patch(auth!.accountId, id, edit, recipients);
        if (result === 'not_found') throw new ApiError('campaign_not_found', `No SMS campaign ${JSON.stringify(id)} on your account.`);
        if (result === 'not_editable') throw new ApiError('campaign_not_editable', 'Once launched only context_prompt can change.');
        if (result === 'commit_failed') throw new ApiError('server_error', 'The edit could not be recorded; send it again.');
        return ok(view(campaignOf(auth!.accountId, id)));
      },
    }),
  ];
}
