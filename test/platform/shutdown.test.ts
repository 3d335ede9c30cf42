// npm start's process: starts on its defaults with an empty data folder, and on
// SIGTERM stops accepting, finishes what it had, closes the database and exits 0.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startServiceProcess } from '../helpers/process.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the service process', () => {
  it('creates its data folder, serves, and shuts down cleanly on SIGTERM', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'switchboard-proc-'));
    dirs.push(parent);
    const dataDir = join(parent, 'data');
    const svc = await startServiceProcess({ DATA_DIR: dataDir });
    const created = await fetch(`${svc.url}/v1/keys`, { method: 'POST' });
    expect(created.status).toBe(201);
    const { key_id } = (await created.json()) as { key_id: string };

    svc.child.kill('SIGTERM');
    const { code } = await svc.exited;
    expect(code).toBe(0);
    expect(svc.lines.some((l) => l.includes('"shutting down"'))).toBe(true);
    // A clean close checkpoints the WAL into the main file and removes it.
    expect(existsSync(join(dataDir, 'switchboard.db-wal'))).toBe(false);
    const db = new Database(join(dataDir, 'switchboard.db'), { readonly: true });
    expect(db.prepare('SELECT id FROM api_keys WHERE id = ?').get(key_id)).toEqual({ id: key_id });
    db.close();
    await expect(fetch(`${svc.url}/healthz`)).rejects.toThrow();
  });

  it('refuses to start on a bad configuration and says which variable is wrong', async () => {
    await expect(startServiceProcess({ PORT: 'eighty' })).rejects.toThrow(/PORT/);
  });
});
