// The webhook outbox's worker: sends pending deliveries (storage/webhook-deliveries.ts)
// to the customer's URLs, signed the Standard Webhooks way, and records each outcome.
//   - Wakes when a delivery is enqueued (after the enqueuing transaction commits), when
//     an attempt ends, and on a timer for the next `next_attempt_at`; the timer never
//     sleeps longer than MAX_SLEEP_MS, so a wall-clock step or a suspended host is seen.
//   - Each attempt's start (attempts + 1, sent_at) is committed before the request
//     leaves and its outcome after. A crash in between leaves the row pending and due:
//     it is sent again after the restart (at least once; `webhook-id` is the receiver's
//     de-duplication key and stays the same on every attempt).
//   - Deliveries go out in lanes (delivery-lanes.ts): events and recording fetches each
//     have their own places, and within a lane one account has at most a few out at once
//     and free places are dealt between accounts fairly, so one account's hanging
//     endpoints delay nobody else's. A row being sent is never taken twice in this
//     process. What comes next is decided by webhook-retry.ts.
//   - The request itself (voice/target-request.ts) checks the address it connects to,
//     times out the whole exchange and never follows a redirect.
//   - A row of kind `crm` is not a signed POST but the CRM sync of a call (contact
//     upsert and note, actors/outbox/crm-delivery.ts); it is taken, retried and recorded the same way.
import type { Agent } from 'node:https';
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { AttemptOutcome, DeliveryRow } from '../../storage/webhook-deliveries.ts';
import type { Metrics } from '../../metrics.ts';
import { publicFailure, requestTarget } from '../../voice/target-request.ts';
import { decideAfterAttempt, type AttemptResult } from './webhook-retry.ts';
import { signatureHeaders } from './webhook-signing.ts';
import { attemptCrmDelivery } from './crm-delivery.ts';
import { attemptRecordingFetch, type RecordingSources } from './recording-fetch.ts';
import { DEFAULT_LANES, pickFair, type LaneSpec } from './delivery-lanes.ts';
import { wakeTimer } from '../runtime/wake-timer.ts';

/** Look at the table at least this often, whatever the timer was armed for. */
const MAX_SLEEP_MS = 10_000;
/** After a failed look at the table (the database), look again this soon. */
const RETRY_MS = 1000;
/** A carrier's recording file may be long: its download gets more time than a webhook's answer. */
const RECORDING_FETCH_TIMEOUT_MS = 120_000;
/** Of a receiver's answer only this much is read; the rest is never downloaded. */
const MAX_ANSWER_BYTES = 4096;

export interface WebhookOutboxDeps {
  storage: Storage;
  clock: () => number;
  log: Logger;
  metrics?: Metrics;
  /** ALLOW_PRIVATE_NETWORK_TARGETS. */
  allowPrivate: boolean;
  /** The whole exchange of one attempt (15 s in production). */
  timeoutMs: number;
  /** Waits after each failed attempt (webhook-retry.ts DEFAULT_RETRY_SCHEDULE_MS). */
  schedule: readonly number[];
  /** The lanes and their places (the webhook.test endpoint's own attempts come on top); default DEFAULT_LANES. */
  lanes?: readonly LaneSpec[];
  /** Where the retry jitter comes from; [0, 1). */
  random?: () => number;
  /** An https agent of the caller's (tests: one that trusts the receiver's own CA). */
  agent?: Agent;
  /** PUBLIC_BASE_URL: a fetched carrier recording's link (actors/outbox/recording-fetch.ts); without it none is fetched. */
  publicBaseUrl?: string;
  /** Where carrier recordings may come from (TWILIO_API_BASE); default TWILIO_API_BASE's default. */
  recordingSources?: RecordingSources;
  /** RECORDINGS_BUCKET_URL is set: fetched carrier recordings are uploaded there. */
  recordingsToBucket?: boolean;
}

/** What one attempt came to, as the webhook.test endpoint reports it. */
export interface AttemptReport {
  id: string;
  url: string;
  /** The receiver's HTTP status; null when there was no answer. */
  statusCode: number | null;
  /** True for a 2xx. */
  ok: boolean;
  /** Why there was no usable answer (timeout, refused address, connection). */
  error: string | null;
}

export interface WebhookOutbox {
  /** Starts sending: whatever is pending now (deliveries that survived a restart) and whatever comes. */
  start(): void;
  /** Stops the timer, aborts attempts in flight (they stay pending) and waits for them to unwind. */
  stop(): Promise<void>;
  /** Sends these deliveries now, beside the in-flight bound, and resolves with each first attempt. */
  attemptNow(ids: string[]): Promise<AttemptReport[]>;
  /** Sends everything due now and resolves when those attempts have ended (tests drive the worker with it). */
  runDue(): Promise<void>;
  /** Pending deliveries (the /metrics backlog gauge). */
  backlog(): number;
}

