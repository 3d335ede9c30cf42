// Model-based test of the SMS campaign machine (machines/sms-campaign.ts), driven the way
// the runtime drives it: XState's pure transition(), the `send` effect it asks for kept as
// the pending intent, its `due` deadline kept in a table and delivered when due (with the
// firing time as `at`, as the scheduler does), and persist-and-restore (the snapshot's
// value and context through JSON, resolved again, then RESTORED) at any step. The machine
// has no XState delays, so test/model/restorable.ts (which re-arms `after` timers of a
// live actor) has nothing to carry here: the durable deadline is the harness's table.
// fast-check interleaves creation (now, schedule with a date ahead or passed, draft),
// launch, edits, cancel, time passing, outcomes (accepted, failed, forced to failed for a
// recipient who texted STOP), skips, stale duplicate outcomes, stray deadlines, inbound
// STOP/START and late failures. Against a model of api.md's SMS status table:
//   - the status is the table's, and the counts add up to total as the API derives them
//     from the rows (a late failure moves one from delivered to failed behind the machine);
//   - at most one send is out, each seq is asked for at most once and in order, and a
//     done campaign asked for every seq 0 … total - 1 exactly once;
//   - done exactly when running and no recipient is pending;
//   - the `due` deadline is armed exactly while scheduled, at the model's date.
import fc from 'fast-check';
import { initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import { expect, it } from 'vitest';
import { SMS_CAMPAIGN_TAGS, smsCampaignMachine, smsCampaignStatusOf, type SmsCampaignSnapshot } from '../../machines/sms-campaign.ts';
import type { SmsCampaignEvent, SmsCampaignInput } from '../../machines/sms-campaign-events.ts';

const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 2, 9);
const MAX_TOTAL = 30;

type Status = 'none' | 'draft' | 'scheduled' | 'running' | 'done' | 'cancelled';

interface Model {
  status: Status;
  total: number;
  scheduledAt: number | null;
  /** When the `due` deadline should fire: set exactly while scheduled. */
  dueAt: number | null;
  /** The next seq never asked for, and the one whose send is out. */
  cursor: number;
  inFlight: number | null;
  /** The send that was out when the campaign was cancelled: its outcome may still come back. */
  orphan: number | null;
  /** The outcomes the machine was told. */
  accepted: number;
  failed: number;
  skipped: number;
  /** The rows, as the API counts them: delivered (accepted, not failed since) and failed (at once or later). */
  delivered: Set<number>;
  rowFailed: number;
  /** Recipients who texted STOP to the sending number (and not START since): their next send fails. */
  optOut: Set<number>;
  startedAt: number | null;
  finishedAt: number | null;
}

interface Real {
  now: number;
  snap: SmsCampaignSnapshot | null;
  deadlines: Map<string, { dueAt: number; event: SmsCampaignEvent }>;
  /** The pending `send` intents (the runtime's table), oldest first. */
  effects: number[];
  /** Every seq the machine asked to send, in order. */
  sent: number[];
}

type Action = { type: string; params?: unknown };

// ---- the model: api.md's table, contract §8 and §11's counts ----

const pendingOf = (m: Model): number => m.total - m.accepted - m.failed - m.skipped;

/** While running: the next recipient is asked for when nothing is out; done when none is pending. */
function pump(m: Model, now: number): number[] {
  const asked: number[] = [];
  if (m.inFlight === null && m.cursor < m.total) {
    asked.push(m.cursor);
    m.inFlight = m.cursor++;
  }
  if (pendingOf(m) === 0) {
    m.status = 'done';
    m.finishedAt ??= now;
  }
  return asked;
}
function startRunning(m: Model, now: number): number[] {
  m.status = 'running';
  m.dueAt = null;
  m.startedAt ??= now;
  return pump(m, now);
}

// ---- the harness: the runtime's part ----

