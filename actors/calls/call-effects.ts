// The call machine's effects, carried out after their intent is committed
// (actors/runtime/supervisor.ts), each answering with the event that records its outcome:
// - dial: DIAL.ACCEPTED | DIAL.REJECTED | DIAL.UNKNOWN (three outcomes, never two);
// - findDial (an unknown dial reconciled, never redialed): DIAL.FOUND | DIAL.NOT_FOUND | CARRIER.UNREACHABLE;
// - checkCall (a quiet or restored call asked about): RECONCILED | CARRIER.UNREACHABLE;
// - hangup (idempotent at both carriers): HANGUP.DONE | CARRIER.UNREACHABLE.
// After a restart a dial that may have left is not sent again: carrier B's own
// de-duplication (its command_id, honoured for about 60 s) lets it be resent inside
// that window; otherwise it is reconciled.
import type { CallContext } from '../../machines/call-outcome.ts';
import type { CallEvent } from '../../machines/call-events.ts';
import type { PhoneNumberRow, PhoneNumbersRepo } from '../../storage/phone-numbers.ts';
import { classifyDialError, DialRejected } from '../../voice/carriers/errors.ts';
import type { CarrierVoices } from './carrier-voices.ts';
import type { EffectHandler } from '../runtime/actor-kind.ts';

export interface CallEffectDeps {
  numbers: PhoneNumbersRepo;
  voices: CarrierVoices;
  publicBaseUrl: string;
  clock: () => number;
  /** The one-time media token the call's stream must present. */
  mediaTokenOf(callId: string): string;
  /** Carrier call ids other calls already own (a reconciliation must not claim them). */
  knownCarrierIds(accountId: string, exceptCallId: string): string[];
}

/** Carrier B forgets a command_id after about 60 s; a resend is safe well inside that. */
export const TELNYX_DEDUP_SAFE_MS = 45_000;

/** A thrown error as plain JSON for a snapshot: the fields the API shows, never a stack. */
function errorJson(err: unknown): Record<string, unknown> {
  const e = err as Record<string, unknown> & { message?: unknown; name?: unknown };
  const out: Record<string, unknown> = {};
  if (err instanceof Error) {
    out['name'] = err.name;
    out['message'] = err.message;
  } else out['message'] = String(err);
  for (const k of ['carrier', 'status', 'code', 'carrierError', 'outcome', 'reason']) {
    const v = e?.[k];
    if (v === undefined) continue;
    try {
      out[k] = JSON.parse(JSON.stringify(v));
    } catch {
      // not JSON: left out
    }
  }
  return out;
}

/** The carrier's own end time and connected seconds, when it gave them (for billing). */
function carrierTimes(info: { endedAt?: number; durationSec?: number }): { endedAt?: number; durationSec?: number } {
  return {
    ...(info.endedAt !== undefined ? { endedAt: info.endedAt } : {}),
    ...(info.durationSec !== undefined ? { durationSec: info.durationSec } : {}),
  };
}

function numberOf(numbers: PhoneNumbersRepo, ctx: CallContext): PhoneNumberRow | null {
  return numbers.get(ctx.accountId, ctx.phoneNumber) ?? null;
}

