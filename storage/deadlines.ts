// Durable deadlines of the scheduler: "send this event to that actor at that time".
// One live deadline per (actor, name); setting it again moves it. The scheduler serves
// every account, so its queries go by actor id (globally unique) and due time.
import type { Db } from './db.ts';

export interface DeadlineRow {
  id: number;
  account_id: string;
  actor_id: string;
  name: string;
  event: string;
  due_at: number;
}

export function createDeadlinesRepo(db: Db) {
  const upsert = db.prepare(
    `INSERT INTO deadlines (account_id, actor_id, name, event, due_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (actor_id, name) DO UPDATE SET event = excluded.event, due_at = excluded.due_at`,
  );
  const remove = db.prepare('DELETE FROM deadlines WHERE actor_id = ? AND name = ?');
  const removeById = db.prepare('DELETE FROM deadlines WHERE id = ?');
  const removeActor = db.prepare('DELETE FROM deadlines WHERE actor_id = ?');
  const earliest = db.prepare<[], { due_at: number }>('SELECT due_at FROM deadlines ORDER BY due_at LIMIT 1');
  const due = db.prepare<[number], DeadlineRow>('SELECT * FROM deadlines WHERE due_at <= ? ORDER BY due_at, id');

  return {
    set(d: { accountId: string; actorId: string; name: string; event: unknown; dueAt: number }): void {
      upsert.run(d.accountId, d.actorId, d.name, JSON.stringify(d.event), d.dueAt);
    },
    cancel(actorId: string, name: string): void {
      remove.run(actorId, name);
    },
    cancelAll(actorId: string): void {
      removeActor.run(actorId);
    },
    /** Removes one fired deadline; false when something else removed it first. */
    take(id: number): boolean {
      return removeById.run(id).changes === 1;
    },
    earliestDue(): number | null {
      return earliest.get()?.due_at ?? null;
    },
    due(now: number): DeadlineRow[] {
      return due.all(now);
    },
  };
}

export type DeadlinesRepo = ReturnType<typeof createDeadlinesRepo>;