function commitActions(r: Real, actions: Action[]): number[] {
  const asked: number[] = [];
  for (const a of actions) {
    if (a.type === 'send') {
      const { seq } = a.params as { seq: number };
      expect(r.sent.includes(seq), `seq ${seq} asked for twice`).toBe(false);
      r.sent.push(seq);
      r.effects.push(seq);
      asked.push(seq);
    } else if (a.type === 'scheduleDeadline') {
      const p = a.params as { name: string; dueAt: number; event: SmsCampaignEvent };
      r.deadlines.set(p.name, { dueAt: p.dueAt, event: p.event });
    } else if (a.type === 'cancelDeadline') {
      r.deadlines.delete((a.params as { name: string }).name);
    } else {
      throw new Error(`unexpected action ${a.type}`);
    }
  }
  // The runtime drops a finished actor's deadlines and intents with its last commit.
  if (r.snap!.status !== 'active') {
    r.deadlines.clear();
    r.effects = [];
  }
  return asked;
}

/** Delivers `event`, commits its actions, and checks the sends asked for are the model's. */
function apply(m: Model, r: Real, event: SmsCampaignEvent, expectedSends: number[]): void {
  const [next, actions] = transition(smsCampaignMachine, r.snap as AnyMachineSnapshot as never, event as never) as [SmsCampaignSnapshot, Action[]];
  r.snap = next;
  const asked = commitActions(r, actions);
  expect(asked, `sends asked for on ${event.type}`).toEqual(expectedSends);
  check(m, r);
}

/** An event the machine must ignore: the same snapshot, nothing asked. */
function applyIgnored(m: Model, r: Real, event: SmsCampaignEvent): void {
  const before = r.snap!;
  const [next, actions] = transition(smsCampaignMachine, before as AnyMachineSnapshot as never, event as never) as [SmsCampaignSnapshot, Action[]];
  expect(actions, `${event.type} should be ignored`).toEqual([]);
  expect(next.value).toEqual(before.value);
  expect(next.context).toEqual(before.context);
  r.snap = next;
  check(m, r);
}

function check(m: Model, r: Real): void {
  if (m.status === 'none') return expect(r.snap).toBe(null);
  const snap = r.snap!;
  const c = snap.context;
  // The table's status, and the tags the runtime reads.
  const status = smsCampaignStatusOf(snap);
  expect(status).toBe(m.status);
  expect(snap.hasTag(SMS_CAMPAIGN_TAGS.running)).toBe(status === 'running');
  expect(snap.hasTag(SMS_CAMPAIGN_TAGS.finished)).toBe(status === 'done' || status === 'cancelled');
  expect(snap.status === 'active').toBe(status === 'draft' || status === 'scheduled' || status === 'running');
  expect(c.total).toBe(m.total);
  expect(c.scheduledAt).toBe(m.scheduledAt);
  expect(c.startedAt).toBe(m.startedAt);
  expect(c.finishedAt).toBe(m.finishedAt);

  // Counts: the machine's are the model's; as the API derives them from the rows they add up to total.
  expect([c.accepted, c.failed, c.skipped]).toEqual([m.accepted, m.failed, m.skipped]);
  const pending = c.total - c.accepted - c.failed - c.skipped;
  expect(pending).toBeGreaterThanOrEqual(0);
  expect(m.delivered.size + m.rowFailed + m.skipped + pending).toBe(c.total);

  // One in flight at most; the seqs asked for are 0, 1, 2 … each once.
  expect(r.effects.length).toBeLessThanOrEqual(1);
  expect(r.sent).toEqual(Array.from({ length: r.sent.length }, (_, i) => i));
  if (snap.status === 'active') {
    expect(c.inFlight).toBe(m.inFlight);
    expect(c.cursor).toBe(m.cursor);
    expect(r.effects).toEqual(m.inFlight === null ? [] : [m.inFlight]);
    expect(r.sent.length).toBe(m.cursor);
  }
  // Nothing is asked for before launch.
  if (status === 'draft' || status === 'scheduled') expect(r.sent).toEqual([]);

  // Done exactly when running and no recipient is pending; then every seq was asked for exactly once.
  if (status === 'running') expect(pending).toBeGreaterThan(0);
  if (status === 'done') {
    expect(pending).toBe(0);
    expect(c.startedAt).not.toBe(null);
    expect(r.sent).toEqual(Array.from({ length: c.total }, (_, i) => i));
  }

  // `due` is armed exactly while scheduled, at the model's date.
  expect(r.deadlines.has('due')).toBe(status === 'scheduled');
  if (status === 'scheduled') expect(r.deadlines.get('due')!.dueAt).toBe(m.dueAt);
  expect([...r.deadlines.keys()].every((k) => k === 'due')).toBe(true);
}