export function callEffects(deps: CallEffectDeps): Record<string, EffectHandler<CallContext>> {
  const now = deps.clock;
  const dial: EffectHandler<CallContext> = {
    async run({ context: ctx, markSent }): Promise<CallEvent> {
      const row = numberOf(deps.numbers, ctx);
      // Nothing is sent for a number that is gone or closed to outbound: a refusal of ours.
      if (!row) return { type: 'DIAL.REJECTED', at: now(), carrierError: { outcome: 'rejected', message: 'the dialing number is no longer on the account' } };
      if (!row.outbound_enabled) return { type: 'DIAL.REJECTED', at: now(), carrierError: { outcome: 'rejected', message: 'the dialing number is no longer outbound-enabled' } };
      markSent();
      try {
        const { carrierCallId } = await deps.voices.voiceFor(row).dial({
          callId: ctx.id,
          from: ctx.from,
          to: ctx.to,
          amdEnabled: ctx.amdEnabled,
          timeLimitSec: ctx.maxDurationSec,
          publicBaseUrl: deps.publicBaseUrl,
          eventsToken: row.events_token,
          mediaToken: deps.mediaTokenOf(ctx.id),
        });
        return { type: 'DIAL.ACCEPTED', at: now(), carrierCallId };
      } catch (err) {
        const outcome = classifyDialError(row.provider, err);
        if (outcome instanceof DialRejected) return { type: 'DIAL.REJECTED', at: now(), carrierError: errorJson(outcome) };
        return { type: 'DIAL.UNKNOWN', at: now(), carrierError: errorJson(outcome) };
      }
    },
    resumeSent(intent, ctx, at) {
      // Carrier B drops a repeated command_id for about a minute: inside that window the
      // same dial is simply sent again. Anywhere else the outcome is unknown: reconcile.
      if (ctx.provider === 'telnyx' && intent.sentAt !== null && at - intent.sentAt < TELNYX_DEDUP_SAFE_MS) return null;
      return { type: 'DIAL.UNKNOWN', at, carrierError: { outcome: 'unknown', message: 'the service stopped while this call was being dialed' } };
    },
  };

  const findDial: EffectHandler<CallContext> = {
    async run({ context: ctx }): Promise<CallEvent> {
      const row = numberOf(deps.numbers, ctx);
      if (!row) return { type: 'CARRIER.UNREACHABLE', at: now() };
      try {
        const found = await deps.voices.voiceFor(row).findDialedCall({
          callId: ctx.id,
          to: ctx.to,
          from: ctx.from,
          since: (ctx.dialedAt ?? ctx.createdAt) - 5_000,
          exclude: deps.knownCarrierIds(ctx.accountId, ctx.id),
        });
        if (!found.found) {
          // Carrier B lists live calls only: a placed call that already ended reaches us
          // by its hang-up webhook, so "not live" is only an answer once the give-up passes.
          if (found.searched === 'live-calls') return { type: 'CARRIER.UNREACHABLE', at: now() };
          return { type: 'DIAL.NOT_FOUND', at: now() };
        }
        return {
          type: 'DIAL.FOUND',
          at: now(),
          carrierCallId: found.carrierCallId,
          carrierStatus: found.status,
          ...carrierTimes(found),
        };
      } catch {
        return { type: 'CARRIER.UNREACHABLE', at: now() };
      }
    },
  };

  const checkCall: EffectHandler<CallContext> = {
    async run({ context: ctx }): Promise<CallEvent> {
      const row = numberOf(deps.numbers, ctx);
      if (!row || ctx.carrierCallId === null) return { type: 'RECONCILED', at: now(), carrierStatus: 'unknown' };
      try {
        const info = await deps.voices.voiceFor(row).fetchCall(ctx.carrierCallId);
        return {
          type: 'RECONCILED',
          at: now(),
          carrierStatus: info.status,
          ...carrierTimes(info),
        };
      } catch {
        return { type: 'CARRIER.UNREACHABLE', at: now() };
      }
    },
  };

  const hangup: EffectHandler<CallContext> = {
    async run({ context: ctx, markSent }): Promise<CallEvent> {
      // No carrier event ever named the call (a web call never has a carrier leg): there is
      // nothing at the carrier to end. A web call's browser socket is closed by its media
      // session once the call is finished (http/web-media-ws.ts).
      if (ctx.carrierCallId === null || ctx.provider === 'web') return { type: 'HANGUP.DONE', at: now() };
      const row = numberOf(deps.numbers, ctx);
      if (!row) return { type: 'HANGUP.DONE', at: now() };
      markSent();
      const voice = deps.voices.voiceFor(row);
      try {
        await voice.hangup(ctx.carrierCallId);
      } catch {
        return { type: 'CARRIER.UNREACHABLE', at: now() };
      }
      // The carrier's final word, when it can be had: the call may have ended on its own,
      // or been answered, just before our hang-up; its own final callback may never reach
      // a call that is already over here.
      try {
        const info = await voice.fetchCall(ctx.carrierCallId);
        return {
          type: 'HANGUP.DONE',
          at: now(),
          carrierStatus: info.status,
          ...carrierTimes(info),
        };
      } catch {
        return { type: 'HANGUP.DONE', at: now() };
      }
    },
    // Hanging up twice is harmless at both carriers.
    resumeSent: () => null,
  };

  return { dial, findDial, checkCall, hangup };
}
