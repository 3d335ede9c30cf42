// A batch campaign (issue 20): turns its recipients into calls, each dialed exactly once,
// only while its calling window is open, never more than `maxConcurrent` at a time. Pure:
// its effects (`place`: place recipient `seq`'s call) and its durable deadlines (the due
// date, the window's next opening or closing) are actions the runtime commits with the
// snapshot and carries out after (actors/campaigns/); time comes in the events.
//
//   scheduled --LAUNCH, or DUE inside the window (else at its opening)--> running
//   running --(window open?)--> dialing ⇄ paused (window closed)
//   running --every recipient placed and every call ended--> completed
//   scheduled | running --CANCEL--> cancelled      running --REFUSED--> failed
//
// The context is counters and a cursor, never the recipients (they are rows): `cursor` is
// the next recipient never placed, `returned` those whose placing was deferred (no free
// slot, the window closing under it) or whose call never reached the carrier, placed
// again before the cursor moves on; `placing` counts `place` effects out, `placed` and
// `ended` the calls placed and the calls ended.
// A call's end can arrive before its placing's outcome (a dial refused at once): in use is
// `placing + placed - ended` either way.
import { assign, enqueueActions, setup, type EventObject, type SnapshotFrom } from 'xstate';
import type { CampaignEvent, CampaignInput } from './batch-campaign-events.ts';
import { isWindowOpen, windowState } from './calling-window.ts';

/** Stored with every snapshot; a snapshot of another version is migrated or abandoned. */
export const CAMPAIGN_MACHINE_VERSION = 1;
/** How long a campaign waits before asking again for a slot the account did not have. */
export const SLOT_RETRY_MS = 1000;

export interface CampaignContext extends CampaignInput {
  cursor: number;
  returned: number[];
  placing: number;
  placed: number;
  ended: number;
  startedAt: number | null;
  completedAt: number | null;
  /** Why it failed: the calls kind's refusal. */
  error: { code: string; message: string } | null;
}

/** Params of the durable deadlines (the runtime's `scheduleDeadline`). */
export interface CampaignDeadline {
  name: 'due' | 'window' | 'retry';
  dueAt: number;
  event: CampaignEvent;
}

/** Tags the runtime and the API read instead of state names. */
export const CAMPAIGN_TAGS = { running: 'running', finished: 'finished' } as const;

const timeOf = (context: CampaignContext, event: { at?: unknown }): number => (typeof event.at === 'number' ? event.at : context.createdAt);
const inUse = (c: CampaignContext): number => c.placing + c.placed - c.ended;
const waiting = (c: CampaignContext): number => c.returned.length + (c.total - c.cursor);
const allDone = (c: CampaignContext): boolean => waiting(c) === 0 && c.placing === 0 && c.placed === c.ended;

type Ev<T extends CampaignEvent['type']> = Extract<CampaignEvent, { type: T }>;

/** The actions the campaign's own actions enqueue (typed for enqueueActions outside the machine config). */
type Enqueued =
  | { type: 'place'; params: { seq: number } }
  | { type: 'scheduleDeadline'; params: CampaignDeadline }
  | { type: 'cancelDeadline'; params: { name: string } };
const enqueueing = <T>(fn: Parameters<typeof enqueueActions<CampaignContext, CampaignEvent, undefined, CampaignEvent, never, Enqueued, never, never, EventObject>>[0]) =>
  enqueueActions<CampaignContext, CampaignEvent, undefined, CampaignEvent, never, Enqueued, never, never, EventObject>(fn) as T;

