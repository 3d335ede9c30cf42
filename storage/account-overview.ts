// The operator's view of accounts (`list-accounts`, `show-account`): plan, limit, when
// the account was made, and its usage this UTC month, the figures GET /v1/usage gives
// by default.
import type { Db } from './db.ts';
import { createAccountsRepo, type AccountRow } from './accounts.ts';
import { createUsageRepo, startOfUtcMonth } from './usage.ts';

export function createAccountOverview(db: Db) {
  const accounts = createAccountsRepo(db);
  const usage = createUsageRepo(db);

  function view(a: AccountRow, since: number, now: number) {
    const { calls, charged_minutes, sms_sent, sms_received } = usage.forAccount(a.id, since, now);
    return {
      account_id: a.id,
      plan: a.plan,
      concurrency_limit: a.concurrency_limit,
      created_at: new Date(a.created_at).toISOString(),
      usage: { calls, charged_minutes, sms_sent, sms_received },
    };
  }

  return {
    /** Every account, oldest first, with the month its usage counts from. */
    list(now: number) {
      const since = startOfUtcMonth(now);
      const list = accounts.listAccounts().map((a) => view(a, since, now));
      return { accounts: list, count: list.length, usage_since: new Date(since).toISOString() };
    },
    /** One account the same way; undefined when there is none. */
    get(accountId: string, now: number) {
      const a = accounts.getAccount(accountId);
      return a && view(a, startOfUtcMonth(now), now);
    },
  };
}
