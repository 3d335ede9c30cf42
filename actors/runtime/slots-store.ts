// Concurrency slots per account as an @xstate/store store: in memory, never persisted (a
// restart rebuilds them from the calls it restores), events in, selectors out. The
// transitions are pure: the account's limit comes with each event that may grant (the
// caller reads it on every decision, so a plan change applies to the next one), and a
// grant is an emitted `granted` event, never a call made from inside a transition.
// Rules: a slot is taken only when one is free and nobody of the account waits ahead;
// waiting calls are granted first in, first out, as slots free; a call is never both
// holding and waiting. Batch campaigns and the SMS sender will add waiters of their own
// kinds here.
import { createStore } from '@xstate/store';
import { z } from 'zod';

export interface SlotsContext {
  /** Calls holding a slot, per account. */
  held: Readonly<Record<string, readonly string[]>>;
  /** Calls waiting for a slot, per account, oldest first. */
  waiting: Readonly<Record<string, readonly string[]>>;
}

export interface SlotEvent {
  accountId: string;
  callId: string;
}

/** A waiting call was given a slot: the caller tells the call (outside the transition). */
const slotGranted = z.object({ accountId: z.string(), callId: z.string() });
export type SlotGranted = z.infer<typeof slotGranted>;

const without = (list: readonly string[] | undefined, id: string): readonly string[] => (list ?? []).filter((x) => x !== id);

/** The record with `key` set to `list`, or without `key` when the list is empty (idle accounts leave no trace). */
function withList(rec: SlotsContext['held'], key: string, list: readonly string[]): SlotsContext['held'] {
  if (list.length > 0) return { ...rec, [key]: list };
  if (!(key in rec)) return rec;
  const { [key]: _gone, ...rest } = rec;
  return rest;
}

/** Grants waiting calls of the account, oldest first, while it holds fewer than `limit`. */
function pump(ctx: SlotsContext, accountId: string, limit: number, grant: (g: SlotGranted) => void): SlotsContext {
  let held = ctx.held[accountId] ?? [];
  let waiting = ctx.waiting[accountId] ?? [];
  if (waiting.length === 0 || held.length >= limit) return ctx;
  const granted: string[] = [];
  while (waiting.length > 0 && held.length < limit) {
    const next = waiting[0]!;
    waiting = waiting.slice(1);
    held = [...held, next];
    granted.push(next);
  }
  for (const callId of granted) grant({ accountId, callId });
  return { held: withList(ctx.held, accountId, held), waiting: withList(ctx.waiting, accountId, waiting) };
}

export function createSlotsStore() {
  return createStore({
    schemas: { emitted: { granted: slotGranted } },
    context: { held: {}, waiting: {} } as SlotsContext,
    on: {
      /** Takes a slot for the call when one is free and nobody waits ahead (waiting calls are granted first). */
      acquire: (ctx, e: SlotEvent & { limit: number }, enq) => {
        const next = pump(ctx, e.accountId, e.limit, enq.emit.granted);
        const held = next.held[e.accountId] ?? [];
        if (held.includes(e.callId)) return next;
        if ((next.waiting[e.accountId]?.length ?? 0) > 0 || held.length >= e.limit) return next;
        return { ...next, held: withList(next.held, e.accountId, [...held, e.callId]) };
      },
      /** Holds a slot whatever the limit: a call restored after a restart is already up. */
      forceAcquire: (ctx, e: SlotEvent) => {
        const held = ctx.held[e.accountId] ?? [];
        if (held.includes(e.callId)) return ctx;
        return { held: withList(ctx.held, e.accountId, [...held, e.callId]), waiting: withList(ctx.waiting, e.accountId, without(ctx.waiting[e.accountId], e.callId)) };
      },
      /** Puts the call at the back of the queue (unless it holds a slot already), then grants what the limit allows. */
      enqueue: (ctx, e: SlotEvent & { limit: number }, enq) => {
        // Granted meanwhile (its grant not yet taken): it already holds, never queues too.
        if (ctx.held[e.accountId]?.includes(e.callId)) return ctx;
        const waiting = ctx.waiting[e.accountId] ?? [];
        const queued = waiting.includes(e.callId) ? ctx : { ...ctx, waiting: withList(ctx.waiting, e.accountId, [...waiting, e.callId]) };
        return pump(queued, e.accountId, e.limit, enq.emit.granted);
      },
      /** Frees the call's slot, or takes it out of the queue; then grants what the limit allows. */
      release: (ctx, e: SlotEvent & { limit: number }, enq) => {
        const freed = { held: withList(ctx.held, e.accountId, without(ctx.held[e.accountId], e.callId)), waiting: withList(ctx.waiting, e.accountId, without(ctx.waiting[e.accountId], e.callId)) };
        return pump(freed, e.accountId, e.limit, enq.emit.granted);
      },
      /** A grant that was not taken (its commit failed): the call goes back to the front of the queue. */
      requeue: (ctx, e: SlotEvent) => {
        const waiting = without(ctx.waiting[e.accountId], e.callId);
        return { held: withList(ctx.held, e.accountId, without(ctx.held[e.accountId], e.callId)), waiting: withList(ctx.waiting, e.accountId, [e.callId, ...waiting]) };
      },
      /** Forgets the account's slots and queue, granting nothing (the account is going). */
      dropAccount: (ctx, e: { accountId: string }) => ({ held: withList(ctx.held, e.accountId, []), waiting: withList(ctx.waiting, e.accountId, []) }),
      /** The account's limit now (a plan change, or the periodic look): grants what it allows. */
      limitChanged: (ctx, e: { accountId: string; limit: number }, enq) => pump(ctx, e.accountId, e.limit, enq.emit.granted),
    },
  });
}

export type SlotsStore = ReturnType<typeof createSlotsStore>;

/** Selectors: what the gauges and the callers read. */
export const heldOf = (ctx: SlotsContext, accountId: string): number => ctx.held[accountId]?.length ?? 0;
export const queuedOf = (ctx: SlotsContext, accountId: string): number => ctx.waiting[accountId]?.length ?? 0;
export const holds = (ctx: SlotsContext, accountId: string, callId: string): boolean => ctx.held[accountId]?.includes(callId) ?? false;
export function totalsOf(ctx: SlotsContext): { held: number; queued: number } {
  let held = 0;
  let queued = 0;
  for (const list of Object.values(ctx.held)) held += list.length;
  for (const list of Object.values(ctx.waiting)) queued += list.length;
  return { held, queued };
}
/** Accounts with calls waiting: the periodic look offers them the slots their limits allow. */
export const accountsWaiting = (ctx: SlotsContext): string[] => Object.keys(ctx.waiting);
