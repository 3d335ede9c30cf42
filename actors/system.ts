// The call supervisor: one actor per live call, started from an input or restored from
// its snapshot, every one subscribed with next/error/complete. On every change it
// writes the call row and the snapshot in one transaction; a failing actor or effect is
// logged and recorded, never rethrown (an unobserved XState error kills the process).
import { createActor, type Actor, type Subscription } from 'xstate';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Storage } from '../storage/index.ts';
import type { CallWrite } from '../storage/calls.ts';
import { randomBase62 } from '../storage/ids.ts';
import { callMachine, callRecordOf, isFinished, type CallSnapshot } from '../machines/call.ts';
import type { CallContext } from '../machines/call-outcome.ts';
import { callEventSchema, callInputSchema, type CallInput } from '../machines/call-events.ts';
import type { MediaBindings } from '../voice/media/bindings.ts';
import { callEffects } from './call-effects.ts';
import { createCarrierVoices, type CarrierVoices } from './carrier-voices.ts';
import { createConcurrency, type Concurrency } from './concurrency.ts';
import { createScheduler, type Scheduler } from './scheduler.ts';
import { createMediaBindings } from './media-bindings.ts';
import { registerCallGauges } from './gauges.ts';
import type { Metrics } from '../http/metrics.ts';

export type CallActor = Actor<typeof callMachine>;

interface Live {
  actor: CallActor;
  accountId: string;
  /** The record was erased: the call is being hung up and nothing more is written. */
  discarded: boolean;
  lastWritten: string | null;
  sub: Subscription | null;
}

export interface CallSystemDeps {
  storage: Storage;
  config: Pick<Config, 'publicBaseUrl' | 'twilioApiBase' | 'telnyxApiBase'>;
  clock: () => number;
  log: Logger;
  metrics: Metrics;
}

export type DialOutcome = { ok: true; carrierCallId: string } | { ok: false; carrierError: Record<string, unknown> };

export const newMediaToken = (): string => `mt_${randomBase62(40)}`;

/** The public call_id: the carrier's id, except for a call that waited for a slot (contract.md §2). */
export const publicIdOf = (ctx: CallContext): string => (ctx.queued ? ctx.id : (ctx.carrierCallId ?? ctx.id));

