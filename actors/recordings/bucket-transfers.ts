// The bucket's worker: runs the durable transfers of storage/recording-transfers.ts —
// uploads of recordings written under DATA_DIR, deletes of objects whose call was erased
// or whose retention ran out — and records each outcome.
//   - Wakes when a transfer is committed (after that transaction), when one ends, and on
//     a timer for the next due row that never sleeps longer than MAX_SLEEP_MS (rows
//     another process commits, the admin command's erasures, are seen too).
//   - An upload counts only once the store answered 2xx: then, in one transaction, the
//     call's row points at the recording in the bucket, the upload row goes and the call's
//     analysis is woken; the file under DATA_DIR is removed after that commit. A failed
//     attempt is tried again on the retry schedule, whose last wait repeats for ever: a
//     recording is never given up while its file exists, and a restart resumes it.
//   - A call erased while its upload was in flight: the object just stored is deleted.
//   - Without a bucket (RECORDINGS_BUCKET_URL removed since), uploads left waiting are
//     attached where their files are, in the data directory; deletes wait for a bucket.
//   - The log names the call and the store's answer, never an object's name (its token is
//     the recording link's credential) nor a credential.
import { readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Metrics } from '../../metrics.ts';
import type { Storage } from '../../storage/index.ts';
import type { TransferRow } from '../../storage/recording-transfers.ts';
import type { BucketClient } from '../../voice/recording/bucket-client.ts';
import { wakeTimer } from '../runtime/wake-timer.ts';
import { objectName, recordingLink } from './recording-store.ts';

/** Waits after each failed attempt; the last repeats for ever. */
export const DEFAULT_BUCKET_RETRY_MS: readonly number[] = [2_000, 10_000, 30_000, 60_000, 300_000, 600_000];
/** Look at the table at least this often, whatever the timer was armed for. */
const MAX_SLEEP_MS = 10_000;
/** After a failed look at the table (the database), look again this soon. */
const RETRY_MS = 1000;
/** A transfer whose run threw (its commit failed) is left alone this long: no busy loop on a sick database. */
const COOLDOWN_MS = 2000;
/** Transfers of the background worker at once; an erasure's deletes run beside them. */
const MAX_IN_FLIGHT = 4;
const DELETE_NOW_CONCURRENCY = 8;
/**
 * How long an erasure's answer (DELETE /v1/calls…, DELETE /v1/account) waits for the
 * bucket to confirm its deletes; past it the answer goes and the deletes stay queued.
 */
export const ERASURE_BUCKET_WAIT_MS = 10_000;

export interface BucketTransfersDeps {
  storage: Pick<Storage, 'tx' | 'recordings' | 'recordingTransfers' | 'analysis'>;
  /** Null when no bucket is configured. */
  bucket: BucketClient | null;
  publicBaseUrl: string;
  clock: () => number;
  log: Logger;
  retryScheduleMs?: readonly number[];
  /** Where the retry jitter comes from; [0, 1). */
  random?: () => number;
  metrics?: Metrics;
}

export interface BucketTransfers {
  /** Runs what is due now (transfers that survived a restart) and whatever comes. */
  start(): void;
  /** Stops the timer, aborts transfers in flight (their rows stay due) and waits for them to unwind. */
  stop(): Promise<void>;
  /** Runs everything due now and resolves when those transfers have ended (tests). */
  runDue(): Promise<void>;
  /**
   * Runs the committed deletes of these objects now and waits for them, `waitMs` at most:
   * true when the store confirmed every one. Any not confirmed stays queued and is retried.
   */
  deleteNow(paths: readonly string[], waitMs: number): Promise<boolean>;
}

