// The operator's command line, run beside the service on the same data folder:
//   npm run admin -- set-plan <account_id> <payg|starter|scale|enterprise> [concurrency_limit]
//   npm run admin -- show-account <account_id>
// Plans are not an API operation: customers cannot raise their own limits.
import { join } from 'node:path';
import { loadConfig } from './config.ts';
import { openDatabase } from './storage/db.ts';
import { createAccountsRepo, type Plan } from './storage/accounts.ts';

const PLANS: Plan[] = ['payg', 'starter', 'scale', 'enterprise'];

function usage(): never {
  console.error('usage: npm run admin -- set-plan <account_id> <payg|starter|scale|enterprise> [concurrency_limit]');
  console.error('       npm run admin -- show-account <account_id>');
  process.exit(2);
}

const [command, accountId, plan, limit] = process.argv.slice(2);
if (!command || !accountId) usage();
const config = loadConfig();
const db = openDatabase(join(config.dataDir, 'switchboard.db'));
const accounts = createAccountsRepo(db);
try {
  if (command === 'set-plan') {
    if (!plan || !PLANS.includes(plan as Plan)) usage();
    const n = limit === undefined ? undefined : Number(limit);
    if (!accounts.setPlan(accountId, plan as Plan, n)) {
      console.error(`no account ${accountId}`);
      process.exitCode = 1;
    }
  }
  if (command !== 'set-plan' && command !== 'show-account') usage();
  const a = accounts.getAccount(accountId);
  if (a) console.log(JSON.stringify({ account_id: a.id, plan: a.plan, concurrency_limit: a.concurrency_limit }));
  else process.exitCode = 1;
} catch (e) {
  console.error(e instanceof Error ? e.message : e);
  process.exitCode = 1;
} finally {
  db.close();
}
