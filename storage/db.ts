// Opens the one SQLite database and brings its schema up to date. WAL with
// synchronous=NORMAL: a commit survives a process crash (it is in the WAL, in the OS's
// cache), and Litestream copies the WAL off the machine (README "Deployment").
// Who checkpoints: Litestream, PASSIVE from 1,000 WAL pages (RESTART from 10,000). Between
// its checkpoints it holds a read transaction begun just after the last one, so no other
// connection can restart the WAL before Litestream has copied it, and none can copy a
// frame written since into the database file. SQLite's automatic checkpoint (PASSIVE,
// 1,000 pages) stays on: under Litestream it finds nothing it may copy, and without
// Litestream (no replica) it keeps the WAL from growing without bound. The service never
// runs a TRUNCATE or RESTART checkpoint of its own. The busy timeout lets a write wait out
// the short write lock Litestream takes to checkpoint (Litestream asks for 5 s).
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
  db.pragma('wal_autocheckpoint = 1000');
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
