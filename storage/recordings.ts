// Recording files of calls: a call's row points at its file (recording_path, relative:
// `recordings/<token>.mp3`), says where that file is kept (recording_store: NULL under the
// data directory, 'bucket' in RECORDINGS_BUCKET_URL under its token's name), and holds the
// public link (recording_url) that serves it. The file is stored first and the row
// second, so a row never points at nothing; a call erased meanwhile updates no row and
// its new file is removed by the writer (actors/recordings/recording-store.ts).
import { dirname, resolve } from 'node:path';
import type { Db } from './db.ts';

/** Where a recording's bytes are: the data directory, or the bucket. */
export type RecordingStore = 'local' | 'bucket';

export interface RecordingFile {
  path: string;
  store: RecordingStore;
  accountId: string;
  callId: string;
}

export interface ExpiredRecording {
  account_id: string;
  internal_id: string;
  recording_path: string;
  recording_store: 'bucket' | null;
}

export function createRecordingsRepo(db: Db) {
  /** Where recording files live: beside the database, as storage/call-erasure.ts expects. */
  const dataDir = db.memory ? null : dirname(resolve(db.name));
  const attach = db.prepare(
    `UPDATE calls SET recording_url = ?, recording_path = ?, recording_store = ?, recording_duration_seconds = ?, recording_saved_at = ?,
       recording_expected_until = NULL, recording_requested_at = NULL
      WHERE account_id = ? AND internal_id = ?`,
  );
  const expect = db.prepare('UPDATE calls SET recording_expected_until = ? WHERE account_id = ? AND internal_id = ? AND recording_path IS NULL');
  const giveUp = db.prepare('UPDATE calls SET recording_expected_until = NULL, recording_requested_at = NULL WHERE account_id = ? AND internal_id = ?');
  const requested = db.prepare('UPDATE calls SET recording_requested_at = ? WHERE account_id = ? AND internal_id = ? AND recording_path IS NULL');
  const expired = db.prepare<[number, number], ExpiredRecording>(
    `SELECT account_id, internal_id, recording_path, recording_store FROM calls
      WHERE recording_path IS NOT NULL AND recording_saved_at < ? ORDER BY recording_saved_at LIMIT ?`,
  );
  const forget = db.prepare(
    `UPDATE calls SET recording_url = NULL, recording_path = NULL, recording_store = NULL, recording_duration_seconds = NULL, recording_saved_at = NULL
      WHERE account_id = ? AND internal_id = ? AND recording_path = ?`,
  );
  const byPath = db.prepare<[string], { recording_path: string; recording_store: 'bucket' | null; account_id: string; call_id: string }>(
    'SELECT recording_path, recording_store, account_id, call_id FROM calls WHERE recording_path = ?',
  );
  return {
    dataDir,
    /** False when the call is gone (erased while its recording was being written). `store` says where the file is (default the data directory). */
    attach(accountId: string, internalId: string, url: string, path: string, seconds: number, savedAt: number, store: RecordingStore = 'local'): boolean {
      return attach.run(url, path, store === 'bucket' ? 'bucket' : null, seconds, savedAt, accountId, internalId).changes > 0;
    },
    /** A recording of this call is on its way: call.completed waits for it until `untilMs` at most. */
    expect(accountId: string, internalId: string, untilMs: number): void {
      expect.run(untilMs, accountId, internalId);
    },
    /** The carrier is asked to record the call (committed before the request leaves): call.completed waits a while after the end. */
    requested(accountId: string, internalId: string, at: number): void {
      requested.run(at, accountId, internalId);
    },
    /** The recording will not come (the carrier failed, nothing was heard): call.completed need not wait. */
    giveUp(accountId: string, internalId: string): void {
      giveUp.run(accountId, internalId);
    },
    /** Recordings saved before `before` (every account: the retention sweep's query), oldest first. */
    expiredBefore(before: number, limit: number): ExpiredRecording[] {
      return expired.all(before, limit);
    },
    /** The call keeps its transcript; its recording fields go. Only if it still points at `path`. */
    forget(r: ExpiredRecording): void {
      forget.run(r.account_id, r.internal_id, r.recording_path);
    },
    byPath(path: string): RecordingFile | null {
      const r = byPath.get(path);
      return r ? { path: r.recording_path, store: r.recording_store === 'bucket' ? 'bucket' : 'local', accountId: r.account_id, callId: r.call_id } : null;
    },
  };
}
