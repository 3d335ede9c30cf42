// Issue 7, acceptance 4: a second, minimal actor kind (test/runtime/ticker-kind.ts: a
// `ticker` that counts durable `tick` deadlines to a target and notes each count
// through an effect intent) runs on the SAME generic supervisor and durable scheduler
// as calls (createCallSystem, the real call kind registered beside it), on a real
// SQLite file, and
//  1. persists: each transition commits its snapshot (kind 'ticker', its version), the
//     kind's domain rows, its deadline and its intent in one transaction; a commit that
//     fails half-way leaves nothing of it, the actor does not move, and the deadline
//     fires again (at least once) until it is taken, exactly once;
//  2. restores after SIGKILL: a child process (second-kind-process.ts) is killed at
//     random moments while ticks are pending and restarted; every committed state seen
//     after a kill is consistent, and the ticker reaches `done` with exactly the target
//     count, no tick lost and none counted twice, each note written once;
//  3. receives durable deadlines through that scheduler: a tick due while the process
//     was dead fires after the restart; a call's deadline and a ticker's deadline due
//     together each reach their own actor, whose own schema parses the event.
// SECOND_KIND_SEED reproduces a run's kill moments; SECOND_KIND_KILLS sets how many;
// SECOND_KIND_TARGET the ticks to count in the child (50 ms apart; 40, or 10 per kill).
import { mulberry32 } from '../sim/sim-http.ts';
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { CALL_MACHINE_VERSION } from '../../machines/call.ts';
import { capturingLog, sideConnection, sleep, tempDir } from './support.ts';
import { createTickerRuntime, type TickerRuntime } from './second-kind-runtime.ts';
import { PROCESS_IDS, readNotes, TICKER_VERSION, type TickerContext } from './ticker-kind.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = 'test/runtime/second-kind-process.ts';
const { tickerId: TICKER_ID, callId: CALL_ID } = PROCESS_IDS;

