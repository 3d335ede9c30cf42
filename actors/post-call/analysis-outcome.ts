// The end of a call's post-call work, in ONE transaction: the analysis's outcome on the
// call's row, the caller's memory (last_call, open_item), everything a completed call
// sends out (call.completed and the CRM sync, actors/outbox/call-completed-out.ts), and the
// removal of the analysis job. Either all of it is committed or none, so call.completed
// goes out exactly when the outcome is recorded (done or failed), and a crash before
// the commit leaves the job to run again.
import type { Storage } from '../../storage/index.ts';
import type { CallRow } from '../../storage/calls.ts';
import type { Analysis } from '../../voice/analysis/analysis-schema.ts';
import { lastCallOf } from '../../voice/analysis/caller-memory.ts';
import { enqueueCallCompleted } from '../outbox/call-completed-out.ts';
import { otherPartyOf } from '../outbox/crm-sync-out.ts';

export interface AnalysisOutcome {
  status: 'done' | 'failed';
  /** The validated analysis; null when it failed or there was no conversation. */
  analysis: Analysis | null;
  /** The call had a conversation: the caller's memory is updated (also when the analysis failed). */
  conversation: boolean;
}

/**
 * Commits the outcome of the call's analysis with everything that follows from it.
 * False when there was nothing to record (the call was erased, or its outcome is
 * recorded already); the job is removed either way.
 */
export function recordAnalysisOutcome(storage: Storage, call: CallRow, o: AnalysisOutcome, now: number, opts: { crmBaseUrl: string }): boolean {
  const internalId = call.internal_id!;
  return storage.tx(() => {
    const a = o.analysis;
    const fields = a === null ? null : { summary: a.summary, sentiment: a.sentiment, successful: a.successful, extracted: a.extracted };
    const recorded = storage.analysis.recordOutcome(call.account_id, internalId, { status: o.status, fields }, now);
    if (recorded) {
      // A web call has no caller phone number: no caller memory is kept for it.
      if (o.conversation && call.phone_number !== null && call.provider !== 'web') {
        const lastCall = lastCallOf(call.started_at ?? call.created_at, a);
        // A failed analysis cannot tell whether the open item was settled: it stays.
        storage.callers.remember(call.account_id, call.phone_number, otherPartyOf(call), JSON.stringify(lastCall), a === null ? undefined : a.open_item, now);
      }
      enqueueCallCompleted(storage, internalId, now, opts);
    }
    storage.analysis.removeJob(internalId);
    return recorded;
  });
}
