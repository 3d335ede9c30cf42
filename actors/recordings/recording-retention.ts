// Recording retention (api.md: 90 days): recordings saved longer ago than the retention
// are deleted, file first and row second, so a crash between the two leaves a row whose
// file is already gone (the next sweep clears it), never a file nothing points at. The
// sweep's only state is the calls table (`recording_saved_at`): it runs at start, so a
// recording that expired while the service was down goes at the next start, and then
// every RECORDING_SWEEP_INTERVAL_MS, on the service's clock. A recording kept in the
// bucket is forgotten in the transaction that commits its delete (storage/recording-transfers.ts):
// the bucket's worker (bucket-transfers.ts) deletes the object, retrying until the store
// confirms, and the link is dead from that commit on.
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';

/** Rows per batch: a sweep after a long downtime deletes in slices, yielding between them. */
const BATCH = 200;
const DAY_MS = 86_400_000;

export interface RecordingRetentionDeps {
  storage: Pick<Storage, 'recordings' | 'recordingTransfers' | 'tx'>;
  clock: () => number;
  log: Logger;
  retentionDays: number;
  sweepIntervalMs: number;
}

export interface RecordingRetention {
  start(): void;
  stop(): Promise<void>;
  /** One sweep now; resolves with how many recordings it deleted. */
  sweep(): Promise<number>;
}

export function createRecordingRetention(deps: RecordingRetentionDeps): RecordingRetention {
  const { storage, clock, log } = deps;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;

  async function sweepOnce(): Promise<number> {
    const dataDir = storage.recordings.dataDir;
    if (dataDir === null) return 0;
    let deleted = 0;
    for (;;) {
      const rows = storage.recordings.expiredBefore(clock() - deps.retentionDays * DAY_MS, BATCH);
      for (const r of rows) {
        if (r.recording_store === 'bucket') {
          storage.tx(() => {
            storage.recordingTransfers.enqueueDelete(r.recording_path, clock());
            storage.recordings.forget(r);
          });
          deleted++;
          continue;
        }
        try {
          await unlink(join(dataDir, r.recording_path));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        }
        storage.recordings.forget(r);
        deleted++;
      }
      if (rows.length < BATCH) break;
    }
    if (deleted > 0) log.info({ deleted, retention_days: deps.retentionDays }, 'expired call recordings deleted');
    return deleted;
  }

  function sweep(): Promise<number> {
    running ??= sweepOnce()
      .catch((err: unknown) => {
        log.error({ err }, 'recording retention sweep failed; it runs again at the next interval');
        return 0;
      })
      .finally(() => (running = null));
    return running;
  }

  return {
    start() {
      void sweep();
      timer = setInterval(() => void sweep(), deps.sweepIntervalMs);
      timer.unref();
    },
    async stop() {
      if (timer !== null) clearInterval(timer);
      timer = null;
      await running;
    },
    sweep,
  };
}
