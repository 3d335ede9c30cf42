// A second, minimal actor kind for the runtime's tests (issue 7, acceptance 4): a
// `ticker` that counts durable deadlines to a target. It plugs into the same generic
// supervisor and scheduler as calls, through the ActorKind interface alone:
//   idle --START--> counting.waiting   (arms the durable deadline `tick`)
//   counting.waiting --TICK--> counting.noting  (count + 1; asks for the `note` effect)
//   counting.noting --NOTED--> counting.waiting (arms the next `tick`) | done (at the target)
// TICK is counted in every counting sub-state on purpose: the machine does not
// de-duplicate, so a deadline delivered twice by the runtime shows as a double count
// (a TICK carries the sequence number of the tick it was armed for; the domain rows
// record which tick each count came from). The `note` effect is the outside world: it
// appends a line to a file, after its intent is committed (checked on a second
// connection), and answers NOTED. After a restart an intent that may have been sent is
// reconciled with the file first, so each tick is noted exactly once.
// The kind owns two tables in the test's database, created here:
//   ticker_counters: one row per actor (state, count, noted, version);
//   ticker_ticks:    one row per count (which tick caused it, when it was due and fired).
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { assign, setup, type SnapshotFrom } from 'xstate';
import { z } from 'zod';
import type { ActorKind, PersistedActor } from '../../actors/runtime/actor-kind.ts';
import type { Db } from '../../storage/db.ts';

export const TICKER_KIND = 'ticker';
/** The actors second-kind-process.ts creates. */
export const PROCESS_IDS = { accountId: 'acct_secondkind', tickerId: 'tick_one', callId: 'call_secondkind' } as const;
/** Stored with every ticker snapshot (not 1, so that it is visibly the kind's own). */
export const TICKER_VERSION = 3;

const at = z.number().int().nonnegative();
export const tickerEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('START'), at }),
  /** A `tick` deadline came due; `seq` is the tick it was armed for. */
  z.object({ type: z.literal('TICK'), at, seq: z.number().int().positive() }),
  /** The `note` effect's outcome for count `n`. */
  z.object({ type: z.literal('NOTED'), at, n: z.number().int().positive() }),
]);
export type TickerEvent = z.infer<typeof tickerEventSchema>;

export const tickerInputSchema = z.object({
  id: z.string(),
  accountId: z.string(),
  target: z.number().int().positive(),
  intervalMs: z.number().int().positive(),
});
export type TickerInput = z.infer<typeof tickerInputSchema>;

export interface TickerContext extends TickerInput {
  count: number;
  noted: number;
  /** Due time of the armed tick (null when none is armed). */
  dueAt: number | null;
  /** Of the tick that caused the last count: its sequence, due time and delivery time. */
  lastSeq: number | null;
  lastDueAt: number | null;
  lastFiredAt: number | null;
}

const timeOf = (e: { at?: unknown }): number => (typeof e.at === 'number' ? e.at : 0);

export const tickerMachine = setup({
  types: { context: {} as TickerContext, events: {} as TickerEvent, input: {} as TickerInput },
  actions: {
    // Carried out by the supervisor: a durable deadline, and an effect intent.
    scheduleDeadline: (_, _p: { name: string; dueAt: number; event: TickerEvent }) => {},
    note: (_, _p: { n: number }) => {},
    arm: assign(({ context, event }) => ({ dueAt: timeOf(event) + context.intervalMs })),
    countTick: assign(({ context, event }) => {
      const e = event as Extract<TickerEvent, { type: 'TICK' }>;
      return { count: context.count + 1, lastSeq: e.seq, lastDueAt: context.dueAt, lastFiredAt: e.at, dueAt: null };
    }),
    countNote: assign(({ context }) => ({ noted: context.noted + 1 })),
  },
  guards: {
    reachedTarget: ({ context }) => context.count >= context.target,
  },
}).createMachine({
  id: 'ticker',
  context: ({ input }) => ({ ...input, count: 0, noted: 0, dueAt: null, lastSeq: null, lastDueAt: null, lastFiredAt: null }),
  initial: 'idle',
  states: {
    idle: {
      on: { START: 'counting' },
    },
    counting: {
      tags: ['counting'],
      initial: 'waiting',
      on: {
        TICK: { target: '.noting', actions: 'countTick' },
      },
      states: {
        waiting: {
          tags: ['ticking'],
          entry: [
            'arm',
            {
              type: 'scheduleDeadline',
              params: ({ context, event }) => {
                const dueAt = timeOf(event) + context.intervalMs;
                return { name: 'tick', dueAt, event: { type: 'TICK' as const, at: dueAt, seq: context.count + 1 } };
              },
            },
          ],
        },
        noting: {
          tags: ['noting'],
          entry: { type: 'note', params: ({ context }) => ({ n: context.count }) },
          on: {
            NOTED: [
              { guard: 'reachedTarget', target: '#ticker.done', actions: 'countNote' },
              { target: 'waiting', actions: 'countNote' },
            ],
          },
        },
      },
    },
    done: { type: 'final' },
  },
});

