// The transfer effects of the call machine (machines/call-transfer.ts), carried out after
// their intent is committed (actors/runtime/supervisor.ts), each answering with the event that
// records its outcome:
// - placeTransfer: TRANSFER.PLACED | TRANSFER.FAILED (the carrier refused) | TRANSFER.UNKNOWN
//   (the answer was lost: checked, never resent, except carrier B inside its command_id window);
// - checkTransfer (read-only): TRANSFER.CONNECTED | RECONCILED (the caller's leg is over) |
//   TRANSFER.ANSWERED | TRANSFER.PLACED | TRANSFER.FAILED | CARRIER.UNREACHABLE;
// - whisperTransfer, bridgeTransfer (carrier B warm): TRANSFER.SENT | TRANSFER.FAILED;
// - releaseMedia (at the handoff), dropTransferLeg (the caller left first): TRANSFER.SENT.
// Every intent carries the attempt it was made for; one whose attempt is no longer the
// running transfer does nothing (TRANSFER.SENT), so a late intent never transfers twice.
// The call's `hangup` is wrapped: a call hung up before the handoff also ends the target's leg.
import type { CallContext } from '../../machines/call-outcome.ts';
import type { CallEvent } from '../../machines/call-events.ts';
import type { TransferIntent } from '../../machines/call-transfer.ts';
import type { PhoneNumberRow, PhoneNumbersRepo } from '../../storage/phone-numbers.ts';
import { CarrierUnreachableError, DialRejected, classifyDialError } from '../../voice/carriers/errors.ts';
import type { CarrierTransfer, TransferPlan } from '../../voice/carriers/call-transfer.ts';
import { TELNYX_DEDUP_SAFE_MS } from './call-effects.ts';
import type { EffectHandler, EffectRun, Intent } from '../runtime/actor-kind.ts';

export interface TransferEffectDeps {
  numbers: PhoneNumbersRepo;
  transferFor(row: PhoneNumberRow): CarrierTransfer;
  publicBaseUrl: string;
  clock: () => number;
}

/** A check that finds no leg this soon after the request waits for it rather than calling it failed. */
export const NO_LEG_GRACE_MS = 10_000;

const attemptOf = (intent: Intent): number => (intent.params as TransferIntent | null)?.attempt ?? 0;

