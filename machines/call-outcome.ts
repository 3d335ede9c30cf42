// How a call ends: the final-values table of docs/design/calls.md as one pure function,
// and the call-record fields derived from a call's context (durations, billing).
// No clock: every time comes from an event's `at` or the call's input.
import type { CallInput, CallStatus, EndedReason, FinalCallStatus, HangupReason } from './call-events.ts';
import type { TransferState } from './call-transfer.ts';

/** Why the service hangs up: the API/engine reasons, or `media_lost` after a restart found the call still up. */
export type ServiceHangupReason = HangupReason | 'media_lost';

/** A call actor's context: its input plus what it learned. Plain JSON, persisted in every snapshot. */
export interface CallContext extends CallInput {
  callStatus: CallStatus;
  /** When the call connected (answer, AMD result, or inbound acceptance); null while it never has. */
  startedAt: number | null;
  endedAt: number | null;
  endedReason: EndedReason | null;
  voicemailDetected: boolean;
  /** The first reason the service asked to hang up for; it wins over the carrier's word. */
  hangupReason: ServiceHangupReason | null;
  hangupRequestedAt: number | null;
  /** When the dial effect started (creation, or the slot grant of a queued call). */
  dialedAt: number | null;
  /** What the carrier said when it refused the dial (JSON of the error). */
  carrierError: Record<string, unknown> | null;
  /** accepted / rejected / unknown (its answer never came: reconciled, never redialed); null before. */
  dialOutcome: 'accepted' | 'rejected' | 'unknown' | null;
  /** Restored after a restart and not yet reconciled: the media died with the process. */
  restored: boolean;
  /** Hang-up requests made to the carrier so far. */
  hangupAttempts: number;
  /** `Agent: …` / `Caller: …` lines, newline-separated; null before the first line. */
  transcript: string | null;
  /** Sum and count of the turn latencies measured so far (avg_latency_ms). */
  latencyTotalMs: number;
  latencyTurns: number;
  /** The call's latest transfer (machines/call-transfer.ts); null until the conversation asks for one. */
  transfer: TransferState | null;
  /** Calendar changes the conversation made (api.md Booking objects), in order; absent in snapshots older than bookings: none. */
  bookings?: CallBooking[];
}

/** Api.md's Booking object as the call record holds it. */
export interface CallBooking {
  action: 'created' | 'rescheduled' | 'cancelled';
  booking_uid: string;
  start?: string | undefined;
  attendee_name?: string | undefined;
  attendee_email?: string | undefined;
  service?: string | undefined;
  timezone: string;
}

/** The event that finished a call, in the terms the table needs. */
export type Ending =
  | { by: 'carrier'; status: FinalCallStatus; at: number; durationSec?: number | undefined }
  | { by: 'dial-failed'; at: number; carrierError: Record<string, unknown> }
  | { by: 'hangup-done'; at: number }
  | { by: 'queue-cancel'; at: number };

export type FinalValues = Pick<CallContext, 'callStatus' | 'endedReason' | 'startedAt' | 'endedAt' | 'voicemailDetected' | 'carrierError'>;

const farEndHangup = (ctx: CallContext): EndedReason => (ctx.direction === 'inbound' ? 'caller_hangup' : 'callee_hangup');

/**
 * The final call_status and ended_reason. Rules: a call that connected always ends
 * `completed`; one that never did takes the status of whatever ended it (the
 * carrier's word, `failed` for a refused dial, `canceled` for our own hang-up); the
 * reason the service asked to hang up for wins over every other reason.
 */
export function finalValues(ctx: CallContext, ending: Ending): FinalValues {
  if (ending.by === 'queue-cancel') {
    return { callStatus: 'canceled', endedReason: 'canceled', startedAt: null, endedAt: ending.at, voicemailDetected: false, carrierError: null };
  }
  let startedAt = ctx.startedAt;
  // A carrier `completed` proves the call connected even when its answer event was lost
  // or is still on its way; the carrier's own duration places the answer, if given.
  if (startedAt === null && ending.by === 'carrier' && ending.status === 'completed') {
    startedAt = Math.max(ctx.createdAt, ending.at - Math.round((ending.durationSec ?? 0) * 1000));
  }
  const connected = startedAt !== null;
  const natural: FinalCallStatus = ending.by === 'carrier' ? ending.status : ending.by === 'dial-failed' ? 'failed' : 'canceled';
  const callStatus: FinalCallStatus = connected ? 'completed' : natural;
  const endedReason: EndedReason = ctx.hangupReason ?? (connected ? farEndHangup(ctx) : natural);
  return {
    callStatus,
    endedReason,
    startedAt,
    // Late or reordered callbacks may carry an earlier time than the answer: never negative.
    endedAt: startedAt === null ? ending.at : Math.max(ending.at, startedAt),
    voicemailDetected: endedReason === 'voicemail_detected',
    carrierError: ending.by === 'dial-failed' ? ending.carrierError : ctx.carrierError,
  };
}

/** The call-row fields a call's context determines (times in epoch ms, as stored). */
export interface CallRecordFields {
  call_status: CallStatus;
  ended_reason: EndedReason | null;
  carrier_call_id: string | null;
  started_at: number | null;
  ended_at: number | null;
  /** Connected time; 0 for an ended call that never connected, null while the call is live. */
  duration_ms: number | null;
  /** Connected seconds rounded up to the whole second (the billed seconds); null while live. */
  duration_seconds: number | null;
  /** contract.md §6: billed seconds / 60, rounded to 2 decimals; 0 until the call ends. */
  charged_minutes: number;
  voicemail_detected: boolean;
  transcript: string | null;
  /** Mean turn latency, rounded to the millisecond; null before the first measured turn. */
  avg_latency_ms: number | null;
  bookings: CallBooking[];
}

/** Billed minutes for a connected time: seconds rounded up, /60, rounded to 2 decimals. */
export function chargedMinutes(durationMs: number): number {
  const seconds = Math.ceil(durationMs / 1000);
  // seconds*100/60 never ends in exactly .5, so Math.round has no ties to break.
  return Math.round((seconds * 100) / 60) / 100;
}

export function callRecordOf(ctx: CallContext): CallRecordFields {
  const ended = ctx.endedAt !== null;
  const durationMs = !ended ? null : ctx.startedAt === null ? 0 : Math.max(0, (ctx.endedAt ?? 0) - ctx.startedAt);
  return {
    call_status: ctx.callStatus,
    ended_reason: ctx.endedReason,
    carrier_call_id: ctx.carrierCallId,
    started_at: ctx.startedAt,
    ended_at: ctx.endedAt,
    duration_ms: durationMs,
    duration_seconds: durationMs === null ? null : Math.ceil(durationMs / 1000),
    charged_minutes: durationMs === null ? 0 : chargedMinutes(durationMs),
    voicemail_detected: ctx.voicemailDetected,
    transcript: ctx.transcript ?? null,
    avg_latency_ms: (ctx.latencyTurns ?? 0) > 0 ? Math.round(ctx.latencyTotalMs / ctx.latencyTurns) : null,
    bookings: ctx.bookings ?? [],
  };
}
