// The account itself: its plan and limits, usage over a period, and erasure.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, ok } from '../route.ts';
import { isoTime, queryDate } from '../schemas.ts';
import type { AppDeps } from '../deps.ts';
import { BUCKET_ERASURE_NOTE } from './calls.ts';
import { ERASURE_BUCKET_WAIT_MS } from '../../actors/recordings/bucket-transfers.ts';
import { startOfUtcMonth } from '../../storage/usage.ts';

const usageQuery = z.object({
  since: queryDate().optional().meta({ description: 'Start of the period (inclusive). Default: the first instant of the current UTC month.' }),
  until: queryDate().optional().meta({ description: 'End of the period (exclusive). Default: now.' }),
});

export function accountRoutes({ storage, clock, calls, recordings }: AppDeps) {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/account',
      summary: 'The account of the calling key',
      tag: 'Account',
      responses: {
        200: {
          description: 'Plan and concurrent-call limit (payg 10, starter 25, scale 100, enterprise as agreed).',
          schema: z.object({
            account_id: z.string(),
            plan: z.enum(['payg', 'starter', 'scale', 'enterprise']),
            concurrency_limit: z.number().int(),
            created_at: z.string(),
          }),
        },
      },
      errors: [],
      handler: ({ auth }) => {
        const a = storage.accounts.getAccount(auth!.accountId)!;
        return ok({ account_id: a.id, plan: a.plan, concurrency_limit: a.concurrency_limit, created_at: isoTime(a.created_at) });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/usage',
      summary: 'Calls, charged minutes and SMS over a period',
      tag: 'Account',
      query: usageQuery,
      responses: {
        200: {
          description: 'Counts for the period; calls count by when they connected (or were created, if they never did).',
          schema: z.object({
            calls: z.number().int(),
            inbound_calls: z.number().int(),
            outbound_calls: z.number().int(),
            charged_minutes: z.number(),
            sms_sent: z.number().int(),
            sms_received: z.number().int(),
            since: z.string(),
            until: z.string(),
          }),
        },
      },
      errors: ['invalid_request'],
      handler: ({ auth, query }) => {
        const now = clock();
        const since = query.since ?? startOfUtcMonth(now);
        const until = query.until ?? now;
        if (until < since) throw new ApiError('invalid_request', 'until must not be before since.', { field: 'until' });
        const usage = storage.usage.forAccount(auth!.accountId, since, until);
        return ok({ ...usage, since: isoTime(since), until: isoTime(until) });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/account',
      summary: 'Erase the account and everything in it, keys included',
      tag: 'Account',
      query: z.object({ confirm: z.string().optional().meta({ description: 'Must be `true`.' }) }),
      responses: {
        200: {
          description:
            'Everything is gone; the keys no longer work. First the account’s live calls are hung up at the carrier (each waits at most 5 s), ' +
            `its queued calls dropped and its actors stopped; then every row goes, and the recording files kept by this service with them. ${BUCKET_ERASURE_NOTE}`,
          schema: z.object({ deleted: z.literal(true) }),
        },
      },
      errors: ['confirmation_required'],
      async: true,
      handler: async ({ auth, query }) => {
        if (query.confirm !== 'true') throw new ApiError('confirmation_required');
        await calls.stopAccount(auth!.accountId);
        const erased = storage.accountErasure.erase(auth!.accountId, { onlyIfIdle: false });
        if (erased.kind === 'erased') await recordings.transfers.deleteNow(erased.bucketDeletes, ERASURE_BUCKET_WAIT_MS);
        return ok({ deleted: true });
      },
    }),
  ];
}
