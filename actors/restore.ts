// Boot: every call snapshot that had not reached its final state comes back as an
// actor. Queued calls go back in their account's queue in the order they were made
// (each is dialed once, when a slot frees); calls that held a slot hold it again; calls
// the carrier had connected or was connecting lost their media with the process, so
// the carrier is asked how they are and the actor hears RECONCILED: still up means we
// hang up (media_lost), ended means that status.
import type { Logger } from 'pino';
import type { Storage } from '../storage/index.ts';
import type { CallContext } from '../machines/call-outcome.ts';
import type { CarrierCallStatus } from '../voice/carriers/voice.ts';
import type { CallSystem } from './system.ts';

const HOLDS_SLOT = new Set(['dialing', 'initiated', 'ringing', 'in-progress', 'hanging-up']);
const RECONCILE = new Set(['initiated', 'ringing', 'in-progress']);

interface Persisted {
  value: unknown;
  context: CallContext;
}

const topState = (value: unknown): string =>
  typeof value === 'string' ? value : value !== null && typeof value === 'object' ? (Object.keys(value)[0] ?? '') : '';

export interface RestoreResult {
  restored: number;
  reconciled: number;
  failed: number;
}

export async function restoreCalls(system: CallSystem, storage: Storage, clock: () => number, log: Logger): Promise<RestoreResult> {
  const loaded: { row: { actor_id: string; account_id: string }; snap: Persisted; state: string }[] = [];
  let failed = 0;
  for (const row of storage.snapshots.listUnfinished('call')) {
    try {
      const snap = JSON.parse(row.snapshot) as Persisted;
      loaded.push({ row, snap, state: topState(snap.value) });
    } catch (err) {
      failed++;
      log.error({ err, call_id: row.actor_id }, 'call snapshot does not parse; left as it was');
      storage.snapshots.markDone(row.account_id, row.actor_id, clock());
    }
  }
  // Calls that held a slot take it again first; queued calls then line up oldest first.
  loaded.sort((a, b) => Number(a.state === 'queued') - Number(b.state === 'queued') || a.snap.context.createdAt - b.snap.context.createdAt);

  const toReconcile: CallContext[] = [];
  let restored = 0;
  for (const { row, snap, state } of loaded) {
    const ctx = snap.context;
    try {
      if (HOLDS_SLOT.has(state)) system.concurrency.forceAcquire(ctx.accountId, ctx.id);
      system.adopt(snap, row.account_id, row.actor_id, state === 'dialing');
      if (state === 'queued') system.concurrency.enqueue(ctx.accountId, ctx.id);
      if (RECONCILE.has(state) && ctx.carrierCallId !== null) toReconcile.push(ctx);
      restored++;
    } catch (err) {
      failed++;
      system.concurrency.release(ctx.accountId, ctx.id);
      log.error({ err, call_id: row.actor_id }, 'call actor could not be restored');
    }
  }

  await Promise.all(
    toReconcile.map(async (ctx) => {
      let carrierStatus: CarrierCallStatus = 'unknown';
      try {
        const number = storage.numbers.get(ctx.accountId, ctx.phoneNumber);
        if (number) carrierStatus = await system.voices.voiceFor(number).fetchStatus(ctx.carrierCallId!);
      } catch (err) {
        log.warn({ err, call_id: ctx.id }, 'carrier status of a restored call unavailable');
      }
      system.send(ctx.id, { type: 'RECONCILED', at: clock(), carrierStatus });
    }),
  );
  if (loaded.length > 0) log.info({ restored, reconciled: toReconcile.length, failed }, 'call actors restored');
  return { restored, reconciled: toReconcile.length, failed };
}
