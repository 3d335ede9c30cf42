// The operator's command line (`npm run admin -- <command> …`), run beside the service on
// the same data folder. This file parses arguments and prints; the work is done by the
// storage modules and the number import the API uses (voice/carriers/number-import.ts),
// so the command and the API cannot drift apart. Exit codes: 0 done, 1 not found or
// refused, 2 a usage error. Results are JSON on stdout; errors are one line on stderr.
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig, type Config } from './config.ts';
import { openDatabase, type Db } from './storage/db.ts';
import { createAccountsRepo, type Plan } from './storage/accounts.ts';
import { createAccountOverview } from './storage/account-overview.ts';
import { createAccountErasure } from './storage/account-erasure.ts';
import { createAccountExport } from './storage/account-export.ts';
import { backupDatabase, BackupRefused } from './storage/backup.ts';
import { randomBase62 } from './storage/ids.ts';
import { createPhoneNumbersRepo, type Provider } from './storage/phone-numbers.ts';
import { createSecretBox, loadSecretsKey } from './storage/secret-box.ts';
import { secretsKeyFits } from './storage/secrets-check.ts';
import { credentialsFrom, importNumber, NumberImportError, type CredentialFields } from './voice/carriers/number-import.ts';

const HELP = `usage: npm run admin -- <command> [arguments] [options]

Runs beside the running service on the same data folder (DATA_DIR, default ./data): every
write waits up to SQLITE_BUSY_TIMEOUT_MS (default 5000 ms) for the service's lock instead of
failing. The service sees plan changes and revoked keys within a second.

  list-accounts                                  every account: plan, limit, usage this UTC month
  show-account <account_id>                      one account, the same way
  set-plan <account_id> <payg|starter|scale|enterprise> [limit]
                                                 change the plan; enterprise needs the limit
  revoke-key <key_id> [--force]                  revoke an API key; --force also revokes an
                                                 account's last active key (locking it out)
  add-number <account_id> <agent_id> <+E.164> --provider twilio|telnyx <credentials>
                                                 import a number with source "dashboard": the carrier
                                                 checks the credentials and the number is pointed at
                                                 PUBLIC_BASE_URL, as POST /v1/phone-numbers does
      twilio: --twilio-account-sid AC… --twilio-auth-token …
      telnyx: --telnyx-api-key … --telnyx-connection-id … --telnyx-public-key …
  export-account <account_id> [--out <file>] [--force]
                                                 the account's data as one JSON document (no secrets)
  erase-account <account_id> --yes [--force]     erase the account and everything in it; refused while
                                                 it has live calls, campaigns or unsent texts unless
                                                 --force (only with the service stopped)
  backup <file> [--force]                        an online, consistent copy of the database (SQLite's
                                                 backup API) while the service runs and writes
  help                                           this text

Exit codes: 0 done, 1 not found or refused, 2 usage error.`;

const PLANS: readonly Plan[] = ['payg', 'starter', 'scale', 'enterprise'];
const BOOLEAN_FLAGS = new Set(['yes', 'force', 'help']);
const CREDENTIAL_FLAGS = ['twilio-account-sid', 'twilio-auth-token', 'telnyx-api-key', 'telnyx-connection-id', 'telnyx-public-key'];
const VALUE_FLAGS = new Set(['provider', 'out', ...CREDENTIAL_FLAGS]);
// The API's E.164 rule (http/schemas.ts).
const E164 = /^\+[1-9]\d{7,14}$/;

/** Exit 2: the command line itself is wrong. */
class UsageError extends Error {}
/** Exit 1: no such thing, or the command will not do it. */
class Refused extends Error {}

interface Args {
  positional: string[];
  flags: Map<string, string | true>;
}

function parseArgs(argv: string[]): Args {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    if (BOOLEAN_FLAGS.has(name) && eq < 0) flags.set(name, true);
    else if (VALUE_FLAGS.has(name)) {
      const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      flags.set(name, value);
    } else throw new UsageError(`unknown option ${arg}`);
  }
  return { positional, flags };
}

