// The post-call analysis worker: runs the durable analysis jobs (storage/call-analysis.ts)
// that a call's end committed, and records each outcome with its consequences
// (analysis-outcome.ts).
//   - Wakes when a job is scheduled (after that transaction commits), when an analysis
//     ends, and on a timer for the next due job; the timer never sleeps longer than
//     MAX_SLEEP_MS, so a wall-clock step or a suspended host is seen.
//   - Each attempt is counted (committed) before the request to the model leaves; a
//     crash during it leaves the job due, and it runs again after the restart until its
//     attempts are used up. What a job does and what a failure leads to is decided by
//     analysis-plan.ts.
//   - At most `maxInFlight` analyses run at once; a job being run is never taken twice
//     in this process.
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { AnalysisJobRow } from '../../storage/call-analysis.ts';
import type { CallRow } from '../../storage/calls.ts';
import type { Metrics } from '../../metrics.ts';
import type { AnalysisModel } from '../../voice/analysis/analysis-client.ts';
import { analysisMessages } from '../../voice/analysis/analysis-prompt.ts';
import { analysisResponseFormat, parseAnalysisAnswer, type ParsedAnswer } from '../../voice/analysis/analysis-schema.ts';
import { afterFailedAttempt, DEFAULT_ANALYSIS_RETRY_MS, maxAttemptsOf, planJob } from './analysis-plan.ts';
import { recordAnalysisOutcome, type AnalysisOutcome } from './analysis-outcome.ts';
import { otherPartyOf } from '../outbox/crm-sync-out.ts';
import { wakeTimer } from '../runtime/wake-timer.ts';

/** Look at the table at least this often, whatever the timer was armed for. */
const MAX_SLEEP_MS = 5_000;
/** After a failed look at the table (the database), look again this soon. */
const RETRY_MS = 1000;
/** A job whose run threw (its commit failed) is left alone this long: no busy loop on a sick database. */
const COOLDOWN_MS = 2000;

export interface CallAnalysisDeps {
  storage: Storage;
  clock: () => number;
  log: Logger;
  /** The model; null when none is configured (a conversation's analysis is then recorded failed). */
  model: AnalysisModel | null;
  /** Waits between attempts (analysis-plan.ts DEFAULT_ANALYSIS_RETRY_MS). */
  retryScheduleMs?: readonly number[];
  maxInFlight?: number;
  random?: () => number;
  /** CRM_BASE_URL: call.completed goes with the CRM sync (actors/outbox/call-completed-out.ts). */
  crmBaseUrl: string;
  /** True while the call's conversation is still being recorded in this process (actors/recordings/platform-recordings.ts). */
  recordingUnderWay?: (internalId: string) => boolean;
  metrics?: Metrics;
}

export interface CallAnalysisWorker {
  /** Starts running what is due now (jobs that survived a restart) and whatever comes. */
  start(): void;
  /** Stops the timer, aborts analyses in flight (their jobs stay due) and waits for them to unwind. */
  stop(): Promise<void>;
  /** Runs everything due now and resolves when those analyses have ended (tests drive the worker with it). */
  runDue(): Promise<void>;
  /** Jobs not yet recorded. */
  backlog(): number;
}

