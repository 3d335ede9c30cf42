// What the runtime counterparts of ../shared/repro/runtime share: the service as a real
// child process on a fixed port (SIGKILL and restart on the same data folder), a
// TestServer-shaped client for it, a logger whose lines the test can read, a second
// SQLite connection on the service's database file (to read what is durable, or to
// hold its write lock so the service's commits really fail), and dial counters.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { startServiceProcess, type ServiceProcess } from '../helpers/process.ts';
import type { TestServer } from '../helpers/server.ts';
import { PUBLIC_BASE } from '../helpers/calls.ts';
import type { CarrierSims } from '../helpers/fixtures.ts';
import { closedPort } from '../sim/sim-http.ts';

import { remote } from '../helpers/remote.ts';

export { remote };

/** The service as a child process on one data folder and one port, killed and restarted at will. */
export interface ServiceRig {
  dataDir: string;
  dbFile: string;
  port: number;
  /** The running process (null while it is down). */
  current: ServiceProcess | null;
  start(extraEnv?: Record<string, string>): Promise<TestServer>;
  /** SIGKILL: nothing of the process runs after this, no shutdown code at all. */
  kill(): Promise<void>;
  close(): Promise<void>;
}

export async function serviceRig(sims: CarrierSims, env: Record<string, string> = {}): Promise<ServiceRig> {
  const dataDir = mkdtempSync(join(tmpdir(), 'runtime-rig-'));
  // The same port across restarts: the carriers keep delivering where they did.
  const port = await closedPort();
  sims.twilio.route(PUBLIC_BASE, `http://127.0.0.1:${port}`);
  sims.telnyx.redirect(PUBLIC_BASE, `http://127.0.0.1:${port}`);
  const rig: ServiceRig = {
    dataDir,
    dbFile: join(dataDir, 'switchboard.db'),
    port,
    current: null,
    async start(extraEnv = {}) {
      rig.current = await startServiceProcess({
        ...sims.env,
        DATA_DIR: dataDir,
        PORT: String(port),
        MEDIA_ENGINE: 'echo',
        KEY_CREATION_PER_HOUR_PER_IP: '10000',
        ...env,
        ...extraEnv,
      });
      return remote(rig.current.url);
    },
    async kill() {
      const p = rig.current;
      if (!p) return;
      rig.current = null;
      p.child.kill('SIGKILL');
      await p.exited;
    },
    async close() {
      await rig.kill();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return rig;
}

/** A logger that keeps every line (parsed) for the test to read. */
export function capturingLog(level: pino.Level = 'info'): { log: Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of String(chunk).split('\n')) {
        if (l.trim() === '') continue;
        try {
          lines.push(JSON.parse(l));
        } catch {
          // not JSON: not ours
        }
      }
      done();
    },
  });
  return { log: pino({ level }, sink), lines };
}

/** Log lines at error level or above whose error (or its cause) has this SQLite code. */
export function sqliteErrors(lines: Record<string, any>[], code = 'SQLITE_BUSY'): Record<string, any>[] {
  return lines.filter((l) => l.level >= 50 && (l.err?.code === code || String(l.err?.message ?? '').includes('database is locked')));
}

/**
 * A second connection on the service's database file. `lock()` takes SQLite's write
 * lock (BEGIN IMMEDIATE) and holds it: every commit of the service fails with
 * SQLITE_BUSY once its busy timeout runs out, reads still work (WAL). `run` executes
 * `sql` and takes the lock in the same synchronous step, so an in-process service
 * cannot act between the two.
 */
export function sideConnection(file: string) {
  const db = new Database(file);
  db.pragma('busy_timeout = 5000');
  let locked = false;
  return {
    db,
    lock(sqlBefore?: () => void): void {
      sqlBefore?.();
      db.exec('BEGIN IMMEDIATE');
      locked = true;
    },
    unlock(): void {
      if (locked) db.exec('ROLLBACK');
      locked = false;
    },
    close(): void {
      if (locked) db.exec('ROLLBACK');
      locked = false;
      db.close();
    },
  };
}

/** Carrier A dial requests that reached the simulator for `to` (placed or not). */
export const twilioDials = (sims: CarrierSims, to: string): number =>
  sims.twilio.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/Calls.json') && r.body['To'] === to).length;

/** Carrier B dial requests that reached the simulator for `to` (placed or de-duplicated). */
export const telnyxDialBodies = (sims: CarrierSims, to: string): Record<string, unknown>[] =>
  sims.telnyx.requests
    .filter((r) => r.method === 'POST' && r.path === '/v2/calls' && (r.body as { to?: unknown } | undefined)?.to === to)
    .map((r) => r.body as Record<string, unknown>);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A private temp folder, removed by the returned function. */
export function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The carrier's call id the service recorded for a call (the public record does not show it). */
export function carrierIdOf(dbFile: string, publicId: string): string | null {
  const db = new Database(dbFile, { readonly: true });
  try {
    const row = db.prepare('SELECT carrier_call_id FROM calls WHERE call_id = ? OR internal_id = ?').get(publicId, publicId) as { carrier_call_id: string | null } | undefined;
    return row?.carrier_call_id ?? null;
  } finally {
    db.close();
  }
}

/** `SELECT COUNT(*) AS n …` on a connection; 0 when the table does not exist (a schema without it). */
export function countOr0(db: Database.Database, sql: string, ...args: unknown[]): number {
  try {
    return (db.prepare(sql).get(...args) as { n: number }).n;
  } catch (err) {
    if (err instanceof Error && /no such table/.test(err.message)) return 0;
    throw err;
  }
}

/**
 * A forwarding proxy between a carrier simulator and the service: carrier webhooks go
 * through it, and `drop` decides which are lost (answered 503, as a network fault would
 * leave them; the simulators do not retry). `target` may change across restarts.
 */
export async function webhookProxy(): Promise<{
  url: string;
  target: string | null;
  drop: ((path: string, body: string) => boolean) | null;
  dropped: number;
  close(): Promise<void>;
}> {
  const hop = new Set(['connection', 'keep-alive', 'host', 'content-length', 'transfer-encoding', 'upgrade']);
  const state = {
    url: '',
    target: null as string | null,
    drop: null as ((path: string, body: string) => boolean) | null,
    dropped: 0,
    close: async () => {},
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      if (state.target === null || state.drop?.(req.url ?? '', body.toString())) {
        state.dropped++;
        res.writeHead(503).end();
        return;
      }
      try {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !hop.has(k)) headers[k] = v;
        const r = await fetch(state.target + (req.url ?? ''), { method: req.method ?? 'POST', headers, ...(body.length ? { body } : {}) });
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'text/plain' }).end(Buffer.from(await r.arrayBuffer()));
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