// ---- the commands ----

type Cmd = fc.Command<Model, Real>;
const created = (m: Model) => m.status !== 'none';

class Create implements Cmd {
  constructor(
    readonly scheduleType: 'now' | 'schedule' | 'draft',
    readonly total: number,
    /** The date relative to now, in minutes (a schedule's, or a draft's when not null). */
    readonly dateMin: number | null,
  ) {}
  check = (m: Model) => m.status === 'none';
  run(m: Model, r: Real) {
    const scheduledAt = this.scheduleType === 'now' ? null : this.scheduleType === 'schedule' ? r.now + (this.dateMin ?? 0) * MIN : this.dateMin === null ? null : r.now + this.dateMin * MIN;
    const input: SmsCampaignInput = { id: 'smsc_model', accountId: 'acct_model', total: this.total, scheduleType: this.scheduleType, scheduledAt, createdAt: r.now };
    m.total = this.total;
    m.scheduledAt = scheduledAt;
    let expected: number[] = [];
    if (this.scheduleType === 'draft') m.status = 'draft';
    else if (this.scheduleType === 'schedule' && scheduledAt! > r.now) {
      m.status = 'scheduled';
      m.dueAt = scheduledAt;
    } else expected = startRunning(m, r.now);
    const [first, actions] = initialTransition(smsCampaignMachine, input) as [SmsCampaignSnapshot, Action[]];
    r.snap = first;
    expect(commitActions(r, actions)).toEqual(expected);
    check(m, r);
  }
  toString = () => `create(${this.scheduleType}, total ${this.total}, date ${this.dateMin}min)`;
}

class Launch implements Cmd {
  check = created;
  run(m: Model, r: Real) {
    const launches = (m.status === 'draft' || m.status === 'scheduled') && m.total > 0;
    apply(m, r, { type: 'LAUNCH', at: r.now }, launches ? startRunning(m, r.now) : []);
  }
  toString = () => 'launch';
}

class Patch implements Cmd {
  constructor(
    readonly total: number | undefined,
    /** The new date relative to now in minutes; null clears it; undefined leaves it. */
    readonly dateMin: number | null | undefined,
  ) {}
  check = created;
  run(m: Model, r: Real) {
    const scheduledAt = this.dateMin === undefined || this.dateMin === null ? this.dateMin : r.now + this.dateMin * MIN;
    if (m.status === 'draft') {
      if (this.total !== undefined) m.total = this.total;
      if (scheduledAt !== undefined) m.scheduledAt = scheduledAt;
    } else if (m.status === 'scheduled') {
      if (this.total !== undefined) m.total = this.total;
      // A scheduled campaign keeps a date; a new one re-arms `due` (due now when already passed).
      if (scheduledAt !== undefined && scheduledAt !== null && scheduledAt !== m.scheduledAt) {
        m.scheduledAt = scheduledAt;
        m.dueAt = Math.max(scheduledAt, r.now);
      }
    }
    const event: SmsCampaignEvent = { type: 'PATCH', at: r.now };
    if (this.total !== undefined) event.total = this.total;
    if (scheduledAt !== undefined) event.scheduledAt = scheduledAt;
    apply(m, r, event, []);
  }
  toString = () => `patch(total ${this.total}, date ${this.dateMin}min)`;
}

class Cancel implements Cmd {
  check = created;
  run(m: Model, r: Real) {
    if (m.status === 'draft' || m.status === 'scheduled' || m.status === 'running') {
      m.status = 'cancelled';
      m.dueAt = null;
      m.orphan = m.inFlight;
      m.inFlight = null;
      m.finishedAt = r.now;
    }
    apply(m, r, { type: 'CANCEL', at: r.now }, []);
  }
  toString = () => 'cancel';
}

/** Time passes; the `due` deadline is delivered when due, as the scheduler does (`at` the firing time). */
class Tick implements Cmd {
  constructor(readonly ms: number) {}
  check = created;
  run(m: Model, r: Real) {
    r.now += this.ms;
    const due = r.deadlines.get('due');
    if (!due || due.dueAt > r.now) return check(m, r);
    r.deadlines.delete('due');
    expect(m.status).toBe('scheduled');
    apply(m, r, { ...due.event, at: r.now } as SmsCampaignEvent, startRunning(m, r.now));
  }
  toString = () => `tick(${this.ms / MIN}min)`;
}

