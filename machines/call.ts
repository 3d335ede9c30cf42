// The machine of one call (docs/design/calls.md "The machine"): pure, clock-free and
// order-tolerant. Effects (dial, hang up, durable deadlines, the concurrency slot) are
// named here and provided by `actors/` with `callMachine.provide()`.
import { assign, fromPromise, setup, type SnapshotFrom } from 'xstate';
import { FINAL_CALL_STATUSES, type CallEvent, type CallInput, type HangupReason } from './call-events.ts';
import { errorToJson, finalValues, type CallContext, type Ending, type ServiceHangupReason } from './call-outcome.ts';

export { callRecordOf, chargedMinutes, type CallContext, type CallRecordFields, type ServiceHangupReason } from './call-outcome.ts';

/** What the `dial` effect resolves with. It rejects with the carrier's error. */
export interface DialOutput {
  carrierCallId: string;
}

/** Input of the `hangup` effect. `carrierCallId` is null only when no carrier event ever named the call. */
export interface HangupInput {
  callId: string;
  accountId: string;
  provider: CallInput['provider'];
  carrierCallId: string | null;
  reason: ServiceHangupReason;
}

/** The `hangup` effect may say when the carrier confirmed; otherwise the request time ends the call. */
export type HangupOutput = { at?: number } | undefined | void;

/** Params of the `scheduleDeadline` action: a durable timer that later sends `event`. */
export interface DeadlineParams {
  name: string;
  event: CallEvent;
  dueAt: number;
}

/** The only deadline this issue uses: the agent's max call duration. */
export const MAX_DURATION_DEADLINE = 'max_duration';

const TERMINAL_TAG = 'finished';

type Ev<T extends CallEvent['type']> = Extract<CallEvent, { type: T }>;

/** The time to end a call on when the hang-up effect settles without saying when. */
const hangupEndAt = (ctx: CallContext, output: HangupOutput): number =>
  output && typeof output.at === 'number' ? output.at : (ctx.hangupRequestedAt ?? ctx.dialedAt ?? ctx.createdAt);

const requestHangup = (ctx: CallContext, reason: ServiceHangupReason, at: number): Partial<CallContext> =>
  ctx.hangupReason !== null
    ? {}
    : { hangupReason: reason, hangupRequestedAt: at, voicemailDetected: ctx.voicemailDetected || reason === 'voicemail_detected' };

const answered = (ctx: CallContext, at: number, carrierCallId?: string): Partial<CallContext> => ({
  startedAt: ctx.startedAt ?? at,
  callStatus: 'in-progress',
  carrierCallId: ctx.carrierCallId ?? carrierCallId ?? null,
});

