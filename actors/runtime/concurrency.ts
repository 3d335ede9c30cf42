// Concurrent-call slots per account. A slot is held from dialing (or an inbound answer)
// until the call ends; the limit is the account's `concurrency_limit`, read on every
// decision so a plan change applies to the next one. Outbound calls over the limit
// wait in a FIFO queue per account and are granted a slot as one frees.
import type { Logger } from 'pino';

export interface ConcurrencyDeps {
  /** The account's current limit (0 when the account is gone). */
  limitOf: (accountId: string) => number;
  /** Tells a queued call it may dial now; the slot is already counted as held. */
  grant: (accountId: string, callId: string) => void;
  log: Logger;
}

export interface Concurrency {
  /** Takes a slot when one is free and nobody is waiting ahead; false otherwise. */
  tryAcquire(accountId: string, callId: string): boolean;
  /** Holds a slot whatever the limit: a call restored after a restart is already up. */
  forceAcquire(accountId: string, callId: string): void;
  /** Puts a call at the back of the account's queue. */
  enqueue(accountId: string, callId: string): void;
  /** Frees the call's slot, or takes it out of the queue; then grants waiting calls. */
  release(accountId: string, callId: string): void;
  /** A grant that was not taken (its commit failed): the call goes back to the front of the queue. */
  requeue(accountId: string, callId: string): void;
  /** Forgets an account's slots and queue without granting anything (the account is going). */
  dropAccount(accountId: string): void;
  /** Grants waiting calls of every account while slots are free (after a limit change). */
  pumpAll(): void;
  held(accountId: string): number;
  queued(accountId: string): number;
  totals(): { held: number; queued: number };
}

export function createConcurrency({ limitOf, grant, log }: ConcurrencyDeps): Concurrency {
  const holding = new Map<string, Set<string>>();
  const waiting = new Map<string, string[]>();

  const heldSet = (accountId: string): Set<string> => {
    let s = holding.get(accountId);
    if (!s) holding.set(accountId, (s = new Set()));
    return s;
  };

  function pump(accountId: string): void {
    const queue = waiting.get(accountId);
    const held = heldSet(accountId);
    while (queue && queue.length > 0 && held.size < limitOf(accountId)) {
      const next = queue.shift()!;
      held.add(next);
      try {
        grant(accountId, next);
      } catch (err) {
        log.error({ err, call_id: next }, 'granting a slot failed');
      }
    }
    if (queue && queue.length === 0) waiting.delete(accountId);
    if (held.size === 0) holding.delete(accountId);
  }

  return {
    tryAcquire(accountId, callId) {
      pump(accountId);
      const held = heldSet(accountId);
      if (held.has(callId)) return true;
      if ((waiting.get(accountId)?.length ?? 0) > 0 || held.size >= limitOf(accountId)) {
        if (held.size === 0) holding.delete(accountId);
        return false;
      }
      held.add(callId);
      return true;
    },
    forceAcquire(accountId, callId) {
      heldSet(accountId).add(callId);
    },
    enqueue(accountId, callId) {
      // Granted meanwhile (its SLOT.GRANTED not yet taken): already holds, never queues too.
      if (holding.get(accountId)?.has(callId)) return;
      const queue = waiting.get(accountId) ?? [];
      if (!queue.includes(callId)) queue.push(callId);
      waiting.set(accountId, queue);
      pump(accountId);
    },
    release(accountId, callId) {
      holding.get(accountId)?.delete(callId);
      const queue = waiting.get(accountId);
      if (queue) {
        const i = queue.indexOf(callId);
        if (i >= 0) queue.splice(i, 1);
      }
      pump(accountId);
    },
    requeue(accountId, callId) {
      holding.get(accountId)?.delete(callId);
      const queue = waiting.get(accountId) ?? [];
      if (!queue.includes(callId)) queue.unshift(callId);
      waiting.set(accountId, queue);
    },
    dropAccount(accountId) {
      holding.delete(accountId);
      waiting.delete(accountId);
    },
    pumpAll() {
      for (const accountId of [...waiting.keys()]) pump(accountId);
    },
    held: (accountId) => holding.get(accountId)?.size ?? 0,
    queued: (accountId) => waiting.get(accountId)?.length ?? 0,
    totals() {
      let held = 0;
      let queued = 0;
      for (const s of holding.values()) held += s.size;
      for (const q of waiting.values()) queued += q.length;
      return { held, queued };
    },
  };
}
