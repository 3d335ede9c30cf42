// The child-process harness of the SIGKILL crash tests (outbound-crash, campaign-crash),
// kept in one place so that both kill, restart and judge the service the same way.
// helpers/process.ts and support.ts's serviceRig start a process and wait for it; a crash
// test needs more: the service (`node --import tsx server.ts`, as `npm start` runs it)
// spawned without waiting, so that it can be killed mid-boot; a boot that dies on its own
// counted and retried, as a process manager would; every later start held to a multiple
// of the first (the measure of the machine as loaded right now); exits the test did not
// cause told apart from its kills; the service's error log lines counted for the summary.
// Also what both tests do around it: the admin command raising an account's plan, callees
// that hang up answered calls, /metrics read while the service may be down, and the
// seeded PRNG streams a test draws its plan from.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startSims } from '../helpers/calls.ts';
import type { CarrierSims } from '../helpers/fixtures.ts';
import { mulberry32 } from '../sim/sim-http.ts';
import { serviceRig, sleep, type ServiceRig } from './support.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** One spawned service process. */
export interface ServiceProc {
  child: ChildProcess;
  spawnedAt: number;
  /** It has logged "switchboard listening". */
  ready: boolean;
  readyP: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  killedByUs: boolean;
  /** The last 4,000 characters of its stderr. */
  stderr: string;
  /** Its last 200 stdout (log) lines. */
  tail: string[];
}

export interface CrashRigOptions {
  /** The carrier simulators' pause between a call's steps (ringing, answer, …). */
  simStepMs: number;
  /** The service's environment beyond the carriers, its port and data folder, echo media and rate limits no test reaches. */
  env?: Record<string, string>;
  /** The test's seed, named in the errors. */
  seed: number;
  /** When the test began: exits are timed from it. */
  t0: number;
  /** A file to append every service log line to (for digging into a failure). */
  logFile?: string | undefined;
  /** How long the first start may take (spawn to "switchboard listening"): a guard against a hang. */
  firstStartLimitMs: number;
  /** Every later start may take `startLimitFactor` × the first start, never less than `minStartLimitMs`. */
  minStartLimitMs: number;
  startLimitFactor: number;
  /** Sees every log line, for the test's own counts. */
  onLine?: (line: string) => void;
}

/** Both carriers' simulators and the service, one process at a time, on one port and one data folder. */
export interface CrashRig {
  sims: CarrierSims;
  /** The service's URL, the same across restarts. */
  base: string;
  /** Its database file (a test reads it, or holds its write lock, through a connection of its own). */
  dbFile: string;
  /** The process running or booting; null when none is. */
  readonly proc: ServiceProc | null;
  /** Spawns a process (it becomes `proc`). Its exit, unless by killNow, is recorded in unexpectedExits (it was listening) or bootFailures. */
  launch(): ServiceProc;
  /** Until one process is listening: launches if none runs; a boot that fails on its own is retried (30 times at most); a start over its limit throws. */
  up(): Promise<void>;
  /** SIGKILLs the process, if any, and waits for its exit. */
  killNow(): Promise<void>;
  readonly unexpectedExits: string[];
  readonly bootFailures: string[];
  /** Error and fatal log lines, by message (and error code, or the start of the error's message). */
  readonly errorLines: Map<string, number>;
  /** Spawn to listening of the first start (undefined before it), and of the slowest. */
  readonly firstStartMs: number | undefined;
  readonly slowestStartMs: number;
  /** One gauge or counter of the service's GET /metrics; NaN when the service does not answer (it may be down). */
  metric(name: string): Promise<number>;
  /** `npm run admin set-plan <account> enterprise <limit>` on the data folder; the running service sees it within a second. */
  setPlan(accountId: string, limit: number): void;
  /** Callees at carrier A hang up an answered call once it has been up `holdMs(to)` (undefined: not a call of the test's); returns the stop. */
  hangUpAnswered(holdMs: (to: string) => number | undefined, everyMs: number): () => void;
  /** Stops the callees, kills the service, removes the data folder, stops the simulators. */
  close(): Promise<void>;
}

function spawnService(o: CrashRigOptions, env: Record<string, string>, errorLines: Map<string, number>): ServiceProc {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: root,
    env: { ...process.env, HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let resolveReady: () => void = () => {};
  const p: ServiceProc = {
    child,
    spawnedAt: Date.now(),
    ready: false,
    readyP: new Promise<void>((r) => (resolveReady = r)),
    exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
    killedByUs: false,
    stderr: '',
    tail: [],
  };
  child.stderr!.on('data', (d) => (p.stderr = (p.stderr + String(d)).slice(-4000)));
  let buffered = '';
  child.stdout!.on('data', (d) => {
    if (o.logFile) appendFileSync(o.logFile, String(d));
    buffered += String(d);
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      p.tail.push(line);
      if (p.tail.length > 200) p.tail.shift();
      o.onLine?.(line);
      if (line.includes('"level":50') || line.includes('"level":60')) {
        try {
          const j = JSON.parse(line) as { msg?: string; err?: { code?: string; message?: string } };
          const k = `${j.msg ?? '?'}${j.err?.code ? ` (${j.err.code})` : j.err?.message ? ` (${j.err.message.slice(0, 80)})` : ''}`;
          errorLines.set(k, (errorLines.get(k) ?? 0) + 1);
        } catch {
          // not JSON
        }
      }
      if (!p.ready && line.includes('"switchboard listening"')) {
        p.ready = true;
        resolveReady();
      }
    }
  });
  return p;
}

