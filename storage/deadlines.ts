// Durable deadlines of the scheduler: "send this event to that actor at that time".
// One live deadline per (actor, name); setting it again moves it. The scheduler serves
// every account and every actor kind, so its queries go by actor id (globally unique),
// kind and due time. A fired deadline is removed by `takeIfDue` in the same transaction
// as the state change it causes: if that commit fails, the row stays and fires again.
import type { Db } from './db.ts';

export interface DeadlineRow {
  id: number;
  account_id: string;
  actor_kind: string;
  actor_id: string;
  name: string;
  event: string;
  due_at: number;
}

export function createDeadlinesRepo(db: Db) {
  const upsert = db.prepare(
    `INSERT INTO deadlines (account_id, actor_kind, actor_id, name, event, due_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (actor_id, name) DO UPDATE SET event = excluded.event, due_at = excluded.due_at, actor_kind = excluded.actor_kind`,
  );
  const remove = db.prepare('DELETE FROM deadlines WHERE actor_id = ? AND name = ?');
  const removeFired = db.prepare('DELETE FROM deadlines WHERE id = ? AND due_at = ?');
  const removeActor = db.prepare('DELETE FROM deadlines WHERE actor_id = ?');
  const earliest = db.prepare<[], { due_at: number }>('SELECT due_at FROM deadlines ORDER BY due_at LIMIT 1');
  const due = db.prepare<[number, number], DeadlineRow>('SELECT * FROM deadlines WHERE due_at <= ? ORDER BY due_at, id LIMIT ?');
  const ofActor = db.prepare<[string], DeadlineRow>('SELECT * FROM deadlines WHERE actor_id = ? ORDER BY name');

  return {
    set(d: { accountId: string; kind: string; actorId: string; name: string; event: unknown; dueAt: number }): void {
      upsert.run(d.accountId, d.kind, d.actorId, d.name, JSON.stringify(d.event), d.dueAt);
    },
    cancel(actorId: string, name: string): void {
      remove.run(actorId, name);
    },
    cancelAll(actorId: string): void {
      removeActor.run(actorId);
    },
    /** Removes a fired deadline unless it was moved meanwhile; false when it was moved or is gone. */
    takeIfDue(row: { id: number; due_at: number }): boolean {
      return removeFired.run(row.id, row.due_at).changes === 1;
    },
    earliestDue(): number | null {
      return earliest.get()?.due_at ?? null;
    },
    due(now: number, limit = 500): DeadlineRow[] {
      return due.all(now, limit);
    },
    ofActor(actorId: string): DeadlineRow[] {
      return ofActor.all(actorId);
    },
  };
}

export type DeadlinesRepo = ReturnType<typeof createDeadlinesRepo>;
