// The restore drill (issue 23, acceptance 1): what an operator is promised about losing the
// machine. Against a real S3-compatible server on loopback (s3rver, ./s3-server.ts), each
// drill:
//   1. starts production's way, `bash scripts/start.sh` (the Procfile's `web`) on an empty
//      data folder with LITESTREAM_REPLICA_URL=s3://…: Litestream (litestream.yml as
//      shipped) runs the real service (server.ts) under `replicate -exec`;
//   2. writes under load: RATE writes a second from WRITERS loops, each POST /v1/agents
//      with its own Idempotency-Key, the moment each 201 arrives noted (its
//      acknowledgement). 250 a second is about 10 MB/s of WAL; the service's saturation
//      (RESTORE_DRILL_RATE=3000) was about 600 a second on 2 cores;
//   3. SIGKILLs Litestream and the service together (their process group) at a seeded
//      random moment of the load;
//   4. restores the replica into a fresh folder (`litestream restore -o`, as on a new
//      machine) and opens it: PRAGMA integrity_check is `ok`, and every write acknowledged
//      more than GUARANTEE_MS before the kill is there, its agent with its stored reply
//      (they commit together, so each is there with the other or neither is).
// The recovery point is measured too: the oldest acknowledged write the restore lacks
// (its age at the kill is what was lost), and the newest one it holds. The worst over the
// drills is printed; README "Deployment" quotes it. Litestream's default intervals (1 s)
// fail this drill: a write acknowledged 1,046 ms before the kill was missing.
// Then a new machine: start.sh on an empty data folder and the last drill's replica must
// restore before it serves, and a client replaying every acknowledged request with its key
// gets the stored reply for each write the replica kept and a fresh 201 for each it lost:
// afterwards there is exactly one agent per acknowledged request. SIGTERM then stops it
// cleanly (exit 0).
//   RESTORE_DRILL_SEED    the seed of the kill moments (default: random; printed)
//   RESTORE_DRILL_DRILLS  how many drills (default 5, never fewer)
//   RESTORE_DRILL_RATE    writes per second (default 250)
//   RESTORE_DRILL_LOG     a file to append each drill's log lines to (service and Litestream)
import Database from 'better-sqlite3';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { closedPort, mulberry32 } from '../sim/sim-http.ts';
import { startS3Server, type S3Server } from './s3-server.ts';
import { cleanEnv, restoreReplica, runStartScript } from './start-script.ts';

const SEED = process.env.RESTORE_DRILL_SEED ? Number(process.env.RESTORE_DRILL_SEED) >>> 0 : Math.floor(Math.random() * 2 ** 32) >>> 0;
const DRILLS = Math.max(5, Number(process.env.RESTORE_DRILL_DRILLS ?? 5) || 5);
/** The promise: a write acknowledged longer ago than this when the machine died is in the replica. */
const GUARANTEE_MS = 1000;
/** The load: writes per second, launched on a schedule by WRITERS loops (a loop whose last write is late sends its next at once). */
const RATE = Math.max(1, Number(process.env.RESTORE_DRILL_RATE ?? 250) || 250);
const WRITERS = 8;
/** The kill lands this long after the load began (uniform, seeded). */
const KILL_AFTER_MS: [number, number] = [600, 3000];
/** A start (restore included) on a loaded machine: a guard against a hang, not a measure. */
const START_LIMIT_MS = 60_000;
const SECRETS_KEY = '5e'.repeat(32);

