// The webhook outbox as the API shows it: the account's deliveries (newest first,
// filtered by call and status), and the Test button of a number's webhook, which sends
// `webhook.test` through the same outbox rows (signed and listed like any delivery)
// and answers with each URL's first attempt.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, ok, type RouteDef } from '../route.ts';
import { isoOrNull, isoTime, page, pagination } from '../schemas.ts';
import type { AppDeps } from '../deps.ts';
import type { DeliveryRow } from '../../storage/webhook-deliveries.ts';

const STATUSES = ['pending', 'delivered', 'failed'] as const;

const listQuery = z.object({
  ...pagination,
  call_id: z.string().max(200).optional().meta({ description: 'Only deliveries about this call (its `call_id`).' }),
  status: z.enum(STATUSES).optional().meta({ description: '`pending` (not yet delivered; retrying), `delivered` (a 2xx answer) or `failed` (gave up).' }),
});

const deliveryView = z.object({
  delivery_id: z.string().meta({ description: 'The `webhook-id` header of every attempt of this delivery: the receiver’s de-duplication key.', example: 'whd_4Qm2Zc9WbT1rLx7Ku3Pd8sYe' }),
  event: z.string().meta({
    description:
      '`call.started`, `call.completed` or `webhook.test` (signed POSTs to your URLs), `crm.contact_note`: the CRM sync of a completed call on a number with a CRM integration (the caller upserted as a contact by phone, then a note with the call’s summary added to it), sent with the integration’s token and not signed, or `recording.fetch`: the download of a carrier’s recording of the call (recording_source `provider`) into this service, from the carrier’s media URL.',
  }),
  url: z.string().meta({ description: 'Where it goes: your webhook URL, or for `crm.contact_note` the CRM’s contact upsert endpoint (`{CRM_BASE_URL}/contacts/upsert`; the note goes to `/contacts/{contactId}/notes`).' }),
  status: z.enum(STATUSES),
  attempts: z.number().int().meta({ description: 'Attempts made so far.' }),
  last_status_code: z.number().int().nullable().meta({ description: 'The HTTP status of the last answer; null before the first answer or when the last attempt got none (timeout, connection error, refused address).' }),
  last_error: z.string().nullable().meta({
    description:
      'Why the last attempt failed, as `category: words`, never with an address or port: `timeout`, `connection_failed`, `tls_error`, `refused_address` (the host is not public), `invalid_url`, `too_large`, `not_audio` (a recording that is not MP3), or `answered <status>` for an HTTP error. Null before the first attempt and once delivered.',
    example: 'timeout: no complete answer within 15000 ms',
  }),
  next_attempt_at: z.string().nullable().meta({ description: 'When the next attempt is due while pending; null once delivered or failed.' }),
  created_at: z.string(),
});

const deliveryOf = (r: DeliveryRow) => ({
  delivery_id: r.id,
  event: r.event,
  url: r.url,
  status: r.status,
  attempts: r.attempts,
  last_status_code: r.last_status_code,
  last_error: r.last_error,
  next_attempt_at: isoOrNull(r.next_attempt_at),
  created_at: isoTime(r.created_at),
});

const testResult = z.object({
  delivery_id: z.string().meta({ description: 'The delivery, as GET /v1/webhooks/deliveries lists it.' }),
  url: z.string(),
  status_code: z.number().int().nullable().meta({ description: 'What the URL answered; null when it gave no answer (timeout, connection error, refused address).' }),
  ok: z.boolean().meta({ description: 'True for a 2xx answer.' }),
  error: z.string().nullable().meta({ description: 'Why there was no answer, when there was none.' }),
});

export function webhookDeliveryRoutes({ storage, clock, webhooks }: AppDeps): RouteDef<any, any>[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/webhooks/deliveries',
      summary: 'List webhook deliveries',
      tag: 'Webhooks',
      query: listQuery,
      responses: {
        200: {
          description:
            'Every webhook delivery of the account, newest first: one per event and URL (a URL configured twice gets one), and one `crm.contact_note` per completed call on a number with a CRM integration. A delivery is retried on a non-2xx answer, a timeout (15 s) or a connection error after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h (±10% jitter; `Retry-After` honoured on 429 and 503), then `failed`; a 410 answer fails it at once. Redirects are not followed.',
          schema: z.object({ deliveries: z.array(deliveryView), count: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
        },
      },
      errors: ['invalid_request'],
      handler: ({ auth, query }) => {
        const { limit, offset } = page(query);
        const { rows, count } = storage.webhookDeliveries.list(auth!.accountId, { callId: query.call_id, status: query.status, limit, offset });
        return ok({ deliveries: rows.map(deliveryOf), count, limit, offset });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/integrations/webhook/number/{phone_number}/test',
      summary: "Send webhook.test to the number's webhooks",
      tag: 'Webhooks',
      // No body needed (nor a Content-Type); an empty JSON object is accepted too.
      body: z.object({}).strict(),
      async: true,
      responses: {
        200: {
          description:
            'Sends `{event:"webhook.test", phone_number, sent_at}` to the number’s primary and second webhook (once to a URL set on both), signed like every delivery, and answers with each URL’s first attempt once it has ended (at most the 15 s timeout). The deliveries are outbox rows like any other: listed in GET /v1/webhooks/deliveries, and retried on failure like any delivery.',
          schema: z.object({ deliveries: z.array(testResult) }),
        },
      },
      errors: ['number_not_found', 'webhook_not_configured', 'invalid_request'],
      handler: async ({ auth, params }) => {
        const accountId = auth!.accountId;
        const phoneNumber = params['phone_number']!;
        const now = clock();
        const ids = storage.tx(() => {
          if (!storage.integrations.numberOwned(accountId, phoneNumber)) throw new ApiError('number_not_found');
          const urls: string[] = [];
          for (const kind of ['webhook', 'webhook2'] as const) {
            const url = storage.integrations.get(accountId, kind, { phoneNumber })?.config['url'];
            if (typeof url === 'string' && url !== '') urls.push(url);
          }
          if (urls.length === 0) throw new ApiError('webhook_not_configured');
          const payload = { event: 'webhook.test', phone_number: phoneNumber, sent_at: isoTime(now) };
          return storage.webhookDeliveries.enqueue({ accountId, callId: null, event: 'webhook.test', urls, payload, now });
        });
        const reports = await webhooks.attemptNow(ids);
        // A delivery the worker had already taken reports through the same attempt; one
        // with no report (shutting down) shows as not answered.
        return ok({
          deliveries: ids.map((id) => {
            const r = reports.find((x) => x.id === id);
            const url = r?.url ?? storage.webhookDeliveries.getForAccount(accountId, id)?.url ?? '';
            return { delivery_id: id, url, status_code: r?.statusCode ?? null, ok: r?.ok ?? false, error: r ? r.error : 'not attempted' };
          }),
        });
      },
    }),
  ];
}
