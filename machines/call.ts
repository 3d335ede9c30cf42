// The machine of one call (docs/design/calls.md "The machine"): pure, clock-free and
// order-tolerant. It is driven by the supervisor through XState's pure `transition()`:
// nothing here runs. Every effect is a named action the transition returns; the
// supervisor commits the new snapshot, the call row and the effect's intent in one
// transaction, and only then acts (actors/runtime/supervisor.ts). Effects:
// - intents, done outside after the commit, their outcome coming back as an event:
//   `dial` (DIAL.ACCEPTED | DIAL.REJECTED | DIAL.UNKNOWN), `findDial` (DIAL.FOUND |
//   DIAL.NOT_FOUND | CARRIER.UNREACHABLE), `checkCall` (RECONCILED | CARRIER.UNREACHABLE),
//   `hangup` (HANGUP.DONE | CARRIER.UNREACHABLE);
// - durable deadlines, written in the same transaction: `scheduleDeadline`, `cancelDeadline`;
// - the account's concurrency slot, after the commit: `releaseSlot`, `requestSlot`.
// Every state that waits on the outside world has a deadline, so a lost callback or a
// lost effect never leaves a call (and its slot) waiting for ever.
import { assign, setup, type SnapshotFrom } from 'xstate';
import { FINAL_CALL_STATUSES, type CallEvent, type CallInput, type FinalCallStatus, type HangupReason } from './call-events.ts';
import { finalValues, type CallContext, type Ending, type ServiceHangupReason } from './call-outcome.ts';
import { beginTransfer, failTransfer, handoff, isCurrentTransfer, markMediaLost, placedAfterRestart, recordLeg, transferringState, whispersItself, type TransferIntent } from './call-transfer.ts';

export { callRecordOf, chargedMinutes, type CallContext, type CallRecordFields, type ServiceHangupReason } from './call-outcome.ts';

/** Bumped whenever a persisted snapshot of the previous version would not restore as is. */
export const CALL_MACHINE_VERSION = 4;

/** Tags the runtime reads instead of state names. */
export const CALL_TAGS = {
  /** The call holds one of its account's concurrency slots. */
  holdsSlot: 'holdsSlot',
  /** The call waits in its account's queue for a slot. */
  queued: 'queued',
  /** The dial's outcome is not known yet (in flight, or being reconciled). */
  dialing: 'dialing',
  /** The call has its final status and ended_reason (post-call work may still run). */
  finished: 'finished',
} as const;

/** How long each waiting state waits before it looks again (ms). */
export const LIVENESS = {
  /** A queued call asks the pool again this often (a missed grant cannot strand it). */
  queueCheckMs: 60_000,
  /** A dial whose outcome never came back is treated as unknown and reconciled. */
  dialMs: 30_000,
  /** initiated / ringing: the carrier rings for at most 60 s; past this it is asked. */
  ringMs: 120_000,
  /** A connected call is checked with the carrier this often (a lost hang-up callback). */
  connectedCheckMs: 300_000,
  /** A hang-up not confirmed within this is asked again. */
  hangupMs: 30_000,
  /** A carrier that could not be asked is asked again after this. */
  retryMs: 15_000,
  /** A dial still unknown after this is given up as failed, saying so. */
  dialGiveUpMs: 15 * 60_000,
  /** Hang-up attempts before the call is ended on our word alone. */
  hangupAttempts: 5,
  /** A web call whose input names no `connectBy` waits this long for its browser. */
  webConnectMs: 60_000,
} as const;

/** Params of the `scheduleDeadline` action: a durable timer that later sends `event`. */
export interface DeadlineParams {
  name: string;
  event: CallEvent;
  dueAt: number;
}

export const MAX_DURATION_DEADLINE = 'max_duration';

type Ev<T extends CallEvent['type']> = Extract<CallEvent, { type: T }>;
type TimerName = Ev<'TIMER'>['name'];

/** The time of the event being handled; the initial transition has none, the call's creation stands in. */
const timeOf = (context: CallContext, event: { type: string; at?: unknown }): number =>
  typeof event.at === 'number' ? event.at : context.createdAt;