interface Context {
  db: Db;
  config: Config;
  args: string[];
  flags: Map<string, string | true>;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function accountOrRefuse(db: Db, id: string): void {
  if (!createAccountsRepo(db).getAccount(id)) throw new Refused(`no account ${id}`);
}

interface Command {
  /** Positional arguments, for the usage line. */
  args: string;
  min: number;
  max: number;
  flags: string[];
  run(ctx: Context): unknown;
}

const COMMANDS: Record<string, Command> = {
  'list-accounts': {
    args: '',
    min: 0,
    max: 0,
    flags: [],
    run({ db }) {
      return createAccountOverview(db).list(Date.now());
    },
  },
  'show-account': {
    args: '<account_id>',
    min: 1,
    max: 1,
    flags: [],
    run({ db, args: [id] }) {
      const account = createAccountOverview(db).get(id!, Date.now());
      if (!account) throw new Refused(`no account ${id}`);
      return account;
    },
  },
  'set-plan': {
    args: '<account_id> <plan> [limit]',
    min: 2,
    max: 3,
    flags: [],
    run({ db, args: [id, plan, limit] }) {
      if (!PLANS.includes(plan as Plan)) throw new UsageError(`plan must be one of ${PLANS.join(', ')}`);
      const accounts = createAccountsRepo(db);
      try {
        if (!accounts.setPlan(id!, plan as Plan, limit === undefined ? undefined : Number(limit))) throw new Refused(`no account ${id}`);
      } catch (err) {
        if (err instanceof Refused) throw err;
        throw new UsageError((err as Error).message);
      }
      const a = accounts.getAccount(id!)!;
      return { account_id: a.id, plan: a.plan, concurrency_limit: a.concurrency_limit };
    },
  },
  'revoke-key': {
    args: '<key_id>',
    min: 1,
    max: 1,
    flags: ['force'],
    run({ db, args: [keyId], flags }) {
      const accounts = createAccountsRepo(db);
      const key = accounts.findKey(keyId!);
      if (!key) throw new Refused(`no key ${keyId}`);
      const result = accounts.revokeKeyAsOperator(key.account_id, key.id, Date.now(), flags.has('force'));
      if (result === 'last_active_key') {
        throw new Refused(
          `${key.id} is the last active key of account ${key.account_id}: revoking it locks the account out, since no key is left to create another. Pass --force to revoke it anyway.`,
        );
      }
      const after = accounts.findKey(key.id)!;
      return { key_id: key.id, account_id: key.account_id, revoked_at: iso(after.revoked_at), already_revoked: key.revoked_at !== null };
    },
  },
  'add-number': {
    args: '<account_id> <agent_id> <phone_number>',
    min: 3,
    max: 3,
    flags: ['provider', ...CREDENTIAL_FLAGS],
    async run({ db, config, args: [accountId, agentId, phoneNumber], flags }) {
      const provider = flags.get('provider');
      if (provider !== 'twilio' && provider !== 'telnyx') throw new UsageError('--provider must be twilio or telnyx');
      if (!E164.test(phoneNumber!)) throw new UsageError(`${phoneNumber} is not E.164: a leading + and the country code, e.g. +14155550123`);
      const fields: CredentialFields = Object.fromEntries(
        CREDENTIAL_FLAGS.filter((f) => flags.has(f)).map((f) => [f.replaceAll('-', '_'), String(flags.get(f))]),
      );
      const credentials = (() => {
        try {
          return credentialsFrom(provider as Provider, fields);
        } catch (err) {
          // Only credential failures come before the network: each names its field, here its option.
          if (err instanceof NumberImportError && 'field' in err.failure) throw new UsageError(`--${err.failure.field.replaceAll('_', '-')}: ${err.message}`);
          throw err;
        }
      })();
      accountOrRefuse(db, accountId!);
      const box = createSecretBox(loadSecretsKey(config.dataDir, config.secretsKeyHex));
      if (!secretsKeyFits(db, box)) {
        throw new Refused('the secrets key does not open the values this database holds: run the command with the service’s SECRETS_KEY');
      }
      const numbers = createPhoneNumbersRepo(db, box);
      if (!numbers.ownsAgent(accountId!, agentId!)) throw new Refused(`no agent ${agentId} on account ${accountId}`);
      const endpoints = { twilioApiBase: config.twilioApiBase, telnyxApiBase: config.telnyxApiBase, publicBaseUrl: config.publicBaseUrl };
      const request = { accountId: accountId!, phoneNumber: phoneNumber!, agentId: agentId!, credentials, source: 'dashboard' as const };
      const result = await importNumber({ numbers, endpoints, clock: Date.now, newEventsToken: () => randomBase62(32) }, request).catch((err: unknown) => {
        throw err instanceof NumberImportError ? new Refused(`the carrier refused the import: ${err.message}`) : err;
      });
      if (result.kind === 'agent_gone') throw new Refused(`no agent ${agentId} on account ${accountId}`);
      if (result.kind === 'conflict') {
        const h = result.holder;
        throw new Refused(
          h.kind === 'other_agent'
            ? `${phoneNumber} is already on ${h.agentId === null ? 'no agent' : `agent ${h.agentId}`} of this account: move it with PATCH /v1/phone-numbers/{phone_number}`
            : `${phoneNumber} is already imported on another account`,
        );
      }
      const r = result.row;
      return {
        phone_number: r.phone_number,
        account_id: r.account_id,
        agent_id: r.agent_id,
        provider: r.provider,
        source: r.source,
        carrier_number_sid: r.carrier_number_sid,
        inbound_enabled: r.inbound_enabled === 1,
        outbound_enabled: r.outbound_enabled === 1,
        created: result.kind === 'created',
      };
    },
  },
  'export-account': {
    args: '<account_id>',
    min: 1,
    max: 1,
    flags: ['out', 'force'],
    run({ db, args: [accountId], flags }) {
      const doc = createAccountExport(db).exportAccount(accountId!, Date.now());
      if (!doc) throw new Refused(`no account ${accountId}`);
      const text = `${JSON.stringify(doc, null, 2)}\n`;
      const out = flags.get('out');
      if (out === undefined) return text;
      const file = resolve(String(out));
      if (!flags.has('force') && existsSync(file)) throw new Refused(`${file} exists; pass --force to replace it`);
      // Personal data: readable by the operator only.
      writeFileSync(file, text, { mode: 0o600 });
      return { file, bytes: Buffer.byteLength(text), account_id: accountId, calls: doc.calls.length, sms_messages: doc.sms_messages.length };
    },
  },
  'erase-account': {
    args: '<account_id>',
    min: 1,
    max: 1,
    flags: ['yes', 'force'],
    run({ db, args: [accountId], flags }) {
      if (!flags.has('yes')) throw new Refused(`refusing without --yes: this erases account ${accountId} and everything in it, for good`);
      const result = createAccountErasure(db, createAccountsRepo(db)).erase(accountId!, { onlyIfIdle: !flags.has('force') });
      if (result.kind === 'not_found') throw new Refused(`no account ${accountId}`);
      if (result.kind === 'live') {
        const actors = Object.entries(result.live.actors).map(([kind, n]) => `${n} live ${kind} actor(s)`);
        const texts = result.live.texts > 0 ? [`${result.live.texts} unsent text(s)`] : [];
        throw new Refused(
          `account ${accountId} has ${[...actors, ...texts].join(', ')}: this command cannot stop them inside the running service. ` +
            'Use DELETE /v1/account?confirm=true (it hangs up live calls first), or wait for them to end; --force erases anyway, only with the service stopped.',
        );
      }
      // Deletes of recordings in the bucket are committed; the running service's bucket worker
      // carries them out within seconds (or at its next start), retrying until the store confirms.
      return { account_id: accountId, erased: true, calls: result.calls, recordings: result.recordings, sms_messages: result.sms, bucket_deletes_queued: result.bucketDeletes.length };
    },
  },
  backup: {
    args: '<file>',
    min: 1,
    max: 1,
    flags: ['force'],
    async run({ db, args: [file], flags }) {
      try {
        return await backupDatabase(db, file!, { overwrite: flags.has('force') });
      } catch (err) {
        throw err instanceof BackupRefused ? new Refused(err.message) : err;
      }
    },
  },
};

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    console.error(HELP);
    return 2;
  }
  let parsed: Args;
  try {
    parsed = parseArgs(argv);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  const [name, ...args] = parsed.positional;
  if (parsed.flags.has('help') || name === 'help') {
    console.log(HELP);
    return 0;
  }
  const command = name === undefined ? undefined : COMMANDS[name];
  if (!command) {
    console.error(`${name === undefined ? 'no command' : `unknown command ${name}`}\n\n${HELP}`);
    return 2;
  }
  const usageLine = `usage: npm run admin -- ${name} ${command.args}`.trimEnd();
  const stray = [...parsed.flags.keys()].find((f) => !command.flags.includes(f));
  if (args.length < command.min || args.length > command.max || stray !== undefined) {
    console.error(`${stray === undefined ? 'wrong number of arguments' : `${name} takes no --${stray}`}\n${usageLine} (npm run admin -- --help)`);
    return 2;
  }

  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    console.error(`the environment does not configure the service: ${(err as Error).message}`);
    return 2;
  }
  const file = join(config.dataDir, 'switchboard.db');
  // Opening would create an empty database: a wrong DATA_DIR must say so instead.
  if (!existsSync(file)) {
    console.error(`no database at ${resolve(file)}: set DATA_DIR to the service's data folder`);
    return 1;
  }
  const db = openDatabase(file, { busyTimeoutMs: config.sqliteBusyTimeoutMs });
  try {
    const result = await command.run({ db, config, args, flags: parsed.flags });
    process.stdout.write(typeof result === 'string' ? result : `${JSON.stringify(result)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${name}: ${err.message}\n${usageLine}`);
      return 2;
    }
    if (err instanceof Refused) {
      console.error(`${name}: ${err.message}`);
      return 1;
    }
    const code = (err as { code?: unknown }).code;
    if (code === 'SQLITE_BUSY') {
      console.error(`${name}: the database stayed locked for ${config.sqliteBusyTimeoutMs} ms (SQLITE_BUSY_TIMEOUT_MS); nothing was changed, try again`);
      return 1;
    }
    console.error(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    db.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
