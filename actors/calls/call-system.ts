// The calls' face of the runtime: the generic supervisor (supervisor.ts) with calls
// registered as its first kind (call-kind.ts), the account concurrency slots, the
// durable scheduler, the media-token bindings, and what the HTTP routes ask of calls.
// No state name is matched here: calls are read through their tags and context.
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Storage } from '../../storage/index.ts';
import { randomBase62 } from '../../storage/ids.ts';
import { CALL_TAGS, isFinished, type CallSnapshot } from '../../machines/call.ts';
import type { CallContext } from '../../machines/call-outcome.ts';
import { callInputSchema, type CallInput } from '../../machines/call-events.ts';
import type { MediaBindings } from '../../voice/media/bindings.ts';
import { callEffects } from './call-effects.ts';
import { transferEffects } from './transfer-effects.ts';
import { createCarrierTransfers } from './carrier-transfers.ts';
import { callKind, callRowOf, publicIdOf, type CallEnd } from './call-kind.ts';
import { createCarrierVoices, type CarrierVoices } from './carrier-voices.ts';
import { createConcurrency, type Concurrency } from '../runtime/concurrency.ts';
import { createScheduler, type Scheduler } from '../runtime/scheduler.ts';
import { createSupervisor, type InspectionSink, type StepResult } from '../runtime/supervisor.ts';
import { createMediaBindings, createWebMediaBindings, type WebMediaBindings } from './media-bindings.ts';
import { registerCallGauges } from './gauges.ts';
import { enqueueCallStarted } from '../outbox/call-events-out.ts';
import { POST_CALL_SETTLE_MS } from '../post-call/analysis-plan.ts';
import type { Metrics } from '../../metrics.ts';
import type { RedactedEvent } from '../runtime/inspection.ts';

export interface CallSystemDeps {
  storage: Storage;
  config: Pick<Config, 'publicBaseUrl' | 'twilioApiBase' | 'telnyxApiBase'> & Partial<Pick<Config, 'callStartedDelayMs' | 'schedulerIntervalMs'>>;
  clock: () => number;
  log: Logger;
  metrics: Metrics;
  inspection?: InspectionSink;
  redact?: (kind: string, event: { type: string }) => RedactedEvent;
}

/** How the outbound route's dial settled. */
export type DialOutcome =
  | { outcome: 'accepted'; carrierCallId: string }
  | { outcome: 'rejected'; carrierError: Record<string, unknown> }
  | { outcome: 'unknown'; carrierError: Record<string, unknown> };

export { publicIdOf };
export const newMediaToken = (): string => `mt_${randomBase62(40)}`;

/** How long account deletion waits for each live call's hang-up at the carrier. */
const ACCOUNT_HANGUP_TIMEOUT_MS = 5000;
/** How long account deletion waits for dials in flight to settle before it hangs up. */
const ACCOUNT_DIAL_WAIT_MS = 12_000;
/** Queued calls are offered free slots at least this often (a raised plan limit applies within it). */
const PUMP_INTERVAL_MS = 1000;

