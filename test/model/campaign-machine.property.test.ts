// Model-based test of the batch campaign machine (machines/batch-campaign.ts), driven the
// way the runtime drives it: XState's pure transition(), the `place` effects it asks for
// kept as pending work, its durable deadlines kept in a table and delivered when due, and
// persist-and-restore (the snapshot through JSON, resolved again, then RESTORED) at any
// step. fast-check interleaves placing outcomes (placed accepted, queued, rejected or
// unknown; deferred for want of a slot; refused), calls ending (or found never placed at
// the carrier, which gives the recipient back), time passing across the calling window,
// launch and cancel. Against a model of who was placed and who ended:
//   - no recipient is ever asked to be placed again once its call reached the carrier,
//     and none is skipped;
//   - calls in use (being placed, or placed and not ended) never exceed max_concurrent;
//   - nothing is placed while the window is closed, before launch, or after a cancel;
//   - the machine's counters are the model's, and while dialing no room is left unused;
// and at the end, with every effect answered and every call ended inside an open window,
// a campaign that was not cancelled or refused is completed with each recipient placed once.
import fc from 'fast-check';
import { initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import { expect, it } from 'vitest';
import { campaignMachine, campaignStatusOf, type CampaignSnapshot } from '../../machines/batch-campaign.ts';
import type { CampaignEvent, CampaignInput } from '../../machines/batch-campaign-events.ts';
import { isWindowOpen } from '../../machines/calling-window.ts';

const HOUR = 3_600_000;
/** Monday 2026-11-02 00:00 UTC. */
const T0 = Date.UTC(2026, 10, 2);
const WINDOW = { startMinutes: 9 * 60, endMinutes: 17 * 60, days: null, timezone: 'UTC' };

interface Model {
  total: number;
  max: number;
  /** Launched (by LAUNCH, or due with its window open): from then on it runs. */
  launched: boolean;
  /** Its date has come while its window was closed: it launches at the window's opening. */
  dueWaiting: boolean;
  cancelled: boolean;
  refused: boolean;
  /** Recipients with a call that reached the carrier (or may have): never asked for again. */
  placed: Set<number>;
  /** Calls placed and calls ended, a recipient's never-placed calls included. */
  calls: number;
  ended: number;
  /** Calls that ended without ever reaching the carrier (their recipients went back in line). */
  neverPlaced: number;
  /** Seqs the machine asked to place and are not answered yet. */
  out: number[];
}

interface Real {
  now: number;
  snap: CampaignSnapshot;
  deadlines: Map<string, { dueAt: number; event: CampaignEvent }>;
  /** Pending `place` effects, oldest first. */
  effects: number[];
  /** Calls placed and not ended: seq → call id. */
  calls: Map<number, string>;
}

function apply(m: Model, r: Real, event: CampaignEvent): void {
  const [next, actions] = transition(campaignMachine, r.snap as AnyMachineSnapshot as never, event as never) as [CampaignSnapshot, { type: string; params?: unknown }[]];
  r.snap = next;
  for (const a of actions) {
    if (a.type === 'place') {
      const { seq } = a.params as { seq: number };
      // Never twice once placed; never while closed, unlaunched or cancelled.
      expect(m.placed.has(seq), `recipient ${seq} asked again after being placed`).toBe(false);
      expect(m.out.includes(seq), `recipient ${seq} asked twice at once`).toBe(false);
      expect(isWindowOpen(r.now, WINDOW), 'a placing asked for while the window is closed').toBe(true);
      expect(m.cancelled, 'a placing asked for after a cancel').toBe(false);
      expect(m.launched, 'a placing asked for before the campaign launched').toBe(true);
      r.effects.push(seq);
      m.out.push(seq);
    } else if (a.type === 'scheduleDeadline') {
      const p = a.params as { name: string; dueAt: number; event: CampaignEvent };
      r.deadlines.set(p.name, { dueAt: p.dueAt, event: p.event });
    } else if (a.type === 'cancelDeadline') {
      r.deadlines.delete((a.params as { name: string }).name);
    }
  }
  if (next.status === 'done') {
    // The runtime drops a finished actor's deadlines and intents with its last commit.
    r.deadlines.clear();
    r.effects = [];
    m.out = [];
  }
  check(m, r);
}

function check(m: Model, r: Real): void {
  const c = r.snap.context;
  // Scheduled until launched (a due date outside the window included); running from then on until it ends.
  const status = campaignStatusOf(r.snap);
  if (!m.cancelled && !m.refused) expect(status === 'scheduled', `status ${status}, launched ${m.launched}`).toBe(!m.launched);
  expect(c.placed).toBe(m.calls);
  expect(c.ended).toBe(m.ended);
  if (r.snap.status === 'active') expect(c.placing).toBe(m.out.length);
  expect(m.out.length + m.calls - m.ended).toBeLessThanOrEqual(m.max);
  // Dialing leaves no room unused while recipients wait (pull as soon as there is room).
  if (r.snap.matches({ running: 'dialing' })) {
    const waiting = c.returned.length + c.total - c.cursor;
    const inUse = c.placing + c.placed - c.ended;
    expect(waiting > 0 && inUse < c.maxConcurrent, 'room left unused while dialing').toBe(false);
  }
}

type Cmd = fc.AsyncCommand<Model, Real> | fc.Command<Model, Real>;
const at = (r: Real) => r.now;

class Launch implements fc.Command<Model, Real> {
  check = () => true;
  run(m: Model, r: Real) {
    if (!m.cancelled) m.launched = true;
    apply(m, r, { type: 'LAUNCH', at: at(r) });
  }
  toString = () => 'launch';
}
class Cancel implements fc.Command<Model, Real> {
  check = () => true;
  run(m: Model, r: Real) {
    const before = campaignStatusOf(r.snap);
    const cancels = before === 'scheduled' || before === 'running';
    if (cancels) m.cancelled = true;
    apply(m, r, { type: 'CANCEL', at: at(r) });
    if (cancels) expect(campaignStatusOf(r.snap)).toBe('cancelled');
  }
  toString = () => 'cancel';
}
/** The oldest pending placing comes back with `outcome`. */
class Answer implements fc.Command<Model, Real> {
  constructor(readonly outcome: 'accepted' | 'queued' | 'rejected' | 'unknown' | 'no_slot' | 'refused') {}
  check = (m: Model) => m.out.length > 0;
  run(m: Model, r: Real) {
    const seq = r.effects.shift()!;
    m.out.splice(m.out.indexOf(seq), 1);
    // The effect looks at the window itself when it runs.
    if (!isWindowOpen(r.now, WINDOW)) {
      m.out.push(seq);
      m.out.splice(m.out.indexOf(seq), 1);
      apply(m, r, { type: 'DEFERRED', at: at(r), seq, reason: 'window_closed' });
      return;
    }
    if (this.outcome === 'no_slot') return apply(m, r, { type: 'DEFERRED', at: at(r), seq, reason: 'no_slot' });
    if (this.outcome === 'refused') {
      m.refused = true;
      return apply(m, r, { type: 'REFUSED', at: at(r), seq, code: 'agent_missing_carrier_credentials', message: 'no credentials' });
    }
    m.placed.add(seq);
    m.calls++;
    r.calls.set(seq, `call_${seq}`);
    apply(m, r, { type: 'PLACED', at: at(r), seq, callId: `call_${seq}`, outcome: this.outcome });
  }
  toString = () => `answer(${this.outcome})`;
}
/** A placed call ends (its end is delivered durably, in any state of the campaign). */
class EndCall implements fc.Command<Model, Real> {
  constructor(readonly pick: number, readonly ending: 'completed' | 'voicemail' | 'failed') {}
  check = () => true;
  run(m: Model, r: Real) {
    const open = [...r.calls.keys()];
    if (open.length === 0) return;
    const seq = open[this.pick % open.length]!;
    r.calls.delete(seq);
    // A finished campaign is gone: its call's end is dropped by the runtime, but the call did end.
    if (r.snap.status !== 'active') return;
    m.ended++;
    apply(m, r, { type: 'CALL.ENDED', at: at(r), callId: `call_${seq}`, ending: this.ending });
  }
  toString = () => `end(${this.pick}, ${this.ending})`;
}
/**
 * A placed call ends never having reached the carrier (its dial's answer lost, the carrier
 * has no such call): while the campaign runs, its recipient is given back, to be dialed.
 */
class NeverPlaced implements fc.Command<Model, Real> {
  constructor(readonly pick: number) {}
  check = () => true;
  run(m: Model, r: Real) {
    const open = [...r.calls.keys()];
    if (open.length === 0 || r.snap.status !== 'active') return;
    const seq = open[this.pick % open.length]!;
    r.calls.delete(seq);
    m.ended++;
    m.neverPlaced++;
    m.placed.delete(seq);
    apply(m, r, { type: 'CALL.NEVER_PLACED', at: at(r), callId: `call_${seq}`, seq });
  }
  toString = () => `neverPlaced(${this.pick})`;
}
/** Time passes; due deadlines are delivered in order. */
class Tick implements fc.Command<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  run(m: Model, r: Real) {
    const until = r.now + this.ms;
    for (;;) {
      const due = [...r.deadlines.entries()].filter(([, d]) => d.dueAt <= until).sort((a, b) => a[1].dueAt - b[1].dueAt)[0];
      if (!due) break;
      r.deadlines.delete(due[0]);
      r.now = Math.max(r.now, due[1].dueAt);
      if (!m.launched && due[1].event.type === 'DUE') {
        if (isWindowOpen(r.now, WINDOW)) m.launched = true;
        else m.dueWaiting = true;
      } else if (!m.launched && m.dueWaiting && due[1].event.type === 'WINDOW.OPEN') m.launched = true;
      apply(m, r, { ...due[1].event, at: r.now } as CampaignEvent);
    }
    r.now = until;
  }
  toString = () => `tick(${this.ms})`;
}
/** The process restarts: the snapshot through JSON, resolved again, then RESTORED; effects and deadlines are durable. */
class Restore implements fc.Command<Model, Real> {
  check = () => true;
  run(m: Model, r: Real) {
    if (r.snap.status !== 'active') return;
    const stored = JSON.parse(JSON.stringify({ value: r.snap.value, context: r.snap.context }));
    r.snap = campaignMachine.resolveState(stored) as CampaignSnapshot;
    apply(m, r, { type: 'RESTORED', at: at(r) });
  }
  toString = () => 'restore';
}

