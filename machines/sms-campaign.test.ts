// The SMS campaign machine, row by row of api.md's "SMS campaign status" table (and
// contract §8), driven the way the runtime drives it: XState's pure initialTransition() and
// transition(), the actions each step asks for read as the runtime would commit them (the
// `send` effects, the `due` deadline armed and cancelled).
import { initialTransition, transition } from 'xstate';
import { describe, expect, it } from 'vitest';
import { SMS_CAMPAIGN_TAGS, smsCampaignMachine, smsCampaignStatusOf, type SmsCampaignSnapshot } from './sms-campaign.ts';
import { smsCampaignEventSchema, smsCampaignInputSchema, type SmsCampaignEvent, type SmsCampaignInput } from './sms-campaign-events.ts';

const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 2, 9);

type Action = { type: string; params?: unknown };
/** The actions as the runtime reads them: their type and params. */
const plain = (actions: Action[]) => actions.map((a) => ({ type: a.type, params: a.params }));
const sends = (actions: Action[]) => actions.filter((a) => a.type === 'send').map((a) => (a.params as { seq: number }).seq);

const input = (over: Partial<SmsCampaignInput> = {}): SmsCampaignInput =>
  smsCampaignInputSchema.parse({ id: 'smsc_1', accountId: 'acct_1', total: 3, scheduleType: 'now', scheduledAt: null, createdAt: T0, ...over });

function create(over: Partial<SmsCampaignInput> = {}): [SmsCampaignSnapshot, Action[]] {
  return initialTransition(smsCampaignMachine, input(over)) as [SmsCampaignSnapshot, Action[]];
}
function step(snap: SmsCampaignSnapshot, event: SmsCampaignEvent): [SmsCampaignSnapshot, Action[]] {
  // Every event goes through the schema first, as the supervisor parses it.
  return transition(smsCampaignMachine, snap, smsCampaignEventSchema.parse(event)) as [SmsCampaignSnapshot, Action[]];
}
/** Answers every send as it is asked for (accepted unless `fail` names the seq); returns the final snapshot and every seq sent, in order. */
function answerAll(snap: SmsCampaignSnapshot, at: number, fail: number[] = []): { snap: SmsCampaignSnapshot; sent: number[] } {
  const sent: number[] = [];
  let s = snap;
  for (let i = 0; s.context.inFlight !== null && i < 1000; i++) {
    const seq = s.context.inFlight;
    sent.push(seq);
    const [next, actions] = step(s, { type: 'SENT', at: at + i * 1000, seq, outcome: fail.includes(seq) ? 'failed' : 'accepted' });
    s = next;
    // At most one `send` per outcome: one in flight.
    expect(sends(actions).length).toBeLessThanOrEqual(1);
  }
  return { snap: s, sent };
}
const due = (dueAt: number) => ({ type: 'scheduleDeadline', params: { name: 'due', dueAt, event: { type: 'DUE', at: dueAt } } });
const cancelDue = { type: 'cancelDeadline', params: { name: 'due' } };

describe('creation: (none) --POST /v1/sms/campaigns-->', () => {
  it('schedule_type now: running, sends immediately (one message out: seq 0)', () => {
    const [s, actions] = create({ total: 3 });
    expect(smsCampaignStatusOf(s)).toBe('running');
    expect(s.hasTag(SMS_CAMPAIGN_TAGS.running)).toBe(true);
    expect(plain(actions)).toEqual([{ type: 'send', params: { seq: 0 } }]);
    expect(s.context).toMatchObject({ cursor: 1, inFlight: 0, accepted: 0, failed: 0, startedAt: T0, finishedAt: null });
  });

  it('schedule_type schedule: scheduled, its `due` deadline armed at scheduled_at, nothing sent', () => {
    const [s, actions] = create({ scheduleType: 'schedule', scheduledAt: T0 + 30 * MIN });
    expect(smsCampaignStatusOf(s)).toBe('scheduled');
    expect(plain(actions)).toEqual([due(T0 + 30 * MIN)]);
    expect(s.context).toMatchObject({ cursor: 0, inFlight: null, startedAt: null });
  });

  it('a scheduled_at already passed (or now) runs at once: no deadline, sending', () => {
    for (const at of [T0 - 5 * MIN, T0]) {
      const [s, actions] = create({ scheduleType: 'schedule', scheduledAt: at });
      expect(smsCampaignStatusOf(s)).toBe('running');
      expect(plain(actions)).toEqual([{ type: 'send', params: { seq: 0 } }]);
    }
  });

  it('schedule_type draft: draft, nothing sent, no deadline (even with a date)', () => {
    for (const scheduledAt of [null, T0 + MIN]) {
      const [s, actions] = create({ scheduleType: 'draft', scheduledAt });
      expect(smsCampaignStatusOf(s)).toBe('draft');
      expect(s.hasTag(SMS_CAMPAIGN_TAGS.running)).toBe(false);
      expect(actions).toEqual([]);
    }
  });

  it('now with no recipient: done at once', () => {
    const [s, actions] = create({ total: 0 });
    expect(smsCampaignStatusOf(s)).toBe('done');
    expect(s.status).toBe('done');
    expect(s.hasTag(SMS_CAMPAIGN_TAGS.finished)).toBe(true);
    expect(actions).toEqual([]);
    expect(s.context.finishedAt).toBe(T0);
  });
});

