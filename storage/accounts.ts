// Accounts and their API keys. Every key query is scoped by account, except the
// look-ups by key id that authentication (and the operator's admin command) need before
// they know the account.
import type { Db } from './db.ts';

export type Plan = 'payg' | 'starter' | 'scale' | 'enterprise';
export const PLAN_LIMITS: Record<Exclude<Plan, 'enterprise'>, number> = { payg: 10, starter: 25, scale: 100 };

export interface AccountRow {
  id: string;
  plan: Plan;
  concurrency_limit: number;
  created_at: number;
}

export interface KeyRow {
  id: string;
  account_id: string;
  name: string | null;
  email: string | null;
  secret_hash: Buffer;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export type RevokeResult = 'revoked' | 'not_found' | 'last_active_key';

export function createAccountsRepo(db: Db) {
  const insertAccount = db.prepare(
    'INSERT INTO accounts (id, plan, concurrency_limit, created_at) VALUES (?, ?, ?, ?)',
  );
  const selectAccount = db.prepare<[string], AccountRow>('SELECT * FROM accounts WHERE id = ?');
  const updatePlan = db.prepare('UPDATE accounts SET plan = ?, concurrency_limit = ? WHERE id = ?');
  const deleteAccountRow = db.prepare('DELETE FROM accounts WHERE id = ?');
  const deleteIdempotency = db.prepare('DELETE FROM idempotency_keys WHERE scope = ?');
  const insertKey = db.prepare(
    'INSERT INTO api_keys (id, account_id, name, email, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const selectKey = db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE id = ?');
  const selectKeys = db.prepare<[string], KeyRow>(
    'SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at DESC, id DESC',
  );
  const selectOwnKey = db.prepare<[string, string], KeyRow>(
    'SELECT * FROM api_keys WHERE id = ? AND account_id = ?',
  );
  const countActive = db.prepare<[string], { n: number }>(
    'SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ? AND revoked_at IS NULL',
  );
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND account_id = ?');
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
  const selectAccounts = db.prepare<[], AccountRow>('SELECT id, plan, concurrency_limit, created_at FROM accounts ORDER BY created_at, id');

  // Authentication reads a key row on every request, and an autocommit read in WAL
  // mode costs several lock syscalls. Rows are cached here, beside the code that
  // revokes or deletes keys, which drops the entry in the same call: a key revoked by
  // this process fails on the very next request. The operator's admin command revokes
  // from another process, which cannot reach this map, so an entry lives at most
  // CACHE_TTL_MS: such a revocation is seen within a second. Bounded so a flood of ids
  // cannot grow it.
  const keyCache = new Map<string, { row: KeyRow; until: number }>();
  const KEY_CACHE_MAX = 10_000;
  // Account rows are read on every request that needs the plan or limit. Changes made
  // by this process drop the entry at once; the admin command's are seen within CACHE_TTL_MS.
  const accountCache = new Map<string, { row: AccountRow; until: number }>();
  const CACHE_TTL_MS = 1000;

  const revokeTx = db.transaction((accountId: string, keyId: string, now: number, allowLast: boolean): RevokeResult => {
    const key = selectOwnKey.get(keyId, accountId);
    if (!key) return 'not_found';
    if (key.revoked_at !== null) return 'revoked';
    if (!allowLast && countActive.get(accountId)!.n <= 1) return 'last_active_key';
    revoke.run(now, keyId, accountId);
    keyCache.delete(keyId);
    return 'revoked';
  });

  return {
    createAccount(id: string, now: number, plan: Plan = 'payg'): AccountRow {
      const limit = plan === 'enterprise' ? PLAN_LIMITS.scale : PLAN_LIMITS[plan];
      insertAccount.run(id, plan, limit, now);
      return { id, plan, concurrency_limit: limit, created_at: now };
    },
    /** Every account, oldest first: the operator's list. */
    listAccounts(): AccountRow[] {
      return selectAccounts.all();
    },
    getAccount(id: string): AccountRow | undefined {
      const now = performance.now();
      const cached = accountCache.get(id);
      if (cached && cached.until > now) return cached.row;
      const row = selectAccount.get(id);
      if (row) {
        if (accountCache.size >= KEY_CACHE_MAX) accountCache.clear();
        accountCache.set(id, { row, until: now + CACHE_TTL_MS });
      } else accountCache.delete(id);
      return row;
    },
    /** The operator's plan change; enterprise takes an explicit limit. */
    setPlan(id: string, plan: Plan, limit?: number): boolean {
      const value = plan === 'enterprise' ? limit : PLAN_LIMITS[plan];
      if (value === undefined || !Number.isInteger(value) || value < 1) {
        throw new Error('enterprise plans need a whole-number concurrency limit of at least 1');
      }
      accountCache.delete(id);
      return updatePlan.run(plan, value, id).changes === 1;
    },
    /** Erases the account; foreign keys cascade to every row it owns. */
    deleteAccount: db.transaction((id: string): void => {
      for (const k of selectKeys.all(id)) keyCache.delete(k.id);
      accountCache.delete(id);
      deleteIdempotency.run(id);
      deleteAccountRow.run(id);
    }),
    createKey(k: { id: string; accountId: string; name: string | null; email: string | null; secretHash: Buffer; now: number }): void {
      insertKey.run(k.id, k.accountId, k.name, k.email, k.secretHash, k.now);
    },
    /** Authentication's look-up, not scoped by account (it finds the account). */
    findKeyForAuth(keyId: string): KeyRow | undefined {
      const now = performance.now();
      const cached = keyCache.get(keyId);
      if (cached && cached.until > now) return cached.row;
      const row = selectKey.get(keyId);
      if (row) {
        if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
        keyCache.set(keyId, { row, until: now + CACHE_TTL_MS });
      } else keyCache.delete(keyId);
      return row;
    },
    /** The operator's look-up of any key, uncached: it runs in the admin command's own process. */
    findKey(keyId: string): KeyRow | undefined {
      return selectKey.get(keyId);
    },
    listKeys(accountId: string): KeyRow[] {
      return selectKeys.all(accountId);
    },
    revokeKey(accountId: string, keyId: string, now: number): RevokeResult {
      return revokeTx(accountId, keyId, now, false);
    },
    /**
     * The operator's revocation (a leaked key). `allowLast` revokes the account's last
     * active key too, which locks the account out: no key is left to make another.
     */
    revokeKeyAsOperator(accountId: string, keyId: string, now: number, allowLast: boolean): RevokeResult {
      return revokeTx(accountId, keyId, now, allowLast);
    },
    touchKey(keyId: string, now: number): void {
      touch.run(now, keyId);
    },
  };
}

export type AccountsRepo = ReturnType<typeof createAccountsRepo>;