const commands = [
  fc.constant(new Launch()),
  fc.constant(new Cancel()),
  fc.constantFrom('accepted', 'queued', 'rejected', 'unknown', 'accepted', 'no_slot').map((o) => new Answer(o as never)),
  fc.constant(new Answer('refused')),
  fc.tuple(fc.nat(20), fc.constantFrom('completed', 'voicemail', 'failed')).map(([p, e]) => new EndCall(p, e as never)),
  fc.nat(20).map((p) => new NeverPlaced(p)),
  fc.integer({ min: 1, max: 10 * HOUR }).map((ms) => new Tick(ms)),
  fc.constant(new Restore()),
];

it('places each recipient once, inside the window, within max_concurrent, through restores', () => {
  fc.assert(
    fc.property(
      fc.record({ total: fc.integer({ min: 1, max: 12 }), max: fc.integer({ min: 1, max: 4 }), scheduled: fc.boolean(), dueInHours: fc.constantFrom(-5, 0, 26), startHour: fc.integer({ min: 0, max: 47 }) }),
      fc.commands(commands as fc.Arbitrary<Cmd>[] as never, { maxCommands: 80 }),
      (setup, cmds) => {
        const now = T0 + setup.startHour * HOUR;
        const input: CampaignInput = {
          id: 'batch_model',
          accountId: 'acct_model',
          total: setup.total,
          maxConcurrent: setup.max,
          scheduleType: setup.scheduled ? 'schedule' : 'now',
          // A date ahead, or one already begun (due at once: inside its window it runs, outside it waits for the opening).
          dueAt: setup.scheduled ? now + setup.dueInHours * HOUR : null,
          window: WINDOW,
          createdAt: now,
        };
        const model: Model = { total: setup.total, max: setup.max, launched: !setup.scheduled || (setup.dueInHours <= 0 && isWindowOpen(now, WINDOW)), dueWaiting: false, cancelled: false, refused: false, placed: new Set(), calls: 0, ended: 0, neverPlaced: 0, out: [] };
        const real: Real = { now, snap: null as unknown as CampaignSnapshot, deadlines: new Map(), effects: [], calls: new Map() };
        const [first, actions] = initialTransition(campaignMachine, input) as [CampaignSnapshot, { type: string; params?: unknown }[]];
        real.snap = first;
        // The first commit's actions, as the runtime applies them.
        for (const a of actions) {
          if (a.type === 'place') {
            const { seq } = a.params as { seq: number };
            expect(isWindowOpen(now, WINDOW)).toBe(true);
            real.effects.push(seq);
            model.out.push(seq);
          } else if (a.type === 'scheduleDeadline') {
            const p = a.params as { name: string; dueAt: number; event: CampaignEvent };
            real.deadlines.set(p.name, { dueAt: p.dueAt, event: p.event });
          }
        }
        fc.modelRun(() => ({ model, real }), cmds as never);

        // Liveness: launch if still waiting, then answer everything accepted and end every call, ticking through windows.
        if (campaignStatusOf(real.snap) === 'scheduled') new Launch().run(model, real);
        for (let i = 0; i < 1000 && real.snap.status === 'active'; i++) {
          if (model.out.length > 0) new Answer('accepted').run(model, real);
          else if (real.calls.size > 0) new EndCall(0, 'completed').run(model, real);
          else new Tick(HOUR).run(model, real);
        }
        const status = campaignStatusOf(real.snap);
        if (model.cancelled) expect(status).toBe('cancelled');
        else if (model.refused) expect(status).toBe('failed');
        else {
          expect(status).toBe('completed');
          // Every recipient placed exactly once (the model's set has each seq once).
          expect([...model.placed].sort((a, b) => a - b)).toEqual(Array.from({ length: setup.total }, (_, i) => i));
          expect(real.snap.context.placed).toBe(setup.total + model.neverPlaced);
        }
      },
    ),
    { numRuns: 300 },
  );
});
