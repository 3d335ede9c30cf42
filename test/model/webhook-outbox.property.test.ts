// Model-based test of the webhook outbox: the real repository on a real SQLite file,
// the real worker (actors/outbox/webhook-outbox.ts) with its retry decision, and a real HTTPS
// receiver. fast-check generates sequences of events enqueued (a URL sometimes given
// twice), receiver behaviour per URL (2xx, 500, 410, 429 with Retry-After, a cut
// connection), clock jumps, worker runs, clean restarts and crashes in the middle of an
// attempt (the database reopened from the same file). The worker's clock is the
// model's; time between runs is whatever the commands say.
// Invariants after every command: no delivery is lost; none is sent again after the
// receiver accepted it; `delivered` means the receiver answered 2xx to that
// webhook-id, `failed` means a 410 or the schedule used up. At the end, with every
// receiver healthy and the clock moved past every retry: every delivery not failed
// has been delivered.
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Agent } from 'node:https';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../storage/db.ts';
import { createStorage, type Storage } from '../../storage/index.ts';
import { createSecretBox } from '../../storage/secret-box.ts';
import { createWebhookOutbox, type WebhookOutbox } from '../../actors/outbox/webhook-outbox.ts';
import { agentTrusting, makeTestCa, startWebhookReceiver, type ReceivedWebhook, type ScriptedAnswer, type TestCa, type WebhookReceiver } from '../sim/webhook-receiver.ts';

/** Waits between attempts, in the model's (fake) milliseconds. */
const SCHEDULE = [1_000, 5_000, 20_000];
const MODES = ['ok', 'error500', 'gone410', 'retryAfter429', 'cut'] as const;
type Mode = (typeof MODES)[number];
const PATHS = 3;

let ca: TestCa;
let receiver: WebhookReceiver;
let agent: Agent;
let runSeq = 0;
const key = Buffer.alloc(32, 7);
const log = pino({ level: 'silent' });

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  agent = agentTrusting(ca);
});
afterAll(async () => {
  await receiver?.close();
  ca?.dispose();
});

interface Model {
  now: number;
  modes: Mode[];
  /** Every delivery enqueued, by id: which URL it went to. */
  deliveries: Map<string, number>;
  /** Crashes so far: an attempt cut off by one counts as an attempt (its request may have arrived). */
  crashes: number;
}

interface Real {
  dir: string;
  file: string;
  run: number;
  db: Db;
  storage: Storage;
  outbox: WebhookOutbox;
  accountId: string;
  clock: { now: number };
  /** Set while a crash is staged: every request hangs. */
  hang: boolean;
}

const pathOf = (r: Real, i: number) => `/model/${r.run}/${i}`;
const answerFor = (mode: Mode): ScriptedAnswer =>
  mode === 'ok' ? { status: 204 } : mode === 'error500' ? { status: 500 } : mode === 'gone410' ? { status: 410 } : mode === 'retryAfter429' ? { status: 429, headers: { 'retry-after': '3' } } : 'destroy';

function open(r: Real): void {
  r.db = openDatabase(r.file);
  r.storage = createStorage(r.db, createSecretBox(key));
  r.outbox = createWebhookOutbox({ storage: r.storage, clock: () => r.clock.now, log, allowPrivate: true, timeoutMs: 3000, schedule: SCHEDULE, agent });
}

async function close(r: Real): Promise<void> {
  await r.outbox.stop();
  r.db.close();
}

const requestsOf = (r: Real): ReceivedWebhook[] => receiver.requests.filter((q) => q.path.startsWith(`/model/${r.run}/`));

/** The invariants that hold between any two commands. */
function checkInvariants(m: Model, r: Real): void {
  const seen = new Map<string, ReceivedWebhook[]>();
  for (const q of requestsOf(r)) {
    const id = q.headers['webhook-id']!;
    seen.set(id, [...(seen.get(id) ?? []), q]);
  }
  for (const [id, pathIndex] of m.deliveries) {
    const row = r.storage.webhookDeliveries.get(id);
    expect(row, `delivery ${id} lost`).toBeDefined();
    const got = seen.get(id) ?? [];
    for (const q of got) expect(q.path).toBe(pathOf(r, pathIndex));
    // Nothing after the first 2xx.
    const firstOk = got.findIndex((q) => q.answered !== null && q.answered >= 200 && q.answered < 300);
    expect(firstOk === -1 || firstOk === got.length - 1, `${id} sent again after it was accepted`).toBe(true);
    expect(row!.status === 'delivered', `${id}: delivered iff the receiver accepted it`).toBe(firstOk !== -1);
    if (row!.status === 'failed') expect(got.some((q) => q.answered === 410) || row!.attempts > SCHEDULE.length).toBe(true);
    if (row!.status === 'pending') expect(row!.next_attempt_at).not.toBeNull();
    expect(row!.attempts).toBeGreaterThanOrEqual(got.length);
    expect(row!.attempts).toBeLessThanOrEqual(SCHEDULE.length + 1 + m.crashes);
  }
}

