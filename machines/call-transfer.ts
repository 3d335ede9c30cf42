// A call's transfer, as part of the call machine (call.ts): the state it keeps, the pure
// updates of that state, and the `transferring` child state of `in-progress`. Pure like
// the rest of the machine: every carrier step is an effect intent the supervisor commits
// before it acts (actors/calls/transfer-effects.ts), every wait has a durable deadline, and a
// restart never sends a transfer again: an unsent request is sent, a sent one whose answer
// was lost is checked with the carrier (carrier B may resend within its command_id window).
//
// The steps, per carrier and mode (carriers.md; README "Transfers"):
// - placing: `placeTransfer` (carrier A: the live call's TwiML becomes <Dial><Number>;
//   carrier B cold: the `transfer` command; carrier B warm: a new leg is dialed);
// - waiting: for the target; carrier B warm then whispers (`whisperTransfer`, the speak
//   command on the new leg) and bridges (`bridgeTransfer`), carrier A whispers by itself
//   (<Number url>) and bridges after it;
// - the handoff (TRANSFER.CONNECTED) ends the call as `transferred` at that moment: the
//   meter stops there, and the caller's stream is released (`releaseMedia`);
// - the caller hanging up meanwhile ends the call as theirs, and the target's leg is
//   ended too (`dropTransferLeg`);
// - a failure (busy, no answer, declined) brings the call back to `listening`: the agent
//   tells the caller. A failure after a restart, when the caller's media died with the
//   process and nothing opens it again, hangs up honestly (media_lost).
import type { CallEvent } from './call-events.ts';
import { finalValues, type CallContext } from './call-outcome.ts';
import type { TransferFailure, TransferMode } from './transfer-events.ts';

export { TRANSFER_FAILURES, TRANSFER_MODES, TRANSFER_RING_SECONDS, type TransferFailure, type TransferMode } from './transfer-events.ts';

/** What the call keeps of its latest transfer. Plain JSON, persisted in every snapshot. */
export interface TransferState {
  /** 1 for the call's first transfer, 2 for the next (after a failed one), …: in every id and webhook URL of it. */
  attempt: number;
  /** E.164 destination. */
  to: string;
  mode: TransferMode;
  /** What the target hears before the caller is connected (warm only). */
  whisper: string | null;
  requestedAt: number;
  /** The target's leg at the carrier, once known (carrier B: its call_control_id; carrier A: the child CallSid). */
  legId: string | null;
  /** `pending` while it runs, `connected` at the handoff, `failed` once the caller is back with the agent. */
  outcome: 'pending' | 'connected' | 'failed';
  failure: TransferFailure | null;
  /** The process restarted during the transfer: the caller's media stream died with it. */
  mediaLost: boolean;
}

/** How long each transfer step may wait before the carrier is asked (ms). */
export const TRANSFER_LIVENESS = {
  /** The request's answer never came back. */
  placeMs: 30_000,
  /** A check's answer never came back. */
  checkMs: 30_000,
  /** The carriers ring the target for TRANSFER_RING_SECONDS; then whisper and bridge. */
  waitMs: 90_000,
  whisperMs: 60_000,
  bridgeMs: 30_000,
  /** The carrier could not be asked: ask again after this. */
  retryMs: 15_000,
} as const;


type Ev<T extends CallEvent['type']> = Extract<CallEvent, { type: T }>;
type TransferEvent = Ev<'TRANSFER.PLACED' | 'TRANSFER.UNKNOWN' | 'TRANSFER.ANSWERED' | 'TRANSFER.WHISPERED' | 'TRANSFER.CONNECTED' | 'TRANSFER.FAILED' | 'TRANSFER.SENT'>;

/** The event is about the transfer running now (a late webhook of an earlier attempt is not). */
export function isCurrentTransfer(ctx: CallContext, event: CallEvent): boolean {
  const t = ctx.transfer;
  return t !== null && t.outcome === 'pending' && 'attempt' in event && (event as TransferEvent).attempt === t.attempt;
}

/**
 * The current transfer's request was answered after a restart (resent inside carrier B's
 * command_id window, or first sent then): the carrier's "ok" says nothing of what the
 * target did meanwhile, and the webhooks that said it went to the process that died.
 */
export function placedAfterRestart(ctx: CallContext, event: CallEvent): boolean {
  return isCurrentTransfer(ctx, event) && ctx.transfer!.mediaLost;
}