export const callMachine = setup({
  types: {
    context: {} as CallContext,
    events: {} as CallEvent,
    input: {} as CallInput,
  },
  actors: {
    dial: fromPromise<DialOutput, CallContext>(async () => {
      throw new Error('dial effect not provided');
    }),
    hangup: fromPromise<HangupOutput, HangupInput>(async () => {
      throw new Error('hangup effect not provided');
    }),
  },
  actions: {
    // Effects: implemented by actors/ (the scheduler and the concurrency slots).
    scheduleDeadline: (_, _params: DeadlineParams) => {},
    cancelDeadline: (_, _params: { name: string }) => {},
    releaseSlot: () => {},

    recordCarrierId: assign(({ context, event }) => {
      const id = 'carrierCallId' in event ? event.carrierCallId : undefined;
      return { carrierCallId: context.carrierCallId ?? id ?? null };
    }),
    markDialing: assign(({ event }) => ({ dialedAt: event.at, callStatus: 'initiated' as const })),
    markRinging: assign(({ context, event }) => ({
      callStatus: 'ringing' as const,
      carrierCallId: context.carrierCallId ?? (event as Ev<'CARRIER.RINGING'>).carrierCallId ?? null,
    })),
    markAnswered: assign(({ context, event }) =>
      answered(context, event.at, 'carrierCallId' in event && typeof event.carrierCallId === 'string' ? event.carrierCallId : undefined),
    ),
    requestHangup: assign(({ context, event }) => {
      const reason: ServiceHangupReason =
        event.type === 'HANGUP.REQUESTED' ? event.reason : event.type === 'CARRIER.AMD' ? 'voicemail_detected' : 'media_lost';
      return requestHangup(context, reason, event.at);
    }),
    endByCarrier: assign(({ context, event }) => {
      const e = event as Ev<'CARRIER.ENDED'> | Ev<'RECONCILED'>;
      const ending: Ending =
        e.type === 'CARRIER.ENDED'
          ? { by: 'carrier', status: e.status, at: e.at, durationSec: e.durationSec }
          : { by: 'carrier', status: e.carrierStatus as Ev<'CARRIER.ENDED'>['status'], at: e.at };
      return finalValues(context, ending);
    }),
    endByDialRejected: assign(({ context, event }) => {
      const e = event as Ev<'DIAL.REJECTED'>;
      return finalValues(context, { by: 'dial-failed', at: e.at, carrierError: e.carrierError });
    }),
    endByHangupDone: assign(({ context, event }) => finalValues(context, { by: 'hangup-done', at: event.at })),
    cancelQueued: assign(({ context, event }) => finalValues(context, { by: 'queue-cancel', at: event.at })),
  },
  guards: {
    inbound: ({ context }) => context.direction === 'inbound',
    queued: ({ context }) => context.queued,
    hangupPending: ({ context }) => context.hangupReason !== null,
    /** AMD says machine and the agent asked the carrier to detect: we hang up as voicemail. */
    voicemailByAmd: ({ context, event }) => event.type === 'CARRIER.AMD' && event.result === 'machine' && context.amdEnabled,
    /** The carrier reports a final status (otherwise it still has the call up, or cannot tell). */
    reconciledEnded: ({ event }) =>
      event.type === 'RECONCILED' && (FINAL_CALL_STATUSES as readonly string[]).includes(event.carrierStatus),
  },
}).createMachine({
  id: 'call',
  context: ({ input }) => ({
    ...input,
    callStatus: input.direction === 'inbound' ? 'in-progress' : input.queued ? 'queued' : 'initiated',
    startedAt: input.direction === 'inbound' ? input.createdAt : null,
    endedAt: null,
    endedReason: null,
    voicemailDetected: false,
    hangupReason: null,
    hangupRequestedAt: null,
    dialedAt: input.direction === 'outbound' && !input.queued ? input.createdAt : null,
    carrierError: null,
  }),
  initial: 'created',
  states: {
    // Transient: picks the first real state from the input.
    created: {
      always: [
        { guard: 'inbound', target: 'in-progress' },
        { guard: 'queued', target: 'queued' },
        { target: 'dialing' },
      ],
    },

    // No carrier leg exists yet, so carrier events cannot be about this call.
    queued: {
      on: {
        'SLOT.GRANTED': { target: 'dialing', actions: 'markDialing' },
        'HANGUP.REQUESTED': { target: 'ended', actions: 'cancelQueued' },
      },
    },

    // The dial request is in flight. Carrier webhooks may overtake its answer; a hang-up
    // asked for now waits for the carrier id, so no dialed call is left behind.
    dialing: {
      invoke: {
        id: 'dial',
        src: 'dial',
        input: ({ context }) => context,
        onDone: [
          { guard: 'hangupPending', target: 'hanging-up', actions: assign(({ context, event }) => ({ carrierCallId: context.carrierCallId ?? event.output.carrierCallId })) },
          { target: 'initiated', actions: assign(({ context, event }) => ({ carrierCallId: context.carrierCallId ?? event.output.carrierCallId })) },
        ],
        onError: {
          target: 'ended',
          actions: assign(({ context, event }) =>
            finalValues(context, { by: 'dial-failed', at: context.dialedAt ?? context.createdAt, carrierError: errorToJson(event.error) }),
          ),
        },
      },
      on: {
        'DIAL.ACCEPTED': [
          { guard: 'hangupPending', target: 'hanging-up', actions: 'recordCarrierId' },
          { target: 'initiated', actions: 'recordCarrierId' },
        ],
        'DIAL.REJECTED': { target: 'ended', actions: 'endByDialRejected' },
        'CARRIER.RINGING': [
          { guard: 'hangupPending', target: 'hanging-up', actions: 'recordCarrierId' },
          { target: 'ringing', actions: 'markRinging' },
        ],
        'CARRIER.ANSWERED': [
          { guard: 'hangupPending', target: 'hanging-up', actions: 'markAnswered' },
          { target: 'in-progress', actions: 'markAnswered' },
        ],
        // An AMD result means someone (or something) answered.
        'CARRIER.AMD': [
          { guard: 'voicemailByAmd', target: 'hanging-up', actions: ['markAnswered', 'requestHangup'] },
          { guard: 'hangupPending', target: 'hanging-up', actions: 'markAnswered' },
          { target: 'in-progress', actions: 'markAnswered' },
        ],
        'CARRIER.ENDED': { target: 'ended', actions: 'endByCarrier' },
        'HANGUP.REQUESTED': { actions: 'requestHangup' },
        RECONCILED: [{ guard: 'reconciledEnded', target: 'ended', actions: 'endByCarrier' }, { actions: 'requestHangup' }],
      },
    },

    initiated: {
      on: {
        'DIAL.ACCEPTED': { actions: 'recordCarrierId' },
        'CARRIER.RINGING': { target: 'ringing', actions: 'markRinging' },
        'CARRIER.ANSWERED': { target: 'in-progress', actions: 'markAnswered' },
        'CARRIER.AMD': [
          { guard: 'voicemailByAmd', target: 'hanging-up', actions: ['markAnswered', 'requestHangup'] },
          { target: 'in-progress', actions: 'markAnswered' },
        ],
        'CARRIER.ENDED': { target: 'ended', actions: 'endByCarrier' },
        'HANGUP.REQUESTED': { target: 'hanging-up', actions: 'requestHangup' },
        RECONCILED: [
          { guard: 'reconciledEnded', target: 'ended', actions: 'endByCarrier' },
          { target: 'hanging-up', actions: 'requestHangup' },
        ],
      },
    },

    ringing: {
      on: {
        'DIAL.ACCEPTED': { actions: 'recordCarrierId' },
        'CARRIER.RINGING': { actions: 'recordCarrierId' },
        'CARRIER.ANSWERED': { target: 'in-progress', actions: 'markAnswered' },
        'CARRIER.AMD': [
          { guard: 'voicemailByAmd', target: 'hanging-up', actions: ['markAnswered', 'requestHangup'] },
          { target: 'in-progress', actions: 'markAnswered' },
        ],
        'CARRIER.ENDED': { target: 'ended', actions: 'endByCarrier' },
        'HANGUP.REQUESTED': { target: 'hanging-up', actions: 'requestHangup' },
        RECONCILED: [
          { guard: 'reconciledEnded', target: 'ended', actions: 'endByCarrier' },
          { target: 'hanging-up', actions: 'requestHangup' },
        ],
      },
    },

    // Connected. The max-duration deadline is durable data (the scheduler), not `after`,
    // so it survives a restart; it is entered once per call, so scheduled once.
    'in-progress': {
      entry: {
        type: 'scheduleDeadline',
        params: ({ context }) => {
          const dueAt = (context.startedAt ?? context.createdAt) + context.maxDurationSec * 1000;
          const reason: HangupReason = 'max_duration_reached';
          return { name: MAX_DURATION_DEADLINE, dueAt, event: { type: 'HANGUP.REQUESTED', at: dueAt, reason } };
        },
      },
      exit: { type: 'cancelDeadline', params: { name: MAX_DURATION_DEADLINE } },
      initial: 'listening',
      states: {
        listening: {},
      },
      on: {
        'DIAL.ACCEPTED': { actions: 'recordCarrierId' },
        'CARRIER.AMD': { guard: 'voicemailByAmd', target: 'hanging-up', actions: 'requestHangup' },
        'CARRIER.ENDED': { target: 'ended', actions: 'endByCarrier' },
        'HANGUP.REQUESTED': { target: 'hanging-up', actions: 'requestHangup' },
        RECONCILED: [
          { guard: 'reconciledEnded', target: 'ended', actions: 'endByCarrier' },
          { target: 'hanging-up', actions: 'requestHangup' },
        ],
      },
    },

    // We asked the carrier to end the call. It ends on the carrier's final event or when
    // the hang-up effect settles (a failure counts: the call may already be gone), and
    // the requested reason wins either way. A restored snapshot re-runs the effect.
    'hanging-up': {
      invoke: {
        id: 'hangup',
        src: 'hangup',
        input: ({ context }) => ({
          callId: context.id,
          accountId: context.accountId,
          provider: context.provider,
          carrierCallId: context.carrierCallId,
          reason: context.hangupReason ?? 'agent_hangup',
        }),
        onDone: {
          target: 'ended',
          actions: assign(({ context, event }) => finalValues(context, { by: 'hangup-done', at: hangupEndAt(context, event.output) })),
        },
        onError: {
          target: 'ended',
          actions: assign(({ context }) => finalValues(context, { by: 'hangup-done', at: hangupEndAt(context, undefined) })),
        },
      },
      on: {
        'DIAL.ACCEPTED': { actions: 'recordCarrierId' },
        'CARRIER.RINGING': { actions: 'recordCarrierId' },
        // The far end may pick up before our hang-up lands: that time is connected time.
        'CARRIER.ANSWERED': { actions: 'markAnswered' },
        'CARRIER.AMD': { actions: 'markAnswered' },
        'CARRIER.ENDED': { target: 'ended', actions: 'endByCarrier' },
        'HANGUP.DONE': { target: 'ended', actions: 'endByHangupDone' },
        RECONCILED: { guard: 'reconciledEnded', target: 'ended', actions: 'endByCarrier' },
      },
    },

    // Transient: the final values are fixed by the transition that led here.
    ended: {
      tags: [TERMINAL_TAG],
      // Every ending releases: a held slot is freed, a queued call leaves the queue.
      entry: 'releaseSlot',
      always: 'post-call',
    },

    'post-call': {
      tags: [TERMINAL_TAG],
      on: {
        'DIAL.ACCEPTED': { actions: 'recordCarrierId' },
        'POSTCALL.DONE': 'done',
      },
    },

    done: { type: 'final', tags: [TERMINAL_TAG] },
  },
});

export type CallSnapshot = SnapshotFrom<typeof callMachine>;

/** The call's `call_status` as the API shows it. */
export function callStatusOf(snapshot: CallSnapshot): CallContext['callStatus'] {
  return snapshot.context.callStatus;
}

/** True once the call has its final status and ended_reason (post-call work may still run). */
export function isFinished(snapshot: CallSnapshot): boolean {
  return snapshot.hasTag(TERMINAL_TAG);
}