class Enqueue implements fc.AsyncCommand<Model, Real> {
  constructor(readonly urls: number[]) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const urls = this.urls.map((i) => `https://127.0.0.1:${receiver.port}${pathOf(r, i)}`);
    const ids = r.storage.tx(() =>
      r.storage.webhookDeliveries.enqueue({ accountId: r.accountId, callId: 'CAmodel', event: 'call.completed', urls, payload: { event: 'call.completed', n: m.deliveries.size }, now: m.now }),
    );
    expect(ids).toHaveLength(new Set(this.urls).size);
    const distinct = [...new Set(this.urls)];
    ids.forEach((id, i) => m.deliveries.set(id, distinct[i]!));
    checkInvariants(m, r);
  }
  toString = () => `Enqueue(${this.urls.join(',')})`;
}

class SetMode implements fc.AsyncCommand<Model, Real> {
  constructor(readonly path: number, readonly mode: Mode) {}
  check = () => true;
  async run(m: Model) {
    m.modes[this.path] = this.mode;
  }
  toString = () => `SetMode(${this.path}, ${this.mode})`;
}

class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    m.now += this.ms;
    r.clock.now = m.now;
  }
  toString = () => `Advance(${this.ms})`;
}

class RunDue implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    await r.outbox.runDue();
    checkInvariants(m, r);
  }
  toString = () => 'RunDue';
}

class Restart implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    await close(r);
    open(r);
    checkInvariants(m, r);
  }
  toString = () => 'Restart';
}

/** The process dies while attempts are out: their start is committed, their outcome never is. */
class CrashMidAttempt implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    const before = requestsOf(r).length;
    r.hang = true;
    const running = r.outbox.runDue();
    // Something due is on its way out: wait until it has reached the receiver.
    const due = r.storage.webhookDeliveries.due(m.now, 1).length > 0;
    const until = Date.now() + 300;
    while (due && requestsOf(r).length === before && Date.now() < until) await new Promise((res) => setTimeout(res, 5));
    await close(r);
    await running;
    // Requests already on the wire when the process died still reach the receiver a
    // moment later; they hang too (an answer to a dead process is never seen by it).
    await new Promise((res) => setTimeout(res, 15));
    r.hang = false;
    m.crashes++;
    open(r);
    checkInvariants(m, r);
  }
  toString = () => 'CrashMidAttempt';
}

const commands = [
  fc.array(fc.integer({ min: 0, max: PATHS - 1 }), { minLength: 1, maxLength: 4 }).map((u) => new Enqueue(u)),
  fc.tuple(fc.integer({ min: 0, max: PATHS - 1 }), fc.constantFrom(...MODES)).map(([p, mode]) => new SetMode(p, mode)),
  fc.tuple(fc.integer({ min: 0, max: PATHS - 1 }), fc.constantFrom(...MODES)).map(([p, mode]) => new SetMode(p, mode)),
  fc.constantFrom(0, 500, 1_000, 3_000, 6_000, 60_000, 3_600_000).map((ms) => new Advance(ms)),
  fc.constant(new RunDue()),
  fc.constant(new RunDue()),
  fc.constant(new Restart()),
  fc.constant(new CrashMidAttempt()),
];

it('every delivery is eventually sent, none is lost, none is sent again after a success', { timeout: 120_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: 30, size: 'max' }), async (cmds) => {
      const run = ++runSeq;
      const dir = mkdtempSync(join(tmpdir(), 'outbox-model-'));
      const model: Model = { now: 1_700_000_000_000, modes: Array<Mode>(PATHS).fill('ok'), deliveries: new Map(), crashes: 0 };
      const real = { dir, file: join(dir, 'switchboard.db'), run, clock: { now: model.now }, hang: false } as Real;
      open(real);
      real.accountId = `acct_model${run}`;
      real.db.prepare('INSERT INTO accounts (id, plan, concurrency_limit, created_at) VALUES (?, ?, ?, ?)').run(real.accountId, 'payg', 10, model.now);
      receiver.respondWith((path) => {
        const m = /^\/model\/(\d+)\/(\d+)$/.exec(path);
        if (!m || Number(m[1]) !== run) return undefined;
        return real.hang ? { status: 200, delayMs: 60_000 } : answerFor(model.modes[Number(m[2])]!);
      });
      try {
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        // Liveness: every receiver healthy, the clock past every retry, a few runs.
        model.modes.fill('ok');
        for (let i = 0; i <= SCHEDULE.length + 1; i++) {
          model.now += 25 * 3_600_000;
          real.clock.now = model.now;
          await real.outbox.runDue();
          checkInvariants(model, real);
        }
        for (const id of model.deliveries.keys()) {
          const row = real.storage.webhookDeliveries.get(id)!;
          expect(['delivered', 'failed'], `${id} still ${row.status}`).toContain(row.status);
        }
      } finally {
        receiver.respondWith(null);
        await close(real);
        rmSync(dir, { recursive: true, force: true });
      }
    }),
    { numRuns: 50 },
  );
});