const timer = (name: TimerName, afterMs: number) => ({
  type: 'scheduleDeadline' as const,
  params: ({ context, event }: { context: CallContext; event: CallEvent }): DeadlineParams => {
    const dueAt = timeOf(context, event) + afterMs;
    return { name, dueAt, event: { type: 'TIMER', at: dueAt, name } };
  },
});
const cancel = (name: string) => ({ type: 'cancelDeadline' as const, params: { name } });

const requestHangup = (ctx: CallContext, reason: ServiceHangupReason, at: number): Partial<CallContext> =>
  ctx.hangupReason !== null
    ? {}
    : { hangupReason: reason, hangupRequestedAt: at, voicemailDetected: ctx.voicemailDetected || reason === 'voicemail_detected' };

// An answer heard now means the media is (re)established: a restore's doubt is over.
const answered = (ctx: CallContext, at: number, carrierCallId?: string): Partial<CallContext> => ({
  startedAt: ctx.startedAt ?? at,
  callStatus: 'in-progress',
  carrierCallId: ctx.carrierCallId ?? carrierCallId ?? null,
  restored: false,
});

const isFinal = (status: string): status is FinalCallStatus => (FINAL_CALL_STATUSES as readonly string[]).includes(status);

/** The carrier's own end of a call it reports finished: its end time when it gave one. */
function carrierEnding(e: Ev<'CARRIER.ENDED'> | Ev<'RECONCILED'> | Ev<'DIAL.FOUND'> | Ev<'HANGUP.DONE'>): Ending {
  if (e.type === 'CARRIER.ENDED') return { by: 'carrier', status: e.status, at: e.at, durationSec: e.durationSec };
  return { by: 'carrier', status: e.carrierStatus as FinalCallStatus, at: e.endedAt ?? e.at, durationSec: e.durationSec };
}

/**
 * While the dial's outcome is open (dialing, or an unknown dial being reconciled): its
 * answer may still come, and carrier webhooks may overtake it; a hang-up asked for now
 * waits for the carrier id, so no dialed call is left behind. An AMD result means
 * someone (or something) answered.
 */
const WHILE_DIAL_IS_OPEN = {
  'DIAL.ACCEPTED': [
    { guard: 'hangupPending', target: 'hanging-up', actions: 'acceptDial' },
    { target: 'initiated', actions: 'acceptDial' },
  ],
  'CARRIER.RINGING': [
    { guard: 'hangupPending', target: 'hanging-up', actions: 'recordCarrierId' },
    { target: 'ringing', actions: 'markRinging' },
  ],
  'CARRIER.ANSWERED': [
    { guard: 'hangupPending', target: 'hanging-up', actions: 'markAnswered' },
    { target: 'in-progress', actions: 'markAnswered' },
  ],
  'CARRIER.AMD': [
    { guard: 'voicemailByAmd', target: 'hanging-up', actions: ['markAnswered', 'requestHangup'] },
    { guard: 'hangupPending', target: 'hanging-up', actions: 'markAnswered' },
    { target: 'in-progress', actions: 'markAnswered' },
  ],
  'CARRIER.ENDED': { target: 'ended', actions: 'endByCarrier' },
  'HANGUP.REQUESTED': { actions: 'requestHangup' },
} as const;

