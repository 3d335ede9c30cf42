// An SMS campaign (contract §8, api.md "SMS campaign status"): sends its recipients one
// message each, exactly once, in `seq` order. Pure: its effect (`send`: send recipient
// `seq`'s message) and its durable deadline (`due`, the scheduled date) are actions the
// runtime commits with the snapshot and carries out after; time comes in the events.
//
//   (create) --schedule_type now, or schedule with its date passed--> running
//   (create) --schedule_type schedule--> scheduled      (create) --schedule_type draft--> draft
//   draft | scheduled --LAUNCH (at least one recipient)--> running
//   scheduled --DUE (its `due` deadline, armed at scheduled_at)--> running
//   draft | scheduled --PATCH--> the same state, recipients and/or date replaced (a new date re-arms `due`)
//   running --no recipient pending (accepted + failed + skipped = total)--> done
//   draft | scheduled | running --CANCEL--> cancelled
// Anything else is ignored: LAUNCH while running or finished, PATCH after launch, CANCEL
// when finished (the API answers those with campaign_already_running, campaign_not_editable,
// campaign_already_done); `due` is armed exactly while scheduled.
//
// One in flight: the sending number sends 1 message a second, so a campaign never needs
// more than one `send` out. `cursor` is the next recipient never asked for, `inFlight` the
// one whose `send` is out (null: none); its outcome (SENT, or SKIPPED) clears it and asks
// for the cursor's. An outcome for any other seq is a stale duplicate and changes nothing:
// a recipient is counted once. `accepted` and `failed` are the outcomes the machine was
// told; a message failing after it was accepted is the rows' business (the API derives
// delivered / failed / pending from them), not the machine's.
import { assign, enqueueActions, setup, type EventObject, type SnapshotFrom } from 'xstate';
import type { SmsCampaignEvent, SmsCampaignInput } from './sms-campaign-events.ts';

/** Stored with every snapshot; a snapshot of another version is migrated or abandoned. */
export const SMS_CAMPAIGN_MACHINE_VERSION = 1;

export interface SmsCampaignContext extends SmsCampaignInput {
  cursor: number;
  inFlight: number | null;
  accepted: number;
  failed: number;
  /** Recipients the `send` effect found not to be sent (SKIPPED): neither accepted nor failed, and not pending. */
  skipped: number;
  startedAt: number | null;
  /** When it ended: done or cancelled. */
  finishedAt: number | null;
}

/** Params of the durable deadline (the runtime's `scheduleDeadline`). */
export interface SmsCampaignDeadline {
  name: 'due';
  dueAt: number;
  event: { type: 'DUE'; at: number };
}

/** Tags the runtime and the API read instead of state names. */
export const SMS_CAMPAIGN_TAGS = { running: 'running', finished: 'finished' } as const;

const timeOf = (context: SmsCampaignContext, event: { at?: unknown }): number => (typeof event.at === 'number' ? event.at : context.createdAt);
/** Recipients not yet answered: asked for or not. */
const pending = (c: SmsCampaignContext): number => c.total - c.accepted - c.failed - c.skipped;

/** The `due` deadline at the campaign's date; a date already passed (a PATCH can move it back) is due now. */
const dueDeadline = ({ context, event }: { context: SmsCampaignContext; event: { at?: unknown } }): SmsCampaignDeadline => {
  const now = timeOf(context, event);
  const dueAt = Math.max(context.scheduledAt ?? now, now);
  return { name: 'due', dueAt, event: { type: 'DUE', at: dueAt } };
};

type Ev<T extends SmsCampaignEvent['type']> = Extract<SmsCampaignEvent, { type: T }>;

/** The actions the campaign's own actions enqueue (typed for enqueueActions outside the machine config). */
type Enqueued = { type: 'send'; params: { seq: number } };
const enqueueing = <T>(fn: Parameters<typeof enqueueActions<SmsCampaignContext, SmsCampaignEvent, undefined, SmsCampaignEvent, never, Enqueued, never, never, EventObject>>[0]) =>
  enqueueActions<SmsCampaignContext, SmsCampaignEvent, undefined, SmsCampaignEvent, never, Enqueued, never, never, EventObject>(fn) as T;