export function createCallAnalysisWorker(deps: CallAnalysisDeps): CallAnalysisWorker {
  const { storage, clock, log } = deps;
  const jobs = storage.analysis;
  const waits = deps.retryScheduleMs ?? DEFAULT_ANALYSIS_RETRY_MS;
  const maxAttempts = maxAttemptsOf(waits);
  const maxInFlight = deps.maxInFlight ?? 4;
  const inFlight = new Map<string, Promise<void>>();
  const cooling = new Map<string, number>();
  let running = false;
  const timer = wakeTimer(() => pump(), MAX_SLEEP_MS);
  let abort = new AbortController();
  let unsubscribe: (() => void) | null = null;

  function armIn(ms: number): void {
    if (running) timer.in(ms);
  }

  function pump(): void {
    if (!running) return;
    try {
      launchDue();
      const now = clock();
      const next = jobs.nextDueAfter(now);
      armIn(next === null ? MAX_SLEEP_MS : next - now);
    } catch (err) {
      log.error({ err }, 'call analysis: reading due jobs failed; retrying');
      armIn(RETRY_MS);
    }
  }

  function launchDue(): Promise<void>[] {
    const room = maxInFlight - inFlight.size;
    if (room <= 0) return [];
    const now = clock();
    for (const [id, until] of cooling) if (until <= now) cooling.delete(id);
    const rows = jobs
      .due(now, room + inFlight.size + cooling.size)
      .filter((r) => !inFlight.has(r.internal_id) && !cooling.has(r.internal_id))
      .slice(0, room);
    return rows.map((row) => {
      const p = runJob(row)
        .catch((err: unknown) => {
          cooling.set(row.internal_id, clock() + COOLDOWN_MS);
          log.error({ err, call_id: row.internal_id }, 'call analysis: a job failed; it stays due');
        })
        .finally(() => {
          inFlight.delete(row.internal_id);
          if (running) setImmediate(pump);
        });
      inFlight.set(row.internal_id, p);
      return p;
    });
  }

  function complete(call: CallRow, o: AnalysisOutcome, why: string): void {
    const recorded = recordAnalysisOutcome(storage, call, o, clock(), { crmBaseUrl: deps.crmBaseUrl });
    if (recorded) log.info({ call_id: call.internal_id, analysis_status: o.status, why }, 'call analysis recorded');
  }

  async function runJob(job: AnalysisJobRow): Promise<void> {
    const call = storage.calls.getByInternalId(job.internal_id);
    const plan = planJob({
      call,
      attemptsSoFar: job.attempts,
      maxAttempts,
      modelConfigured: deps.model !== null,
      now: clock(),
      jobCreatedAt: job.created_at,
      recordingUnderWay: deps.recordingUnderWay?.(job.internal_id) ?? false,
    });
    if (plan.kind === 'drop') {
      jobs.removeJob(job.internal_id);
      return;
    }
    if (plan.kind === 'wait') {
      // Not an attempt; attaching the file wakes the job before `until` (storage/call-analysis.ts wake).
      jobs.retryAt(job.internal_id, plan.until, 'waiting for the call recording');
      return;
    }
    if (plan.kind === 'record') {
      complete(call!, { status: plan.status, analysis: null, conversation: plan.status === 'failed' }, plan.reason);
      return;
    }
    // Counted before the request leaves: a crash during it still uses up an attempt.
    if (!jobs.startAttempt(job.internal_id, job.attempts)) return;
    const answer = await ask(call!);
    if (!running && !answer.ok) return; // stopped mid-request: the job stays due for the next start
    if (answer.ok) {
      complete(call!, { status: 'done', analysis: answer.analysis, conversation: true }, `attempt ${plan.attempt}`);
      return;
    }
    const next = afterFailedAttempt(plan.attempt, waits, clock(), deps.random);
    log.warn({ call_id: call!.internal_id, attempt: plan.attempt, reason: answer.reason, retry: next.kind === 'retry' }, 'call analysis attempt failed');
    if (next.kind === 'retry') jobs.retryAt(job.internal_id, next.at, answer.reason);
    else complete(call!, { status: 'failed', analysis: null, conversation: true }, answer.reason);
  }

  /** One attempt: the model asked, its answer validated. Never throws. */
  async function ask(call: CallRow): Promise<ParsedAnswer> {
    const agent = call.agent_id === null ? undefined : storage.agents.get(call.account_id, call.agent_id);
    const fields = agent?.extraction_fields ?? [];
    const previous = call.phone_number === null || call.provider === 'web' ? undefined : storage.callers.get(call.account_id, call.phone_number, otherPartyOf(call));
    try {
      const content = await deps.model!.complete({
        messages: analysisMessages({
          transcript: call.transcript ?? '',
          direction: call.direction,
          agentPrompt: agent?.system_prompt ?? null,
          endedReason: call.ended_reason,
          previousOpenItem: previous?.open_item ?? null,
          fields,
        }),
        responseFormat: analysisResponseFormat(fields),
        signal: abort.signal,
      });
      return parseAnalysisAnswer(content, fields);
    } catch (err) {
      return { ok: false, reason: err instanceof Error ? err.message : String(err) };
    }
  }

  deps.metrics?.gauge('switchboard_analysis_backlog', 'Post-call analyses without an outcome yet: due, running or waiting for a retry (call.completed waits for them).', () => jobs.count());

  return {
    start() {
      if (running) return;
      running = true;
      abort = new AbortController();
      // Told inside the scheduling transaction: look once it has committed.
      unsubscribe = jobs.onScheduled(() => setImmediate(() => armIn(0)));
      pump();
    },
    async stop() {
      running = false;
      unsubscribe?.();
      unsubscribe = null;
      timer.clear();
      abort.abort();
      await Promise.allSettled([...inFlight.values()]);
    },
    async runDue() {
      await Promise.allSettled(launchDue());
    },
    backlog: () => jobs.count(),
  };
}