export const callMachine = setup({
  types: {
    context: {} as CallContext,
    events: {} as CallEvent,
    input: {} as CallInput,
  },
  actions: {
    // Effects: the supervisor carries them out (see the header). Empty here on purpose.
    dial: () => {},
    findDial: () => {},
    checkCall: () => {},
    hangup: () => {},
    scheduleDeadline: (_, _params: DeadlineParams) => {},
    cancelDeadline: (_, _params: { name: string }) => {},
    releaseSlot: () => {},
    requestSlot: () => {},
    // Transfer effects (machines/call-transfer.ts, actors/calls/transfer-effects.ts).
    placeTransfer: (_, _params: TransferIntent) => {},
    checkTransfer: (_, _params: TransferIntent) => {},
    whisperTransfer: (_, _params: TransferIntent) => {},
    bridgeTransfer: (_, _params: TransferIntent) => {},
    releaseMedia: (_, _params: TransferIntent) => {},
    dropTransferLeg: (_, _params: TransferIntent) => {},
    beginTransfer: assign(({ context, event }) => beginTransfer(context, event as Ev<'TRANSFER.REQUESTED'>)),
    recordTransferLeg: assign(({ context, event }) => recordLeg(context, event)),
    markTransferMediaLost: assign(({ context }) => markMediaLost(context)),
    failTransfer: assign(({ context, event }) => failTransfer(context, event as Ev<'TRANSFER.FAILED'>)),
    endTransferred: assign(({ context, event }) => handoff(context, event as Ev<'TRANSFER.CONNECTED'>)),

    recordCarrierId: assign(({ context, event }) => {
      const id = 'carrierCallId' in event ? event.carrierCallId : undefined;
      return { carrierCallId: context.carrierCallId ?? id ?? null };
    }),
    acceptDial: assign(({ context, event }) => ({
      carrierCallId: context.carrierCallId ?? (event as Ev<'DIAL.ACCEPTED'>).carrierCallId,
      dialOutcome: 'accepted' as const,
    })),
    markDialUnknown: assign(({ event }) => ({
      dialOutcome: 'unknown' as const,
      carrierError: event.type === 'DIAL.UNKNOWN' && event.carrierError ? event.carrierError : { outcome: 'unknown', message: 'the carrier did not answer the dial in time' },
    })),
    markFound: assign(({ context, event }) => ({
      carrierCallId: context.carrierCallId ?? (event as Ev<'DIAL.FOUND'>).carrierCallId,
      carrierError: null,
    })),
    markDialing: assign(({ event }) => ({ dialedAt: event.at, callStatus: 'initiated' as const })),
    markRinging: assign(({ context, event }) => ({
      callStatus: 'ringing' as const,
      carrierCallId: context.carrierCallId ?? (event as Ev<'CARRIER.RINGING'>).carrierCallId ?? null,
    })),
    markAnswered: assign(({ context, event }) =>
      answered(context, event.at, 'carrierCallId' in event && typeof event.carrierCallId === 'string' ? event.carrierCallId : undefined),
    ),
    markRestored: assign({ restored: true }),
    addLine: assign(({ context, event }) => {
      const e = event as Ev<'CONVERSATION.LINE'>;
      const line = `${e.speaker === 'agent' ? 'Agent' : 'Caller'}: ${e.text.replace(/\s*\n\s*/g, ' ')}`;
      const measured = e.latencyMs !== undefined;
      return {
        transcript: context.transcript === null ? line : `${context.transcript}\n${line}`,
        latencyTotalMs: context.latencyTotalMs + (measured ? e.latencyMs! : 0),
        latencyTurns: context.latencyTurns + (measured ? 1 : 0),
      };
    }),
    addBooking: assign(({ context, event }) => ({
      bookings: [...(context.bookings ?? []), (event as Ev<'CONVERSATION.BOOKING'>).booking],
    })),
    clearRestored: assign({ restored: false }),
    countHangupAttempt: assign(({ context }) => ({ hangupAttempts: context.hangupAttempts + 1 })),
    requestHangup: assign(({ context, event }) => {
      const reason: ServiceHangupReason =
        event.type === 'HANGUP.REQUESTED' ? event.reason : event.type === 'CARRIER.AMD' ? 'voicemail_detected' : 'media_lost';
      return requestHangup(context, reason, event.at);
    }),
    endByCarrier: assign(({ context, event }) => ({
      ...finalValues(context, carrierEnding(event as Ev<'CARRIER.ENDED'> | Ev<'RECONCILED'> | Ev<'DIAL.FOUND'> | Ev<'HANGUP.DONE'>)),
      // A carrier event may end a call whose dial's answer has not arrived: it names the call.
      carrierCallId: context.carrierCallId ?? ('carrierCallId' in event && typeof event.carrierCallId === 'string' ? event.carrierCallId : null),
    })),
    endByDialRejected: assign(({ context, event }) => {
      const e = event as Ev<'DIAL.REJECTED'>;
      return { ...finalValues(context, { by: 'dial-failed', at: e.at, carrierError: e.carrierError }), dialOutcome: 'rejected' as const };
    }),
    endNotPlaced: assign(({ context, event }) =>
      finalValues(context, {
        by: 'dial-failed',
        at: event.at,
        carrierError: { outcome: 'not_placed', message: 'the dial’s answer was lost; the carrier has no such call, so it was never placed' },
      }),
    ),
    endGivenUp: assign(({ context, event }) =>
      finalValues(context, {
        by: 'dial-failed',
        at: event.at,
        carrierError: { outcome: 'unknown', message: 'the dial’s answer was lost and the carrier could not tell whether it placed the call' },
      }),
    ),
    // We asked for the hang-up at hangupRequestedAt; the call is billed to then unless the carrier said otherwise.
    endByHangupDone: assign(({ context, event }) => finalValues(context, { by: 'hangup-done', at: context.hangupRequestedAt ?? event.at })),
    cancelQueued: assign(({ context, event }) => finalValues(context, { by: 'queue-cancel', at: event.at })),
    // A web call the service ends before its browser connected: nobody was ever on it.
    cancelUnconnected: assign(({ context, event }) => finalValues(context, { by: 'queue-cancel', at: event.at })),
    // A web call whose browser never connected before its access token expired.
    endUnanswered: assign(({ context, event }) => finalValues(context, { by: 'carrier', status: 'no-answer', at: event.at })),
    // A web call's browser hung up (or its socket closed): the far end ended a connected call.
    endByBrowser: assign(({ context, event }) => finalValues(context, { by: 'carrier', status: 'completed', at: event.at })),
    // The call ended at the carrier while nobody heard (a restart, a lost callback): it
    // ends at the carrier's end time; after a restart the reason is media_lost.
    endGone: assign(({ context, event }) => {
      const e = event as Ev<'RECONCILED'>;
      const at = e.endedAt ?? e.at;
      if (context.restored) {
        const withReason = { ...context, ...requestHangup(context, 'media_lost', at) };
        return { ...requestHangup(context, 'media_lost', at), ...finalValues(withReason, { by: 'hangup-done', at }), restored: false };
      }
      const status: FinalCallStatus = context.startedAt !== null ? 'completed' : 'failed';
      return finalValues(context, { by: 'carrier', status, at });
    }),
  },
  guards: {
    inbound: ({ context }) => context.direction === 'inbound',
    /** A browser's web call: no carrier leg, its media is the browser's websocket. */
    web: ({ context }) => context.provider === 'web',
    queued: ({ context }) => context.queued,
    hangupPending: ({ context }) => context.hangupReason !== null,
    /** AMD says machine and the agent asked the carrier to detect: we hang up as voicemail. */
    voicemailByAmd: ({ context, event }) => event.type === 'CARRIER.AMD' && event.result === 'machine' && context.amdEnabled,
    /** The carrier reports a final status (otherwise it still has the call up, or cannot tell). */
    reconciledEnded: ({ event }) =>
      (event.type === 'RECONCILED' || event.type === 'DIAL.FOUND' || event.type === 'HANGUP.DONE') && event.carrierStatus !== undefined && isFinal(event.carrierStatus),
    /**
     * Our hang-up is confirmed and the carrier names a final status for a call we never
     * saw connect: it ended on its own, or was answered with the callback lost, just before.
     */
    carrierKnowsBetter: ({ context, event }) =>
      event.type === 'HANGUP.DONE' && context.startedAt === null && event.carrierStatus !== undefined && isFinal(event.carrierStatus),
    /** After a restart the media is gone: a call the carrier still has up (or cannot place) is hung up. */
    restoredAndUp: ({ context, event }) =>
      event.type === 'RECONCILED' && context.restored && (event.carrierStatus === 'active' || event.carrierStatus === 'unknown'),
    /** The carrier no longer has the call and says when it ended, without a final status (carrier B). */
    goneAt: ({ event }) => event.type === 'RECONCILED' && event.carrierStatus === 'unknown' && event.endedAt !== undefined,
    carrierSaysAnswered: ({ event }) => (event.type === 'RECONCILED' || event.type === 'DIAL.FOUND') && event.answered === true,
    currentTransfer: ({ context, event }) => isCurrentTransfer(context, event),
    placedAfterRestart: ({ context, event }) => placedAfterRestart(context, event),
    answeredForWhisper: ({ context, event }) => isCurrentTransfer(context, event) && whispersItself(context),
    /** The transfer failed after a restart killed the caller's media, and nothing opens it again: hang up. */
    failedWithoutMedia: ({ context, event }) =>
      isCurrentTransfer(context, event) && event.type === 'TRANSFER.FAILED' && context.transfer!.mediaLost && event.mediaBack !== true,
  },
}).createMachine({
  id: 'call',
  context: ({ input }) => ({
    ...input,
    // A web call is `initiated` until its browser connects (then it is answered).
    callStatus: input.provider === 'web' ? 'initiated' : input.direction === 'inbound' ? 'in-progress' : input.queued ? 'queued' : 'initiated',
    startedAt: input.direction === 'inbound' && input.provider !== 'web' ? input.createdAt : null,
    endedAt: null,
    endedReason: null,
    voicemailDetected: false,
    hangupReason: null,
    hangupRequestedAt: null,
    dialedAt: input.direction === 'outbound' && !input.queued ? input.createdAt : null,
    carrierError: null,
    dialOutcome: null,
    restored: false,
    hangupAttempts: 0,
    transcript: null,
    latencyTotalMs: 0,
    latencyTurns: 0,
    transfer: null,
  }),
  initial: 'created',
  states: {
    // Transient: picks the first real state from the input.
    created: {
      always: [
        { guard: 'web', target: 'awaiting-browser' },
        { guard: 'inbound', target: 'in-progress' },
        { guard: 'queued', target: 'queued' },
        { target: 'dialing' },
      ],
    },

    // No carrier leg exists yet, so carrier events cannot be about this call.
    queued: {
      tags: [CALL_TAGS.queued],
      entry: timer('queue_check', LIVENESS.queueCheckMs),
      exit: cancel('queue_check'),
      on: {
        'SLOT.GRANTED': { target: 'dialing', actions: 'markDialing' },
        'HANGUP.REQUESTED': { target: 'ended', actions: 'cancelQueued' },
        TIMER: { guard: ({ event }) => event.name === 'queue_check', target: 'queued', reenter: true, actions: 'requestSlot' },
        // Its timer is re-armed (a snapshot from an older version may have none).
        RESTORED: { target: 'queued', reenter: true },
      },
    },

    // A web call waits for its browser: the socket presenting the one-time access token
    // answers it (MEDIA.STARTED). Its deadline is the token's expiry: past it nobody can
    // connect any more, so the call ends no-answer and its slot frees. No carrier leg
    // exists, so nothing is dialed, asked or hung up.
    'awaiting-browser': {
      tags: [CALL_TAGS.holdsSlot],
      entry: {
        type: 'scheduleDeadline',
        params: ({ context }) => {
          const dueAt = context.connectBy ?? context.createdAt + LIVENESS.webConnectMs;
          return { name: 'stale', dueAt, event: { type: 'TIMER', at: dueAt, name: 'stale' } };
        },
      },
      exit: cancel('stale'),
      on: {
        'MEDIA.STARTED': { target: 'in-progress', actions: 'markAnswered' },
        'HANGUP.REQUESTED': { target: 'ended', actions: 'cancelUnconnected' },
        TIMER: { guard: ({ event }) => event.name === 'stale', target: 'ended', actions: 'endUnanswered' },
        // The token outlives a restart (it is in the call's row): the browser may still connect.
        RESTORED: { target: 'awaiting-browser', reenter: true },
      },
    },

    // The dial's intent is durable and the request is out. Carrier webhooks may overtake
    // its answer; a hang-up asked for now waits for the carrier id, so no dialed call is
    // left behind.
    dialing: {
      tags: [CALL_TAGS.holdsSlot, CALL_TAGS.dialing],
      entry: ['dial', timer('stale', LIVENESS.dialMs)],
      exit: cancel('stale'),
      on: {
        ...WHILE_DIAL_IS_OPEN,
        'DIAL.REJECTED': { target: 'ended', actions: 'endByDialRejected' },
        'DIAL.UNKNOWN': { target: 'dial-unknown', actions: 'markDialUnknown' },
        TIMER: { guard: ({ event }) => event.name === 'stale', target: 'dial-unknown', actions: 'markDialUnknown' },
      },
    },

    // The dial may or may not have reached the carrier: it is never dialed again, the
    // carrier is asked instead (findDial), and asked again while it cannot answer, until
    // the give-up deadline ends the call saying the outcome is unknown.
    'dial-unknown': {
      tags: [CALL_TAGS.holdsSlot, CALL_TAGS.dialing],
      // Counted from the dial, so a restart does not push the give-up back.
      entry: {
        type: 'scheduleDeadline',
        params: ({ context }) => {
          const dueAt = (context.dialedAt ?? context.createdAt) + LIVENESS.dialGiveUpMs;
          return { name: 'give_up', dueAt, event: { type: 'TIMER', at: dueAt, name: 'give_up' } };
        },
      },
      exit: cancel('give_up'),
      initial: 'asking',
      states: {
        asking: {
          entry: 'findDial',
          on: { 'CARRIER.UNREACHABLE': 'waiting' },
        },
        waiting: {
          entry: timer('retry', LIVENESS.retryMs),
          exit: cancel('retry'),
          on: { TIMER: { guard: ({ event }) => event.name === 'retry', target: 'asking' } },
        },
      },
      on: {
        'DIAL.FOUND': [
          { guard: 'reconciledEnded', target: 'ended', actions: ['markFound', 'endByCarrier'] },
          { guard: 'hangupPending', target: 'hanging-up', actions: 'markFound' },
          { guard: 'carrierSaysAnswered', target: 'in-progress', actions: ['markFound', 'markAnswered'] },
          { target: 'initiated', actions: 'markFound' },
        ],
        'DIAL.NOT_FOUND': { target: 'ended', actions: 'endNotPlaced' },
        // The dial's own answer, late (its commit was retried past the stale deadline): the carrier's word wins.
        'DIAL.REJECTED': { target: 'ended', actions: 'endByDialRejected' },
        // Ask again (and re-arm the give-up): the question may have died with the process.
        RESTORED: { target: 'dial-unknown', reenter: true },
        TIMER: { guard: ({ event }) => event.name === 'give_up', target: 'ended', actions: 'endGivenUp' },
        ...WHILE_DIAL_IS_OPEN,
      },
    },

    initiated: {
      tags: [CALL_TAGS.holdsSlot],
      entry: timer('stale', LIVENESS.ringMs),
      exit: [cancel('stale'), cancel('retry')],
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
        // Re-entered: its deadline is re-armed (a snapshot from an older version may have none).
        RESTORED: { target: 'initiated', reenter: true, actions: ['markRestored', 'checkCall'] },
        TIMER: [
          { guard: ({ event }) => event.name === 'stale', target: 'initiated', reenter: true, actions: 'checkCall' },
          { guard: ({ event }) => event.name === 'retry', actions: 'checkCall' },
        ],
        // The carrier could not be asked: ask again soon (the stale deadline stays as it was).
        'CARRIER.UNREACHABLE': { actions: timer('retry', LIVENESS.retryMs) },
        RECONCILED: [
          { guard: 'reconciledEnded', target: 'ended', actions: 'endByCarrier' },
          { guard: 'goneAt', target: 'ended', actions: 'endGone' },
          { guard: 'restoredAndUp', target: 'hanging-up', actions: ['clearRestored', 'requestHangup'] },
          { guard: 'carrierSaysAnswered', target: 'in-progress', actions: ['clearRestored', 'markAnswered'] },
          { actions: 'clearRestored' },
        ],
      },
    },

    ringing: {
      tags: [CALL_TAGS.holdsSlot],
      entry: timer('stale', LIVENESS.ringMs),
      exit: [cancel('stale'), cancel('retry')],
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
        // Re-entered: its deadline is re-armed (a snapshot from an older version may have none).
        RESTORED: { target: 'ringing', reenter: true, actions: ['markRestored', 'checkCall'] },
        TIMER: [
          { guard: ({ event }) => event.name === 'stale', target: 'ringing', reenter: true, actions: 'checkCall' },
          { guard: ({ event }) => event.name === 'retry', actions: 'checkCall' },
        ],
        // The carrier could not be asked: ask again soon (the stale deadline stays as it was).
        'CARRIER.UNREACHABLE': { actions: timer('retry', LIVENESS.retryMs) },
        RECONCILED: [
          { guard: 'reconciledEnded', target: 'ended', actions: 'endByCarrier' },
          { guard: 'goneAt', target: 'ended', actions: 'endGone' },
          { guard: 'restoredAndUp', target: 'hanging-up', actions: ['clearRestored', 'requestHangup'] },
          { guard: 'carrierSaysAnswered', target: 'in-progress', actions: ['clearRestored', 'markAnswered'] },
          { actions: 'clearRestored' },
        ],
      },
    },

    // Connected. The max-duration deadline is durable data (the scheduler), so it
    // survives a restart; the stale check asks the carrier now and then, so a lost
    // hang-up callback cannot keep the call (and its slot) for ever.
    'in-progress': {
      tags: [CALL_TAGS.holdsSlot],
      entry: [
        {
          type: 'scheduleDeadline',
          params: ({ context }) => {
            const dueAt = (context.startedAt ?? context.createdAt) + context.maxDurationSec * 1000;
            const reason: HangupReason = 'max_duration_reached';
            return { name: MAX_DURATION_DEADLINE, dueAt, event: { type: 'HANGUP.REQUESTED', at: dueAt, reason } };
          },
        },
        timer('stale', LIVENESS.connectedCheckMs),
      ],
      exit: [cancel(MAX_DURATION_DEADLINE), cancel('stale'), cancel('retry')],
      initial: 'listening',
      states: {
        listening: {
          on: { 'TRANSFER.REQUESTED': { target: 'transferring', actions: 'beginTransfer' } },
        },
        transferring: transferringState({ timer, cancel }),
      },
      on: {
        'DIAL.ACCEPTED': { actions: 'recordCarrierId' },
        'CONVERSATION.LINE': { actions: 'addLine' },
        'CONVERSATION.BOOKING': { actions: 'addBooking' },
        'CARRIER.AMD': { guard: 'voicemailByAmd', target: 'hanging-up', actions: 'requestHangup' },
        'CARRIER.ENDED': { target: 'ended', actions: 'endByCarrier' },
        'HANGUP.REQUESTED': { target: 'hanging-up', actions: 'requestHangup' },
        // A web call's browser hung up, or its socket closed: the caller ended the call.
        'MEDIA.STOPPED': { guard: 'web', target: 'ended', actions: 'endByBrowser' },
        RESTORED: [
          // A web call's media died with the process and no carrier keeps the caller on the line: it ends, media_lost.
          { guard: 'web', target: 'hanging-up', actions: 'requestHangup' },
          // Re-entered: max_duration (from startedAt) and the check are re-armed.
          { target: 'in-progress', reenter: true, actions: ['markRestored', 'checkCall'] },
        ],
        TIMER: [
          { guard: ({ event }) => event.name === 'stale', actions: ['checkCall', cancel('stale'), timer('stale', LIVENESS.connectedCheckMs)] },
          { guard: ({ event }) => event.name === 'retry', actions: 'checkCall' },
        ],
        // The carrier could not be asked: ask again soon (the stale deadline stays as it was).
        'CARRIER.UNREACHABLE': { actions: timer('retry', LIVENESS.retryMs) },
        RECONCILED: [
          { guard: 'reconciledEnded', target: 'ended', actions: 'endByCarrier' },
          { guard: 'goneAt', target: 'ended', actions: 'endGone' },
          { guard: 'restoredAndUp', target: 'hanging-up', actions: ['clearRestored', 'requestHangup'] },
          { actions: 'clearRestored' },
        ],
      },
    },

    // We asked the carrier to end the call. It ends on the carrier's final event or when
    // the hang-up is confirmed, and the requested reason wins either way. Unconfirmed
    // hang-ups are asked again; after a few the call ends on our word, so its slot frees.
    'hanging-up': {
      tags: [CALL_TAGS.holdsSlot],
      entry: ['countHangupAttempt', 'hangup', timer('stale', LIVENESS.hangupMs)],
      exit: cancel('stale'),
      on: {
        'DIAL.ACCEPTED': { actions: 'recordCarrierId' },
        'CARRIER.RINGING': { actions: 'recordCarrierId' },
        // What was said up to the hang-up (the goodbye, a cut reply) still reaches the transcript.
        'CONVERSATION.LINE': { actions: 'addLine' },
        'CONVERSATION.BOOKING': { actions: 'addBooking' },
        // The far end may pick up before our hang-up lands: that time is connected time.
        'CARRIER.ANSWERED': { actions: 'markAnswered' },
        'CARRIER.AMD': { actions: 'markAnswered' },
        'CARRIER.ENDED': { target: 'ended', actions: 'endByCarrier' },
        // The carrier's final word, when the hang-up could ask for it, wins over ours: the
        // call may have ended on its own, or been answered, just before.
        'HANGUP.DONE': [
          { guard: 'carrierKnowsBetter', target: 'ended', actions: 'endByCarrier' },
          { target: 'ended', actions: 'endByHangupDone' },
        ],
        // Hanging up again is harmless; it re-arms the deadline an older snapshot may lack.
        RESTORED: { target: 'hanging-up', reenter: true },
        TIMER: [
          { guard: ({ event, context }) => event.name === 'stale' && context.hangupAttempts >= LIVENESS.hangupAttempts, target: 'ended', actions: 'endByHangupDone' },
          { guard: ({ event }) => event.name === 'stale', target: 'hanging-up', reenter: true },
        ],
        RECONCILED: { guard: 'reconciledEnded', target: 'ended', actions: 'endByCarrier' },
      },
    },

    // Transient: the final values are fixed by the transition that led here.
    ended: {
      tags: [CALL_TAGS.finished],
      // Every ending releases: a held slot is freed, a queued call leaves the queue.
      entry: 'releaseSlot',
      always: 'post-call',
    },

    // Post-call work (recording, analysis, webhooks) comes with later issues. Until then
    // a durable deadline due at once finishes the call, so neither a crash nor a failed
    // commit between the ending and this step can leave it here.
    'post-call': {
      tags: [CALL_TAGS.finished],
      entry: timer('stale', 0),
      exit: cancel('stale'),
      on: {
        'DIAL.ACCEPTED': { actions: 'recordCarrierId' },
        // The carrier's end may overtake the media stream's last words.
        'CONVERSATION.LINE': { actions: 'addLine' },
        'CONVERSATION.BOOKING': { actions: 'addBooking' },
        'POSTCALL.DONE': 'done',
        TIMER: { guard: ({ event }) => event.name === 'stale', target: 'done' },
        RESTORED: { target: 'post-call', reenter: true },
      },
    },

    done: { type: 'final', tags: [CALL_TAGS.finished] },
  },
});

export type CallSnapshot = SnapshotFrom<typeof callMachine>;

/** The top-level states a live call can be in, for gauges that count calls per phase. */
export const CALL_PHASES = ['queued', 'awaiting-browser', 'dialing', 'dial-unknown', 'initiated', 'ringing', 'in-progress', 'hanging-up', 'post-call'] as const;

/** A snapshot's top-level state (the phase), whatever child state it is in. */
export function phaseOf(value: unknown): string {
  return typeof value === 'string' ? value : value !== null && typeof value === 'object' ? (Object.keys(value)[0] ?? '') : '';
}

/** True once the call has its final status and ended_reason (post-call work may still run). */
export function isFinished(snapshot: { hasTag(tag: string): boolean }): boolean {
  return snapshot.hasTag(CALL_TAGS.finished);
}