export function createWebhookOutbox(deps: WebhookOutboxDeps): WebhookOutbox {
  const { storage, clock, log } = deps;
  const repo = storage.webhookDeliveries;
  const random = deps.random ?? Math.random;
  const lanes = (deps.lanes ?? DEFAULT_LANES).map((spec) => ({ spec, out: new Map<string, string>() }));
  type Lane = (typeof lanes)[number];
  const laneOf = (row: DeliveryRow): Lane | undefined => lanes.find((l) => l.spec.kinds.includes(row.kind));
  const recordingSources = deps.recordingSources ?? { twilioApiBase: 'https://api.twilio.com', allowPrivate: deps.allowPrivate };
  const inFlight = new Map<string, Promise<AttemptReport | null>>();
  let pumpQueued = false;
  let running = false;
  const timer = wakeTimer(() => pump(), MAX_SLEEP_MS);
  let abort = new AbortController();
  let unsubscribe: (() => void) | null = null;

  function armIn(ms: number): void {
    if (running) timer.in(ms);
  }

  /** One look at the table after this turn's work, however many asked for it. */
  function pumpSoon(): void {
    if (!running || pumpQueued) return;
    pumpQueued = true;
    setImmediate(() => {
      pumpQueued = false;
      pump();
    });
  }

  /** Takes due rows not in flight, lane by lane within their places, and arms the timer for the next one. */
  function pump(): void {
    if (!running) return;
    try {
      // One `now` for both questions: read twice, a row falling due in between (a timer
      // fires up to a millisecond early by the wall clock; a loaded machine stretches the
      // gap) was neither taken as due nor found as next, and waited out MAX_SLEEP_MS.
      const now = clock();
      for (const lane of lanes) fillLane(lane, now);
      const next = repo.nextDueAfter(now);
      armIn(next === null ? MAX_SLEEP_MS : next - now);
    } catch (err) {
      log.error({ err }, 'webhook outbox: reading due deliveries failed; retrying');
      armIn(RETRY_MS);
    }
  }

  /**
   * Fills a lane's free places: asks for due rows of accounts below their cap, lets
   * pickFair deal them, and asks again until the places are full or nothing is left (an
   * account reaching its cap drops out of the next question).
   */
  function fillLane(lane: Lane, now: number): void {
    const { spec, out } = lane;
    for (;;) {
      const room = spec.max - out.size;
      if (room <= 0) return;
      const outByAccount = new Map<string, number>();
      for (const account of out.values()) outByAccount.set(account, (outByAccount.get(account) ?? 0) + 1);
      const full = [...outByAccount].filter(([, n]) => n >= spec.perAccount).map(([a]) => a);
      const due = repo.dueInLane(now, spec.kinds, full, [...inFlight.keys()], room * spec.perAccount);
      const picked = pickFair(due, outByAccount, room, spec.perAccount);
      if (picked.length === 0) return;
      for (const row of picked) launch(row);
    }
  }

  /** Sends everything due now, every lane and account at once: the test driver's runDue. */
  function launchAllDue(): Promise<unknown>[] {
    return repo
      .due(clock(), 1_000_000)
      .filter((r) => !inFlight.has(r.id))
      .map((r) => launch(r));
  }

  function launch(row: DeliveryRow): Promise<AttemptReport | null> {
    const lane = laneOf(row);
    lane?.out.set(row.id, row.account_id);
    const p = attempt(row).finally(() => {
      inFlight.delete(row.id);
      lane?.out.delete(row.id);
      // A freed place and a recorded outcome: look again (after this turn's work).
      pumpSoon();
    });
    inFlight.set(row.id, p);
    return p;
  }

  /** One attempt: start committed, request, outcome committed. Null when the row was no longer pending. */
  async function attempt(row: DeliveryRow): Promise<AttemptReport | null> {
    const started = clock();
    // CRM and recording deliveries are not signed: the CRM knows us by the integration's
    // token, a carrier's media URL by the account's credentials (or its own signature).
    const signed = row.kind === 'webhook';
    let secrets: string[] = [];
    try {
      if (signed) secrets = storage.integrations.signingSecrets(row.account_id, started);
      // Committed before the request leaves; a row erased or finished meanwhile is not sent.
      if ((signed && secrets.length === 0) || !repo.markAttempt(row.id, started)) return null;
    } catch (err) {
      log.error({ err, delivery_id: row.id }, 'webhook outbox: recording an attempt failed; it is not sent now');
      return null;
    }
    const signal = abort.signal;
    const result = signed
      ? await sendWebhook(row, secrets, started, signal)
      : row.kind === 'recording'
        ? deps.publicBaseUrl === undefined
          ? { kind: 'abandon' as const, message: 'this process does not fetch recordings' }
          : await attemptRecordingFetch(row, {
              storage,
              clock,
              publicBaseUrl: deps.publicBaseUrl,
              sources: recordingSources,
              timeoutMs: RECORDING_FETCH_TIMEOUT_MS,
              signal,
              toBucket: deps.recordingsToBucket ?? false,
              ...(deps.agent ? { agent: deps.agent } : {}),
            })
        : await attemptCrmDelivery(row, { storage, clock, timeoutMs: deps.timeoutMs, signal });
    // Shutting down: the outcome of an aborted attempt is not known; the row stays due.
    if (signal.aborted) return null;
    const outcome = decideAfterAttempt({ attempts: row.attempts + 1, result, now: clock(), schedule: deps.schedule, jitter: random() });
    record(row, outcome);
    if (row.kind === 'recording' && outcome.status === 'failed') recordingWillNotCome(row);
    return {
      id: row.id,
      url: row.url,
      statusCode: result.kind === 'answer' ? result.status : null,
      ok: outcome.status === 'delivered',
      error: result.kind === 'answer' ? null : result.message,
    };
  }

  /** The signed POST of a webhook delivery's payload to its URL. */
  async function sendWebhook(row: DeliveryRow, secrets: string[], started: number, signal: AbortSignal): Promise<AttemptResult> {
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Switchboard-Webhooks/1',
      ...signatureHeaders(secrets, row.id, Math.floor(started / 1000), row.payload),
    };
    let result: AttemptResult;
    try {
      const answer = await requestTarget(row.url, {
        body: row.payload,
        headers,
        timeoutMs: deps.timeoutMs,
        maxResponseBytes: MAX_ANSWER_BYTES,
        oversize: 'truncate',
        allowPrivate: deps.allowPrivate,
        signal,
        ...(deps.agent ? { agent: deps.agent } : {}),
      });
      const retryAfter = answer.headers['retry-after'];
      result = { kind: 'answer', status: answer.status, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter };
    } catch (err) {
      // What the deliveries list shows: the category, never the socket's message (a port scanner otherwise).
      result = { kind: 'error', message: publicFailure(err) };
    }
    return result;
  }

  /** A recording fetch failed for good: call.completed need not wait for the file any longer. */
  function recordingWillNotCome(row: DeliveryRow): void {
    try {
      const internalId = (JSON.parse(row.payload) as { internal_id?: unknown }).internal_id;
      if (typeof internalId !== 'string') return;
      storage.recordings.giveUp(row.account_id, internalId);
      storage.analysis.wake(internalId, clock());
    } catch (err) {
      log.error({ err, delivery_id: row.id }, 'webhook outbox: a failed recording fetch could not release the call; its analysis waits out its bound');
    }
  }

  function record(row: DeliveryRow, outcome: AttemptOutcome): void {
    try {
      repo.recordOutcome(row.id, outcome);
    } catch (err) {
      // Not recorded: the row stays pending and due, and is sent again (at least once).
      log.error({ err, delivery_id: row.id }, 'webhook outbox: recording an outcome failed; the delivery will be sent again');
      return;
    }
    const kind = outcome.status === 'pending' ? 'retry' : outcome.status;
    deps.metrics?.count('switchboard_webhook_attempts_total', 'Webhook delivery attempts by what they led to: delivered, retry or failed.', 'outcome', kind);
    if (outcome.status !== 'delivered') {
      log.info(
        { delivery_id: row.id, event: row.event, attempts: row.attempts + 1, status_code: outcome.statusCode, error: outcome.error, outcome: outcome.status },
        outcome.status === 'failed' ? 'webhook delivery failed for good' : 'webhook delivery attempt failed; will retry',
      );
    }
  }

  if (deps.metrics) {
    deps.metrics.gauge('switchboard_webhook_backlog', 'Webhook deliveries pending: due now, in flight or waiting for a retry.', () => repo.pendingCount());
  }

  return {
    start() {
      if (running) return;
      running = true;
      abort = new AbortController();
      // Told inside the enqueuing transaction: look after it has committed.
      unsubscribe = repo.onEnqueued(() => pumpSoon());
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
    async attemptNow(ids) {
      const reports = await Promise.all(
        ids.map((id) => {
          const out = inFlight.get(id);
          if (out) return out;
          const row = repo.get(id);
          return row && row.status === 'pending' ? launch(row) : Promise.resolve(null);
        }),
      );
      return reports.filter((r): r is AttemptReport => r !== null);
    },
    async runDue() {
      await Promise.allSettled(launchAllDue());
    },
    backlog: () => repo.pendingCount(),
  };
}