export function createCallSystem(deps: CallSystemDeps) {
  const { storage, clock, log } = deps;
  const voices: CarrierVoices = createCarrierVoices(storage.numbers, deps.config);
  // Media tokens of calls not yet written (their first commit takes them) and of live calls.
  const tokens = new Map<string, string>();
  const byCarrierId = new Map<string, string>();
  // Calls whose record was erased: their row is never written again.
  const discarded = new Set<string>();
  // Media events handed to actors, for /metrics: they change no call state the API shows.
  const mediaEvents = { dtmf: 0, started: 0, stopped: 0 };

  let scheduler: Scheduler | null = null;
  const supervisor = createSupervisor({ storage, clock, log, onDeadlinesChanged: () => scheduler?.poke(), ...(deps.inspection ? { inspection: deps.inspection } : {}), ...(deps.redact ? { redact: deps.redact } : {}) });

  // Accounts being deleted: nothing of theirs is granted a slot any more.
  const stopping = new Set<string>();
  // Carrier voices of calls stopped with their dial still out, to hang up a leg it placed.
  const orphanVoices = new Map<string, ReturnType<CarrierVoices['voiceFor']>>();

  const concurrency: Concurrency = createConcurrency({
    limitOf: (accountId) => (stopping.has(accountId) ? 0 : (storage.accounts.getAccount(accountId)?.concurrency_limit ?? 0)),
    // Deferred: a slot frees inside another call's commit, and the grant must not run inside it.
    // A grant whose commit failed goes back to the front of the queue; one the call does not
    // hold afterwards (gone, or no longer waiting) is handed straight back.
    grant: (accountId, id) =>
      queueMicrotask(() => {
        const result = send(id, { type: 'SLOT.GRANTED', at: clock() });
        if (result === 'commit_failed') concurrency.requeue(accountId, id);
        else if (result !== 'taken' || !snapshotOf(id)?.hasTag(CALL_TAGS.holdsSlot)) concurrency.release(accountId, id);
      }),
    log,
  });

  /** Hangs a leg up at the carrier, a few times if it must (best effort: its actor is gone). */
  async function hangUpLeg(voice: ReturnType<CarrierVoices['voiceFor']>, carrierCallId: string, callId: string): Promise<boolean> {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await Promise.race([
          voice.hangup(carrierCallId),
          new Promise((_, reject) => setTimeout(() => reject(new Error('hang-up timed out')), ACCOUNT_HANGUP_TIMEOUT_MS).unref()),
        ]);
        return true;
      } catch (err) {
        log.warn({ err, call_id: callId, attempt }, 'hanging up the leg of a stopped call failed');
        await new Promise((r) => setTimeout(r, 500 * (attempt + 1)).unref());
      }
    }
    return false;
  }

  const mediaTokenOf = (id: string): string => {
    let token = tokens.get(id) ?? storage.calls.getByInternalId(id)?.media_token ?? null;
    if (token === null) tokens.set(id, (token = newMediaToken()));
    return token;
  };

  const snapshotOf = (id: string): CallSnapshot | null => supervisor.snapshotOf(id) as CallSnapshot | null;
  const contextOf = (id: string): CallContext | null => snapshotOf(id)?.context ?? null;

  /** Inside the transaction that ends a call's row: its analysis (and so its call.completed) is due a moment later. */
  const schedulePostCall = (id: string, accountId: string, now: number): boolean =>
    storage.analysis.schedule({ internalId: id, accountId, dueAt: now + POST_CALL_SETTLE_MS, now });

  /** What kinds above calls commit with a call's end (a batch campaign: its recipient's state, its news of the end). */
  const endListeners: ((id: string, accountId: string, now: number, end: CallEnd) => void)[] = [];
  /** Inside the transaction that ends a call's row, whichever way it ends. */
  function commitEnd(id: string, accountId: string, now: number, end: CallEnd): void {
    schedulePostCall(id, accountId, now);
    for (const listener of endListeners) listener(id, accountId, now, end);
  }

  /** The call's transition threw: its carrier leg is hung up and it is recorded failed. */
  function crashed(ctx: CallContext): void {
    concurrency.release(ctx.accountId, ctx.id);
    const number = storage.numbers.get(ctx.accountId, ctx.phoneNumber);
    if (ctx.carrierCallId !== null && number) void hangUpLeg(voices.voiceFor(number), ctx.carrierCallId, ctx.id);
    try {
      const now = clock();
      storage.tx(() => {
        const row = callRowOf(ctx, now);
        if (row.endedAt === null && !discarded.has(ctx.id)) {
          storage.calls.save({ ...row, callStatus: ctx.startedAt !== null ? 'completed' : 'failed', endedReason: 'failed', endedAt: now, durationMs: ctx.startedAt !== null ? now - ctx.startedAt : 0 });
          commitEnd(ctx.id, ctx.accountId, now, { neverPlaced: false, campaignId: ctx.campaignId });
        }
        storage.snapshots.markDone(ctx.accountId, ctx.id, now);
        storage.deadlines.cancelAll(ctx.id);
        storage.intents.removeActor(ctx.id);
        storage.callPrompts.erase(ctx.id);
      });
    } catch (err) {
      log.error({ err, call_id: ctx.id }, 'recording a failed call actor failed');
    }
  }

  supervisor.register(
    callKind({
      storage,
      isErased: (id) => discarded.has(id),
      // The transfer's effects join the call's own (actors/calls/transfer-effects.ts).
      effects: transferEffects(
        { numbers: storage.numbers, transferFor: createCarrierTransfers(storage.numbers, deps.config), publicBaseUrl: deps.config.publicBaseUrl, clock },
        callEffects({
          numbers: storage.numbers,
          voices,
          publicBaseUrl: deps.config.publicBaseUrl,
          clock,
          mediaTokenOf,
          knownCarrierIds: (accountId, exceptId) =>
            supervisor
              .list({ kind: 'call', accountId })
              .filter((a) => a.id !== exceptId)
              .map((a) => (a.snapshot.context as CallContext).carrierCallId)
              .filter((c): c is string => c !== null),
        }),
      ),
      takeMediaToken: (id) => tokens.get(id) ?? null,
      releaseSlot: (accountId, id) => concurrency.release(accountId, id),
      requestSlot: (accountId, id) => concurrency.enqueue(accountId, id),
      holdSlot: (accountId, id) => concurrency.forceAcquire(accountId, id),
      enqueue: (accountId, id) => concurrency.enqueue(accountId, id),
      crashed,
      orphaned: (id, carrierCallId) => {
        const voice = orphanVoices.get(id);
        if (voice) void hangUpLeg(voice, carrierCallId, id);
      },
      // call.started is an outbox row committed with the connect, due CALL_STARTED_DELAY_MS later.
      connected: (id, now) => void enqueueCallStarted(storage, id, now, deps.config.callStartedDelayMs ?? 2000),
      // The post-call analysis is a job committed with the end; it sends call.completed (actors/post-call/call-analysis.ts).
      ended: commitEnd,
      settled: (snap, live) => {
        const ctx = snap.context;
        if (live) {
          if (ctx.carrierCallId !== null) byCarrierId.set(ctx.carrierCallId, ctx.id);
        } else forgetIfDone(ctx.id, ctx);
      },
    }),
  );

  scheduler = createScheduler({
    deadlines: storage.deadlines,
    clock,
    log,
    deliver: (row, now) => supervisor.deliverDeadline(row, now),
    isGone: (actorId) => !supervisor.isLive(actorId),
    maxSleepMs: deps.config.schedulerIntervalMs,
  });

  function forgetIfDone(id: string, ctx: CallContext | null): void {
    if (supervisor.isLive(id)) return;
    tokens.delete(id);
    if (discarded.delete(id)) {
      // An erased call leaves nothing behind once it has ended, not even its snapshot.
      try {
        storage.snapshots.remove(id);
      } catch (err) {
        log.warn({ err, call_id: id }, 'removing an erased call’s snapshot failed');
      }
    }
    if (ctx?.carrierCallId && byCarrierId.get(ctx.carrierCallId) === id) byCarrierId.delete(ctx.carrierCallId);
  }

  /** Sends an event to a live call (parsed with the event schema first). */
  function send(id: string, event: unknown): StepResult {
    const result = supervisor.send(id, event);
    if (result === 'taken') {
      const type = (event as { type?: string }).type;
      if (type === 'DTMF') mediaEvents.dtmf++;
      else if (type === 'MEDIA.STARTED') mediaEvents.started++;
      else if (type === 'MEDIA.STOPPED') mediaEvents.stopped++;
    }
    return result;
  }

  const isLive = (id: string): boolean => {
    const snap = snapshotOf(id);
    return snap !== null && !isFinished(snap);
  };
  const bindingTargets = { contextOf, isLive, send: (id: string, e: unknown) => send(id, e) === 'taken' };
  const bindings: MediaBindings = createMediaBindings(storage.calls, bindingTargets, log);
  const webBindings: WebMediaBindings = createWebMediaBindings(storage.calls, bindingTargets, log);
  const pump = setInterval(() => concurrency.pumpAll(), PUMP_INTERVAL_MS);
  pump.unref();

  const system = {
    concurrency,
    scheduler: scheduler as Scheduler,
    voices,
    supervisor,
    /**
     * Creates a call: its row, snapshot, first deadlines and first effect intent (the
     * dial) are committed before anything runs, together with the sealed per-call prompt
     * and whatever `extra` writes (the outbound route's idempotent answer). Throws when
     * that commit fails: then the call does not exist and nothing was done.
     */
    start(input: CallInput, opts: { mediaToken?: string; prompt?: string; extra?: () => void } = {}): CallSnapshot {
      const parsed = callInputSchema.parse(input);
      tokens.set(parsed.id, opts.mediaToken ?? newMediaToken());
      try {
        const snap = supervisor.start('call', parsed.id, parsed, () => {
          if (opts.prompt !== undefined) storage.callPrompts.put(parsed.id, parsed.accountId, opts.prompt);
          opts.extra?.();
        }) as CallSnapshot;
        return snap;
      } catch (err) {
        tokens.delete(parsed.id);
        throw err;
      }
    },
    send,
    /**
     * Adds writes to the transaction that ends every call's row (its last commit, or the
     * record of a call that crashed or could not be restored). They must not throw but for
     * a database failure, which rolls the end back (it is retried like any commit).
     */
    onCallEnded(listener: (internalId: string, accountId: string, now: number, end: CallEnd) => void): void {
      endListeners.push(listener);
    },
    /** Resolves once the call's dial has an outcome: accepted, rejected or unknown. */
    dialOutcome(id: string): Promise<DialOutcome> {
      return new Promise((resolve) => {
        const watching = supervisor.watch(id, (raw) => {
          if (raw === null) {
            resolve({ outcome: 'unknown', carrierError: { outcome: 'unknown', message: 'the call was stopped before its dial settled (its account was deleted, or it failed)' } });
            return true;
          }
          const snap = raw as CallSnapshot;
          const ctx = snap.context;
          if (ctx.dialOutcome === 'accepted' && ctx.carrierCallId !== null) resolve({ outcome: 'accepted', carrierCallId: ctx.carrierCallId });
          else if (ctx.dialOutcome === 'unknown') resolve({ outcome: 'unknown', carrierError: ctx.carrierError ?? { outcome: 'unknown' } });
          else if (isFinished(snap)) {
            // Ended before its dial settled (the carrier's events overtook it): say what it was.
            if (ctx.carrierCallId !== null) resolve({ outcome: 'accepted', carrierCallId: ctx.carrierCallId });
            else resolve({ outcome: 'rejected', carrierError: ctx.carrierError ?? { message: 'the call ended before it was dialed' } });
          } else if (ctx.carrierCallId !== null && !snap.hasTag(CALL_TAGS.dialing)) resolve({ outcome: 'accepted', carrierCallId: ctx.carrierCallId });
          else return false;
          return true;
        });
        if (!watching) {
          const row = storage.calls.getByInternalId(id);
          if (row?.carrier_call_id) resolve({ outcome: 'accepted', carrierCallId: row.carrier_call_id });
          else resolve({ outcome: 'rejected', carrierError: { message: 'the call ended before it was dialed' } });
        }
      });
    },
    contextOf,
    /**
     * Calls `fn` with the call's context after each committed step (and at once) until it
     * returns true; with null when the call is gone or not live.
     */
    watchContext(id: string, fn: (ctx: CallContext | null) => boolean): void {
      if (!supervisor.watch(id, (snap) => fn(snap === null ? null : (snap.context as CallContext)))) fn(null);
    },
    isLive,
    /** The live call of this account with this carrier id. */
    findByCarrierCallId(accountId: string, carrierCallId: string): string | null {
      const id = byCarrierId.get(carrierCallId);
      return id !== undefined && supervisor.accountOf(id) === accountId ? id : null;
    },
    /**
     * The live call with this carrier id, whichever account it is on: a carrier B
     * application's one webhook URL carries the events of every number on it, so the
     * caller must check the call's account and number before trusting the event.
     */
    findAnyByCarrierCallId(carrierCallId: string): string | null {
      const id = byCarrierId.get(carrierCallId);
      return id !== undefined && supervisor.isLive(id) ? id : null;
    },
    mediaTokenOf,
    /** The per-call prompt, while the call is queued or live (sealed at rest). */
    promptOf: (id: string): string | undefined => storage.callPrompts.get(id) ?? undefined,
    /**
     * The call's record was erased: write no row for it again, and end it (a queued call
     * leaves its queue; a call on the line is hung up at the carrier).
     */
    discard(id: string): void {
      if (!supervisor.isLive(id)) return;
      discarded.add(id);
      try {
        storage.callPrompts.erase(id);
      } catch (err) {
        log.warn({ err, call_id: id }, 'erasing a discarded call’s prompt failed');
      }
      if (isLive(id)) send(id, { type: 'HANGUP.REQUESTED', at: clock(), reason: 'canceled' });
    },
    /**
     * Before an account's rows go: its live calls are hung up at the carrier (each
     * bounded by a timeout), its queue emptied and its actors stopped.
     */
    async stopAccount(accountId: string): Promise<{ hungUp: number; stopped: number }> {
      stopping.add(accountId);
      const dialingIds: string[] = [];
      try {
        // Queued calls leave at once: with the account's limit at 0 none is granted a slot.
        const queued = supervisor.list({ accountId }).filter((a) => a.snapshot.hasTag(CALL_TAGS.queued));
        supervisor.forget(queued.map((a) => a.id));
        // Dials in flight settle first (bounded), so that the legs they placed are known.
        const dialing = supervisor.list({ accountId }).filter((a) => a.snapshot.hasTag(CALL_TAGS.dialing));
        for (const { id, snapshot } of dialing) {
          dialingIds.push(id);
          const number = storage.numbers.get(accountId, (snapshot.context as CallContext).phoneNumber);
          if (number) orphanVoices.set(id, voices.voiceFor(number));
        }
        await Promise.all(
          dialing.map(
            ({ id }) =>
              new Promise<void>((done) => {
                const timer = setTimeout(done, ACCOUNT_DIAL_WAIT_MS);
                timer.unref();
                const watching = supervisor.watch(id, (snap) => {
                  if (snap !== null && snap.hasTag(CALL_TAGS.dialing)) return false;
                  clearTimeout(timer);
                  done();
                  return true;
                });
                if (!watching) {
                  clearTimeout(timer);
                  done();
                }
              }),
          ),
        );
        // Every leg still up is hung up, and every actor stopped (their rows go next).
        const actors = supervisor.list({ accountId });
        supervisor.forget(actors.map((a) => a.id));
        concurrency.dropAccount(accountId);
        let hungUp = 0;
        await Promise.all(
          actors.map(async ({ id, snapshot }) => {
            const ctx = snapshot.context as CallContext;
            forgetIfDone(id, ctx);
            if (isFinished(snapshot as CallSnapshot) || ctx.carrierCallId === null) return;
            const number = storage.numbers.get(accountId, ctx.phoneNumber);
            if (number && (await hangUpLeg(voices.voiceFor(number), ctx.carrierCallId, id))) hungUp++;
          }),
        );
        for (const { id, snapshot } of queued) forgetIfDone(id, snapshot.context as CallContext);
        return { hungUp, stopped: actors.length + queued.length };
      } finally {
        // Voices of dials still out stay until those dials answer (their legs are hung up then).
        setTimeout(() => {
          stopping.delete(accountId);
          for (const id of dialingIds) orphanVoices.delete(id);
        }, 60_000).unref();
      }
    },
    /** Boot: every unfinished call comes back (see supervisor.restore and call-kind.ts). */
    async restore() {
      const result = await supervisor.restore();
      for (const { id, snapshot } of supervisor.list({ kind: 'call' })) {
        const carrierCallId = (snapshot.context as CallContext).carrierCallId;
        if (carrierCallId !== null) byCarrierId.set(carrierCallId, id);
      }
      if (result.restored + result.abandoned > 0) log.info(result, 'actors restored');
      return result;
    },
    mediaEvents: (): Readonly<typeof mediaEvents> => mediaEvents,
    liveActors(): { getSnapshot(): { value: unknown } }[] {
      return supervisor.list({ kind: 'call' }).map((a) => ({ getSnapshot: () => a.snapshot }));
    },
    /** How a media websocket claims its call with the one-time token. */
    bindings,
    /** How a browser's websocket claims its web call with the one-time access token. */
    webBindings,
    stop(): void {
      clearInterval(pump);
      scheduler?.stop();
      supervisor.stop();
    },
  };
  registerCallGauges(deps.metrics, system);
  return system;
}

export type CallSystem = ReturnType<typeof createCallSystem>;
