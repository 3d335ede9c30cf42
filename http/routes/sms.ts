// Single SMS (contract.md 4 and 11): send, get, list. A send is checked in the order a
// person fixes a request (fields present, numbers well formed, body not too long, the
// sending number theirs, the recipient not opted out), then committed `queued` with its
// idempotent answer and sent exactly once through the number's paced sender. The request
// waits a moment for the first attempt so that a certain refusal is its answer: an
// unregistered US sender is 400 sms_not_supported_in_region, a carrier that cannot be
// reached 502 carrier_unreachable (the message is then never sent, and not kept: the
// refused request changes nothing); a message still waiting its turn (the number is busy)
// or whose answer was lost is answered 201.
import { z } from 'zod';
import { ApiError, referenceError } from '../errors.ts';
import { created, defineRoute, ok } from '../route.ts';
import { page, pagination, queryDate } from '../schemas.ts';
import type { AppDeps } from '../deps.ts';
import type { SmsRow } from '../../storage/sms-messages.ts';
import { smsListQuery, smsMessage, smsSendBody, smsSendFieldCodes } from './sms-schema.ts';
import { messageView } from './sms-view.ts';

/** How long a send waits for its first attempt before answering 201 without it. */
export const SEND_WAIT_MS = 5000;

const listQuery = smsListQuery.extend({
  since: queryDate().optional().meta({ description: 'Created at or after (ISO 8601).' }),
  until: queryDate().optional().meta({ description: 'Created before (ISO 8601).' }),
  ...pagination,
});

/** A certain refusal of the first attempt, as the API's error; null when the answer is 201. */
function refusalOf(row: SmsRow): ApiError | null {
  if (row.status !== 'failed') return null;
  const details = row.error_message ? { carrier_message: row.error_message } : undefined;
  switch (row.error_code) {
    case 'sms_not_supported_in_region':
      return new ApiError('sms_not_supported_in_region', `The carrier refused to send from ${row.from_number}: US application-to-person SMS needs the number registered (A2P 10DLC) with the carrier first.`, details);
    case 'recipient_unsubscribed':
      return new ApiError('recipient_unsubscribed', `${row.to_number} has unsubscribed from ${row.from_number} (texted STOP); they can text START to resubscribe.`, details);
    case 'carrier_unreachable':
      return new ApiError('carrier_unreachable', 'The carrier could not be reached, so the message was not sent. Send it again shortly.', details);
    case 'carrier_auth_failed':
      return new ApiError('carrier_auth_failed', `The carrier refused the credentials stored for ${row.from_number}; import the number again with working credentials.`, details);
    default:
      return new ApiError('carrier_refused', `The carrier refused the message${row.error_message ? `: ${row.error_message}` : '.'}`, details);
  }
}

export function smsRoutes({ storage, sms }: AppDeps) {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/sms',
      summary: 'Send one SMS',
      tag: 'SMS',
      async: true,
      storesProviderErrors: true,
      body: smsSendBody,
      fieldCodes: smsSendFieldCodes,
      responses: {
        201: {
          description:
            'Stored and on its way: sent exactly once from `from_number` through its carrier with its credentials, at most 1 message per second per number ' +
            '(single sends, campaigns, auto-replies and in-call texts share the pace, taking turns). `status` is `queued` as created; GET it (or watch `status`) for `sent`, `delivered`, `undelivered` or `failed`. ' +
            `The request waits up to ${SEND_WAIT_MS / 1000} s for the carrier’s first answer so that a refusal is its error.`,
          schema: z.object({ message: smsMessage }),
        },
      },
      errors: ['missing_field', 'invalid_phone_format', 'message_too_long', 'from_number_not_owned', 'recipient_unsubscribed', 'sms_not_supported_in_region', 'carrier_refused', 'carrier_auth_failed', 'carrier_unreachable', 'invalid_request'],
      referenceErrors: ['agent_not_found'],
      handler: async ({ auth, body, idempotency }) => {
        const accountId = auth!.accountId;
        const number = storage.numbers.get(accountId, body.from_number);
        if (!number) throw new ApiError('from_number_not_owned', `${body.from_number} is not a number imported on your account.`, { field: 'from_number' });
        const agentId = body.agent_id ?? number.agent_id;
        if (body.agent_id !== undefined && !storage.agents.get(accountId, body.agent_id)) {
          throw referenceError('agent_not_found', 'agent_id', `No agent ${JSON.stringify(body.agent_id)} on your account.`);
        }
        if (storage.smsOptOuts.isOptedOut(accountId, number.phone_number, body.to)) {
          throw new ApiError('recipient_unsubscribed', `${body.to} has unsubscribed from ${number.phone_number} (texted STOP); they can text START to resubscribe.`, { field: 'to' });
        }
        // The message as committed (contract.md 4: status "queued"); GET shows where it stands now.
        let answer: ReturnType<typeof created> | undefined;
        const { row } = await sms.sendOne({ accountId, number, to: body.to, body: body.body, agentId }, SEND_WAIT_MS, (queued) => {
          // The message and its idempotent answer commit together: a retry with the key never sends a second.
          answer = created({ message: messageView(queued) });
          idempotency?.store(answer.status, answer.body);
        });
        const refusal = refusalOf(row);
        if (refusal) {
          // Refused while the request waited: nothing was sent, and, as with any refused request, nothing stays.
          storage.sms.forgetRefused(row.message_id);
          throw refusal;
        }
        return answer!;
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/sms/{message_id}',
      summary: 'Get one SMS',
      tag: 'SMS',
      responses: { 200: { description: 'The message (contract.md 11: the same `{message}` wrapper as the send), as it stands now.', schema: z.object({ message: smsMessage }) } },
      errors: ['message_not_found'],
      handler: ({ auth, params }) => {
        const row = storage.sms.get(auth!.accountId, params['message_id']!);
        if (!row) throw new ApiError('message_not_found', `No message ${JSON.stringify(params['message_id'])} on your account.`);
        return ok({ message: messageView(row) });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/sms',
      summary: 'List SMS, newest first',
      tag: 'SMS',
      query: listQuery,
      responses: {
        200: {
          description: 'Every message in and out of your numbers (single sends, campaign texts, auto-replies, in-call texts, STOP/START confirmations, received texts), newest first, paginated.',
          schema: z.object({ messages: z.array(smsMessage), count: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
        },
      },
      errors: ['invalid_request'],
      handler: ({ auth, query }) => {
        const { limit, offset } = page(query);
        if (query.since !== undefined && query.until !== undefined && query.until < query.since) throw new ApiError('invalid_request', 'until must not be before since.', { field: 'until' });
        const { rows, count } = storage.sms.list(auth!.accountId, { phoneNumber: query.phone_number, direction: query.direction, since: query.since, until: query.until, limit, offset });
        return ok({ messages: rows.map(messageView), count, limit, offset });
      },
    }),
  ];
}
