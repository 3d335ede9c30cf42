// Opens the one SQLite database and brings its schema up to date. WAL with
// synchronous=NORMAL: a commit survives a process crash, and Litestream (which reads
// the WAL) takes the checkpoints, so auto-checkpointing stays on only as a backstop.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { migrations } from './migrations/index.ts';

export type Db = Database.Database;

/** How long a write waits for another connection's lock before it fails (SQLITE_BUSY). */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

export function openDatabase(file: string, opts: { busyTimeoutMs?: number } = {}): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS))}`);
  db.pragma('foreign_keys = ON');
  migrate(db);
  return db;
}

/** Applies every migration newer than `user_version`, each in its own transaction. */
export function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
}

/** Runs `fn` inside one transaction; nested calls join the outer one (savepoints). */
export function transactional(db: Db): <T>(fn: () => T) => T {
  const tx = db.transaction((fn: () => unknown) => fn());
  return <T>(fn: () => T) => tx(fn) as T;
}
