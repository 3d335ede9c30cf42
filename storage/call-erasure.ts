// Erasure of call records: one call, or every call of an account together with its
// SMS messages, the calls' actor snapshots, deadlines, webhook deliveries and analysis jobs, and recording files kept in
// the data directory. Rows go in the caller's transaction; files are removed last, so
// a failure to remove one rolls the rows back and the request can be repeated.
import { unlinkSync } from 'node:fs';
import { dirname, isAbsolute, resolve, sep } from 'node:path';
import type { Db } from './db.ts';
import { SMS_COUNTED } from './usage.ts';

export interface CallErased {
  internalId: string | null;
  callId: string;
  recordingDeleted: boolean;
}

export interface AccountCallsErased {
  internalIds: string[];
  calls: number;
  recordings: number;
  sms: number;
}

interface Target {
  call_id: string;
  internal_id: string | null;
  recording_url: string | null;
  recording_path: string | null;
}

export function createCallErasure(db: Db) {
  const dataDir = db.memory ? null : dirname(resolve(db.name));
  const selectOne = db.prepare<[string, string, string, string, string], Target>(
    `SELECT call_id, internal_id, recording_url, recording_path FROM calls
      WHERE account_id = ? AND (call_id = ? OR carrier_call_id = ? OR internal_id = ?) ORDER BY call_id = ? DESC LIMIT 1`,
  );
  const selectAll = db.prepare<[string], Target>(
    'SELECT call_id, internal_id, recording_url, recording_path FROM calls WHERE account_id = ?',
  );
  const deleteCall = db.prepare('DELETE FROM calls WHERE account_id = ? AND call_id = ?');
  const deleteCalls = db.prepare('DELETE FROM calls WHERE account_id = ?');
  // Texts still on their way (queued, or asked of the carrier) are not history yet: they stay, and are sent exactly once.
  const keepUsageOfSms = db.prepare(
    `INSERT INTO usage_erased (account_id, what, direction, at, counted)
     SELECT account_id, 'sms', direction, created_at, ${SMS_COUNTED} FROM sms_messages WHERE account_id = ? AND status NOT IN ('queued', 'sending')`,
  );
  const deleteSms = db.prepare("DELETE FROM sms_messages WHERE account_id = ? AND status NOT IN ('queued', 'sending')");
  // What the erased calls counted for usage stays (api.md: billing records are untouched).
  const keepUsageOfCall = db.prepare(
    `INSERT INTO usage_erased (account_id, what, direction, at, minutes)
     SELECT account_id, 'call', direction, COALESCE(started_at, created_at), COALESCE(charged_minutes, 0) FROM calls WHERE account_id = ? AND call_id = ?`,
  );
  const keepUsageOfCalls = db.prepare(
    `INSERT INTO usage_erased (account_id, what, direction, at, minutes)
     SELECT account_id, 'call', direction, COALESCE(started_at, created_at), COALESCE(charged_minutes, 0) FROM calls WHERE account_id = ?`,
  );
  const deleteSnapshot = db.prepare('DELETE FROM actor_snapshots WHERE account_id = ? AND actor_id = ?');
  const deleteDeadlines = db.prepare('DELETE FROM deadlines WHERE account_id = ? AND actor_id = ?');
  const deleteCallSnapshots = db.prepare("DELETE FROM actor_snapshots WHERE account_id = ? AND kind = 'call'");
  const deleteCallDeadlines = db.prepare("DELETE FROM deadlines WHERE account_id = ? AND actor_id LIKE 'call\\_%' ESCAPE '\\'");
  // Webhook deliveries about erased calls go too: their payloads hold the transcript and numbers.
  const deleteDeliveries = db.prepare('DELETE FROM webhook_deliveries WHERE account_id = ? AND call_id = ?');
  const deleteCallDeliveries = db.prepare('DELETE FROM webhook_deliveries WHERE account_id = ? AND call_id IS NOT NULL');
  // A pending analysis of an erased call never runs: nothing is left to analyse or to tell.
  const deleteAnalysisJob = db.prepare('DELETE FROM analysis_jobs WHERE account_id = ? AND internal_id = ?');
  const deleteAnalysisJobs = db.prepare('DELETE FROM analysis_jobs WHERE account_id = ?');

  // Only files inside the data directory are ever removed, whatever a row says.
  function removeFile(path: string | null): void {
    if (path === null || dataDir === null) return;
    const full = isAbsolute(path) ? path : resolve(dataDir, path);
    if (!full.startsWith(dataDir + sep)) return;
    try {
      unlinkSync(full);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  const hadRecording = (t: Target): boolean => t.recording_url !== null || t.recording_path !== null;

  const eraseOne = db.transaction((accountId: string, id: string): CallErased | null => {
    const t = selectOne.get(accountId, id, id, id, id);
    if (!t) return null;
    keepUsageOfCall.run(accountId, t.call_id);
    deleteCall.run(accountId, t.call_id);
    deleteDeliveries.run(accountId, t.call_id);
    if (t.internal_id !== null) {
      deleteSnapshot.run(accountId, t.internal_id);
      deleteDeadlines.run(accountId, t.internal_id);
      deleteAnalysisJob.run(accountId, t.internal_id);
    }
    removeFile(t.recording_path);
    return { internalId: t.internal_id, callId: t.call_id, recordingDeleted: hadRecording(t) };
  });

  const eraseAll = db.transaction((accountId: string): AccountCallsErased => {
    const targets = selectAll.all(accountId);
    keepUsageOfCalls.run(accountId);
    const calls = deleteCalls.run(accountId).changes;
    keepUsageOfSms.run(accountId);
    const sms = deleteSms.run(accountId).changes;
    deleteCallSnapshots.run(accountId);
    deleteCallDeadlines.run(accountId);
    deleteCallDeliveries.run(accountId);
    deleteAnalysisJobs.run(accountId);
    for (const t of targets) removeFile(t.recording_path);
    return {
      internalIds: targets.flatMap((t) => (t.internal_id === null ? [] : [t.internal_id])),
      calls,
      recordings: targets.filter(hadRecording).length,
      sms,
    };
  });

  return {
    /** Erases one call by its public id (and its snapshot, deadlines and recording file). */
    deleteOne(accountId: string, id: string): CallErased | null {
      return eraseOne(accountId, id);
    },
    /** Erases every call and SMS message of the account. */
    deleteAll(accountId: string): AccountCallsErased {
      return eraseAll(accountId);
    },
  };
}
