// The durable transfers of recordings to and from the bucket (migration 013): `upload` a
// file written under DATA_DIR (the call's row points at it only once the bucket confirmed
// it), `delete` an object whose call is erased or expired. The worker
// (actors/recordings/bucket-transfers.ts) takes due rows across accounts, retries a failed
// one later and never gives one up. Enqueueing only writes, so it joins the caller's
// transaction; listeners are told synchronously and must wait for the commit.
import type { Db } from './db.ts';

export type TransferAction = 'upload' | 'delete';

export interface TransferRow {
  path: string;
  action: TransferAction;
  account_id: string | null;
  internal_id: string | null;
  seconds: number | null;
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
}

export function createRecordingTransfersRepo(db: Db) {
  const upload = db.prepare(
    `INSERT INTO recording_transfers (path, action, account_id, internal_id, seconds, next_attempt_at, created_at)
     VALUES (?, 'upload', ?, ?, ?, 0, ?)`,
  );
  // A delete replaces whatever the path had (an upload whose call went meanwhile).
  const remove = db.prepare(
    `INSERT OR REPLACE INTO recording_transfers (path, action, next_attempt_at, created_at) VALUES (?, 'delete', 0, ?)`,
  );
  const one = db.prepare<[string], TransferRow>('SELECT * FROM recording_transfers WHERE path = ?');
  const due = db.prepare<[number, string, number], TransferRow>(
    `SELECT * FROM recording_transfers WHERE next_attempt_at <= ? AND path NOT IN (SELECT value FROM json_each(?))
      ORDER BY next_attempt_at, rowid LIMIT ?`,
  );
  const nextAfter = db.prepare<[number], { t: number | null }>('SELECT MIN(next_attempt_at) AS t FROM recording_transfers WHERE next_attempt_at > ?');
  const retry = db.prepare('UPDATE recording_transfers SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE path = ? AND action = ?');
  const done = db.prepare('DELETE FROM recording_transfers WHERE path = ? AND action = ?');
  const uploadOfCall = db.prepare<[string], { path: string }>("SELECT path FROM recording_transfers WHERE internal_id = ? AND action = 'upload'");
  const counts = db.prepare<[], { action: TransferAction; n: number }>('SELECT action, COUNT(*) AS n FROM recording_transfers GROUP BY action');
  const listeners = new Set<() => void>();
  const tell = (): void => {
    for (const l of listeners) l();
  };

  return {
    /** The file at `path` (written and synced) waits for the bucket; due at once. */
    enqueueUpload(u: { path: string; accountId: string; internalId: string; seconds: number; now: number }): void {
      upload.run(u.path, u.accountId, u.internalId, u.seconds, u.now);
      tell();
    },
    /** The object `path` is to go from the bucket; due at once. */
    enqueueDelete(path: string, now: number): void {
      remove.run(path, now);
      tell();
    },
    get(path: string): TransferRow | undefined {
      return one.get(path);
    },
    /** Due rows (every account), oldest first, without the ones in `busy`. */
    due(now: number, busy: readonly string[], limit: number): TransferRow[] {
      return due.all(now, JSON.stringify(busy), limit);
    },
    nextDueAfter(now: number): number | null {
      return nextAfter.get(now)?.t ?? null;
    },
    /** A failed attempt: counted, tried again at `at`. False when the row is gone or changed its action. */
    retryAt(path: string, action: TransferAction, at: number, error: string): boolean {
      return retry.run(at, error, path, action).changes === 1;
    },
    /** The transfer is over; false when the row is gone or changed its action. */
    finish(path: string, action: TransferAction): boolean {
      return done.run(path, action).changes === 1;
    },
    /** The call's recording is on its way to the bucket. */
    uploadPending(internalId: string): boolean {
      return uploadOfCall.get(internalId) !== undefined;
    },
    /** Rows waiting, by action (the /metrics gauges). */
    pending(): Record<TransferAction, number> {
      const out: Record<TransferAction, number> = { upload: 0, delete: 0 };
      for (const r of counts.all()) out[r.action] = r.n;
      return out;
    },
    /** Called after each enqueue (inside its transaction). */
    onEnqueued(listener: () => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

export type RecordingTransfersRepo = ReturnType<typeof createRecordingTransfersRepo>;
