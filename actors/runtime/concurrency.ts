// Concurrent-call slots per account. A slot is held from dialing (or an inbound answer)
// until the call ends; the limit is the account's `concurrency_limit`, read on every
// decision so a plan change applies to the next one. Outbound calls over the limit
// wait in a FIFO queue per account and are granted a slot as one frees. The slots are
// an @xstate/store store (slots-store.ts, pure transitions); this is the calls' face of it.
import type { Logger } from 'pino';
import { accountsWaiting, createSlotsStore, heldOf, holds, queuedOf, totalsOf } from './slots-store.ts';

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
  const store = createSlotsStore();
  // Grants are emitted by the store's transitions and carried out here, outside them.
  store.on('granted', ({ accountId, callId }) => {
    try {
      grant(accountId, callId);
    } catch (err) {
      log.error({ err, call_id: callId }, 'granting a slot failed');
    }
  });
  const ctx = () => store.getSnapshot().context;

  return {
    tryAcquire(accountId, callId) {
      store.trigger.acquire({ accountId, callId, limit: limitOf(accountId) });
      return holds(ctx(), accountId, callId);
    },
    forceAcquire: (accountId, callId) => store.trigger.forceAcquire({ accountId, callId }),
    enqueue: (accountId, callId) => store.trigger.enqueue({ accountId, callId, limit: limitOf(accountId) }),
    release: (accountId, callId) => store.trigger.release({ accountId, callId, limit: limitOf(accountId) }),
    requeue: (accountId, callId) => store.trigger.requeue({ accountId, callId }),
    dropAccount: (accountId) => store.trigger.dropAccount({ accountId }),
    pumpAll() {
      for (const accountId of accountsWaiting(ctx())) store.trigger.limitChanged({ accountId, limit: limitOf(accountId) });
    },
    held: (accountId) => heldOf(ctx(), accountId),
    queued: (accountId) => queuedOf(ctx(), accountId),
    totals: () => totalsOf(ctx()),
  };
}