export const campaignMachine = setup({
  types: { context: {} as CampaignContext, events: {} as CampaignEvent, input: {} as CampaignInput },
  actions: {
    // Carried out by the runtime after the commit: a durable deadline, an effect.
    scheduleDeadline: (_, _p: CampaignDeadline) => {},
    cancelDeadline: (_, _p: { name: string }) => {},
    place: (_, _p: { seq: number }) => {},
    // Takes as many recipients as there is room for, each one `place` effect.
    fill: enqueueing<never>(({ context, enqueue }) => {
      let room = Math.min(context.maxConcurrent - inUse(context), waiting(context));
      if (room <= 0) return;
      const returned = [...context.returned];
      let cursor = context.cursor;
      let placing = context.placing;
      while (room-- > 0) {
        const seq = returned.length > 0 ? returned.shift()! : cursor++;
        placing++;
        enqueue({ type: 'place', params: { seq } });
      }
      enqueue.assign({ returned, cursor, placing });
    }),
    start: assign(({ context, event }) => ({ startedAt: context.startedAt ?? timeOf(context, event) })),
    finish: assign(({ context, event }) => ({ completedAt: context.completedAt ?? timeOf(context, event) })),
    takePlaced: assign(({ context }) => ({ placing: context.placing - 1, placed: context.placed + 1 })),
    takeDeferred: assign(({ context, event }) => ({ placing: context.placing - 1, returned: [...context.returned, (event as Ev<'DEFERRED'>).seq] })),
    takeSkipped: assign(({ context }) => ({ placing: context.placing - 1 })),
    takeEnded: assign(({ context }) => ({ ended: context.ended + 1 })),
    takeNeverPlaced: assign(({ context, event }) => ({ ended: context.ended + 1, returned: [...context.returned, (event as Ev<'CALL.NEVER_PLACED'>).seq] })),
    takeRefusal: assign(({ context, event }) => {
      const e = event as Ev<'REFUSED'>;
      return { placing: context.placing - 1, returned: [...context.returned, e.seq], error: { code: e.code, message: e.message } };
    }),
    // The window's next closing (open now) or opening (closed now), as the one `window` deadline; none when it never comes.
    armWindow: enqueueing<never>(({ context, event, enqueue }) => {
      const { open, changesAt: at } = windowState(timeOf(context, event), context.window);
      if (at === null) enqueue({ type: 'cancelDeadline', params: { name: 'window' } });
      else enqueue({ type: 'scheduleDeadline', params: { name: 'window', dueAt: at, event: { type: open ? 'WINDOW.CLOSE' : 'WINDOW.OPEN', at } } });
    }),
  },
  guards: {
    windowOpen: ({ context, event }) => isWindowOpen(timeOf(context, event), context.window),
    allDone: ({ context }) => allDone(context),
    // Waits for its date, or (the date begun) for its window to open: api.md's "due but outside the window" stays scheduled.
    scheduled: ({ context }) =>
      context.scheduleType === 'schedule' && context.dueAt !== null && (context.dueAt > context.createdAt || !isWindowOpen(context.createdAt, context.window)),
  },
}).createMachine({
  id: 'campaign',
  context: ({ input }) => ({ ...input, cursor: 0, returned: [], placing: 0, placed: 0, ended: 0, startedAt: null, completedAt: null, error: null }),
  initial: 'created',
  states: {
    // Creation decides: a campaign due later waits for its date; anything else runs now.
    created: { always: [{ guard: 'scheduled', target: 'scheduled' }, { target: 'running' }] },

    scheduled: {
      entry: {
        type: 'scheduleDeadline',
        params: ({ context }) => ({ name: 'due' as const, dueAt: context.dueAt ?? context.createdAt, event: { type: 'DUE' as const, at: context.dueAt ?? context.createdAt } }),
      },
      on: {
        LAUNCH: { target: 'running', actions: [{ type: 'cancelDeadline', params: { name: 'due' } }, { type: 'cancelDeadline', params: { name: 'window' } }] },
        // Due: it launches if its window is open, else at the window's next opening.
        DUE: [{ guard: 'windowOpen', target: 'running' }, { actions: 'armWindow' }],
        'WINDOW.OPEN': { guard: 'windowOpen', target: 'running' },
        CANCEL: { target: 'cancelled', actions: [{ type: 'cancelDeadline', params: { name: 'due' } }, { type: 'cancelDeadline', params: { name: 'window' } }] },
      },
    },

    running: {
      tags: [CAMPAIGN_TAGS.running],
      entry: 'start',
      initial: 'deciding',
      always: { guard: 'allDone', target: 'completed' },
      on: {
        PLACED: { actions: ['takePlaced'] },
        SKIPPED: { actions: ['takeSkipped'] },
        'CALL.ENDED': { actions: 'takeEnded' },
        'CALL.NEVER_PLACED': { actions: 'takeNeverPlaced' },
        REFUSED: { target: 'failed', actions: 'takeRefusal' },
        CANCEL: { target: 'cancelled', actions: { type: 'cancelDeadline', params: { name: 'window' } } },
        'WINDOW.OPEN': '.deciding',
        'WINDOW.CLOSE': '.deciding',
        RESTORED: '.deciding',
      },
      states: {
        // Whether the window is open at this event's time decides, whatever the event was.
        deciding: { always: [{ guard: 'windowOpen', target: 'dialing' }, { target: 'paused' }] },
        // Open: place while there is room; its closing is a durable deadline.
        dialing: {
          entry: ['fill', 'armWindow'],
          on: {
            PLACED: { actions: ['takePlaced', 'fill'] },
            SKIPPED: { actions: ['takeSkipped', 'fill'] },
            'CALL.ENDED': { actions: ['takeEnded', 'fill'] },
            'CALL.NEVER_PLACED': { actions: ['takeNeverPlaced', 'fill'] },
            // No free slot: wait a moment, then ask again (a slot frees when any call of the account ends).
            DEFERRED: { target: 'waitingForSlot', actions: 'takeDeferred' },
          },
        },
        // A durable deadline, not `after`: the runtime keeps only what it commits (its transitions are pure).
        waitingForSlot: {
          entry: {
            type: 'scheduleDeadline',
            params: ({ context, event }) => {
              const at = timeOf(context, event) + SLOT_RETRY_MS;
              return { name: 'retry' as const, dueAt: at, event: { type: 'RETRY' as const, at } };
            },
          },
          on: {
            DEFERRED: { actions: 'takeDeferred' },
            RETRY: 'dialing',
          },
        },
        // Closed: no new dial; calls already placed go on. Its opening is a durable deadline.
        paused: {
          entry: 'armWindow',
          on: { DEFERRED: { actions: 'takeDeferred' } },
        },
      },
    },

    completed: { type: 'final', tags: [CAMPAIGN_TAGS.finished], entry: ['finish', { type: 'cancelDeadline', params: { name: 'window' } }] },
    cancelled: { type: 'final', tags: [CAMPAIGN_TAGS.finished], entry: 'finish' },
    failed: { type: 'final', tags: [CAMPAIGN_TAGS.finished], entry: ['finish', { type: 'cancelDeadline', params: { name: 'window' } }] },
  },
});

export type CampaignSnapshot = SnapshotFrom<typeof campaignMachine>;

/** The campaign's status as the API names it. */
export function campaignStatusOf(snap: CampaignSnapshot): 'scheduled' | 'running' | 'completed' | 'cancelled' | 'failed' {
  if (snap.matches('scheduled') || snap.matches('created')) return 'scheduled';
  if (snap.matches('completed')) return 'completed';
  if (snap.matches('cancelled')) return 'cancelled';
  if (snap.matches('failed')) return 'failed';
  return 'running';
}