let s3: S3Server;
const dirs: string[] = [];
const tempDir = (name: string) => {
  const d = mkdtempSync(join(tmpdir(), `${name}-`));
  dirs.push(d);
  return d;
};
beforeAll(async () => {
  s3 = await startS3Server('drills');
});
afterAll(async () => {
  await s3?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Ack {
  key: string;
  agentId: string;
  at: number;
}

/** The service's and Litestream's environment for one data folder and one replica. */
function envFor(dataDir: string, replica: string, port: number): Record<string, string> {
  return cleanEnv({
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'info',
    SECRETS_KEY,
    MEDIA_ENGINE: 'echo',
    KEY_CREATION_PER_HOUR_PER_IP: '10000',
    RATE_LIMIT_WRITES_PER_MIN: '1000000',
    RATE_LIMIT_READS_PER_MIN: '1000000',
    LITESTREAM_REPLICA_URL: `s3://${s3.bucket}/${replica}`,
    LITESTREAM_ENDPOINT: s3.endpoint,
    LITESTREAM_ACCESS_KEY_ID: s3.accessKeyId,
    LITESTREAM_SECRET_ACCESS_KEY: s3.secretAccessKey,
  });
}

async function newAccount(base: string): Promise<string> {
  const res = await fetch(`${base}/v1/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"drill"}' });
  const body = (await res.json()) as { key_id: string; key_secret: string };
  if (res.status !== 201) throw new Error(`POST /v1/keys answered ${res.status}: ${JSON.stringify(body)}`);
  return `${body.key_id}:${body.key_secret}`;
}

function createAgent(base: string, key: string, name: string) {
  return fetch(`${base}/v1/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': name },
    body: JSON.stringify({ name }),
  });
}

interface DrillResult {
  drill: number;
  replica: string;
  apiKey: string;
  acks: Ack[];
  killAfterMs: number;
  /** Acknowledged writes (before the kill) the restore holds. */
  present: number;
  /** Every acknowledged write the restore holds, answers read after the kill included. */
  restoredAcks: number;
  /** Acknowledged writes the restore lacks, and how long before the kill the oldest of them was acknowledged (the recovery point). */
  missing: number;
  lostWindowMs: number;
  /** How long before the kill the newest acknowledged write the restore holds was acknowledged. */
  newestKeptMs: number;
  extraGenerations: number;
  problems: string[];
}

async function drill(n: number, killAfterMs: number): Promise<DrillResult> {
  const dataDir = tempDir('drill-data');
  const restoreDir = tempDir('drill-restore');
  const replica = `seed-${SEED}/drill-${n}`;
  const port = await closedPort();
  const base = `http://127.0.0.1:${port}`;
  const env = envFor(dataDir, replica, port);
  const proc = runStartScript(env);
  const problems: string[] = [];
  try {
    await proc.listening(START_LIMIT_MS);
    const apiKey = await newAccount(base);

    // The load: write j of loop k is due at (j × WRITERS + k) / RATE seconds into it.
    const acks: Ack[] = [];
    let killed = false;
    const loadStart = Date.now();
    const writer = async (k: number) => {
      for (let j = 0; !killed; j++) {
        const seq = j * WRITERS + k;
        const wait = loadStart + (seq * 1000) / RATE - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (killed) break;
        const name = `drill-${SEED}-${n}-${seq}`;
        try {
          const res = await createAgent(base, apiKey, name);
          const at = Date.now();
          const body = (await res.json()) as { agent_id?: string };
          if (res.status === 201 && body.agent_id) acks.push({ key: name, agentId: body.agent_id, at });
          else if (!killed) problems.push(`${name}: answered ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
        } catch (err) {
          if (!killed) problems.push(`${name}: ${String(err)}`);
        }
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, k) => writer(k));
    await new Promise((r) => setTimeout(r, killAfterMs));
    proc.killAll();
    // Taken after the signal went: a write acknowledged before this moment was before the kill.
    const killAt = Date.now();
    killed = true;
    await Promise.all([...writers, proc.exited]);
    const generations = proc.lines.filter((l) => l.includes('new generation'));
    if (process.env.RESTORE_DRILL_LOG) appendFileSync(process.env.RESTORE_DRILL_LOG, `--- drill ${n}, killed at ${new Date(killAt).toISOString()}\n${proc.lines.join('\n')}\n`);

    const restored = join(restoreDir, 'switchboard.db');
    const r = await restoreReplica(env, join(dataDir, 'switchboard.db'), restored);
    if (r.code !== 0) throw new Error(`litestream restore exited ${r.code} in drill ${n}:\n${r.output}`);
    const db = new Database(restored, { readonly: true });
    try {
      const integrity = db.pragma('integrity_check', { simple: true });
      if (integrity !== 'ok') problems.push(`integrity_check: ${String(integrity)}`);
      const agents = new Set(db.prepare('SELECT agent_id FROM agents').pluck().all() as string[]);
      const replies = new Set(db.prepare(`SELECT key FROM idempotency_keys WHERE method = 'POST' AND path = '/v1/agents'`).pluck().all() as string[]);
      // An answer read after the kill may have left before it: it counts for the checks
      // that the agent and its reply come together, not for the recovery point.
      const beforeKill = acks.filter((a) => a.at < killAt);
      const kept = beforeKill.filter((a) => agents.has(a.agentId));
      const lost = beforeKill.filter((a) => !agents.has(a.agentId));
      for (const a of acks) {
        if (agents.has(a.agentId) !== replies.has(a.key)) problems.push(`${a.key}: agent ${agents.has(a.agentId) ? 'restored' : 'missing'} but its stored reply ${replies.has(a.key) ? 'restored' : 'missing'}`);
      }
      for (const a of lost) {
        if (killAt - a.at > GUARANTEE_MS) problems.push(`${a.key} (${a.agentId}) acknowledged ${killAt - a.at} ms before the kill is not in the restored database`);
      }
      if (beforeKill.length === 0) problems.push('no write was acknowledged before the kill');
      return {
        drill: n,
        replica,
        apiKey,
        acks,
        killAfterMs,
        present: kept.length,
        restoredAcks: acks.filter((a) => agents.has(a.agentId)).length,
        missing: lost.length,
        lostWindowMs: lost.length ? killAt - Math.min(...lost.map((a) => a.at)) : 0,
        newestKeptMs: kept.length ? killAt - Math.max(...kept.map((a) => a.at)) : NaN,
        extraGenerations: Math.max(0, generations.length - 1),
        problems,
      };
    } finally {
      db.close();
    }
  } finally {
    proc.killAll();
    await proc.exited;
  }
}

it(`a replica restored after SIGKILL mid-load holds every write acknowledged over ${GUARANTEE_MS} ms before the kill, ${DRILLS} drills (RESTORE_DRILL_SEED=${SEED})`, { timeout: 180_000 }, async () => {
  console.log(`[restore-drill] RESTORE_DRILL_SEED=${SEED} RESTORE_DRILL_DRILLS=${DRILLS}`);
  const rnd = mulberry32(SEED);
  const results: DrillResult[] = [];
  for (let n = 0; n < DRILLS; n++) {
    const killAfterMs = Math.round(KILL_AFTER_MS[0] + rnd() * (KILL_AFTER_MS[1] - KILL_AFTER_MS[0]));
    const r = await drill(n, killAfterMs);
    results.push(r);
    console.log(
      `[restore-drill] drill ${n}: killed ${killAfterMs} ms into the load; ${r.present + r.missing} writes acknowledged, ${r.present} restored, ` +
        `${r.missing ? `${r.missing} missing (the oldest acknowledged ${r.lostWindowMs} ms before the kill)` : 'none missing'}; newest restored acknowledged ${r.newestKeptMs} ms before the kill; ` +
        `extra generations ${r.extraGenerations}`,
    );
  }
  const worst = Math.max(...results.map((r) => r.lostWindowMs));
  console.log(`[restore-drill] recovery point: worst lost window ${worst} ms over ${DRILLS} drills (guarantee ${GUARANTEE_MS} ms; RESTORE_DRILL_SEED=${SEED})`);
  const problems = results.flatMap((r) => r.problems.map((p) => `drill ${r.drill}: ${p}`));
  expect(problems.length, `RESTORE_DRILL_SEED=${SEED}: ${problems.length} problems, the first:\n${problems.slice(0, 12).join('\n')}`).toBe(0);

  // A new machine: the start script restores the last drill's replica before it serves.
  const last = results[results.length - 1]!;
  const dataDir = tempDir('drill-new-machine');
  const port = await closedPort();
  const base = `http://127.0.0.1:${port}`;
  const proc = runStartScript(envFor(dataDir, last.replica, port));
  try {
    await proc.listening(START_LIMIT_MS);
    let replayed = 0;
    for (const a of last.acks) {
      const res = await createAgent(base, last.apiKey, a.key);
      const body = (await res.json()) as { agent_id?: string };
      if (res.headers.get('idempotent-replayed') === 'true') {
        replayed++;
        expect(body.agent_id, `${a.key}: the replayed reply`).toBe(a.agentId);
      } else {
        expect(res.status, `${a.key}: ${JSON.stringify(body)}`).toBe(201);
      }
    }
    expect(replayed, 'replays answered from the restored replies').toBe(last.restoredAcks);
    // Read beside the running service (WAL): each acknowledged request's agent once. (A
    // write committed but never answered may be there too: it was no request's answer.)
    const db = new Database(join(dataDir, 'switchboard.db'), { readonly: true });
    try {
      const count = db.prepare('SELECT COUNT(*) FROM agents WHERE name = ?').pluck();
      const wrong = last.acks.map((a) => [a.key, count.get(a.key) as number] as const).filter(([, c]) => c !== 1);
      expect(wrong, 'one agent per acknowledged request').toEqual([]);
    } finally {
      db.close();
    }
    // Litestream 0.3.13, stopping, checkpoints a WAL of 1,000 pages or more on a context it
    // has already cancelled and exits 1 (after uploading everything). Its monitor
    // checkpoints such a WAL within a tick (100 ms), so the stop waits a few ticks.
    await new Promise((r) => setTimeout(r, 500));
    proc.stop();
    expect(await proc.exited, `a clean stop:\n${proc.stderr()}\n${proc.lines.slice(-6).join('\n')}`).toEqual({ code: 0, signal: null });
  } finally {
    proc.killAll();
    await proc.exited;
  }
});
