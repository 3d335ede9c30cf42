// The service's runtime with a second kind: a real SQLite file (openDatabase, the
// project's migrations), storage with a secret box, the call system the service uses
// (createCallSystem: the generic supervisor with the real call kind registered, and the
// durable scheduler), and the test's `ticker` kind registered on that same supervisor.
// Used in-process by second-kind.test.ts and as a child process by second-kind-process.ts.
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { createCallSystem, type CallSystem } from '../../actors/calls/call-system.ts';
import type { Scheduler } from '../../actors/runtime/scheduler.ts';
import { Metrics } from '../../metrics.ts';
import { openDatabase, type Db } from '../../storage/db.ts';
import { createStorage, type Storage } from '../../storage/index.ts';
import { createSecretBox, loadSecretsKey } from '../../storage/secret-box.ts';
import type { CallInput } from '../../machines/call-events.ts';
import { PROCESS_IDS, TICKER_KIND, tickerKind, type TickerInput } from './ticker-kind.ts';

export interface TickerRuntime {
  db: Db;
  storage: Storage;
  system: CallSystem;
  notesFile: string;
  /** Creates the account (limit 0), a queued call that never dials, and a ticker, and STARTs it. */
  seed(o: { target: number; intervalMs: number; callCreatedAt?: number }): void;
  close(): void;
}

export function createTickerRuntime(o: { dataDir: string; clock: () => number; log: Logger; noteDelayMs: number; poke?: boolean }): TickerRuntime {
  const { dataDir, clock, log } = o;
  const dbFile = join(dataDir, 'switchboard.db');
  const db = openDatabase(dbFile);
  const storage = createStorage(db, createSecretBox(loadSecretsKey(dataDir, undefined)));
  // Only committed rows are visible on this connection: the ticker's effect checks its intent on it.
  const reader = new Database(dbFile, { readonly: true });
  const intentRow = reader.prepare<[string], { id: string }>('SELECT id FROM effect_intents WHERE id = ?');

  // The runtime lacks this: a commit that arms a deadline earlier than the scheduler's
  // timer does not tell the scheduler, which finds it within MAX_DELAY_MS (1 s) at
  // worst. Calls' deadlines are 15 s and more; a 50 ms ticker would tick once a second.
  // Until the supervisor pokes the scheduler itself, storage's `deadlines.set` does it
  // here, after the commit (a microtask, then the scheduler's own timer).
  // SECOND_KIND_NO_POKE=1 runs without it: the same tests pass, each tick up to 1 s
  // late (with SECOND_KIND_TARGET=8 the SIGKILL test stays within a minute).
  let scheduler: Scheduler | null = null;
  const poking: Storage = {
    ...storage,
    deadlines: {
      ...storage.deadlines,
      set(d) {
        storage.deadlines.set(d);
        queueMicrotask(() => scheduler?.poke());
      },
    },
  };
  const system = createCallSystem({
    storage: (o.poke ?? process.env['SECOND_KIND_NO_POKE'] !== '1') ? poking : storage,
    // The queued call never dials (its account's limit is 0): no carrier is reached.
    config: { publicBaseUrl: 'http://127.0.0.1:9', twilioApiBase: 'http://127.0.0.1:9', telnyxApiBase: 'http://127.0.0.1:9' },
    clock,
    log,
    metrics: new Metrics(),
  });
  scheduler = system.scheduler;
  const notesFile = join(dataDir, 'notes.log');
  system.supervisor.register(
    tickerKind({ db, clock, notesFile, noteDelayMs: o.noteDelayMs, isCommitted: (id) => intentRow.get(id) !== undefined }),
  );

  return {
    db,
    storage,
    system,
    notesFile,
    seed({ target, intervalMs, callCreatedAt }) {
      const now = clock();
      const { accountId, tickerId, callId } = PROCESS_IDS;
      storage.tx(() => {
        storage.accounts.createAccount(accountId, now);
        db.prepare('UPDATE accounts SET concurrency_limit = 0 WHERE id = ?').run(accountId);
      });
      const call: CallInput = {
        id: callId,
        accountId,
        agentId: null,
        direction: 'outbound',
        provider: 'twilio',
        phoneNumber: '+15005550006',
        from: '+15005550006',
        to: '+15005550007',
        carrierCallId: null,
        amdEnabled: false,
        maxDurationSec: 600,
        campaignId: null,
        queued: true,
        createdAt: callCreatedAt ?? now,
      };
      system.start(call);
      const input: TickerInput = { id: tickerId, accountId, target, intervalMs };
      system.supervisor.start(TICKER_KIND, tickerId, input);
      system.supervisor.send(tickerId, { type: 'START', at: clock() });
    },
    close() {
      system.stop();
      reader.close();
      db.close();
    },
  };
}