const SEED = Number(process.env['SECOND_KIND_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const KILLS = Number(process.env['SECOND_KIND_KILLS'] ?? 3);

/** mulberry32: the kill moments of a run follow from its seed. */
const rng = mulberry32;

async function eventually<T>(probe: () => T | undefined | false, ms: number, what: string): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what} (seed ${SEED})`);
    await sleep(5);
  }
}

// ---- What is durable, read on a second connection in one read transaction ----

interface Observed {
  counter: { state: string; count: number; noted: number; version: number } | undefined;
  ticks: { n: number; seq: number; due_at: number; fired_at: number }[];
  snapshot: { kind: string; done: number; updated_at: number; version: number; value: unknown; context: TickerContext } | undefined;
  deadlines: { id: number; actor_kind: string; name: string; event: Record<string, unknown>; due_at: number }[];
  intents: { id: string; actor_kind: string; effect: string; params: { n: number }; sent_at: number | null }[];
}

function observe(db: Database.Database, actorId: string = TICKER_ID): Observed {
  return db.transaction((): Observed => {
    const snap = db.prepare('SELECT kind, done, updated_at, snapshot FROM actor_snapshots WHERE actor_id = ?').get(actorId) as
      | { kind: string; done: number; updated_at: number; snapshot: string }
      | undefined;
    return {
      counter: db.prepare('SELECT state, count, noted, version FROM ticker_counters WHERE actor_id = ?').get(actorId) as Observed['counter'],
      ticks: db.prepare('SELECT n, seq, due_at, fired_at FROM ticker_ticks WHERE actor_id = ? ORDER BY n').all(actorId) as Observed['ticks'],
      snapshot: snap && { kind: snap.kind, done: snap.done, updated_at: snap.updated_at, ...(JSON.parse(snap.snapshot) as { version: number; value: unknown; context: TickerContext }) },
      deadlines: (db.prepare('SELECT id, actor_kind, name, event, due_at FROM deadlines WHERE actor_id = ? ORDER BY id').all(actorId) as { event: string }[]).map((d) => ({
        ...(d as unknown as Observed['deadlines'][number]),
        event: JSON.parse(d.event) as Record<string, unknown>,
      })),
      intents: (db.prepare('SELECT id, actor_kind, effect, params, sent_at FROM effect_intents WHERE actor_id = ? ORDER BY created_at').all(actorId) as { params: string }[]).map((i) => ({
        ...(i as unknown as Observed['intents'][number]),
        params: JSON.parse(i.params) as { n: number },
      })),
    };
  })();
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);
const stateOf = (value: unknown): string => JSON.stringify(value);
const WAITING = stateOf({ counting: 'waiting' });
const NOTING = stateOf({ counting: 'noting' });

/**
 * One committed state of the ticker, read as a whole: the snapshot, the domain rows,
 * the deadline and the intent agree, as they must if each transition commits them
 * together. `notes` are the lines the outside world received.
 */
function expectConsistent(o: Observed, notes: string[], where: string): void {
  const s = o.snapshot;
  expect(s, where).toBeDefined();
  const ctx = s!.context;
  expect(s!.kind, where).toBe('ticker');
  expect(s!.version, where).toBe(TICKER_VERSION);
  expect(o.counter, where).toEqual({ state: stateOf(s!.value), count: ctx.count, noted: ctx.noted, version: TICKER_VERSION });
  // Every count came from its own tick: none lost, none counted twice.
  expect(o.ticks.map((t) => [t.n, t.seq]), where).toEqual(range(ctx.count).map((n) => [n, n]));
  for (let i = 1; i < o.ticks.length; i++) expect(o.ticks[i]!.due_at, where).toBeGreaterThan(o.ticks[i - 1]!.due_at);
  const state = stateOf(s!.value);
  if (state === WAITING) {
    expect(o.deadlines.map((d) => ({ kind: d.actor_kind, name: d.name, seq: d.event['seq'], due: d.due_at })), where).toEqual([
      { kind: 'ticker', name: 'tick', seq: ctx.count + 1, due: ctx.dueAt },
    ]);
    expect(o.intents, where).toEqual([]);
    expect(ctx.noted, where).toBe(ctx.count);
  } else if (state === NOTING) {
    expect(o.deadlines, where).toEqual([]);
    expect(o.intents.map((i) => ({ kind: i.actor_kind, effect: i.effect, n: i.params.n })), where).toEqual([{ kind: 'ticker', effect: 'note', n: ctx.count }]);
    expect(ctx.noted, where).toBe(ctx.count - 1);
  } else {
    expect(state, where).toBe(stateOf('done'));
    expect(s!.done, where).toBe(1);
    expect(o.deadlines, where).toEqual([]);
    expect(o.intents, where).toEqual([]);
  }
  // The outside world: no effect before its intent was durable; each count noted at most once, every recorded one noted.
  expect(notes.filter((l) => l.startsWith('VIOLATION')), where).toEqual([]);
  const noted = notes.filter((l) => l.startsWith(`${TICKER_ID} `)).map((l) => Number(l.split(' ')[1]));
  expect(new Set(noted).size, `${where}: a count noted twice: ${noted.join(',')}`).toBe(noted.length);
  expect(noted.every((n) => n >= 1 && n <= ctx.count), where).toBe(true);
  for (const n of range(ctx.noted)) expect(noted, where).toContain(n);
}

// ---- 1. Persists, in one transaction (in process) ----

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.reverse()) {
    try {
      f();
    } catch {
      // best effort
    }
  }
  cleanup = [];
});

function inProcess(): { rt: TickerRuntime; side: ReturnType<typeof sideConnection>; lines: Record<string, any>[] } {
  const tmp = tempDir('second-kind-');
  const { log, lines } = capturingLog('warn');
  const rt = createTickerRuntime({ dataDir: tmp.dir, clock: Date.now, log, noteDelayMs: 5 });
  const side = sideConnection(join(tmp.dir, 'switchboard.db'));
  cleanup.push(tmp.remove, () => rt.close(), () => side.close());
  return { rt, side, lines };
}

it('persists: every transition of the second kind commits its snapshot (kind, version), domain rows, deadline and intent together; a failed commit leaves nothing and its deadline fires again', async () => {
  const TARGET = 8;
  const { rt, side, lines } = inProcess();
  const sup = rt.system.supervisor;
  // Fault: the snapshot write of the transition to count 3 aborts. The kind's domain
  // rows were written before it, in the same transaction, and the fired deadline removed.
  side.db.exec(`CREATE TRIGGER fail_third_count BEFORE UPDATE ON actor_snapshots
    WHEN NEW.kind = 'ticker' AND json_extract(NEW.snapshot, '$.context.count') = 3
    BEGIN SELECT RAISE(ABORT, 'injected: the snapshot write fails'); END`);
  // The call's first deadline (queue_check, 60 s after its creation) comes due 150 ms in.
  const t0 = Date.now();
  rt.seed({ target: TARGET, intervalMs: 30, callCreatedAt: t0 - 60_000 + 150 });
  const callDeadline = observe(side.db, CALL_ID).deadlines;
  expect(callDeadline.map((d) => [d.actor_kind, d.name])).toEqual([['call', 'queue_check']]);

  // After every commit of the ticker, what is durable is exactly what the actor holds.
  // (A watcher that throws is dropped by the supervisor: failures are kept and asserted at the end.)
  const seen: string[] = [];
  const drift: unknown[] = [];
  sup.watch(TICKER_ID, (snap) => {
    if (snap === null) return true;
    try {
      const o = observe(side.db);
      expect(o.snapshot?.value).toEqual(snap.value);
      expect(o.snapshot?.context).toEqual(snap.context);
      expectConsistent(o, readNotes(rt.notesFile), `after commit ${seen.length}`);
    } catch (err) {
      drift.push(err);
    }
    seen.push(stateOf(snap.value));
    return snap.status !== 'active';
  });
  // Each kind parses its events with its own schema: neither takes the other's.
  expect(sup.send(TICKER_ID, { type: 'TIMER', at: Date.now(), name: 'queue_check' })).toBe('invalid');
  expect(sup.send(CALL_ID, { type: 'TICK', at: Date.now(), seq: 1 })).toBe('invalid');
  expect(rt.system.send(CALL_ID, { type: 'NOTED', at: Date.now(), n: 1 })).toBe('invalid');
  rt.system.scheduler.start();

  // The transition to count 3 fails, and fails again at each retry of its deadline.
  const failures = () => lines.filter((l) => l.level >= 50 && l.actor_id === TICKER_ID && /commit failed/.test(l.msg)).length;
  await eventually(() => failures() >= 2, 5000, 'two failed commits of the third tick');
  const stuck = observe(side.db);
  expect(stuck.counter?.count).toBe(2);
  expect(stuck.snapshot?.context.count).toBe(2);
  expect(stuck.ticks.map((t) => t.n)).toEqual([1, 2]); // the domain row written in the failed commit is gone
  expect(stuck.deadlines.map((d) => d.event['seq'])).toEqual([3]); // the fired deadline stays, and fires again
  expect((sup.snapshotOf(TICKER_ID)!.context as TickerContext).count).toBe(2); // the actor did not move
  expect(readNotes(rt.notesFile)).not.toContain(`${TICKER_ID} 3`);
  expectConsistent(stuck, readNotes(rt.notesFile), 'while the commit fails');

  // The call's deadline was not held up by the other kind's failing one: the call took its TIMER (re-armed 60 s on).
  const callAfter = await eventually(() => {
    const d = observe(side.db, CALL_ID).deadlines;
    return d.length === 1 && d[0]!.due_at >= callDeadline[0]!.due_at + 60_000 ? d : undefined;
  }, 3000, "the call's own deadline");
  expect(callAfter[0]!.event).toMatchObject({ type: 'TIMER', name: 'queue_check' });

  side.db.exec('DROP TRIGGER fail_third_count');
  await eventually(() => observe(side.db).snapshot?.done === 1, 8000, 'the ticker to finish');
  const end = observe(side.db);
  expectConsistent(end, readNotes(rt.notesFile), 'at the end');
  expect(end.counter).toEqual({ state: stateOf('done'), count: TARGET, noted: TARGET, version: TICKER_VERSION });
  expect(readNotes(rt.notesFile)).toEqual(range(TARGET).map((n) => `${TICKER_ID} ${n}`));
  expect(drift).toEqual([]);
  expect(seen.at(-1)).toBe(stateOf('done'));
  expect(seen.length).toBeGreaterThanOrEqual(2 * TARGET + 1);
  // The call is untouched by the ticker's run: still queued, of its own kind and version.
  const call = observe(side.db, CALL_ID).snapshot!;
  expect(call).toMatchObject({ kind: 'call', done: 0, version: CALL_MACHINE_VERSION, value: 'queued' });
});

// ---- 2 and 3. Restores after SIGKILL; deadlines due while dead fire after the restart (child process) ----

interface Child {
  child: ChildProcess;
  lines: Record<string, any>[];
  stderr: () => string;
  exited: Promise<void>;
  ready: Record<string, any>;
}

// Each kill cycle uses up to ~8 ticks: more kills need more ticks to kill among.
const TARGET = Number(process.env['SECOND_KIND_TARGET'] ?? Math.max(40, 10 * KILLS));
const INTERVAL_MS = 50;
const NOTE_DELAY_MS = 15;

async function spawnChild(dataDir: string, offset: number, mode: 'first' | 'restart'): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, dataDir, String(offset), mode, String(TARGET), String(INTERVAL_MS), String(NOTE_DELAY_MS)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: Record<string, any>[] = [];
  let err = '';
  let buf = '';
  child.stderr!.on('data', (d) => (err += String(d)));
  child.stdout!.on('data', (d) => {
    buf += String(d);
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const l = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        lines.push(JSON.parse(l));
      } catch {
        // not ours
      }
    }
  });
  let dead = false;
  const exited = new Promise<void>((resolve) => child.on('exit', () => ((dead = true), resolve())));
  const ready = await eventually(() => {
    if (dead) throw new Error(`child exited before it was ready: ${err}`);
    return lines.find((l) => l['ready'] === true);
  }, 15_000, 'the child to be ready');
  return { child, lines, stderr: () => err, exited, ready };
}

async function kill(c: Child): Promise<void> {
  c.child.kill('SIGKILL');
  await c.exited;
}

it('restores after SIGKILL at random moments and takes deadlines due while it was dead, through the same supervisor and scheduler as calls', { timeout: process.env['SECOND_KIND_NO_POKE'] === '1' ? 60_000 + TARGET * 1000 : 60_000 }, async () => {
  const random = rng(SEED);
  const tmp = tempDir('second-kind-kill-');
  const children: Child[] = [];
  cleanup.push(tmp.remove, () => children.forEach((c) => c.child.kill('SIGKILL')));
  const where = (s: string) => `${s} (seed ${SEED})`;

  let offset = 0;
  let c = await spawnChild(tmp.dir, offset, 'first');
  children.push(c);
  expect(c.ready['live']).toEqual([
    { id: CALL_ID, kind: 'call' },
    { id: TICKER_ID, kind: 'ticker' },
  ]);
  const db = new Database(join(tmp.dir, 'switchboard.db'));
  cleanup.push(() => db.close());

  // The kill lands where it lands: a tick aimed at may have fired between the look and
  // the kill. Each kill is checked by what was durable at it; both kinds must have occurred.
  let firedAfterRestart = 0;
  let notesResumed = 0;
  for (let k = 0; k < KILLS; k++) {
    await sleep(40 + Math.floor(random() * 360));
    // After a random delay, even kills wait for an armed tick (a deadline pending), odd
    // ones for a note under way (an intent pending, perhaps sent, perhaps written).
    const aim = k % 2 === 0 ? WAITING : NOTING;
    await eventually(() => stateOf(observe(db).snapshot?.value) === aim, 3000, `the ticker in ${aim}`);
    expect(observe(db).snapshot?.done, where('ticks are pending at the kill')).toBe(0);
    await kill(c);
    const atKill = observe(db);
    expectConsistent(atKill, readNotes(join(tmp.dir, 'notes.log')), where(`after kill ${k + 1}`));
    expect(atKill.snapshot!.done, where('not finished at the kill')).toBe(0);
    const pendingTick = atKill.deadlines[0];

    // The clock leaps 5 s while the process is down (a longer downtime): what was armed is due at the restart.
    offset += 5000;
    c = await spawnChild(tmp.dir, offset, 'restart');
    children.push(c);
    expect(c.ready['restored'], where('both kinds come back')).toMatchObject({ restored: 2, abandoned: 0, migrated: 0 });
    if (pendingTick) {
      expect(pendingTick.due_at).toBeLessThan(c.ready['booted']);
      // The tick due while the process was dead fires after the restart, counted once.
      const seq = pendingTick.event['seq'] as number;
      const row = await eventually(() => observe(db).ticks.find((t) => t.seq === seq), 5000, `tick ${seq} after restart ${k + 1}`);
      expect(row.n).toBe(seq);
      expect(row.due_at).toBe(pendingTick.due_at);
      expect(row.fired_at, where('fired after the restart')).toBeGreaterThanOrEqual(c.ready['booted']);
      firedAfterRestart++;
    } else {
      // A note was pending: its intent is resumed (reconciled with the file if it may have been written).
      expect(atKill.intents.length, where('a tick or a note is pending at every kill')).toBeGreaterThan(0);
      const n = atKill.intents[0]!.params.n;
      await eventually(() => (observe(db).counter?.noted ?? 0) >= n, 5000, `note ${n} after restart ${k + 1}`);
      notesResumed++;
    }
  }
  expect(firedAfterRestart + notesResumed).toBe(KILLS);
  expect(firedAfterRestart, where('a kill with a tick pending')).toBeGreaterThan(0);
  if (KILLS > 1) expect(notesResumed, where('a kill with a note pending')).toBeGreaterThan(0);

  // Both kinds' deadlines due at once (the clock leaps past the call's queue_check): each reaches its own actor.
  await sleep(100);
  const callBefore = observe(db, CALL_ID);
  expect(callBefore.deadlines.map((d) => [d.actor_kind, d.name])).toEqual([['call', 'queue_check']]);
  c.child.stdin!.write('leap 61000\n');
  const leapt = await eventually(() => c.lines.find((l) => l['leapt'] === true), 3000, 'the leap');
  expect(callBefore.deadlines[0]!.due_at).toBeLessThanOrEqual(leapt['clock']);
  const callAfter = await eventually(() => {
    const o = observe(db, CALL_ID);
    return o.deadlines[0] && o.deadlines[0].due_at >= leapt['clock'] + 60_000 ? o : undefined;
  }, 5000, "the call's deadline taken by the call");
  expect(callAfter.deadlines.map((d) => [d.actor_kind, d.name, d.event['type']])).toEqual([['call', 'queue_check', 'TIMER']]);
  expect(callAfter.snapshot).toMatchObject({ kind: 'call', done: 0, version: CALL_MACHINE_VERSION, value: 'queued' });
  expect(callAfter.snapshot!.updated_at).toBeGreaterThanOrEqual(leapt['clock']);

  // The ticker ends with exactly its target: no tick lost, none counted twice, each noted once.
  await eventually(() => observe(db).snapshot?.done === 1, 15_000 + TARGET * 1000 * Number(process.env['SECOND_KIND_NO_POKE'] === '1'), 'the ticker to finish');
  const end = observe(db);
  const notes = readNotes(join(tmp.dir, 'notes.log'));
  expectConsistent(end, notes, where('at the end'));
  expect(end.counter, where('the count')).toEqual({ state: stateOf('done'), count: TARGET, noted: TARGET, version: TICKER_VERSION });
  expect(end.ticks.map((t) => t.seq)).toEqual(range(TARGET));
  expect(end.ticks.every((t) => t.fired_at >= t.due_at)).toBe(true);
  expect(notes, where('each count noted once')).toEqual(range(TARGET).map((n) => `${TICKER_ID} ${n}`));
  expect((db.prepare('SELECT COUNT(*) AS n FROM effect_intents').get() as { n: number }).n).toBe(0);
  for (const ch of children) expect(ch.stderr(), where('no runtime error in a child')).not.toMatch(/"level":(50|60)/);
  await kill(c);
});

// ---- Routing by kind ----
// Deadlines are routed by actor kind and id: a row of kind 'call' naming a ticker's id
// (a row the runtime did not write, or an id reused across kinds) never reaches the
// ticker; the supervisor answers 'invalid' and the scheduler drops the row.
it('a deadline row is routed by its kind as well as its actor id: a row of kind call never reaches a ticker', async () => {
  const { rt, side } = inProcess();
  rt.seed({ target: 3, intervalMs: 60_000 });
  rt.system.scheduler.start();
  // A row that names the ticker's id under the other kind (ids are global, kinds are not checked).
  rt.storage.deadlines.set({ accountId: PROCESS_IDS.accountId, kind: 'call', actorId: TICKER_ID, name: 'forged', event: { type: 'TICK', at: 0, seq: 1 }, dueAt: Date.now() });
  rt.system.scheduler.poke();
  await eventually(() => observe(side.db).deadlines.every((d) => d.name !== 'forged'), 3000, 'the forged row to be handled');
  expect(observe(side.db).counter?.count).toBe(0);
});
