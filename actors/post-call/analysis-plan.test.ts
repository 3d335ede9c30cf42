// The post-call analysis's decisions, pure: what a due job does, and what follows a failed attempt.
import { describe, expect, it } from 'vitest';
import { afterFailedAttempt, DEFAULT_ANALYSIS_RETRY_MS, LIVE_RECORDING_WAIT_MS, maxAttemptsOf, planJob, PROVIDER_RECORDING_WAIT_MS, RECORDING_POLL_MS } from './analysis-plan.ts';

const talk = 'Agent: Hello!\nCaller: I would like a table.\nAgent: Sure.';
const noRecording: { recording_path: string | null; recording_expected_until: number | null } = { recording_path: null, recording_expected_until: null };
const plan = (call: { analysis_status: string; transcript: string | null } | undefined, attemptsSoFar = 0, modelConfigured = true) =>
  planJob({ call: call && { ...noRecording, ...call }, attemptsSoFar, maxAttempts: 3, modelConfigured, now: 1_000, jobCreatedAt: 500, recordingUnderWay: false });

describe('a due analysis job', () => {
  it('goes without a trace when its call is erased or already has an outcome', () => {
    expect(plan(undefined)).toEqual({ kind: 'drop' });
    expect(plan({ analysis_status: 'done', transcript: talk })).toEqual({ kind: 'drop' });
    expect(plan({ analysis_status: 'failed', transcript: talk })).toEqual({ kind: 'drop' });
  });

  it('records done, without asking, when the caller said nothing', () => {
    for (const transcript of [null, '', 'Agent: Hello! How can I help?', 'Agent: Hello!\nCaller:   ']) {
      expect(plan({ analysis_status: 'pending', transcript }), String(transcript)).toMatchObject({ kind: 'record', status: 'done' });
    }
  });

  it('records failed when no model is configured or the attempts are used up (a crash during one counts)', () => {
    expect(plan({ analysis_status: 'pending', transcript: talk }, 0, false)).toMatchObject({ kind: 'record', status: 'failed' });
    expect(plan({ analysis_status: 'pending', transcript: talk }, 3)).toMatchObject({ kind: 'record', status: 'failed', reason: 'no valid answer in 3 attempts' });
  });

  it('asks the model otherwise, counting the attempt from 1', () => {
    expect(plan({ analysis_status: 'pending', transcript: talk })).toEqual({ kind: 'ask', attempt: 1 });
    expect(plan({ analysis_status: 'pending', transcript: talk }, 2)).toEqual({ kind: 'ask', attempt: 3 });
  });
});

describe('a due analysis job whose call is being recorded', () => {
  const call = { analysis_status: 'pending', transcript: talk, ...noRecording };
  type Over = { analysis_status?: string; recording_path?: string | null; recording_expected_until?: number | null; recording_requested_at?: number | null };
  const at = (now: number, over: Over, recordingUnderWay = false) =>
    planJob({ call: { ...call, ...over }, attemptsSoFar: 0, maxAttempts: 3, modelConfigured: true, now, jobCreatedAt: 10_000, recordingUnderWay });

  it('waits, without using an attempt, until the file is attached or the expected time has passed', () => {
    expect(at(12_000, { recording_expected_until: 40_000 })).toEqual({ kind: 'wait', until: 40_000 });
    expect(at(40_000, { recording_expected_until: 40_000 })).toEqual({ kind: 'ask', attempt: 1 });
    expect(at(12_000, { recording_expected_until: 40_000, recording_path: 'recordings/x.mp3' })).toEqual({ kind: 'ask', attempt: 1 });
  });

  it('waits for a recording still under way in this process, looking again each second, for a minute at most', () => {
    expect(at(12_000, {}, true)).toEqual({ kind: 'wait', until: 12_000 + RECORDING_POLL_MS });
    expect(at(10_000 + LIVE_RECORDING_WAIT_MS, {}, true)).toEqual({ kind: 'ask', attempt: 1 });
  });

  it('waits for a carrier asked to record the call a minute after the end at most', () => {
    expect(at(12_000, { recording_requested_at: 9_000 })).toEqual({ kind: 'wait', until: 10_000 + PROVIDER_RECORDING_WAIT_MS });
    expect(at(10_000 + PROVIDER_RECORDING_WAIT_MS, { recording_requested_at: 9_000 })).toEqual({ kind: 'ask', attempt: 1 });
    expect(at(12_000, { recording_requested_at: 9_000, recording_path: 'recordings/x.mp3' })).toEqual({ kind: 'ask', attempt: 1 });
  });

  it('does not wait for a call that is gone or already analysed', () => {
    expect(at(12_000, { analysis_status: 'done', recording_expected_until: 40_000 })).toEqual({ kind: 'drop' });
  });
});

describe('after a failed attempt', () => {
  it('waits the next wait of the schedule (±10%), then gives up', () => {
    const waits = [1000, 5000];
    expect(afterFailedAttempt(1, waits, 100, () => 0.5)).toEqual({ kind: 'retry', at: 1100 });
    expect(afterFailedAttempt(2, waits, 100, () => 0)).toEqual({ kind: 'retry', at: 100 + 4500 });
    expect(afterFailedAttempt(2, waits, 100, () => 0.999999)).toEqual({ kind: 'retry', at: 100 + 5500 });
    expect(afterFailedAttempt(3, waits, 100)).toEqual({ kind: 'fail' });
  });

  it('by default allows three attempts, the webhook held back well under a minute and a half', () => {
    expect(maxAttemptsOf(DEFAULT_ANALYSIS_RETRY_MS)).toBe(3);
    expect(DEFAULT_ANALYSIS_RETRY_MS.reduce((a, b) => a + b, 0) * 1.1).toBeLessThan(90_000);
  });
});
