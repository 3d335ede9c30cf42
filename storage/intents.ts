// Effect intents: what an actor's transition decided to do outside (dial, hang up, ask
// the carrier), committed in the same transaction as the transition, removed in the
// same transaction as the event that records the outcome. `sent_at` is committed
// just before the request leaves, so after a crash an intent never sent is simply run,
// and one that may have arrived is reconciled instead of repeated blindly.
import type { Db } from './db.ts';

export interface IntentRow {
  id: string;
  account_id: string;
  actor_kind: string;
  actor_id: string;
  effect: string;
  params: string;
  created_at: number;
  sent_at: number | null;
  attempts: number;
}

export function createIntentsRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO effect_intents (id, account_id, actor_kind, actor_id, effect, params, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO NOTHING`,
  );
  const remove = db.prepare('DELETE FROM effect_intents WHERE id = ?');
  const removeActor = db.prepare('DELETE FROM effect_intents WHERE actor_id = ?');
  const markSent = db.prepare('UPDATE effect_intents SET sent_at = COALESCE(sent_at, ?), attempts = attempts + 1 WHERE id = ?');
  const all = db.prepare<[], IntentRow>('SELECT * FROM effect_intents ORDER BY created_at, rowid');
  const one = db.prepare<[string], IntentRow>('SELECT * FROM effect_intents WHERE id = ?');
  const countActor = db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM effect_intents WHERE actor_id = ?');

  return {
    add(i: { id: string; accountId: string; kind: string; actorId: string; effect: string; params: unknown; now: number }): void {
      insert.run(i.id, i.accountId, i.kind, i.actorId, i.effect, JSON.stringify(i.params ?? null), i.now);
    },
    remove(id: string): void {
      remove.run(id);
    },
    removeActor(actorId: string): void {
      removeActor.run(actorId);
    },
    /** Committed before the request leaves; false when the intent is gone (its actor finished). */
    markSent(id: string, now: number): boolean {
      return markSent.run(now, id).changes === 1;
    },
    get(id: string): IntentRow | undefined {
      return one.get(id);
    },
    /** Every pending intent, oldest first (boot). */
    pending(): IntentRow[] {
      return all.all();
    },
    countFor(actorId: string): number {
      return countActor.get(actorId)!.n;
    },
  };
}

export type IntentsRepo = ReturnType<typeof createIntentsRepo>;