export function createBucketTransfers(deps: BucketTransfersDeps): BucketTransfers {
  const { storage, bucket, clock, log } = deps;
  const transfers = storage.recordingTransfers;
  const schedule = deps.retryScheduleMs ?? DEFAULT_BUCKET_RETRY_MS;
  const random = deps.random ?? Math.random;
  const inFlight = new Map<string, Promise<void>>();
  const cooling = new Map<string, number>();
  const timer = wakeTimer(() => pump(), MAX_SLEEP_MS);
  let running = false;
  let abort = new AbortController();
  let unsubscribe: (() => void) | null = null;

  function armIn(ms: number): void {
    if (running) timer.in(ms);
  }

  function pump(): void {
    if (!running) return;
    try {
      const now = clock();
      launchDue(now, MAX_IN_FLIGHT - inFlight.size);
      const next = transfers.nextDueAfter(now);
      armIn(next === null ? MAX_SLEEP_MS : next - now);
    } catch (err) {
      log.error({ err }, 'recording bucket: reading due transfers failed; retrying');
      armIn(RETRY_MS);
    }
  }

  function launchDue(now: number, room: number): Promise<void>[] {
    if (room <= 0) return [];
    for (const [path, until] of cooling) if (until <= now) cooling.delete(path);
    return transfers.due(now, [...inFlight.keys(), ...cooling.keys()], room).map(launch);
  }

  function launch(row: TransferRow): Promise<void> {
    const p = run(row)
      .catch((err: unknown) => {
        cooling.set(row.path, clock() + COOLDOWN_MS);
        log.error({ err, call_id: row.internal_id, action: row.action }, 'recording bucket: a transfer failed to record its outcome; it stays due');
      })
      .finally(() => {
        inFlight.delete(row.path);
        if (running) setImmediate(pump);
      });
    inFlight.set(row.path, p);
    return p;
  }

  async function run(row: TransferRow): Promise<void> {
    const signal = abort.signal;
    if (row.action === 'delete') {
      if (bucket === null) {
        failed(row, 'no bucket is configured (RECORDINGS_BUCKET_URL)');
        return;
      }
      try {
        await bucket.remove(objectName(row.path), signal);
      } catch (err) {
        if (!signal.aborted) failed(row, messageOf(err));
        return;
      }
      transfers.finish(row.path, 'delete');
      return;
    }
    const full = join(storage.recordings.dataDir!, row.path);
    if (bucket === null) {
      keepHere(row, full);
      return;
    }
    let bytes: Buffer;
    try {
      bytes = await readFile(full);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') lost(row);
      else failed(row, `the file cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      return;
    }
    try {
      await bucket.put(objectName(row.path), bytes, signal);
    } catch (err) {
      // Shutting down: whether it landed is not known; the row stays due for the next start.
      if (!signal.aborted) failed(row, messageOf(err));
      return;
    }
    await landed(row, full);
  }

  /** The store confirmed the upload: the call points at it now, or (erased meanwhile) the object goes. */
  async function landed(row: TransferRow, full: string): Promise<void> {
    const now = clock();
    const attached = storage.tx(() => {
      const current = transfers.get(row.path);
      if (current?.action === 'upload' && storage.recordings.attach(row.account_id!, row.internal_id!, recordingLink(deps.publicBaseUrl, row.path), row.path, row.seconds ?? 0, now, 'bucket')) {
        transfers.finish(row.path, 'upload');
        // The call's analysis may be waiting for this recording (actors/post-call/analysis-plan.ts).
        storage.analysis.wake(row.internal_id!, now);
        return true;
      }
      transfers.enqueueDelete(row.path, now);
      return false;
    });
    await removeLocal(full);
    if (attached) log.info({ call_id: row.internal_id, attempts: row.attempts + 1 }, 'call recording saved in the bucket');
    else log.info({ call_id: row.internal_id }, 'the call was erased while its recording was uploaded; the object is deleted');
  }

  /** No bucket any more: the recording stays where its file is, in the data directory. */
  function keepHere(row: TransferRow, full: string): void {
    const now = clock();
    const attached = storage.tx(() => {
      const ok = storage.recordings.attach(row.account_id!, row.internal_id!, recordingLink(deps.publicBaseUrl, row.path), row.path, row.seconds ?? 0, now, 'local');
      transfers.finish(row.path, 'upload');
      if (ok) storage.analysis.wake(row.internal_id!, now);
      return ok;
    });
    if (!attached) void removeLocal(full);
    else log.warn({ call_id: row.internal_id }, 'no bucket is configured: a recording that waited for one is kept in the data directory');
  }

  /** Its file is gone (removed by hand): nothing is left to upload, and the call stops waiting for it. */
  function lost(row: TransferRow): void {
    const now = clock();
    storage.tx(() => {
      if (!transfers.finish(row.path, 'upload')) return;
      storage.recordings.giveUp(row.account_id!, row.internal_id!);
      storage.analysis.wake(row.internal_id!, now);
    });
    log.error({ call_id: row.internal_id }, 'a recording waiting for the bucket has lost its file in the data directory; it cannot be uploaded');
  }

  function failed(row: TransferRow, message: string): void {
    const attempt = row.attempts + 1;
    const wait = schedule[Math.min(attempt, schedule.length) - 1] ?? MAX_SLEEP_MS;
    const at = clock() + Math.round(wait * (0.9 + 0.2 * random()));
    transfers.retryAt(row.path, row.action, at, message);
    log.warn({ call_id: row.internal_id, action: row.action, attempt, retry_in_ms: at - clock(), error: message }, 'recording bucket transfer failed; it is tried again');
  }

  async function removeLocal(full: string): Promise<void> {
    try {
      await unlink(full);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ err }, 'recording bucket: a local file of an uploaded recording could not be removed');
    }
  }

  if (deps.metrics) {
    deps.metrics.gauge('switchboard_recording_uploads_pending', 'Recordings written under DATA_DIR and waiting for the bucket to confirm their upload.', () => transfers.pending().upload);
    deps.metrics.gauge('switchboard_recording_deletes_pending', 'Recordings to be deleted from the bucket, waiting for it to confirm.', () => transfers.pending().delete);
  }

  return {
    start() {
      if (running) return;
      running = true;
      abort = new AbortController();
      // Told inside the enqueuing transaction: look once it has committed.
      unsubscribe = transfers.onEnqueued(() => setImmediate(() => armIn(0)));
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
      await Promise.allSettled(launchDue(clock(), Number.MAX_SAFE_INTEGER));
    },
    async deleteNow(paths, waitMs) {
      if (paths.length === 0) return true;
      if (bucket === null) return false;
      const queue = [...paths];
      let confirmed = true;
      let expired = false;
      const work = async (): Promise<void> => {
        for (let path = queue.shift(); path !== undefined && !expired; path = queue.shift()) {
          const out = inFlight.get(path);
          const row = out ? undefined : transfers.get(path);
          if (out) await out;
          else if (row?.action === 'delete') await launch(row);
          if (transfers.get(path)?.action === 'delete') confirmed = false;
        }
      };
      let deadline: NodeJS.Timeout | undefined;
      const timedOut = new Promise<false>((resolve) => {
        deadline = setTimeout(() => resolve(false), waitMs);
      });
      try {
        const all = Promise.all(Array.from({ length: Math.min(DELETE_NOW_CONCURRENCY, queue.length) }, work)).then(() => confirmed && queue.length === 0);
        return await Promise.race([all, timedOut]);
      } finally {
        // What was not reached stays queued for the background worker.
        expired = true;
        clearTimeout(deadline);
      }
    },
  };
}

/** A failed request's category for the log and the row (a BucketError's message names no credential). */
function messageOf(err: unknown): string {
  return err instanceof Error && err.name === 'BucketError' ? err.message : 'the request failed';
}
