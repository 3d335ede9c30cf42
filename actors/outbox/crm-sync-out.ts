// What the number's CRM hears about a call (issue 10, "CRM"): once the call is
// complete, the person on the other end is upserted as a contact of the integration's
// location and a note about the call (direction, time, outcome, summary) is added to
// that contact. It is one outbox delivery of kind `crm` (event `crm.contact_note`, URL
// the CRM's upsert endpoint), committed in the same transaction as `call.completed`,
// sent by the outbox's worker (actors/outbox/crm-delivery.ts) on the same retry schedule, and
// listed in GET /v1/webhooks/deliveries. The row's payload is the job, captured at
// commit time: the token is not in it (it is read, sealed, from the integration at
// send time).
import { z } from 'zod';
import type { Storage } from '../../storage/index.ts';
import type { CallRow } from '../../storage/calls.ts';

export const CRM_EVENT = 'crm.contact_note';
/** The path the delivery's URL names; the note's path is resolved against it. */
export const CRM_UPSERT_PATH = '/contacts/upsert';
/** The CRM accepts only E.164 numbers; another caller id (anonymous, a web call) has no contact to upsert. */
const E164 = /^\+[1-9]\d{6,14}$/;

/** The job a `crm` delivery row carries as its payload. */
export const crmSyncJobSchema = z.object({
  /** The account's own number on the call: whose CRM integration is used at send time. */
  phone_number: z.string(),
  /** The other party: the contact's phone. */
  phone: z.string(),
  /** From the caller's context record when known. */
  name: z.string().nullable(),
  email: z.string().nullable(),
  /** The note's text; the delivery's reference line is added when it is sent. */
  note: z.string(),
});
export type CrmSyncJob = z.infer<typeof crmSyncJobSchema>;

export const crmUpsertUrl = (baseUrl: string): string => `${baseUrl.replace(/\/+$/, '')}${CRM_UPSERT_PATH}`;

/** The other party of a call: the caller of an inbound call, the person called on an outbound one. */
export const otherPartyOf = (call: Pick<CallRow, 'direction' | 'from_number' | 'to_number'>): string =>
  call.direction === 'inbound' ? call.from_number : call.to_number;

function lengthOf(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** The note about a call, in plain text, from the stored call row (analysis included). */
export function crmNoteText(call: CallRow): string {
  const direction = call.direction === 'inbound' ? 'Inbound' : 'Outbound';
  const at = call.started_at ?? call.created_at;
  const when = `${new Date(at).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const length = call.duration_ms !== null && call.duration_ms > 0 ? `, ${lengthOf(call.duration_ms)}` : '';
  const outcome = [call.call_status, call.ended_reason ? `ended: ${call.ended_reason}` : null, call.successful === null ? null : call.successful === 1 ? 'successful' : 'not successful']
    .filter((x): x is string => x !== null)
    .join('; ');
  const lines = [
    `${direction} call ${call.from_number} → ${call.to_number}, ${when}${length}`,
    `Outcome: ${outcome}`,
    ...(call.sentiment ? [`Sentiment: ${call.sentiment}`] : []),
    `Summary: ${call.summary ?? 'not available'}`,
  ];
  return lines.join('\n');
}

/**
 * Inside the transaction that enqueues `call.completed` (after the analysis is stored,
 * so the note has the summary): the CRM delivery of the call, when its number has a
 * CRM integration, the call connected (a dial nobody answered makes no contact of the
 * person dialled) and the other party has an E.164 number. Returns the delivery's id
 * (empty when there is nothing to sync). Only INSERTs.
 */
export function enqueueCrmSync(storage: Storage, call: CallRow, now: number, crmBaseUrl: string): string[] {
  // A web call has no caller phone number to find or create a contact by.
  if (call.phone_number === null || call.started_at === null || call.provider === 'web') return [];
  if (!storage.integrations.get(call.account_id, 'crm', { phoneNumber: call.phone_number })) return [];
  const phone = otherPartyOf(call);
  if (!E164.test(phone)) return [];
  const caller = storage.callers.get(call.account_id, call.phone_number, phone);
  const job: CrmSyncJob = {
    phone_number: call.phone_number,
    phone,
    name: caller?.name ?? null,
    email: caller?.email ?? null,
    note: crmNoteText(call),
  };
  return storage.webhookDeliveries.enqueue({
    accountId: call.account_id,
    callId: call.call_id,
    event: CRM_EVENT,
    urls: [crmUpsertUrl(crmBaseUrl)],
    payload: job,
    now,
    kind: 'crm',
  });
}