describe('running --every recipient answered--> done', () => {
  it('sends seqs 0..n-1 in order, each exactly once, one at a time; done after the last outcome', () => {
    const [s0] = create({ total: 5 });
    const { snap, sent } = answerAll(s0, T0 + 1000, [1, 3]);
    expect(sent).toEqual([0, 1, 2, 3, 4]);
    expect(smsCampaignStatusOf(snap)).toBe('done');
    expect(snap.context).toMatchObject({ accepted: 3, failed: 2, skipped: 0, cursor: 5, inFlight: null, finishedAt: T0 + 5000 });
  });

  it('is not done one outcome early', () => {
    const [s0] = create({ total: 2 });
    const [s1, a1] = step(s0, { type: 'SENT', at: T0 + 1000, seq: 0, outcome: 'accepted' });
    expect(plain(a1)).toEqual([{ type: 'send', params: { seq: 1 } }]);
    expect(smsCampaignStatusOf(s1)).toBe('running');
    const [s2, a2] = step(s1, { type: 'SENT', at: T0 + 2000, seq: 1, outcome: 'failed' });
    expect(a2).toEqual([]);
    expect(smsCampaignStatusOf(s2)).toBe('done');
  });

  it('a stale or foreign SENT is ignored: counts never double', () => {
    const [s0] = create({ total: 3 });
    const [s1] = step(s0, { type: 'SENT', at: T0 + 1000, seq: 0, outcome: 'accepted' });
    for (const e of [
      { type: 'SENT', at: T0 + 1500, seq: 0, outcome: 'accepted' },
      { type: 'SENT', at: T0 + 1500, seq: 0, outcome: 'failed' },
      { type: 'SENT', at: T0 + 1500, seq: 2, outcome: 'accepted' },
      { type: 'SKIPPED', at: T0 + 1500, seq: 0 },
    ] as const) {
      const [next, actions] = step(s1, e);
      expect(next).toBe(s1);
      expect(actions).toEqual([]);
    }
    expect(s1.context).toMatchObject({ accepted: 1, failed: 0, inFlight: 1, cursor: 2 });
  });

  it('SKIPPED clears the send out, counts neither sent nor failed, and moves on; done when none is pending', () => {
    const [s0] = create({ total: 2 });
    const [s1, a1] = step(s0, { type: 'SKIPPED', at: T0 + 1000, seq: 0 });
    expect(plain(a1)).toEqual([{ type: 'send', params: { seq: 1 } }]);
    expect(s1.context).toMatchObject({ accepted: 0, failed: 0, skipped: 1, inFlight: 1 });
    const [s2] = step(s1, { type: 'SENT', at: T0 + 2000, seq: 1, outcome: 'accepted' });
    expect(smsCampaignStatusOf(s2)).toBe('done');
  });

  it('RESTORED: nothing while a send is out (the runtime runs it again); a send never asked for is asked', () => {
    const [s0] = create({ total: 3 });
    const [same, none] = step(s0, { type: 'RESTORED', at: T0 + 1000 });
    expect(none).toEqual([]);
    expect(same.context).toEqual(s0.context);
    // An outcome lost: running, nothing out, recipients left.
    const stored = JSON.parse(JSON.stringify({ value: 'running', context: { ...s0.context, cursor: 2, inFlight: null, accepted: 2 } }));
    const lost = smsCampaignMachine.resolveState(stored) as SmsCampaignSnapshot;
    const [resumed, actions] = step(lost, { type: 'RESTORED', at: T0 + 2000 });
    expect(plain(actions)).toEqual([{ type: 'send', params: { seq: 2 } }]);
    expect(resumed.context).toMatchObject({ cursor: 3, inFlight: 2 });
  });
});

