// One attempt of a `crm` outbox delivery (actors/outbox/crm-sync-out.ts): upsert the contact
// by phone, then add the note about the call, with the number's CRM token opened from
// storage now (a re-keyed integration is used as it is; a removed one abandons the
// delivery). Both steps run under one deadline (the outbox's attempt timeout). What
// the attempt came to is an AttemptResult, so the outbox's retry schedule treats it
// like any webhook's: the failing step's status (and Retry-After), or no answer.
//
// The note is added once, not once per attempt. The upsert is idempotent by phone, so
// it simply runs again; the note is not, so before its request leaves, the delivery's
// progress (`note_sent_at`) is committed. An attempt that finds that mark (the earlier
// note's answer was lost, or the process died between the CRM's answer and our commit)
// first lists the contact's notes and looks for the delivery's reference line, which
// every note carries; found, the delivery is done without a second note. Left: a
// contact deleted and re-created at the CRM in between gets the note again.
import type { Storage } from '../../storage/index.ts';
import type { DeliveryRow } from '../../storage/webhook-deliveries.ts';
import { addNote, isSuccess, listNotes, upsertContact, type CrmAnswer, type CrmContactsTarget } from '../../voice/providers/crm-contacts.ts';
import { CRM_UPSERT_PATH, crmSyncJobSchema } from './crm-sync-out.ts';
import type { AttemptResult } from './webhook-retry.ts';
import { networkReason } from '../../voice/providers/http-failure.ts';

export interface CrmAttemptDeps {
  storage: Storage;
  clock: () => number;
  /** The whole attempt: both requests (and the look-up of notes when there is one). */
  timeoutMs: number;
  /** The outbox's shutdown signal. */
  signal: AbortSignal;
}

/** The line every note ends with: what a later attempt looks for, and a pointer for the reader. */
export const noteReference = (row: Pick<DeliveryRow, 'id' | 'call_id'>): string => `Switchboard call ${row.call_id ?? '-'} (ref ${row.id})`;

interface CrmProgress {
  /** When a note request was last about to leave; set: a note may already be at the CRM. */
  note_sent_at?: number;
}

const answerOf = (a: CrmAnswer): AttemptResult => ({ kind: 'answer', status: a.status, retryAfter: a.retryAfter });

function progressOf(row: DeliveryRow): CrmProgress {
  if (row.progress === null) return {};
  try {
    return JSON.parse(row.progress) as CrmProgress;
  } catch {
    // Unreadable: assume a note may have left, so the next step looks before adding.
    return { note_sent_at: 0 };
  }
}

/** The CRM_BASE_URL the delivery was committed with: its URL minus the upsert path. */
function baseOf(url: string): string | null {
  return url.endsWith(CRM_UPSERT_PATH) ? url.slice(0, -CRM_UPSERT_PATH.length) : null;
}

/** One attempt; never rejects. The caller has committed the attempt's start. */
export async function attemptCrmDelivery(row: DeliveryRow, deps: CrmAttemptDeps): Promise<AttemptResult> {
  const parsedJob = (() => {
    try {
      return crmSyncJobSchema.safeParse(JSON.parse(row.payload));
    } catch {
      return null;
    }
  })();
  const base = baseOf(row.url);
  if (!parsedJob?.success || base === null) return { kind: 'abandon', message: 'the stored CRM job is unreadable' };
  const job = parsedJob.data;

  let token: string | null;
  let locationId: unknown;
  try {
    const integration = deps.storage.integrations.get(row.account_id, 'crm', { phoneNumber: job.phone_number });
    token = integration?.secret ?? null;
    locationId = integration?.config['location_id'];
  } catch (err) {
    return { kind: 'error', message: `reading the CRM integration failed (${(err as Error).message})` };
  }
  if (token === null || typeof locationId !== 'string' || locationId === '') {
    return { kind: 'abandon', message: 'the number has no CRM integration any more' };
  }

  const deadline = AbortSignal.timeout(deps.timeoutMs);
  const target: CrmContactsTarget = { baseUrl: base, token, signal: AbortSignal.any([deadline, deps.signal]) };
  const ref = noteReference(row);
  const progress = progressOf(row);
  try {
    const contact = await upsertContact(target, { locationId, phone: job.phone, name: job.name ?? undefined, email: job.email ?? undefined });
    if (!isSuccess(contact)) return answerOf(contact);
    if (contact.contactId === null) return { kind: 'error', message: 'the CRM answered the contact upsert without a contact id' };

    if (progress.note_sent_at !== undefined) {
      const existing = await listNotes(target, contact.contactId);
      if (!isSuccess(existing)) return answerOf(existing);
      // The earlier note arrived: done, without a second one.
      if (existing.notes.some((n) => n.body.includes(ref))) return answerOf(existing);
    }

    // Committed before the note leaves, so whatever happens next, a later attempt looks first.
    let marked: boolean;
    try {
      marked = deps.storage.webhookDeliveries.recordProgress(row.id, { ...progress, note_sent_at: deps.clock() });
    } catch (err) {
      return { kind: 'error', message: `recording the note step failed (${(err as Error).message}); the note was not sent` };
    }
    if (!marked) return { kind: 'error', message: 'the delivery is no longer pending; the note was not sent' };

    return answerOf(await addNote(target, contact.contactId, `${job.note}\n\n${ref}`));
  } catch (err) {
    if (deadline.aborted) return { kind: 'error', message: `the CRM gave no complete answer within ${deps.timeoutMs} ms` };
    return { kind: 'error', message: `the CRM could not be reached (${networkReason(err)})` };
  }
}