export function transferEffects(deps: TransferEffectDeps, base: Record<string, EffectHandler<CallContext>>): Record<string, EffectHandler<CallContext>> {
  const now = deps.clock;

  /** The plan of the transfer this intent is for, or null when it is not the running one (or the call cannot be reached). */
  function planFor(run: EffectRun<CallContext>, outcome: 'pending' | 'connected' = 'pending'): { plan: TransferPlan; carrier: CarrierTransfer } | null {
    const ctx = run.context;
    const t = ctx.transfer;
    if (t === null || t.attempt !== attemptOf(run.intent) || t.outcome !== outcome || ctx.carrierCallId === null) return null;
    const row = deps.numbers.get(ctx.accountId, ctx.phoneNumber);
    if (!row) return null;
    const plan: TransferPlan = {
      callId: ctx.id,
      attempt: t.attempt,
      carrierCallId: ctx.carrierCallId,
      from: ctx.phoneNumber,
      to: t.to,
      mode: t.mode,
      whisper: t.whisper,
      legId: t.legId,
      requestedAt: t.requestedAt,
      publicBaseUrl: deps.publicBaseUrl,
      eventsToken: row.events_token,
    };
    return { plan, carrier: deps.transferFor(row) };
  }

  const sent = (intent: Intent): CallEvent => ({ type: 'TRANSFER.SENT', at: now(), attempt: Math.max(1, attemptOf(intent)) });

  const placeTransfer: EffectHandler<CallContext> = {
    async run(run): Promise<CallEvent> {
      const found = planFor(run);
      if (!found) {
        // Not the running transfer any more (or its number is gone): nothing is sent.
        const t = run.context.transfer;
        return t !== null && t.attempt === attemptOf(run.intent) && t.outcome === 'pending'
          ? { type: 'TRANSFER.FAILED', at: now(), attempt: t.attempt, reason: 'failed' }
          : sent(run.intent);
      }
      const { plan, carrier } = found;
      const provider = run.context.provider;
      // A web call has no carrier leg to hand over (its conversation is never offered the transfer tool).
      if (provider === 'web') return { type: 'TRANSFER.FAILED', at: now(), attempt: plan.attempt, reason: 'failed' };
      run.markSent();
      try {
        const { legId } = await carrier.place(plan);
        return { type: 'TRANSFER.PLACED', at: now(), attempt: plan.attempt, ...(legId ? { legId } : {}) };
      } catch (err) {
        const outcome = classifyDialError(provider, err);
        if (outcome instanceof DialRejected) return { type: 'TRANSFER.FAILED', at: now(), attempt: plan.attempt, reason: 'failed' };
        return { type: 'TRANSFER.UNKNOWN', at: now(), attempt: plan.attempt };
      }
    },
    resumeSent(intent, ctx, at) {
      // Carrier B drops a repeated command_id for about a minute: inside it the request is
      // simply sent again. Anywhere else whether it arrived is unknown: ask the carrier.
      if (ctx.provider === 'telnyx' && intent.sentAt !== null && at - intent.sentAt < TELNYX_DEDUP_SAFE_MS) return null;
      return { type: 'TRANSFER.UNKNOWN', at, attempt: Math.max(1, attemptOf(intent)) };
    },
  };

  const checkTransfer: EffectHandler<CallContext> = {
    async run(run): Promise<CallEvent> {
      const found = planFor(run);
      if (!found) return { type: 'CARRIER.UNREACHABLE', at: now() };
      const { plan, carrier } = found;
      let check;
      try {
        check = await carrier.check(plan);
      } catch {
        return { type: 'CARRIER.UNREACHABLE', at: now() };
      }
      const at = now();
      const { leg, call } = check;
      const attempt = plan.attempt;
      if (leg.state === 'connected') return { type: 'TRANSFER.CONNECTED', at: Math.max(0, Math.round(leg.at ?? at)), attempt };
      // The caller's leg is over: the call ends as the carrier says.
      if (call.status !== 'active' && (call.status !== 'unknown' || call.endedAt !== undefined)) {
        return {
          type: 'RECONCILED',
          at,
          carrierStatus: call.status,
          ...(call.endedAt !== undefined ? { endedAt: call.endedAt } : {}),
          ...(call.durationSec !== undefined ? { durationSec: call.durationSec } : {}),
        };
      }
      switch (leg.state) {
        case 'answered':
          return { type: 'TRANSFER.ANSWERED', at, attempt, ...(leg.legId ? { legId: leg.legId } : {}) };
        case 'ringing':
          return { type: 'TRANSFER.PLACED', at, attempt, ...(leg.legId ? { legId: leg.legId } : {}) };
        case 'failed':
          return { type: 'TRANSFER.FAILED', at, attempt, reason: leg.reason };
        case 'none':
          // The request may still be on its way to a leg; past the grace it never made one.
          return at - plan.requestedAt < NO_LEG_GRACE_MS ? { type: 'TRANSFER.PLACED', at, attempt } : { type: 'TRANSFER.FAILED', at, attempt, reason: 'failed' };
      }
    },
  };

  /** A carrier B step on the target's leg: acknowledged, or failed when the carrier refuses it (the leg is gone). */
  const legStep = (step: (c: CarrierTransfer, p: TransferPlan) => Promise<void>): EffectHandler<CallContext> => ({
    async run(run): Promise<CallEvent> {
      const found = planFor(run);
      if (!found) return sent(run.intent);
      run.markSent();
      try {
        await step(found.carrier, found.plan);
        return sent(run.intent);
      } catch (err) {
        // Unreachable: run again (the command_id makes a repeat harmless).
        if (err instanceof CarrierUnreachableError) throw err;
        return { type: 'TRANSFER.FAILED', at: now(), attempt: found.plan.attempt, reason: 'failed' };
      }
    },
    resumeSent: () => null,
  });

  const releaseMedia: EffectHandler<CallContext> = {
    async run(run): Promise<CallEvent> {
      const found = planFor(run, 'connected');
      if (found) {
        run.markSent();
        // Best effort: a stream left running ends with the call anyway.
        await found.carrier.releaseMedia(found.plan).catch(() => undefined);
      }
      return sent(run.intent);
    },
    resumeSent: () => null,
  };

  // The caller's leg ended before the handoff: the target's leg, if we know it, is ended too.
  const dropTransferLeg: EffectHandler<CallContext> = {
    async run(run): Promise<CallEvent> {
      const found = planFor(run);
      if (found && found.plan.legId !== null) {
        run.markSent();
        await found.carrier.hangupLeg(found.plan.legId).catch(() => undefined);
      }
      return sent(run.intent);
    },
    resumeSent: () => null,
  };

  const baseHangup = base['hangup'];
  const hangup: EffectHandler<CallContext> | undefined = baseHangup && {
    async run(run) {
      const outcome = await baseHangup.run(run);
      const ctx = run.context;
      const t = ctx.transfer;
      // Hung up before the handoff: the target's leg must not ring on (or be bridged) for nobody.
      if (t !== null && t.outcome === 'pending' && t.legId !== null) {
        const row = deps.numbers.get(ctx.accountId, ctx.phoneNumber);
        if (row) await deps.transferFor(row).hangupLeg(t.legId).catch(() => undefined);
      }
      return outcome;
    },
    ...(baseHangup.resumeSent ? { resumeSent: baseHangup.resumeSent } : {}),
  };

  return {
    ...base,
    ...(hangup ? { hangup } : {}),
    placeTransfer,
    checkTransfer,
    whisperTransfer: legStep((c, p) => c.whisper(p)),
    bridgeTransfer: legStep((c, p) => c.bridge(p)),
    releaseMedia,
    dropTransferLeg,
  };
}
