// Calls as the supervisor's first actor kind: the call machine, its event schema, the
// writer that projects a snapshot onto the `calls` row (and erases the sealed prompt
// when the call ends), its effects, the slot hooks, and how an older or interrupted
// call snapshot comes back.
import type { Storage } from '../../storage/index.ts';
import type { CallWrite } from '../../storage/calls.ts';
import { CALL_TAGS, CALL_MACHINE_VERSION, callMachine, callRecordOf, type CallSnapshot } from '../../machines/call.ts';
import { migrateCallSnapshot } from '../../machines/call-migrate.ts';
import type { CallContext } from '../../machines/call-outcome.ts';
import { callEventSchema } from '../../machines/call-events.ts';
import type { ActorKind, EffectHandler, PersistedActor } from '../runtime/actor-kind.ts';

export { migrateCallSnapshot, placeCall } from '../../machines/call-migrate.ts';

/** The public call_id: the carrier's id, except for a call that waited for a slot or whose dial's answer was lost (contract.md §2). */
export const publicIdOf = (ctx: CallContext): string =>
  ctx.queued || ctx.dialOutcome === 'unknown' ? ctx.id : (ctx.carrierCallId ?? ctx.id);

export function callRowOf(ctx: CallContext, now: number): CallWrite {
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
    transcript: r.transcript,
    avgLatencyMs: r.avg_latency_ms,
    bookings: JSON.stringify(r.bookings),
    createdAt: ctx.createdAt,
    updatedAt: now,
  };
}

export interface CallKindDeps {
  storage: Storage;
  /** The call's record was erased (DELETE /v1/calls): its last transitions write no row. */
  isErased?(id: string): boolean;
  effects: Record<string, EffectHandler<CallContext>>;
  /** The media token for a call's first row write (held by the facade until then). */
  takeMediaToken(id: string): string | null;
  releaseSlot(accountId: string, id: string): void;
  requestSlot(accountId: string, id: string): void;
  holdSlot(accountId: string, id: string): void;
  enqueue(accountId: string, id: string): void;
  /** The transition of a call threw: hang its carrier leg up and record it failed. */
  crashed(ctx: CallContext): void;
  /** A dial's outcome that arrived after the call was stopped: a leg it placed is hung up. */
  orphaned?(actorId: string, carrierCallId: string): void;
  /** After every committed step of a call (indexes, post-call work, forgetting). */
  settled?(snap: CallSnapshot, live: boolean): void;
  /**
   * Inside the commit in which the call connects (its start time first appears while it
   * is up): what must be committed with the connect (the call.started delivery).
   */
  connected?(internalId: string, now: number): void;
  /**
   * Inside the commit in which the call's row first gets its end (ended_at): what must be
   * committed with the end (the post-call analysis job, which sends call.completed).
   */
  ended?(internalId: string, accountId: string, now: number, end: CallEnd): void;
}

/** What a call's end tells those who wait for it, beyond its row. */
export interface CallEnd {
  /** Its dial's answer was lost and the carrier has no such call: it was never placed (machines/call.ts endNotPlaced). */
  neverPlaced: boolean;
  /** The batch campaign that placed it; null for every other call (listeners skip those without a read). */
  campaignId: string | null;
}

export function callKind(deps: CallKindDeps): ActorKind<typeof callMachine> {
  const { storage } = deps;
  return {
    kind: 'call',
    machine: callMachine,
    version: CALL_MACHINE_VERSION,
    eventSchema: callEventSchema,
    accountOf: (ctx) => ctx.accountId,
    write(snap, w) {
      const ctx = snap.context;
      if (!deps.isErased?.(ctx.id)) {
        const row = callRowOf(ctx, w.now);
        const connects =
          deps.connected !== undefined && row.startedAt !== null && row.endedAt === null && (w.first || storage.calls.getByInternalId(ctx.id)?.started_at == null);
        const ends = deps.ended !== undefined && row.endedAt !== null && (w.first || storage.calls.getByInternalId(ctx.id)?.ended_at == null);
        storage.calls.save(row, w.first ? deps.takeMediaToken(ctx.id) : null);
        if (connects) deps.connected!(ctx.id, w.now);
        if (ends) deps.ended!(ctx.id, ctx.accountId, w.now, { neverPlaced: ctx.carrierError?.['outcome'] === 'not_placed', campaignId: ctx.campaignId });
      }
      // The per-call prompt lives only while the call is queued or live.
      if (snap.hasTag(CALL_TAGS.finished)) storage.callPrompts.erase(ctx.id);
    },
    effects: deps.effects,
    afterCommit: {
      releaseSlot: (snap) => deps.releaseSlot(snap.context.accountId, snap.context.id),
      requestSlot: (snap) => deps.requestSlot(snap.context.accountId, snap.context.id),
    },
    migrate: migrateCallSnapshot,
    // Calls that held a slot take it again first; queued calls then line up oldest first.
    restoreOrder: (snap) => (snap.hasTag(CALL_TAGS.queued) ? 1e15 : 0) + snap.context.createdAt,
    adopt(snap: CallSnapshot) {
      const ctx = snap.context;
      if (snap.hasTag(CALL_TAGS.holdsSlot)) deps.holdSlot(ctx.accountId, ctx.id);
      else if (snap.hasTag(CALL_TAGS.queued)) deps.enqueue(ctx.accountId, ctx.id);
    },
    onRestore: (_snap, now) => [{ type: 'RESTORED', at: now }],
    onCrash: (snap) => deps.crashed(snap.context),
    orphaned(intent, outcome) {
      const id = (outcome as { carrierCallId?: unknown }).carrierCallId;
      if (typeof id === 'string') deps.orphaned?.(intent.actorId, id);
    },
    settled: (snap, live) => deps.settled?.(snap, live),
    abandon(p, accountId, actorId, now) {
      const existing = storage.calls.getByInternalId(actorId);
      if (!existing || existing.ended_at !== null) return;
      storage.calls.save({
        ...callRowOf({ ...(p.context as CallContext), accountId }, now),
        callStatus: 'failed',
        endedReason: 'failed',
        endedAt: now,
        durationMs: 0,
        chargedMinutes: 0,
      });
      storage.callPrompts.erase(actorId);
      deps.ended?.(actorId, accountId, now, { neverPlaced: false, campaignId: (p.context as Partial<CallContext>).campaignId ?? null });
    },
  };
}
