// The webhook outbox: one row per (event, URL). `enqueue` only INSERTs, so it joins
// the caller's transaction and the delivery exists exactly when the state change that
// caused it does. The worker (actors/outbox/webhook-outbox.ts) commits each attempt's start
// before the request leaves and its outcome after; a pending row is sent until it is
// delivered or its retries run out, across restarts. Queries for the API are scoped
// by account; the worker's are global, by due time. Erasing a call erases its
// deliveries (storage/call-erasure.ts).
import type { Db } from './db.ts';
import { newPrefixedId } from './ids.ts';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';
/** `webhook`: a signed POST of `payload` to `url`; `crm`: a contact upsert and a note at the number's CRM (actors/outbox/crm-delivery.ts). */
export type DeliveryKind = 'webhook' | 'crm' | 'recording';

export interface DeliveryRow {
  id: string;
  account_id: string;
  call_id: string | null;
  event: string;
  url: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
  sent_at: number | null;
  created_at: number;
  delivered_at: number | null;
  kind: DeliveryKind;
  /** What a multi-step delivery (crm) has done so far, as JSON; null for none. */
  progress: string | null;
}

export interface EnqueueRequest {
  accountId: string;
  /** The public call id; null for events about no call (webhook.test). */
  callId: string | null;
  event: string;
  /** Every configured URL; the same URL given twice gets one delivery. */
  urls: string[];
  /** The body; serialised once here, so every attempt sends (and signs) the same bytes. */
  payload: Record<string, unknown>;
  now: number;
  /** When the first attempt is due; default `now` (call.started is enqueued with the connect, due a little later). */
  dueAt?: number;
  /** Default `webhook`. */
  kind?: DeliveryKind;
}

/** What an attempt ended with: sent again at `nextAttemptAt`, or finished. */
export type AttemptOutcome =
  | { status: 'pending'; statusCode: number | null; error: string | null; nextAttemptAt: number }
  | { status: 'delivered'; statusCode: number; at: number }
  | { status: 'failed'; statusCode: number | null; error: string | null };

export interface DeliveryFilters {
  callId?: string | undefined;
  status?: DeliveryStatus | undefined;
  limit: number;
  offset: number;
}

/** The same URL written two ways (`https://a.example` and `https://a.example/`) is one URL. */
export function canonicalUrl(url: string): string {
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
}

