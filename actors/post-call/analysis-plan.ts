// The decisions of post-call analysis, pure: what a due job does (nothing left to do,
// record an outcome without asking, or ask the model), and what a failed attempt
// leads to (another attempt later, or `failed`). Attempts are counted before each
// request leaves, so one cut short by a crash counts: after the last, the analysis is
// recorded failed and call.completed goes out with the analysis fields null.
import { hasConversation } from '../../voice/analysis/analysis-prompt.ts';

/** The waits between attempts: three attempts in all, the last about 35 s after the first. */
export const DEFAULT_ANALYSIS_RETRY_MS: readonly number[] = [5_000, 30_000];

/** After the call's end the job waits this long, so the last words that overtook the hang-up reach the transcript. */
export const POST_CALL_SETTLE_MS = 500;

/**
 * A conversation still being recorded in this process when its analysis falls due (its
 * media stream outlived the call's end) is waited for this long at most from the job's
 * creation, looking again every RECORDING_POLL_MS.
 */
export const LIVE_RECORDING_WAIT_MS = 60_000;
export const RECORDING_POLL_MS = 1_000;
/**
 * A carrier asked to record the call (recording_source provider) says the file is ready
 * seconds after the call ends; call.completed waits this long after the end for it (a
 * recording that comes later still reaches the call record, not that event).
 */
export const PROVIDER_RECORDING_WAIT_MS = 60_000;

export type JobPlan =
  /** The call was erased or its analysis is recorded already: the job just goes. */
  | { kind: 'drop' }
  /** Its recording is on its way: "the recording is saved, post-call analysis runs and call.completed is sent" (api.md). Not an attempt. */
  | { kind: 'wait'; until: number }
  /** Recorded without asking the model: `done` with no fields (no conversation), or `failed`. */
  | { kind: 'record'; status: 'done' | 'failed'; reason: string }
  /** Ask the model; `attempt` counts from 1. */
  | { kind: 'ask'; attempt: number };

export interface PlanInput {
  call:
    | { analysis_status: string; transcript: string | null; recording_path: string | null; recording_expected_until: number | null; recording_requested_at?: number | null }
    | undefined;
  attemptsSoFar: number;
  maxAttempts: number;
  modelConfigured: boolean;
  now: number;
  /** When the job was created (the call's end). */
  jobCreatedAt: number;
  /** The conversation is still being recorded in this process (actors/recordings/platform-recordings.ts). */
  recordingUnderWay: boolean;
}

export function planJob({ call, attemptsSoFar, maxAttempts, modelConfigured, now, jobCreatedAt, recordingUnderWay }: PlanInput): JobPlan {
  if (call === undefined || call.analysis_status !== 'pending') return { kind: 'drop' };
  if (call.recording_path === null) {
    const expected = call.recording_expected_until;
    if (expected !== null && now < expected) return { kind: 'wait', until: expected };
    if (recordingUnderWay && now < jobCreatedAt + LIVE_RECORDING_WAIT_MS) return { kind: 'wait', until: now + RECORDING_POLL_MS };
    const providerUntil = jobCreatedAt + PROVIDER_RECORDING_WAIT_MS;
    if ((call.recording_requested_at ?? null) !== null && now < providerUntil) return { kind: 'wait', until: providerUntil };
  }
  // Nothing the caller said: no summary to write, no mood to judge (never answered, busy, silence).
  if (!hasConversation(call.transcript)) return { kind: 'record', status: 'done', reason: 'no conversation to analyse' };
  if (!modelConfigured) return { kind: 'record', status: 'failed', reason: 'no model is configured (LLM_API_KEY)' };
  if (attemptsSoFar >= maxAttempts) return { kind: 'record', status: 'failed', reason: `no valid answer in ${maxAttempts} attempts` };
  return { kind: 'ask', attempt: attemptsSoFar + 1 };
}

export type AfterFailure = { kind: 'retry'; at: number } | { kind: 'fail' };

/**
 * After attempt `attempt` (from 1) failed at `now`: the next one after `waits[attempt - 1]`
 * (±10% jitter, `random` in [0, 1)), or none once the waits are used up.
 */
export function afterFailedAttempt(attempt: number, waits: readonly number[], now: number, random: () => number = Math.random): AfterFailure {
  const wait = waits[attempt - 1];
  if (wait === undefined) return { kind: 'fail' };
  return { kind: 'retry', at: now + Math.round(wait * (0.9 + 0.2 * random())) };
}

/** Attempts in all for a list of waits between them. */
export const maxAttemptsOf = (waits: readonly number[]): number => waits.length + 1;