/** A DUE with no deadline behind it (a stale row read before a PATCH moved the date): taken only once the date has come. */
class StrayDue implements Cmd {
  check = created;
  run(m: Model, r: Real) {
    const takes = m.status === 'scheduled' && (m.scheduledAt === null || r.now >= m.scheduledAt);
    apply(m, r, { type: 'DUE', at: r.now }, takes ? startRunning(m, r.now) : []);
  }
  toString = () => 'strayDue';
}

/** The in-flight send's outcome: failed for a recipient who texted STOP, else as drawn. */
class DeliverOutcome implements Cmd {
  constructor(readonly drawn: 'accepted' | 'failed') {}
  check = (m: Model) => m.inFlight !== null || m.orphan !== null;
  run(m: Model, r: Real) {
    r.now += 1000;
    if (m.inFlight === null) {
      // Sent before the cancel and answered after: the runtime drops it (the actor is gone); the machine, final, ignores it too.
      const seq = m.orphan!;
      m.orphan = null;
      return applyIgnored(m, r, { type: 'SENT', at: r.now, seq, outcome: this.drawn });
    }
    const seq = r.effects.shift()!;
    expect(seq).toBe(m.inFlight);
    const outcome = m.optOut.has(seq) ? 'failed' : this.drawn;
    if (outcome === 'accepted') {
      m.accepted++;
      m.delivered.add(seq);
    } else {
      m.failed++;
      m.rowFailed++;
    }
    m.inFlight = null;
    apply(m, r, { type: 'SENT', at: r.now, seq, outcome }, pump(m, r.now));
  }
  toString = () => `outcome(${this.drawn})`;
}

/** The send effect found its recipient not to be sent. */
class Skip implements Cmd {
  check = (m: Model) => m.inFlight !== null;
  run(m: Model, r: Real) {
    r.now += 1000;
    const seq = r.effects.shift()!;
    expect(seq).toBe(m.inFlight);
    m.skipped++;
    m.inFlight = null;
    apply(m, r, { type: 'SKIPPED', at: r.now, seq }, pump(m, r.now));
  }
  toString = () => 'skip';
}

/** A duplicate outcome for a seq already answered, or one for a seq never asked: counted never. */
class StaleOutcome implements Cmd {
  constructor(
    readonly pick: number,
    readonly kind: 'SENT' | 'SKIPPED',
  ) {}
  check = (m: Model) => created(m);
  run(m: Model, r: Real) {
    const answered = r.sent.filter((s) => s !== m.inFlight);
    const seq = answered.length > 0 && this.pick % 2 === 0 ? answered[this.pick % answered.length]! : m.cursor + (this.pick % 3);
    if (seq === m.inFlight) return check(m, r);
    applyIgnored(m, r, this.kind === 'SENT' ? { type: 'SENT', at: r.now, seq, outcome: this.pick % 3 === 0 ? 'failed' : 'accepted' } : { type: 'SKIPPED', at: r.now, seq });
  }
  toString = () => `stale(${this.kind}, ${this.pick})`;
}

/** Recipient `seq` texts STOP (or START) to the sending number: only its next send's outcome changes. */
class Inbound implements Cmd {
  constructor(
    readonly word: 'STOP' | 'START',
    readonly seq: number,
  ) {}
  check = created;
  run(m: Model, r: Real) {
    if (this.word === 'STOP') m.optOut.add(this.seq);
    else m.optOut.delete(this.seq);
    check(m, r);
  }
  toString = () => `inbound(${this.word}, ${this.seq})`;
}

/** A delivered message fails later (a carrier status callback): the machine is not told; the rows move it. */
class LateFailure implements Cmd {
  constructor(readonly pick: number) {}
  check = (m: Model) => m.delivered.size > 0;
  run(m: Model, r: Real) {
    const seq = [...m.delivered][this.pick % m.delivered.size]!;
    m.delivered.delete(seq);
    m.rowFailed++;
    check(m, r);
  }
  toString = () => `lateFailure(${this.pick})`;
}

