// The calls API: place an outbound call (calls-outbound.ts), list and read call
// records, erase one or all. Records are the account's: another account's call id is
// a 404 call_not_found, like a missing one.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, ok } from '../route.ts';
import { page } from '../schemas.ts';
import type { AppDeps } from '../deps.ts';
import { callRecord, callRecordView, listItem, listItemView, listQuery } from './call-schema.ts';
import { outboundRoutes } from './calls-outbound.ts';
import { ERASURE_BUCKET_WAIT_MS } from '../../actors/recordings/bucket-transfers.ts';

const LIVE_NOTE =
  'A call still queued or on the line is ended first (a queued call leaves its queue; a connected call is hung up at the carrier), ' +
  'and nothing more is recorded for it.';
/** Shared with DELETE /v1/account (account.ts). */
export const BUCKET_ERASURE_NOTE =
  'Recordings kept in the operator’s bucket (RECORDINGS_BUCKET_URL): their links stop working at once, and the answer waits for the bucket ' +
  `to confirm each delete (${ERASURE_BUCKET_WAIT_MS / 1000} s at most); a delete the bucket has not confirmed by then stays queued and is retried until it does.`;

export function callRoutes(deps: AppDeps) {
  const { storage, calls, recordings } = deps;
  return [
    ...outboundRoutes(deps),
    defineRoute({
      method: 'GET',
      path: '/v1/calls',
      summary: 'List calls, newest first',
      tag: 'Calls',
      query: listQuery,
      responses: {
        200: {
          description:
            'Calls of the account, newest first by when they connected (or were created, if they never did); transcripts are omitted. ' +
            '`since`/`until` compare that same time; `phone_number` matches your own number on the call.',
          schema: z.object({ calls: z.array(listItem), count: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
        },
      },
      errors: ['invalid_request'],
      handler: ({ auth, query }) => {
        const { limit, offset } = page(query);
        const { rows, total } = storage.calls.list(
          auth!.accountId,
          {
            agentId: query.agent_id,
            direction: query.direction,
            since: query.since,
            until: query.until,
            sentiment: query.caller_sentiment,
            successful: query.call_successful,
            voicemailDetected: query.voicemail_detected,
            campaignId: query.campaign_id,
            phoneNumber: query.phone_number,
          },
          limit,
          offset,
        );
        return ok({ calls: rows.map(listItemView), count: total, limit, offset });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/calls/{call_id}',
      summary: 'Get a call record',
      tag: 'Calls',
      responses: {
        200: {
          description: 'The full call record. The id may also be the carrier call id of a call that kept its `call_…` id after waiting for a slot, ' +
            'or the `call_…` id a 502 `outbound_failed` named in `details.call_id` (whatever the call\'s public id became).',
          schema: callRecord,
        },
      },
      errors: ['call_not_found'],
      handler: ({ auth, params }) => {
        const row = storage.calls.getByPublicId(auth!.accountId, params['call_id']!);
        if (!row) throw new ApiError('call_not_found');
        return ok(callRecordView(row));
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/calls/{call_id}',
      summary: 'Erase one call record and its recording',
      tag: 'Calls',
      responses: {
        200: {
          description: `The record, its transcript, analysis and recording file are gone. ${LIVE_NOTE} ${BUCKET_ERASURE_NOTE}`,
          schema: z.object({ call_id: z.string(), deleted: z.literal(true), recording_deleted: z.boolean() }),
        },
      },
      errors: ['call_not_found'],
      // Async: the answer waits for the bucket's deletes; the rows go in the erasure's own transaction.
      async: true,
      handler: async ({ auth, params }) => {
        const erased = storage.calls.deleteOne(auth!.accountId, params['call_id']!);
        if (!erased) throw new ApiError('call_not_found');
        if (erased.internalId !== null) calls.discard(erased.internalId);
        await recordings.transfers.deleteNow(erased.bucketDeletes, ERASURE_BUCKET_WAIT_MS);
        return ok({ call_id: erased.callId, deleted: true, recording_deleted: erased.recordingDeleted });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/calls',
      summary: 'Erase every call of the account, with recordings and SMS messages',
      tag: 'Calls',
      responses: {
        200: {
          description:
            'Irreversible, no confirmation. Answered once every call record, transcript, analysis, recording file and SMS message of the account ' +
            `is gone (a text still on its way, queued or asked of the carrier, stays until it is sent, exactly once); agents, numbers, keys, SMS opt-outs and usage ` +
            `(GET /v1/usage still counts the erased calls and texts) are untouched. ${LIVE_NOTE} ${BUCKET_ERASURE_NOTE}`,
          schema: z.object({
            deleted: z.literal(true),
            calls_deleted: z.number().int(),
            recordings_deleted: z.number().int().meta({ description: 'Calls that had a recording; lower than calls_deleted when some had none.' }),
            sms_deleted: z.number().int(),
          }),
        },
      },
      errors: [],
      async: true,
      handler: async ({ auth }) => {
        const erased = storage.calls.deleteAll(auth!.accountId);
        for (const id of erased.internalIds) calls.discard(id);
        await recordings.transfers.deleteNow(erased.bucketDeletes, ERASURE_BUCKET_WAIT_MS);
        return ok({ deleted: true, calls_deleted: erased.calls, recordings_deleted: erased.recordings, sms_deleted: erased.sms });
      },
    }),
  ];
}
