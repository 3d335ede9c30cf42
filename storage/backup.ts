// An online copy of the database through SQLite's backup API, taken beside a running
// service that keeps writing. The copy is one consistent snapshot: every page is copied
// in a single backup step, which holds one read transaction for its duration. In WAL
// mode a reader blocks no writer, so the service goes on committing. The backup API's
// default (100 pages a step, the read lock released between steps) starts over whenever
// another process commits between two steps: a large database under a steady write load
// would be copied again and again.
// The copy is written under a temporary name and renamed into place, so a copy cut short
// never looks complete and an existing file is replaced whole or not at all.
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Db } from './db.ts';

export interface BackupResult {
  file: string;
  bytes: number;
  pages: number;
  page_size: number;
  /** The schema version the copy holds (its migrations). */
  user_version: number;
}

export class BackupRefused extends Error {}

/** Every remaining page in one step (the largest count better-sqlite3 passes on). */
const ALL_PAGES = 0x7fffffff;

/** Copies `db` to `file`; refuses an existing file unless `overwrite`. */
export async function backupDatabase(db: Db, file: string, opts: { overwrite: boolean }): Promise<BackupResult> {
  const target = resolve(file);
  if (!opts.overwrite && existsSync(target)) throw new BackupRefused(`${target} exists; pass --force to replace it`);
  if (!existsSync(dirname(target))) throw new BackupRefused(`the folder ${dirname(target)} does not exist`);
  const temp = join(dirname(target), `.${basename(target)}.${process.pid}.partial`);
  try {
    await db.backup(temp, { progress: () => ALL_PAGES });
    // The copy keeps the source's WAL mode in its header; folded back to a rollback
    // journal it is one self-contained file, as a copy to carry elsewhere should be.
    const copy = new Database(temp);
    let pages: number;
    let pageSize: number;
    let userVersion: number;
    try {
      copy.pragma('journal_mode = DELETE');
      pages = copy.pragma('page_count', { simple: true }) as number;
      pageSize = copy.pragma('page_size', { simple: true }) as number;
      userVersion = copy.pragma('user_version', { simple: true }) as number;
    } finally {
      copy.close();
    }
    renameSync(temp, target);
    return { file: target, bytes: statSync(target).size, pages, page_size: pageSize, user_version: userVersion };
  } finally {
    rmSync(temp, { force: true });
    rmSync(`${temp}-wal`, { force: true });
    rmSync(`${temp}-shm`, { force: true });
  }
}