describe('draft or scheduled --POST …/launch-->', () => {
  it('draft with recipients: running, begins sending', () => {
    const [d] = create({ scheduleType: 'draft' });
    const [s, actions] = step(d, { type: 'LAUNCH', at: T0 + MIN });
    expect(smsCampaignStatusOf(s)).toBe('running');
    expect(plain(actions)).toEqual([{ type: 'send', params: { seq: 0 } }]);
    expect(s.context.startedAt).toBe(T0 + MIN);
  });

  it('scheduled with recipients: running, its `due` deadline cancelled, begins sending', () => {
    const [d] = create({ scheduleType: 'schedule', scheduledAt: T0 + 60 * MIN });
    const [s, actions] = step(d, { type: 'LAUNCH', at: T0 + MIN });
    expect(smsCampaignStatusOf(s)).toBe('running');
    expect(plain(actions)).toEqual([cancelDue, { type: 'send', params: { seq: 0 } }]);
  });

  it('no recipient: refused (campaign_no_recipients), nothing changes, the deadline stays armed', () => {
    for (const over of [{ scheduleType: 'draft' as const }, { scheduleType: 'schedule' as const, scheduledAt: T0 + MIN }]) {
      const [d] = create({ ...over, total: 0 });
      const [s, actions] = step(d, { type: 'LAUNCH', at: T0 + 1000 });
      expect(s).toBe(d);
      expect(actions).toEqual([]);
    }
  });
});

describe('scheduled --DUE-->', () => {
  it('running when its deadline fires; with no recipient, running and straight to done', () => {
    const [d] = create({ scheduleType: 'schedule', scheduledAt: T0 + MIN });
    const [s, actions] = step(d, { type: 'DUE', at: T0 + MIN + 5 });
    expect(smsCampaignStatusOf(s)).toBe('running');
    expect(plain(actions)).toEqual([cancelDue, { type: 'send', params: { seq: 0 } }]);
    const [d0] = create({ scheduleType: 'schedule', scheduledAt: T0 + MIN, total: 0 });
    const [s0] = step(d0, { type: 'DUE', at: T0 + MIN });
    expect(smsCampaignStatusOf(s0)).toBe('done');
    expect(s0.context).toMatchObject({ startedAt: T0 + MIN, finishedAt: T0 + MIN });
  });

  it('a stale DUE from before the date moved later is ignored; a draft ignores DUE', () => {
    const [d] = create({ scheduleType: 'schedule', scheduledAt: T0 + 10 * MIN });
    const [moved] = step(d, { type: 'PATCH', at: T0 + MIN, scheduledAt: T0 + 60 * MIN });
    const [s, actions] = step(moved, { type: 'DUE', at: T0 + 10 * MIN });
    expect(s).toBe(moved);
    expect(actions).toEqual([]);
    const [draft] = create({ scheduleType: 'draft', scheduledAt: T0 });
    expect(step(draft, { type: 'DUE', at: T0 + MIN })[0]).toBe(draft);
  });
});

describe('--DELETE-->', () => {
  it('scheduled: cancelled, nothing sent, `due` cancelled', () => {
    const [d] = create({ scheduleType: 'schedule', scheduledAt: T0 + MIN });
    const [s, actions] = step(d, { type: 'CANCEL', at: T0 + 1000 });
    expect(smsCampaignStatusOf(s)).toBe('cancelled');
    expect(s.status).toBe('done');
    expect(s.hasTag(SMS_CAMPAIGN_TAGS.finished)).toBe(true);
    expect(plain(actions)).toEqual([cancelDue]);
    expect(s.context).toMatchObject({ cursor: 0, finishedAt: T0 + 1000 });
  });

  it('draft: cancelled', () => {
    const [d] = create({ scheduleType: 'draft' });
    const [s, actions] = step(d, { type: 'CANCEL', at: T0 + 1000 });
    expect(smsCampaignStatusOf(s)).toBe('cancelled');
    expect(actions).toEqual([]);
  });

  it('running with a send in flight: cancelled, no further send; its later SENT is ignored (final)', () => {
    const [r] = create({ total: 3 });
    const [c, actions] = step(r, { type: 'CANCEL', at: T0 + 500 });
    expect(smsCampaignStatusOf(c)).toBe('cancelled');
    expect(actions).toEqual([]);
    const [late, lateActions] = step(c, { type: 'SENT', at: T0 + 1000, seq: 0, outcome: 'accepted' });
    expect(smsCampaignStatusOf(late)).toBe('cancelled');
    expect(lateActions).toEqual([]);
    expect(late.context).toEqual(c.context);
  });

  it('done: stays done (campaign_already_done)', () => {
    const [r] = create({ total: 1 });
    const { snap: done } = answerAll(r, T0 + 1000);
    const [s, actions] = step(done, { type: 'CANCEL', at: T0 + 5000 });
    expect(smsCampaignStatusOf(s)).toBe('done');
    expect(actions).toEqual([]);
    expect(s.context).toEqual(done.context);
  });
});