/** Carrier B warm transfers whisper to the new leg themselves, then bridge it. */
export function whispersItself(ctx: CallContext): boolean {
  return ctx.provider === 'telnyx' && ctx.transfer?.mode === 'warm';
}

export function beginTransfer(ctx: CallContext, e: Ev<'TRANSFER.REQUESTED'>): Partial<CallContext> {
  return {
    transfer: {
      attempt: (ctx.transfer?.attempt ?? 0) + 1,
      to: e.to,
      mode: e.mode,
      whisper: e.mode === 'warm' ? e.whisper : null,
      requestedAt: e.at,
      legId: null,
      outcome: 'pending',
      failure: null,
      mediaLost: false,
    },
  };
}

export function recordLeg(ctx: CallContext, e: CallEvent): Partial<CallContext> {
  const legId = 'legId' in e && typeof e.legId === 'string' ? e.legId : null;
  if (ctx.transfer === null || legId === null || ctx.transfer.legId !== null) return {};
  return { transfer: { ...ctx.transfer, legId } };
}

export function markMediaLost(ctx: CallContext): Partial<CallContext> {
  return ctx.transfer === null ? {} : { transfer: { ...ctx.transfer, mediaLost: true } };
}

export function failTransfer(ctx: CallContext, e: Ev<'TRANSFER.FAILED'>): Partial<CallContext> {
  return ctx.transfer === null ? {} : { transfer: { ...ctx.transfer, outcome: 'failed', failure: e.reason } };
}

/**
 * The handoff: the call ends `transferred` at the moment the caller was connected, so
 * its duration and charged_minutes stop there (contract.md §6); whatever the caller and
 * the target say afterwards is theirs, on the carrier's bill.
 */
export function handoff(ctx: CallContext, e: Ev<'TRANSFER.CONNECTED'>): Partial<CallContext> {
  const hangupReason = ctx.hangupReason ?? 'transferred';
  const withReason: CallContext = { ...ctx, hangupReason, hangupRequestedAt: ctx.hangupRequestedAt ?? e.at };
  return {
    hangupReason,
    hangupRequestedAt: withReason.hangupRequestedAt,
    transfer: ctx.transfer === null ? null : { ...ctx.transfer, outcome: 'connected' },
    ...finalValues(withReason, { by: 'hangup-done', at: e.at }),
  };
}

/** The deadline actions of the machine (call.ts builds them; passed in to keep one definition). */
interface DeadlineActions {
  timer(name: 'transfer' | 'retry', afterMs: number): { type: 'scheduleDeadline'; params: (a: { context: CallContext; event: CallEvent }) => { name: string; event: CallEvent; dueAt: number } };
  cancel(name: string): { type: 'cancelDeadline'; params: { name: string } };
}

/** The params of every transfer intent: which attempt it is for (a stale intent is dropped, never acted on). */
export interface TransferIntent {
  attempt: number;
}
const intent = (type: 'placeTransfer' | 'checkTransfer' | 'whisperTransfer' | 'bridgeTransfer' | 'releaseMedia' | 'dropTransferLeg') =>
  ({ type, params: ({ context }: { context: CallContext }): TransferIntent => ({ attempt: context.transfer?.attempt ?? 0 }) }) as const;

const isTimer = (name: string) => ({ event }: { event: CallEvent }) => event.type === 'TIMER' && event.name === name;

/**
 * The `transferring` state of `in-progress`. Action and guard names are the machine's
 * (call.ts setup): effects `placeTransfer`, `checkTransfer`, `whisperTransfer`,
 * `bridgeTransfer`, `releaseMedia`, `dropTransferLeg`; updates `recordTransferLeg`, `markTransferMediaLost`,
 * `failTransfer`, `endTransferred`, `requestHangup`; guards `currentTransfer`,
 * `placedAfterRestart`, `answeredForWhisper`, `failedWithoutMedia`.
 */
