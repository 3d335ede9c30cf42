// Erasure of call records: one call, or every call of an account together with its
// SMS messages, the calls' actor snapshots, deadlines, webhook deliveries and analysis jobs, and recording files kept in
// the data directory. Rows go in the caller's transaction; files are removed last, so
// a failure to remove one rolls the rows back and the request can be repeated.
// A recording kept in the bucket cannot be deleted inside a transaction: its delete is
// committed with the rows (recording_transfers, due at once) and the caller has the
// worker run it (actors/recordings/bucket-transfers.ts), which retries until the store
// confirms. A recording still waiting for its upload goes with its local file.
import { unlinkSync } from 'node:fs';
import { dirname, isAbsolute, resolve, sep } from 'node:path';
import type { Db } from './db.ts';
import { SMS_COUNTED } from './usage.ts';

export interface CallErased {
  internalId: string | null;
  callId: string;
  recordingDeleted: boolean;
  /** Recordings in the bucket whose deletes were committed (recording paths): the worker is to run them. */
  bucketDeletes: string[];
}

export interface AccountCallsErased {
  internalIds: string[];
  calls: number;
  recordings: number;
  sms: number;
  bucketDeletes: string[];
}

interface Target {
  call_id: string;
  internal_id: string | null;
  recording_url: string | null;
  recording_path: string | null;
  recording_store: 'bucket' | null;
}

export function createCallErasure(db: Db) {
  const dataDir = db.memory ? null : dirname(resolve(db.name));
  const selectOne = db.prepare<[string, string, string, string, string], Target>(
    `SELECT call_id, internal_id, recording_url, recording_path, recording_store FROM calls
      WHERE account_id = ? AND (call_id = ? OR carrier_call_id = ? OR internal_id = ?) ORDER BY call_id = ? DESC LIMIT 1`,
  );
  const selectAll = db.prepare<[string], Target>(
    'SELECT call_id, internal_id, recording_url, recording_path, recording_store FROM calls WHERE account_id = ?',
  );
  // Recordings still waiting for the bucket: their rows and their files under DATA_DIR go.
  const uploadsOfCall = db.prepare<[string, string], { path: string }>(
    "SELECT path FROM recording_transfers WHERE action = 'upload' AND account_id = ? AND internal_id = ?",
  );
  const uploadsOfAccount = db.prepare<[string], { path: string }>("SELECT path FROM recording_transfers WHERE action = 'upload' AND account_id = ?");
  const deleteUpload = db.prepare("DELETE FROM recording_transfers WHERE path = ? AND action = 'upload'");
  const enqueueBucketDelete = db.prepare("INSERT OR REPLACE INTO recording_transfers (path, action, next_attempt_at, created_at) VALUES (?, 'delete', 0, ?)");
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

  /** Commits the bucket deletes of these calls' recordings; returns their paths. */
  function deleteFromBucket(targets: Target[]): string[] {
    const paths = targets.flatMap((t) => (t.recording_store === 'bucket' && t.recording_path !== null ? [t.recording_path] : []));
    for (const p of paths) enqueueBucketDelete.run(p, Date.now());
    return paths;
  }

  /** Drops uploads not yet confirmed; returns their local files, removed last with the others. */
  function dropUploads(rows: { path: string }[]): string[] {
    for (const r of rows) deleteUpload.run(r.path);
    return rows.map((r) => r.path);
  }

  const eraseOne = db.transaction((accountId: string, id: string): CallErased | null => {
    const t = selectOne.get(accountId, id, id, id, id);
    if (!t) return null;
    keepUsageOfCall.run(accountId, t.call_id);
    deleteCall.run(accountId, t.call_id);
    deleteDeliveries.run(accountId, t.call_id);
    const waiting = t.internal_id === null ? [] : dropUploads(uploadsOfCall.all(accountId, t.internal_id));
    if (t.internal_id !== null) {
      deleteSnapshot.run(accountId, t.internal_id);
      deleteDeadlines.run(accountId, t.internal_id);
      deleteAnalysisJob.run(accountId, t.internal_id);
    }
    const bucketDeletes = deleteFromBucket([t]);
    if (t.recording_store !== 'bucket') removeFile(t.recording_path);
    for (const p of waiting) removeFile(p);
    return { internalId: t.internal_id, callId: t.call_id, recordingDeleted: hadRecording(t) || waiting.length > 0, bucketDeletes };
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
    const waiting = dropUploads(uploadsOfAccount.all(accountId));
    const bucketDeletes = deleteFromBucket(targets);
    for (const t of targets) if (t.recording_store !== 'bucket') removeFile(t.recording_path);
    for (const p of waiting) removeFile(p);
    return {
      internalIds: targets.flatMap((t) => (t.internal_id === null ? [] : [t.internal_id])),
      calls,
      // A call whose recording was still on its way to the bucket had one too (its row points at none yet).
      recordings: targets.filter(hadRecording).length + waiting.length,
      sms,
      bucketDeletes,
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