describe('launch when already launched', () => {
  it('running: stays running, nothing asked again (campaign_already_running)', () => {
    const [r] = create({ total: 3 });
    const [s, actions] = step(r, { type: 'LAUNCH', at: T0 + 500 });
    expect(s).toBe(r);
    expect(actions).toEqual([]);
  });
  it('done: stays done (campaign_already_done)', () => {
    const [r] = create({ total: 1 });
    const { snap: done } = answerAll(r, T0 + 1000);
    const [s, actions] = step(done, { type: 'LAUNCH', at: T0 + 5000 });
    expect(smsCampaignStatusOf(s)).toBe('done');
    expect(actions).toEqual([]);
  });
});

describe('PATCH', () => {
  it('scheduled: recipients and date replaced, `due` re-armed at the new date', () => {
    const [d] = create({ scheduleType: 'schedule', scheduledAt: T0 + 30 * MIN });
    const [s, actions] = step(d, { type: 'PATCH', at: T0 + MIN, total: 7, scheduledAt: T0 + 90 * MIN });
    expect(smsCampaignStatusOf(s)).toBe('scheduled');
    expect(s.context).toMatchObject({ total: 7, scheduledAt: T0 + 90 * MIN });
    expect(plain(actions)).toEqual([due(T0 + 90 * MIN)]);
  });

  it('scheduled: only the recipients, or the same date: no deadline touched; a cleared date is kept', () => {
    const [d] = create({ scheduleType: 'schedule', scheduledAt: T0 + 30 * MIN });
    const [a, aActions] = step(d, { type: 'PATCH', at: T0 + MIN, total: 9 });
    expect(a.context.total).toBe(9);
    expect(aActions).toEqual([]);
    const [b, bActions] = step(d, { type: 'PATCH', at: T0 + MIN, scheduledAt: T0 + 30 * MIN });
    expect(b.context.scheduledAt).toBe(T0 + 30 * MIN);
    expect(bActions).toEqual([]);
    const [c, cActions] = step(d, { type: 'PATCH', at: T0 + MIN, scheduledAt: null });
    expect(c.context.scheduledAt).toBe(T0 + 30 * MIN);
    expect(cActions).toEqual([]);
  });

  it('scheduled: a date already passed is due now (armed at the PATCH), and fires', () => {
    const [d] = create({ scheduleType: 'schedule', scheduledAt: T0 + 30 * MIN });
    const [s, actions] = step(d, { type: 'PATCH', at: T0 + 10 * MIN, scheduledAt: T0 + 5 * MIN });
    expect(smsCampaignStatusOf(s)).toBe('scheduled');
    expect(plain(actions)).toEqual([due(T0 + 10 * MIN)]);
    const [r] = step(s, { type: 'DUE', at: T0 + 10 * MIN });
    expect(smsCampaignStatusOf(r)).toBe('running');
  });

  it('draft: recipients and date replaced (a date may be cleared), no deadline; then launched with the new count', () => {
    const [d] = create({ scheduleType: 'draft', total: 0, scheduledAt: T0 + MIN });
    const [s, actions] = step(d, { type: 'PATCH', at: T0 + 1000, total: 2, scheduledAt: null });
    expect(smsCampaignStatusOf(s)).toBe('draft');
    expect(s.context).toMatchObject({ total: 2, scheduledAt: null });
    expect(actions).toEqual([]);
    const [r] = step(s, { type: 'LAUNCH', at: T0 + 2000 });
    const { snap, sent } = answerAll(r, T0 + 3000);
    expect(sent).toEqual([0, 1]);
    expect(smsCampaignStatusOf(snap)).toBe('done');
  });

  it('running or done: ignored (campaign_not_editable)', () => {
    const [r] = create({ total: 2 });
    const [s, actions] = step(r, { type: 'PATCH', at: T0 + 500, total: 10, scheduledAt: T0 + MIN });
    expect(s).toBe(r);
    expect(actions).toEqual([]);
    const { snap: done } = answerAll(r, T0 + 1000);
    const [d2, dActions] = step(done, { type: 'PATCH', at: T0 + 5000, total: 10 });
    expect(d2.context).toEqual(done.context);
    expect(dActions).toEqual([]);
  });
});

describe('persistence', () => {
  it('a snapshot through JSON and resolveState goes on where it was', () => {
    const [r] = create({ total: 3 });
    const [s1] = step(r, { type: 'SENT', at: T0 + 1000, seq: 0, outcome: 'accepted' });
    const stored = JSON.parse(JSON.stringify({ value: s1.value, context: s1.context }));
    const back = smsCampaignMachine.resolveState(stored) as SmsCampaignSnapshot;
    expect(smsCampaignStatusOf(back)).toBe('running');
    expect(back.hasTag(SMS_CAMPAIGN_TAGS.running)).toBe(true);
    const { snap, sent } = answerAll(back, T0 + 2000);
    expect(sent).toEqual([1, 2]);
    expect(smsCampaignStatusOf(snap)).toBe('done');
  });
});