export type TickerSnapshot = SnapshotFrom<typeof tickerMachine>;

export interface TickerKindDeps {
  db: Db;
  clock: () => number;
  /** The file the `note` effect appends to (the outside world). */
  notesFile: string;
  /** How long the outside world takes to answer a note. */
  noteDelayMs: number;
  /** Whether an intent is committed, read on a second connection (only committed data). */
  isCommitted(intentId: string): boolean;
}

export const TICKER_TABLES = `
CREATE TABLE IF NOT EXISTS ticker_counters (
  actor_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  state TEXT NOT NULL,
  count INTEGER NOT NULL,
  noted INTEGER NOT NULL,
  version INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ticker_ticks (
  actor_id TEXT NOT NULL,
  n INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  due_at INTEGER NOT NULL,
  fired_at INTEGER NOT NULL,
  PRIMARY KEY (actor_id, n)
);
`;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The lines the `note` effect wrote: `<actor id> <n>`, and `VIOLATION …` for an effect started before its intent was durable. */
export function readNotes(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '') : [];
}

export function tickerKind(deps: TickerKindDeps): ActorKind<typeof tickerMachine> {
  const { db, clock } = deps;
  db.exec(TICKER_TABLES);
  const saveCounter = db.prepare(
    `INSERT INTO ticker_counters (actor_id, account_id, state, count, noted, version, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (actor_id) DO UPDATE SET state = excluded.state, count = excluded.count, noted = excluded.noted,
       version = excluded.version, updated_at = excluded.updated_at`,
  );
  const saveTick = db.prepare('INSERT OR IGNORE INTO ticker_ticks (actor_id, n, seq, due_at, fired_at) VALUES (?, ?, ?, ?, ?)');
  const noted = (actorId: string, n: number): boolean => readNotes(deps.notesFile).includes(`${actorId} ${n}`);

  return {
    kind: TICKER_KIND,
    machine: tickerMachine,
    version: TICKER_VERSION,
    eventSchema: tickerEventSchema,
    accountOf: (ctx) => ctx.accountId,
    write(snap, w) {
      const ctx = snap.context;
      saveCounter.run(ctx.id, ctx.accountId, JSON.stringify(snap.value), ctx.count, ctx.noted, TICKER_VERSION, w.now);
      if (ctx.count > 0 && ctx.lastSeq !== null) saveTick.run(ctx.id, ctx.count, ctx.lastSeq, ctx.lastDueAt ?? -1, ctx.lastFiredAt ?? -1);
    },
    effects: {
      note: {
        async run({ intent, markSent }) {
          const n = (intent.params as { n: number }).n;
          // Commit, then act: the intent must be durable before the effect starts.
          if (!deps.isCommitted(intent.id)) appendFileSync(deps.notesFile, `VIOLATION ${intent.id}\n`);
          await sleep(deps.noteDelayMs);
          markSent();
          appendFileSync(deps.notesFile, `${intent.actorId} ${n}\n`);
          return { type: 'NOTED', at: clock(), n };
        },
        // It may have arrived: ask the outside world (the file) before writing again.
        resumeSent(intent, _ctx, now) {
          const n = (intent.params as { n: number }).n;
          return noted(intent.actorId, n) ? { type: 'NOTED', at: now, n } : null;
        },
      },
    },
    migrate: (p: PersistedActor) => (p.version === TICKER_VERSION ? p : null),
  };
}
