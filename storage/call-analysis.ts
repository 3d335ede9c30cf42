// Post-call analysis: the durable jobs (one per ended call) and the write of the
// analysis's outcome onto the call's row. A job is scheduled in the transaction that
// ends the call and removed in the one that records the outcome, so an analysis is
// neither lost nor recorded twice: at least once, and the outcome is written only
// while the call's analysis_status is still `pending`. The worker's queries go by due
// time across accounts; every write names the call's account.
import type { Db } from './db.ts';

export type AnalysisStatus = 'pending' | 'done' | 'failed';

export interface AnalysisJobRow {
  internal_id: string;
  account_id: string;
  due_at: number;
  attempts: number;
  last_error: string | null;
  created_at: number;
}

/** What is stored for a call once its analysis is over. */
export interface AnalysisOutcome {
  status: 'done' | 'failed';
  /** Null when the analysis failed, or when there was no conversation to analyse. */
  fields: {
    summary: string;
    sentiment: string;
    successful: boolean;
    /** Null when the agent has no extraction fields. */
    extracted: Record<string, unknown> | null;
  } | null;
}

export function createCallAnalysisRepo(db: Db) {
  // Only for a call whose analysis is still to come: a repeated end (post-call, done)
  // or a call already analysed never schedules it again.
  const schedule = db.prepare(
    `INSERT INTO analysis_jobs (internal_id, account_id, due_at, created_at)
     SELECT internal_id, account_id, @dueAt, @now FROM calls
      WHERE internal_id = @internalId AND account_id = @accountId AND analysis_status = 'pending'
     ON CONFLICT (internal_id) DO NOTHING`,
  );
  const due = db.prepare<[number, number], AnalysisJobRow>('SELECT * FROM analysis_jobs WHERE due_at <= ? ORDER BY due_at, internal_id LIMIT ?');
  const nextAfter = db.prepare<[number], { t: number | null }>('SELECT MIN(due_at) AS t FROM analysis_jobs WHERE due_at > ?');
  const one = db.prepare<[string], AnalysisJobRow>('SELECT * FROM analysis_jobs WHERE internal_id = ?');
  const countAll = db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM analysis_jobs');
  const startAttempt = db.prepare('UPDATE analysis_jobs SET attempts = attempts + 1 WHERE internal_id = ? AND attempts = ?');
  const retryAt = db.prepare('UPDATE analysis_jobs SET due_at = ?, last_error = ? WHERE internal_id = ?');
  const wake = db.prepare('UPDATE analysis_jobs SET due_at = ? WHERE internal_id = ? AND due_at > ?');
  const remove = db.prepare('DELETE FROM analysis_jobs WHERE internal_id = ?');
  const record = db.prepare(
    `UPDATE calls SET analysis_status = @status, summary = @summary, sentiment = @sentiment, successful = @successful,
       extracted = @extracted, updated_at = @now
     WHERE internal_id = @internalId AND account_id = @accountId AND analysis_status = 'pending'`,
  );
  // A call with no conversation keeps whatever analysis fields it has (none, normally).
  const recordStatusOnly = db.prepare(
    `UPDATE calls SET analysis_status = @status, updated_at = @now
     WHERE internal_id = @internalId AND account_id = @accountId AND analysis_status = 'pending'`,
  );

  const listeners = new Set<(dueAt: number) => void>();

  return {
    /**
     * Schedules the call's analysis, due at `dueAt`, INSIDE the transaction that ends the
     * call (the call's row must be written first). Nothing when the call is not pending
     * or already has a job. Listeners are told synchronously and must defer their work.
     */
    schedule(j: { internalId: string; accountId: string; dueAt: number; now: number }): boolean {
      const added = schedule.run(j).changes === 1;
      if (added) for (const l of listeners) l(j.dueAt);
      return added;
    },
    /** Called after each new job (inside its transaction) with when it is due. */
    onScheduled(listener: (dueAt: number) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** Jobs due by `now`, oldest first (every account: the worker's query). */
    due(now: number, limit: number): AnalysisJobRow[] {
      return due.all(now, limit);
    },
    /** When the next job not yet due is due; null when none. */
    nextDueAfter(now: number): number | null {
      return nextAfter.get(now)?.t ?? null;
    },
    get(internalId: string): AnalysisJobRow | undefined {
      return one.get(internalId);
    },
    count(): number {
      return countAll.get()!.n;
    },
    /**
     * Commits that an attempt is starting (before the request leaves): a crash during it
     * still counts, so a call that kills the process cannot be retried for ever. False
     * when the job is gone or another attempt was counted meanwhile.
     */
    startAttempt(internalId: string, attemptsBefore: number): boolean {
      return startAttempt.run(internalId, attemptsBefore).changes === 1;
    },
    retryAt(internalId: string, dueAt: number, error: string): void {
      retryAt.run(dueAt, error.slice(0, 500), internalId);
    },
    /** The job waited for something that has come (its recording): due now. Listeners are told. */
    wake(internalId: string, now: number): void {
      if (wake.run(now, internalId, now).changes === 1) for (const l of listeners) l(now);
    },
    removeJob(internalId: string): void {
      remove.run(internalId);
    },
    /**
     * Writes the outcome onto the call's row, only while its analysis is pending; false
     * when the row is gone (erased) or already has an outcome. `fields: null` with
     * `done` (no conversation) sets the status alone.
     */
    recordOutcome(accountId: string, internalId: string, o: AnalysisOutcome, now: number): boolean {
      if (o.fields === null && o.status === 'done') return recordStatusOnly.run({ status: o.status, now, internalId, accountId }).changes === 1;
      const f = o.fields;
      return (
        record.run({
          status: o.status,
          summary: f?.summary ?? null,
          sentiment: f?.sentiment ?? null,
          successful: f === null ? null : f.successful ? 1 : 0,
          extracted: f?.extracted == null ? null : JSON.stringify(f.extracted),
          now,
          internalId,
          accountId,
        }).changes === 1
      );
    },
  };
}

export type CallAnalysisRepo = ReturnType<typeof createCallAnalysisRepo>;