export function createWebhookDeliveriesRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO webhook_deliveries (id, account_id, call_id, event, url, payload, status, next_attempt_at, created_at, kind)
     VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
  );
  const due = db.prepare<[number, number], DeliveryRow>(
    "SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, rowid LIMIT ?",
  );
  // A lane's due rows, without the accounts at their cap and the rows already out (JSON
  // arrays, so one statement serves any number of each). The partial due index walks it.
  const dueInLane = db.prepare<Record<string, unknown>, DeliveryRow>(
    `SELECT * FROM webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at <= @now
        AND kind IN (SELECT value FROM json_each(@kinds))
        AND account_id NOT IN (SELECT value FROM json_each(@full))
        AND id NOT IN (SELECT value FROM json_each(@busy))
      ORDER BY next_attempt_at, rowid LIMIT @limit`,
  );
  const earliest = db.prepare<[], { t: number | null }>("SELECT MIN(next_attempt_at) AS t FROM webhook_deliveries WHERE status = 'pending'");
  const earliestAfter = db.prepare<[number], { t: number | null }>(
    "SELECT MIN(next_attempt_at) AS t FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at > ?",
  );
  const pendingCount = db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'");
  const markAttempt = db.prepare("UPDATE webhook_deliveries SET attempts = attempts + 1, sent_at = ? WHERE id = ? AND status = 'pending'");
  const retryLater = db.prepare(
    `UPDATE webhook_deliveries SET last_status_code = ?, last_error = ?, next_attempt_at = ? WHERE id = ? AND status = 'pending'`,
  );
  const delivered = db.prepare(
    `UPDATE webhook_deliveries SET status = 'delivered', last_status_code = ?, last_error = NULL, next_attempt_at = NULL, delivered_at = ?
      WHERE id = ? AND status = 'pending'`,
  );
  const failed = db.prepare(
    `UPDATE webhook_deliveries SET status = 'failed', last_status_code = ?, last_error = ?, next_attempt_at = NULL
      WHERE id = ? AND status = 'pending'`,
  );
  const progress = db.prepare("UPDATE webhook_deliveries SET progress = ? WHERE id = ? AND status = 'pending'");
  const one = db.prepare<[string], DeliveryRow>('SELECT * FROM webhook_deliveries WHERE id = ?');
  const oneOfAccount = db.prepare<[string, string], DeliveryRow>('SELECT * FROM webhook_deliveries WHERE account_id = ? AND id = ?');
  // Optional filters as "? IS NULL OR column = ?", so one statement serves every combination.
  const where = 'account_id = @accountId AND (@callId IS NULL OR call_id = @callId) AND (@status IS NULL OR status = @status)';
  const list = db.prepare<Record<string, unknown>, DeliveryRow>(
    `SELECT * FROM webhook_deliveries WHERE ${where} ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`,
  );
  const count = db.prepare<Record<string, unknown>, { n: number }>(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE ${where}`);

  const ofKind = db.prepare<[string, string, string], { n: number }>(
    "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE account_id = ? AND call_id = ? AND kind = ? AND status != 'failed'",
  );

  const listeners = new Set<(firstDueAt: number) => void>();

  return {
    /**
     * Inserts one pending delivery per distinct URL, due at `dueAt` (default at once), and returns their ids
     * (in the order of `urls`, duplicates dropped). Call it INSIDE the transaction of
     * the state change that causes the event: it only INSERTs. Listeners are told
     * synchronously; they must defer their work until the transaction has committed.
     */
    enqueue(d: EnqueueRequest): string[] {
      const seen = new Set<string>();
      const ids: string[] = [];
      const body = JSON.stringify(d.payload);
      for (const url of d.urls) {
        const key = canonicalUrl(url);
        if (seen.has(key)) continue;
        seen.add(key);
        const id = newPrefixedId('whd');
        insert.run(id, d.accountId, d.callId, d.event, url, body, d.dueAt ?? d.now, d.now, d.kind ?? 'webhook');
        ids.push(id);
      }
      if (ids.length > 0) for (const l of listeners) l(d.dueAt ?? d.now);
      return ids;
    },
    /** A delivery of this kind about the call is pending or delivered (a failed one does not count). */
    hasOfKind(accountId: string, callId: string, kind: DeliveryKind): boolean {
      return ofKind.get(accountId, callId, kind)!.n > 0;
    },
    /** Called after each enqueue (inside its transaction) with when the new rows are due. */
    onEnqueued(listener: (firstDueAt: number) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    /** Pending deliveries due by `now`, oldest due first (every account: the worker's query). */
    due(now: number, limit: number): DeliveryRow[] {
      return due.all(now, limit);
    },
    /**
     * Pending rows of these kinds due by `now`, oldest due first, leaving out the accounts
     * in `fullAccounts` and the rows in `busyIds` (the worker's in-flight bookkeeping).
     */
    dueInLane(now: number, kinds: readonly DeliveryKind[], fullAccounts: readonly string[], busyIds: readonly string[], limit: number): DeliveryRow[] {
      return dueInLane.all({ now, kinds: JSON.stringify(kinds), full: JSON.stringify(fullAccounts), busy: JSON.stringify(busyIds), limit });
    },
    /** When the next pending delivery is due; null when none is pending. */
    earliestDue(): number | null {
      return earliest.get()?.t ?? null;
    },
    /** When the next pending delivery not yet due is due; null when none. */
    nextDueAfter(now: number): number | null {
      return earliestAfter.get(now)?.t ?? null;
    },
    pendingCount(): number {
      return pendingCount.get()!.n;
    },
    /** Committed before the request leaves; false when the row is no longer pending (or gone). */
    markAttempt(id: string, now: number): boolean {
      return markAttempt.run(now, id).changes === 1;
    },
    /** Records an attempt's outcome; false when the row is no longer pending (erased meanwhile). */
    recordOutcome(id: string, o: AttemptOutcome): boolean {
      if (o.status === 'pending') return retryLater.run(o.statusCode, o.error, o.nextAttemptAt, id).changes === 1;
      if (o.status === 'delivered') return delivered.run(o.statusCode, o.at, id).changes === 1;
      return failed.run(o.statusCode, o.error, id).changes === 1;
    },
    /**
     * Commits a step of a multi-step delivery before the request it guards leaves (crm:
     * the note). False when the row is no longer pending (erased or finished meanwhile).
     */
    recordProgress(id: string, value: Record<string, unknown>): boolean {
      return progress.run(JSON.stringify(value), id).changes === 1;
    },

    /** Any account's row: the worker's look-up. */
    get(id: string): DeliveryRow | undefined {
      return one.get(id);
    },
    getForAccount(accountId: string, id: string): DeliveryRow | undefined {
      return oneOfAccount.get(accountId, id);
    },
    /** Newest first. */
    list(accountId: string, f: DeliveryFilters): { rows: DeliveryRow[]; count: number } {
      const params = { accountId, callId: f.callId ?? null, status: f.status ?? null };
      return {
        rows: list.all({ ...params, limit: f.limit, offset: f.offset }),
        count: count.get(params)!.n,
      };
    },
  };
}

export type WebhookDeliveriesRepo = ReturnType<typeof createWebhookDeliveriesRepo>;