/** The simulators, the rig's port and data folder, and the service's first process not yet launched. */
export async function startCrashRig(o: CrashRigOptions): Promise<CrashRig> {
  const sims = await startSims(o.simStepMs);
  let rig: ServiceRig;
  try {
    // The rig gives the fixed port, the data folder and the carriers' routing to it; the
    // harness runs the process itself, so that it can kill it mid-boot too.
    rig = await serviceRig(sims);
  } catch (err) {
    await sims.close();
    throw err;
  }
  const env = {
    ...sims.env,
    DATA_DIR: rig.dataDir,
    PORT: String(rig.port),
    MEDIA_ENGINE: 'echo',
    KEY_CREATION_PER_HOUR_PER_IP: '10000',
    RATE_LIMIT_WRITES_PER_MIN: '1000000',
    RATE_LIMIT_READS_PER_MIN: '1000000',
    ...o.env,
  };
  let proc: ServiceProc | null = null;
  let firstStartMs: number | undefined;
  let slowestStartMs = 0;
  const unexpectedExits: string[] = [];
  const bootFailures: string[] = [];
  const errorLines = new Map<string, number>();
  const callees = new Set<NodeJS.Timeout>();
  const lastWords = (p: ServiceProc): string => p.stderr.trim().slice(-600) || p.tail.slice(-5).join('\n');

  const launch = (): ServiceProc => {
    const p = spawnService(o, env, errorLines);
    proc = p;
    void p.exited.then(({ code, signal }) => {
      if (p.killedByUs) return;
      const what = `exit ${code ?? signal} ${p.ready ? 'while running' : 'during boot'} (${Date.now() - o.t0} ms): ${lastWords(p)}`;
      (p.ready ? unexpectedExits : bootFailures).push(what);
      if (proc === p) proc = null;
    });
    return p;
  };
  const killNow = async (): Promise<void> => {
    const p = proc;
    if (!p) return;
    proc = null;
    p.killedByUs = true;
    p.child.kill('SIGKILL');
    await p.exited;
  };

  return {
    sims,
    base: `http://127.0.0.1:${rig.port}`,
    dbFile: rig.dbFile,
    get proc() {
      return proc;
    },
    launch,
    async up() {
      for (let attempt = 0; attempt < 30; attempt++) {
        const p = proc ?? launch();
        const limitMs = firstStartMs === undefined ? o.firstStartLimitMs : Math.max(o.minStartLimitMs, o.startLimitFactor * firstStartMs);
        const r = await Promise.race([p.readyP.then(() => 'up'), p.exited.then(() => 'exited'), sleep(limitMs).then(() => 'timeout')]);
        if (r === 'up') {
          const tookMs = Date.now() - p.spawnedAt;
          firstStartMs ??= tookMs;
          slowestStartMs = Math.max(slowestStartMs, tookMs);
          return;
        }
        if (r === 'timeout') {
          const first = firstStartMs === undefined ? 'the first start' : `${o.startLimitFactor} × the first start's ${firstStartMs} ms`;
          throw new Error(`seed ${o.seed}: the service did not start within ${limitMs} ms (${first}):\n${lastWords(p)}`);
        }
        if (proc === p) proc = null;
      }
      throw new Error(`seed ${o.seed}: the service failed to boot 30 times in a row:\n${bootFailures.slice(-3).join('\n')}`);
    },
    killNow,
    unexpectedExits,
    bootFailures,
    errorLines,
    get firstStartMs() {
      return firstStartMs;
    },
    get slowestStartMs() {
      return slowestStartMs;
    },
    async metric(name) {
      try {
        const text = await (await fetch(`http://127.0.0.1:${rig.port}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith(`${name} `));
        return line === undefined ? NaN : Number(line.slice(name.length + 1));
      } catch {
        return NaN;
      }
    },
    setPlan(accountId, limit) {
      const admin = spawnSync(process.execPath, ['--import', 'tsx', 'admin.ts', 'set-plan', accountId, 'enterprise', String(limit)], {
        cwd: root,
        env: { ...process.env, DATA_DIR: rig.dataDir },
        encoding: 'utf8',
      });
      if (admin.status !== 0) throw new Error(`admin set-plan ${accountId} enterprise ${limit} exited with ${admin.status}: ${admin.stderr}`);
    },
    hangUpAnswered(holdMs, everyMs) {
      const hungUp = new Set<string>();
      const timer = setInterval(() => {
        const now = sims.twilio.clock.now();
        for (const c of sims.twilio.calls.values()) {
          const hold = holdMs(c.to);
          if (hold === undefined || hungUp.has(c.sid) || c.status !== 'in-progress' || c.answeredAt === null || now - c.answeredAt < hold) continue;
          hungUp.add(c.sid);
          sims.twilio.hangup(c.sid).catch(() => {});
        }
      }, everyMs);
      callees.add(timer);
      return () => {
        clearInterval(timer);
        callees.delete(timer);
      };
    },
    async close() {
      for (const timer of callees) clearInterval(timer);
      callees.clear();
      await killNow();
      await rig.close();
      await sims.close();
    },
  };
}

/** Independent PRNG streams of one seed, one per purpose, so one purpose's draws do not shift another's. */
export function seededStreams(seed: number): (purpose: string) => () => number {
  return (purpose) => {
    let h = 0x811c9dc5 ^ seed;
    for (const ch of purpose) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193);
    return mulberry32(h >>> 0);
  };
}

/** A whole number drawn uniformly from [lo, hi]. */
export const uniform = (rnd: () => number, [lo, hi]: [number, number]): number => Math.round(lo + rnd() * (hi - lo));