export function transferringState({ timer, cancel }: DeadlineActions) {
  const step = (ms: number) => ({ entry: timer('transfer', ms), exit: cancel('transfer') });
  // The target answered: carrier B warm whispers to it now; elsewhere only its leg is noted.
  const answered = [
    { guard: 'answeredForWhisper', target: 'whispering', actions: 'recordTransferLeg' },
    { guard: 'currentTransfer', actions: 'recordTransferLeg' },
  ] as const;
  // After a restart, a step that waits on the carrier asks it where the transfer stands.
  const askAfterRestart = { target: 'checking', reenter: true, actions: 'markTransferMediaLost' } as const;
  return {
    initial: 'placing',
    states: {
      // The request's intent is committed and goes out now. After a restart it is resumed
      // by the supervisor (sent if it never was, checked if it may have been): no second
      // request. Its answer after a restart is no word on the target (who may have answered
      // while the process was down, its webhooks lost): the carrier is asked, not waited on.
      placing: {
        entry: [intent('placeTransfer'), step(TRANSFER_LIVENESS.placeMs).entry],
        exit: step(TRANSFER_LIVENESS.placeMs).exit,
        on: {
          'TRANSFER.PLACED': [
            { guard: 'placedAfterRestart', target: 'checking', actions: 'recordTransferLeg' },
            { guard: 'currentTransfer', target: 'waiting', actions: 'recordTransferLeg' },
          ],
          'TRANSFER.UNKNOWN': { guard: 'currentTransfer', target: 'checking' },
          'TRANSFER.ANSWERED': answered,
          RESTORED: { actions: 'markTransferMediaLost' },
        },
      },
      // The carrier is asked where the transfer stands (read-only, safe to repeat).
      checking: {
        entry: [intent('checkTransfer'), step(TRANSFER_LIVENESS.checkMs).entry],
        exit: step(TRANSFER_LIVENESS.checkMs).exit,
        on: {
          'TRANSFER.PLACED': { guard: 'currentTransfer', target: 'waiting', actions: 'recordTransferLeg' },
          'TRANSFER.ANSWERED': answered,
          'CARRIER.UNREACHABLE': 'rechecking',
          RESTORED: askAfterRestart,
        },
      },
      rechecking: {
        entry: timer('retry', TRANSFER_LIVENESS.retryMs),
        exit: cancel('retry'),
        on: {
          TIMER: { guard: isTimer('retry'), target: 'checking' },
          'TRANSFER.ANSWERED': answered,
          RESTORED: askAfterRestart,
        },
      },
      // The target rings (carrier A also whispers and bridges on its own from here).
      waiting: {
        ...step(TRANSFER_LIVENESS.waitMs),
        on: { 'TRANSFER.ANSWERED': answered, RESTORED: askAfterRestart },
      },
      // Carrier B warm: the whisper is spoken to the target; a restart resumes the speak command.
      whispering: {
        entry: [intent('whisperTransfer'), step(TRANSFER_LIVENESS.whisperMs).entry],
        exit: step(TRANSFER_LIVENESS.whisperMs).exit,
        on: {
          'TRANSFER.WHISPERED': { guard: 'currentTransfer', target: 'bridging' },
          RESTORED: { actions: 'markTransferMediaLost' },
        },
      },
      bridging: {
        entry: [intent('bridgeTransfer'), step(TRANSFER_LIVENESS.bridgeMs).entry],
        exit: step(TRANSFER_LIVENESS.bridgeMs).exit,
        on: { RESTORED: { actions: 'markTransferMediaLost' } },
      },
    },
    on: {
      'TRANSFER.CONNECTED': { guard: 'currentTransfer', target: '#call.ended', actions: ['endTransferred', intent('releaseMedia')] },
      // The caller's leg ended while the target was rung or whispered to: a leg we placed
      // ourselves (carrier B warm) would ring on, or be bridged, for nobody.
      'CARRIER.ENDED': { target: '#call.ended', actions: ['endByCarrier', intent('dropTransferLeg')] },
      RECONCILED: [
        { guard: 'reconciledEnded', target: '#call.ended', actions: ['endByCarrier', intent('dropTransferLeg')] },
        { guard: 'goneAt', target: '#call.ended', actions: ['endGone', intent('dropTransferLeg')] },
        { actions: 'clearRestored' },
      ],
      'TRANSFER.FAILED': [
        { guard: 'failedWithoutMedia', target: '#call.hanging-up', actions: ['failTransfer', 'requestHangup'] },
        { guard: 'currentTransfer', target: 'listening', actions: 'failTransfer' },
      ],
      // A step waited too long: ask the carrier.
      TIMER: { guard: isTimer('transfer'), target: '.checking', reenter: true },
    },
  } as const;
}