export const smsCampaignMachine = setup({
  types: { context: {} as SmsCampaignContext, events: {} as SmsCampaignEvent, input: {} as SmsCampaignInput },
  actions: {
    // Carried out by the runtime after the commit: a durable deadline, an effect.
    scheduleDeadline: (_, _p: SmsCampaignDeadline) => {},
    cancelDeadline: (_, _p: { name: 'due' }) => {},
    send: (_, _p: { seq: number }) => {},
    // The one `send` out: the cursor's recipient, when none is out and one is left.
    sendNext: enqueueing<never>(({ context, enqueue }) => {
      if (context.inFlight !== null || context.cursor >= context.total) return;
      enqueue({ type: 'send', params: { seq: context.cursor } });
      enqueue.assign({ inFlight: context.cursor, cursor: context.cursor + 1 });
    }),
    start: assign(({ context, event }) => ({ startedAt: context.startedAt ?? timeOf(context, event) })),
    finish: assign(({ context, event }) => ({ finishedAt: context.finishedAt ?? timeOf(context, event) })),
    takeOutcome: assign(({ context, event }) => {
      const e = event as Ev<'SENT'>;
      return e.outcome === 'accepted' ? { accepted: context.accepted + 1, inFlight: null } : { failed: context.failed + 1, inFlight: null };
    }),
    takeSkipped: assign(({ context }) => ({ skipped: context.skipped + 1, inFlight: null })),
    // A draft takes a cleared date too; a scheduled campaign keeps its date when asked to clear it (the API needs one).
    patchDraft: assign(({ context, event }) => {
      const e = event as Ev<'PATCH'>;
      return { total: e.total ?? context.total, scheduledAt: e.scheduledAt === undefined ? context.scheduledAt : e.scheduledAt };
    }),
    patchScheduled: assign(({ context, event }) => {
      const e = event as Ev<'PATCH'>;
      return { total: e.total ?? context.total, scheduledAt: e.scheduledAt ?? context.scheduledAt };
    }),
  },
  guards: {
    // Waits for its date; a date already passed at creation runs at once (as does a scheduled one without a date).
    scheduled: ({ context }) => context.scheduleType === 'schedule' && context.scheduledAt !== null && context.scheduledAt > context.createdAt,
    draft: ({ context }) => context.scheduleType === 'draft',
    hasRecipients: ({ context }) => context.total > 0,
    // A DUE from a deadline re-armed later since (delivered before the PATCH moved it) is not yet due.
    due: ({ context, event }) => context.scheduledAt === null || timeOf(context, event) >= context.scheduledAt,
    reschedules: ({ context, event }) => {
      const e = event as Ev<'PATCH'>;
      return e.scheduledAt !== undefined && e.scheduledAt !== null && e.scheduledAt !== context.scheduledAt;
    },
    // Only the outcome of the send that is out: a stale duplicate is never counted twice.
    inFlight: ({ context, event }) => (event as Ev<'SENT'> | Ev<'SKIPPED'>).seq === context.inFlight,
    allDone: ({ context }) => pending(context) === 0,
  },
}).createMachine({
  id: 'smsCampaign',
  context: ({ input }) => ({ ...input, cursor: 0, inFlight: null, accepted: 0, failed: 0, skipped: 0, startedAt: null, finishedAt: null }),
  initial: 'created',
  states: {
    // Creation decides: a draft waits for its launch, a campaign due later for its date; anything else runs now.
    created: { always: [{ guard: 'draft', target: 'draft' }, { guard: 'scheduled', target: 'scheduled' }, { target: 'running' }] },

    // Nothing is sent until launch (contract §8); no deadline.
    draft: {
      on: {
        LAUNCH: { guard: 'hasRecipients', target: 'running' },
        PATCH: { actions: 'patchDraft' },
        CANCEL: 'cancelled',
      },
    },

    // Its date is the `due` deadline, armed on entry and cancelled on leaving, however it leaves.
    scheduled: {
      entry: { type: 'scheduleDeadline', params: dueDeadline },
      exit: { type: 'cancelDeadline', params: { name: 'due' } },
      on: {
        LAUNCH: { guard: 'hasRecipients', target: 'running' },
        DUE: { guard: 'due', target: 'running' },
        PATCH: [
          // A new date re-arms `due` (the runtime's deadline of that name is replaced).
          { guard: 'reschedules', actions: ['patchScheduled', { type: 'scheduleDeadline', params: dueDeadline }] },
          { actions: 'patchScheduled' },
        ],
        CANCEL: 'cancelled',
      },
    },

    running: {
      tags: [SMS_CAMPAIGN_TAGS.running],
      entry: ['start', 'sendNext'],
      // No recipient pending: every one answered (a campaign of none is done at once).
      always: { guard: 'allDone', target: 'done' },
      on: {
        SENT: { guard: 'inFlight', actions: ['takeOutcome', 'sendNext'] },
        SKIPPED: { guard: 'inFlight', actions: ['takeSkipped', 'sendNext'] },
        // The runtime runs a pending `send` again by itself; only a send never asked for (its outcome lost) is asked now.
        RESTORED: { actions: 'sendNext' },
        // No further send; one already out may still go through (the runtime drops its intent with the final commit).
        CANCEL: 'cancelled',
      },
    },

    done: { type: 'final', tags: [SMS_CAMPAIGN_TAGS.finished], entry: 'finish' },
    cancelled: { type: 'final', tags: [SMS_CAMPAIGN_TAGS.finished], entry: 'finish' },
  },
});

export type SmsCampaignSnapshot = SnapshotFrom<typeof smsCampaignMachine>;

/** The campaign's status as the API names it. */
export function smsCampaignStatusOf(snap: SmsCampaignSnapshot): 'draft' | 'scheduled' | 'running' | 'done' | 'cancelled' {
  if (snap.matches('draft')) return 'draft';
  if (snap.matches('scheduled')) return 'scheduled';
  if (snap.matches('done')) return 'done';
  if (snap.matches('cancelled')) return 'cancelled';
  // `created` is transient (never committed): named as creation would.
  if (snap.matches('created')) return snap.context.scheduleType === 'draft' ? 'draft' : 'scheduled';
  return 'running';
}