export function createCallSystem(deps: CallSystemDeps) {
  const { storage, clock, log } = deps;
  const live = new Map<string, Live>();
  const byCarrierId = new Map<string, string>();
  const tokens = new Map<string, string>();
  // The call's prompt lives here only (api.md: stored nowhere), for the conversation engine.
  const prompts = new Map<string, string>();
  const voices: CarrierVoices = createCarrierVoices(storage.numbers, deps.config);
  // Media events handed to actors, for /metrics: they change no call state the API shows.
  const mediaEvents = { dtmf: 0, started: 0, stopped: 0 };

  const concurrency: Concurrency = createConcurrency({
    limitOf: (accountId) => storage.accounts.getAccount(accountId)?.concurrency_limit ?? 0,
    // Deferred: a slot frees inside another call's transition, and the grant must not run inside it.
    // A call that is gone meanwhile hands its slot straight back.
    grant: (accountId, id) =>
      queueMicrotask(() => {
        if (!send(id, { type: 'SLOT.GRANTED', at: clock() })) concurrency.release(accountId, id);
      }),
    log,
  });
  const scheduler: Scheduler = createScheduler({ deadlines: storage.deadlines, clock, log, fire: (id, event) => void send(id, event) });

  // Calls restored while their dial was in flight (restore.ts); see call-effects.ts.
  const interruptedDials = new Set<string>();
  const effectDeps = {
    numbers: storage.numbers,
    voices,
    publicBaseUrl: deps.config.publicBaseUrl,
    scheduler,
    concurrency,
    mediaTokenOf(id: string): string {
      let token = tokens.get(id) ?? storage.calls.getByInternalId(id)?.media_token ?? null;
      if (token === null) tokens.set(id, (token = newMediaToken()));
      return token;
    },
    takeInterruptedDial: (id: string): boolean => interruptedDials.delete(id),
    phoneNumberOf: (id: string) => live.get(id)?.actor.getSnapshot().context.phoneNumber ?? storage.calls.getByInternalId(id)?.phone_number ?? null,
  };
  const machine = callMachine.provide(callEffects(effectDeps));

  function rowOf(ctx: CallContext): CallWrite {
    const r = callRecordOf(ctx);
    return {
      internalId: ctx.id,
      callId: publicIdOf(ctx),
      accountId: ctx.accountId,
      agentId: ctx.agentId,
      direction: ctx.direction,
      callStatus: r.call_status,
      fromNumber: ctx.from,
      toNumber: ctx.to,
      phoneNumber: ctx.phoneNumber,
      provider: ctx.provider,
      carrierCallId: r.carrier_call_id,
      startedAt: r.started_at,
      endedAt: r.ended_at,
      durationMs: r.duration_ms,
      endedReason: r.ended_reason,
      chargedMinutes: r.charged_minutes,
      campaignId: ctx.campaignId,
      voicemailDetected: r.voicemail_detected,
      createdAt: ctx.createdAt,
      updatedAt: clock(),
    };
  }

  /** An outbound call dialed at once is not a call until the carrier accepts it: nothing is written before. */
  const persistable = (ctx: CallContext): boolean => ctx.direction === 'inbound' || ctx.queued || ctx.carrierCallId !== null;

  function persist(entry: Live, snap: CallSnapshot): void {
    const ctx = snap.context;
    if (entry.discarded || !persistable(ctx)) return;
    const persisted = entry.actor.getPersistedSnapshot();
    const json = JSON.stringify(persisted);
    if (json === entry.lastWritten) return;
    storage.tx(() => {
      storage.calls.save(rowOf(ctx), tokens.get(ctx.id) ?? null);
      storage.snapshots.save({ actorId: ctx.id, accountId: ctx.accountId, kind: 'call', snapshot: persisted, done: snap.status === 'done', now: clock() });
    });
    entry.lastWritten = json;
  }

  function forget(id: string): void {
    const entry = live.get(id);
    if (!entry) return;
    live.delete(id);
    entry.sub?.unsubscribe();
    const ctx = entry.actor.getSnapshot().context;
    if (ctx.carrierCallId !== null && byCarrierId.get(ctx.carrierCallId) === id) byCarrierId.delete(ctx.carrierCallId);
    tokens.delete(id);
    prompts.delete(id);
  }

  function onNext(entry: Live, snap: CallSnapshot): void {
    const ctx = snap.context;
    if (ctx.carrierCallId !== null) byCarrierId.set(ctx.carrierCallId, ctx.id);
    try {
      persist(entry, snap);
    } catch (err) {
      log.error({ err, call_id: ctx.id }, 'writing the call state failed');
    }
    // No post-call work exists yet (recording, analysis and webhooks come later): done at once.
    if (snap.value === 'post-call') queueMicrotask(() => void send(ctx.id, { type: 'POSTCALL.DONE', at: clock() }));
    if (snap.status === 'done') forget(ctx.id);
  }

  function onError(entry: Live, err: unknown): void {
    const ctx = entry.actor.getSnapshot().context;
    log.error({ err, call_id: ctx.id }, 'call actor failed');
    try {
      concurrency.release(ctx.accountId, ctx.id);
      scheduler.cancelAll(ctx.id);
      if (!entry.discarded && persistable(ctx)) {
        const row = rowOf(ctx);
        const stillOpen = row.endedAt === null;
        storage.tx(() => {
          // A call that had not ended has no truthful ending left: it failed with its actor.
          if (stillOpen) storage.calls.save({ ...row, callStatus: 'failed', endedReason: 'failed', endedAt: clock(), durationMs: row.durationMs ?? 0 });
          storage.snapshots.markDone(ctx.accountId, ctx.id, clock());
        });
      }
    } catch (e) {
      log.error({ err: e, call_id: ctx.id }, 'recording a failed call actor failed');
    }
    forget(ctx.id);
  }

  function attach(actor: CallActor, accountId: string, id: string): Live {
    const entry: Live = { actor, accountId, discarded: false, lastWritten: null, sub: null };
    live.set(id, entry);
    entry.sub = actor.subscribe({
      next: (snap) => onNext(entry, snap),
      error: (err) => onError(entry, err),
      complete: () => forget(id),
    });
    return entry;
  }

  /** Sends an event to a live call, parsed with the event schema first; false when the call is not live. */
  function send(id: string, event: unknown): boolean {
    const entry = live.get(id);
    if (!entry) return false;
    const parsed = callEventSchema.safeParse(event);
    if (!parsed.success) {
      log.warn({ call_id: id, issues: parsed.error.issues.length }, 'dropped an event that does not parse');
      return false;
    }
    entry.actor.send(parsed.data);
    if (parsed.data.type === 'DTMF') mediaEvents.dtmf++;
    else if (parsed.data.type === 'MEDIA.STARTED') mediaEvents.started++;
    else if (parsed.data.type === 'MEDIA.STOPPED') mediaEvents.stopped++;
    return true;
  }

  const contextOf = (id: string): CallContext | null => live.get(id)?.actor.getSnapshot().context ?? null;
  const isLive = (id: string): boolean => {
    const entry = live.get(id);
    return entry !== undefined && !isFinished(entry.actor.getSnapshot());
  };
  const bindings: MediaBindings = createMediaBindings(storage.calls, { contextOf, isLive, send }, log);

  const system = {
    concurrency,
    scheduler,
    voices,
    /** Starts a new call actor; the media token goes in the call's row with its first write. */
    start(input: CallInput, opts: { mediaToken?: string; prompt?: string } = {}): CallActor {
      const parsed = callInputSchema.parse(input);
      tokens.set(parsed.id, opts.mediaToken ?? newMediaToken());
      if (opts.prompt !== undefined) prompts.set(parsed.id, opts.prompt);
      const actor = createActor(machine, { input: parsed });
      attach(actor, parsed.accountId, parsed.id);
      actor.start();
      return actor;
    },
    /** Brings a persisted actor back (restore.ts); a dial it was in the middle of is marked interrupted. */
    adopt(snapshot: unknown, accountId: string, id: string, midDial: boolean): CallActor {
      if (midDial) interruptedDials.add(id);
      // The input is ignored when a snapshot is given; the context carries it.
      const actor = createActor(machine, { snapshot: snapshot as CallSnapshot, input: (snapshot as CallSnapshot).context });
      const entry = attach(actor, accountId, id);
      entry.lastWritten = JSON.stringify(snapshot);
      actor.start();
      return actor;
    },
    send,
    /** Resolves once an immediate dial is settled: the carrier's id, or its refusal. */
    dialOutcome(actor: CallActor): Promise<DialOutcome> {
      return new Promise((resolve) => {
        const check = (snap: CallSnapshot): boolean => {
          const ctx = snap.context;
          if (ctx.carrierCallId !== null) resolve({ ok: true, carrierCallId: ctx.carrierCallId });
          else if (snap.value !== 'dialing' || snap.status !== 'active') resolve({ ok: false, carrierError: ctx.carrierError ?? { message: 'the call ended before it was dialed' } });
          else return false;
          return true;
        };
        if (check(actor.getSnapshot())) return;
        const sub = actor.subscribe({
          next: (snap) => {
            if (check(snap)) sub.unsubscribe();
          },
          error: () => resolve({ ok: false, carrierError: { message: 'the call failed while dialing' } }),
        });
      });
    },
    contextOf,
    isLive,
    /** The live call of this account with this carrier id. */
    findByCarrierCallId(accountId: string, carrierCallId: string): string | null {
      const id = byCarrierId.get(carrierCallId);
      return id !== undefined && live.get(id)?.accountId === accountId ? id : null;
    },
    /**
     * The live call with this carrier id, whichever account it is on: a carrier B
     * application's one webhook URL carries the events of every number on it, so the
     * caller must check the call's account and number before trusting the event.
     */
    findAnyByCarrierCallId(carrierCallId: string): string | null {
      const id = byCarrierId.get(carrierCallId);
      return id !== undefined && live.has(id) ? id : null;
    },
    mediaTokenOf: effectDeps.mediaTokenOf,
    promptOf: (id: string): string | undefined => prompts.get(id),
    /**
     * The call's record was erased: write nothing more for it, and end it (a queued call
     * leaves its queue; a call on the line is hung up at the carrier).
     */
    discard(id: string): void {
      const entry = live.get(id);
      if (!entry) return;
      entry.discarded = true;
      prompts.delete(id);
      if (!isFinished(entry.actor.getSnapshot())) send(id, { type: 'HANGUP.REQUESTED', at: clock(), reason: 'canceled' });
    },
    mediaEvents: (): Readonly<typeof mediaEvents> => mediaEvents,
    liveActors(): CallActor[] {
      return [...live.values()].map((e) => e.actor);
    },
    /** How a media websocket claims its call with the one-time token. */
    bindings,
    stop(): void {
      scheduler.stop();
      for (const id of [...live.keys()]) {
        const entry = live.get(id)!;
        entry.sub?.unsubscribe();
        entry.actor.stop();
      }
      live.clear();
    },
  };
  registerCallGauges(deps.metrics, system);
  return system;
}

export type CallSystem = ReturnType<typeof createCallSystem>;
