// The real effects of the call machine (docs/design/calls.md "Effects"), given to it
// with `callMachine.provide()`: dial and hang up through the carrier of the call's
// number, durable deadlines through the scheduler, the concurrency slot. Each is safe
// to repeat: a restored promise actor runs again.
import { fromPromise } from 'xstate';
import { callMachine, type DialOutput, type HangupInput, type HangupOutput } from '../machines/call.ts';
import type { CallContext } from '../machines/call-outcome.ts';
import type { PhoneNumberRow, PhoneNumbersRepo } from '../storage/phone-numbers.ts';
import type { CarrierVoices } from './carrier-voices.ts';
import type { Concurrency } from './concurrency.ts';
import type { Scheduler } from './scheduler.ts';

export interface EffectDeps {
  numbers: PhoneNumbersRepo;
  voices: CarrierVoices;
  publicBaseUrl: string;
  scheduler: Scheduler;
  concurrency: Concurrency;
  /** The one-time media token the call's stream must present. */
  mediaTokenOf(callId: string): string;
  /** The account's own number on a live call. */
  phoneNumberOf(callId: string): string | null;
  /** True, once, for a call restored in the middle of its dial (XState runs the dial again). */
  takeInterruptedDial(callId: string): boolean;
}

/** A dial that cannot be placed for a reason of ours, not the carrier's. */
export class DialNotPlacedError extends Error {
  override readonly name = 'DialNotPlacedError';
}

function numberOf(numbers: PhoneNumbersRepo, accountId: string, phoneNumber: string | null): PhoneNumberRow {
  const row = phoneNumber === null ? undefined : numbers.get(accountId, phoneNumber);
  if (!row) throw new DialNotPlacedError('the dialing number is no longer on the account');
  return row;
}

/**
 * A dial interrupted by a restart runs again when its actor is restored, and must not
 * place a second call: carrier B drops a repeated dial by its command_id, but carrier A
 * has no such key, so a call caught mid-dial there fails instead (the carrier may or
 * may not have it; its webhooks then find a finished call).
 */
export function callEffects(deps: EffectDeps): Parameters<typeof callMachine.provide>[0] {
  return {
    actors: {
      dial: fromPromise<DialOutput, CallContext>(async ({ input: ctx }) => {
        if (deps.takeInterruptedDial(ctx.id) && ctx.provider === 'twilio') {
          throw new DialNotPlacedError('the service restarted while this call was being dialed; it was not dialed again');
        }
        const row = numberOf(deps.numbers, ctx.accountId, ctx.phoneNumber);
        if (!row.outbound_enabled) throw new DialNotPlacedError('the dialing number is no longer outbound-enabled');
        return deps.voices.voiceFor(row).dial({
          callId: ctx.id,
          from: ctx.from,
          to: ctx.to,
          amdEnabled: ctx.amdEnabled,
          timeLimitSec: ctx.maxDurationSec,
          publicBaseUrl: deps.publicBaseUrl,
          eventsToken: row.events_token,
          mediaToken: deps.mediaTokenOf(ctx.id),
        });
      }),
      hangup: fromPromise<HangupOutput, HangupInput>(async ({ input }) => {
        // No carrier event ever named the call: there is nothing at the carrier to end.
        if (input.carrierCallId === null) return undefined;
        const row = numberOf(deps.numbers, input.accountId, deps.phoneNumberOf(input.callId));
        await deps.voices.voiceFor(row).hangup(input.carrierCallId);
        return undefined;
      }),
    },
    actions: {
      scheduleDeadline: ({ context }, params) => {
        deps.scheduler.set({ accountId: context.accountId, actorId: context.id, name: params.name, event: params.event, dueAt: params.dueAt });
      },
      cancelDeadline: ({ context }, params) => {
        deps.scheduler.cancel(context.id, params.name);
      },
      releaseSlot: ({ context }) => {
        deps.concurrency.release(context.accountId, context.id);
      },
    },
  };
}
