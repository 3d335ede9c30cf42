// Persisted actor snapshots (JSON of `actor.getPersistedSnapshot()`), one row per
// actor. Written in the same transaction as the domain row the state change touched;
// rows not yet `done` are restored at boot.
import type { Db } from './db.ts';

export interface SnapshotRow {
  actor_id: string;
  account_id: string;
  kind: string;
  snapshot: string;
  done: number;
  updated_at: number;
}

export function createSnapshotsRepo(db: Db) {
  const upsert = db.prepare(
    `INSERT INTO actor_snapshots (actor_id, account_id, kind, snapshot, done, updated_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (actor_id) DO UPDATE SET snapshot = excluded.snapshot, done = excluded.done, updated_at = excluded.updated_at`,
  );
  // Every account's: the supervisor restores them all at boot.
  const unfinished = db.prepare<[string], SnapshotRow>(
    'SELECT * FROM actor_snapshots WHERE done = 0 AND kind = ? ORDER BY updated_at, rowid',
  );
  const markDone = db.prepare('UPDATE actor_snapshots SET done = 1, updated_at = ? WHERE actor_id = ? AND account_id = ?');
  const remove = db.prepare('DELETE FROM actor_snapshots WHERE actor_id = ?');

  return {
    save(s: { actorId: string; accountId: string; kind: string; snapshot: unknown; done: boolean; now: number }): void {
      upsert.run(s.actorId, s.accountId, s.kind, JSON.stringify(s.snapshot), s.done ? 1 : 0, s.now);
    },
    /** Every snapshot of this kind that had not reached a final state. */
    listUnfinished(kind: string): SnapshotRow[] {
      return unfinished.all(kind);
    },
    markDone(accountId: string, actorId: string, now: number): void {
      markDone.run(now, actorId, accountId);
    },
    /** Erasure: the snapshot of an erased call goes once its actor has finished. */
    remove(actorId: string): void {
      remove.run(actorId);
    },
  };
}

export type SnapshotsRepo = ReturnType<typeof createSnapshotsRepo>;