/** The process restarts: value and context through JSON, resolved again, then RESTORED; intents and deadlines are durable. */
class PersistRestore implements Cmd {
  check = created;
  run(m: Model, r: Real) {
    // A finished actor is not restored (the runtime forgot it with its last commit).
    if (r.snap!.status !== 'active') return check(m, r);
    const stored = JSON.parse(JSON.stringify({ value: r.snap!.value, context: r.snap!.context }));
    r.snap = smsCampaignMachine.resolveState(stored) as SmsCampaignSnapshot;
    check(m, r);
    // Nothing lost here: a send out is run again by the runtime, so RESTORED asks for nothing.
    apply(m, r, { type: 'RESTORED', at: r.now }, m.status === 'running' ? pump(m, r.now) : []);
  }
  toString = () => 'persistRestore';
}

const dateMin = fc.integer({ min: -60, max: 120 });
const seqArb = fc.nat(MAX_TOTAL - 1);
/** The first command: the campaign's creation (small totals often, to reach the end within the run). */
const create = fc
  .tuple(fc.constantFrom('now', 'schedule', 'draft'), fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: MAX_TOTAL })), fc.option(dateMin, { nil: null }))
  .map(([t, n, d]) => new Create(t as never, n, d));
// Weighted so that campaigns get far (outcomes often, a cancel seldom) within a run.
const commands: fc.Arbitrary<Cmd>[] = [
  fc.oneof(
    { weight: 3, arbitrary: fc.constant(new Launch()) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.option(fc.integer({ min: 0, max: MAX_TOTAL }), { nil: undefined }), fc.option(fc.option(dateMin, { nil: null }), { nil: undefined }))
        .map(([n, d]) => new Patch(n, d)),
    },
    { weight: 1, arbitrary: fc.constant(new Cancel()) },
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 90 * MIN }).map((ms) => new Tick(ms)) },
    { weight: 1, arbitrary: fc.constant(new StrayDue()) },
    { weight: 12, arbitrary: fc.constantFrom('accepted', 'accepted', 'failed').map((o) => new DeliverOutcome(o as never)) },
    { weight: 1, arbitrary: fc.constant(new Skip()) },
    { weight: 2, arbitrary: fc.tuple(fc.nat(50), fc.constantFrom('SENT', 'SKIPPED')).map(([p, k]) => new StaleOutcome(p, k as never)) },
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom('STOP', 'START'), seqArb).map(([w, s]) => new Inbound(w as never, s)) },
    { weight: 2, arbitrary: fc.nat(50).map((p) => new LateFailure(p)) },
    { weight: 2, arbitrary: fc.constant(new PersistRestore()) },
  ),
];

it('follows the SMS status table: one send out at a time, each recipient once, counts adding up, through restores', () => {
  fc.assert(
    fc.property(create, fc.commands(commands, { maxCommands: 100, size: 'large' }), (creation, cmds) => {
      const model: Model = {
        status: 'none',
        total: 0,
        scheduledAt: null,
        dueAt: null,
        cursor: 0,
        inFlight: null,
        orphan: null,
        accepted: 0,
        failed: 0,
        skipped: 0,
        delivered: new Set(),
        rowFailed: 0,
        optOut: new Set(),
        startedAt: null,
        finishedAt: null,
      };
      const real: Real = { now: T0, snap: null, deadlines: new Map(), effects: [], sent: [] };
      // Created in the initial state, then anything.
      fc.modelRun(() => {
        creation.run(model, real);
        return { model, real };
      }, cmds);

      // Liveness: a campaign waiting with recipients is launched; then every send answered ends it done.
      if ((model.status === 'draft' || model.status === 'scheduled') && model.total > 0) new Launch().run(model, real);
      if (model.status === 'scheduled') new Tick(200 * MIN).run(model, real);
      for (let i = 0; i < 2 * MAX_TOTAL + 5 && model.inFlight !== null; i++) new DeliverOutcome('accepted').run(model, real);
      if (model.status === 'draft') expect(model.total).toBe(0);
      else if (model.status !== 'cancelled') {
        expect(smsCampaignStatusOf(real.snap!)).toBe('done');
        expect(real.sent).toEqual(Array.from({ length: model.total }, (_, i) => i));
      }
    }),
    { numRuns: 200 },
  );
});
