// Erasing a whole account: the one path of DELETE /v1/account and the operator's
// `erase-account`. Its calls go through call erasure first, so recording files kept in
// the data directory go with their rows, and deletes of those kept in the bucket are
// committed with them (nothing else would ever find either: the retention sweep reads
// the calls table); then the account row, and every row it owns with it (foreign keys
// cascade). One transaction: a failure leaves everything in place.
import type { Db } from './db.ts';
import type { AccountsRepo } from './accounts.ts';
import { createCallErasure } from './call-erasure.ts';

/** Work of the account a running service may still be doing. */
export interface LiveWork {
  /** Actors that have not reached a final state (calls, campaigns), by kind. */
  actors: Record<string, number>;
  /** Texts queued or being handed to the carrier. */
  texts: number;
}

export type AccountErasure =
  /** `bucketDeletes`: recordings in the bucket whose deletes were committed (the service's bucket worker runs them). */
  | { kind: 'erased'; calls: number; recordings: number; sms: number; bucketDeletes: string[] }
  | { kind: 'not_found' }
  /** Refused (`onlyIfIdle`): the account has live work; nothing was erased. */
  | { kind: 'live'; live: LiveWork };

export function createAccountErasure(db: Db, accounts: Pick<AccountsRepo, 'deleteAccount'>) {
  const calls = createCallErasure(db);
  const exists = db.prepare<[string], { id: string }>('SELECT id FROM accounts WHERE id = ?');
  const unfinished = db.prepare<[string], { kind: string; n: number }>(
    'SELECT kind, COUNT(*) AS n FROM actor_snapshots WHERE account_id = ? AND done = 0 GROUP BY kind ORDER BY kind',
  );
  const unsent = db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM sms_messages WHERE account_id = ? AND status IN ('queued', 'sending')");

  function liveWork(accountId: string): LiveWork {
    return {
      actors: Object.fromEntries(unfinished.all(accountId).map((r) => [r.kind, r.n])),
      texts: unsent.get(accountId)!.n,
    };
  }

  // The check and the erasure share one write transaction, so no call can be committed
  // between them: a call the service starts after it finds neither account nor number.
  const eraseTx = db.transaction((accountId: string, onlyIfIdle: boolean): AccountErasure => {
    if (!exists.get(accountId)) return { kind: 'not_found' };
    if (onlyIfIdle) {
      const live = liveWork(accountId);
      if (live.texts > 0 || Object.keys(live.actors).length > 0) return { kind: 'live', live };
    }
    const erased = calls.deleteAll(accountId);
    accounts.deleteAccount(accountId);
    return { kind: 'erased', calls: erased.calls, recordings: erased.recordings, sms: erased.sms, bucketDeletes: erased.bucketDeletes };
  });

  return {
    /**
     * Erases the account and everything in it. `onlyIfIdle` refuses while it has live
     * work: the operator's command runs in another process than the service, which would
     * otherwise keep live actors of an account that is gone (the API's route stops them
     * first, then erases).
     */
    erase(accountId: string, opts: { onlyIfIdle: boolean }): AccountErasure {
      return eraseTx.immediate(accountId, opts.onlyIfIdle);
    },
    liveWork,
  };
}

export type AccountErasureRepo = ReturnType<typeof createAccountErasure>;
