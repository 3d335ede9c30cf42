// Per-number (and per-agent pre-call) integrations, custom functions and the account's
// webhook signing secret. Tokens and the secret are sealed here, so no caller can store
// them in clear; every query is scoped by account_id.
import { randomBytes } from 'node:crypto';
import type { Db } from './db.ts';
import type { SecretBox } from './secret-box.ts';

export type IntegrationKind = 'webhook' | 'webhook2' | 'automation' | 'precall' | 'crm';

/** What an integration hangs off: an imported number, or (pre-call only) an agent. */
export type IntegrationTarget = { phoneNumber: string } | { agentId: string };

export interface Integration {
  kind: IntegrationKind;
  /** The non-secret settings, as the route stored them. */
  config: Record<string, unknown>;
  /** The opened token (CRM), or null. Never put it in a response or a log line. */
  secret: string | null;
  created_at: number;
  updated_at: number;
}

export interface CustomFunctionRow {
  id: string;
  account_id: string;
  phone_number: string;
  name: string;
  url: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  created_at: number;
}

interface IntegrationDbRow {
  kind: IntegrationKind;
  config: string;
  secret: Buffer | null;
  created_at: number;
  updated_at: number;
}

interface FunctionDbRow extends Omit<CustomFunctionRow, 'parameters'> {
  parameters: string | null;
}

/** `whsec_` + base64 of 32 random bytes, the Standard Webhooks secret format. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export function createIntegrationsRepo(db: Db, secrets: SecretBox) {
  const ownsNumber = db.prepare<[string, string], { one: number }>(
    'SELECT 1 AS one FROM phone_numbers WHERE phone_number = ? AND account_id = ?',
  );
  const ownsAgent = db.prepare<[string, string], { one: number }>(
    'SELECT 1 AS one FROM agents WHERE agent_id = ? AND account_id = ?',
  );

  const cols = 'kind, config, secret, created_at, updated_at';
  // The same three statements per target column; the partial unique index on that
  // column is the conflict target, and the account check keeps an upsert from ever
  // touching another account's row.
  const statementsOn = (column: 'phone_number' | 'agent_id') => ({
    get: db.prepare<[string, string, IntegrationKind], IntegrationDbRow>(
      `SELECT ${cols} FROM integrations WHERE account_id = ? AND ${column} = ? AND kind = ?`,
    ),
    put: db.prepare(
      `INSERT INTO integrations (account_id, kind, ${column}, config, secret, created_at, updated_at)
       VALUES (@accountId, @kind, @key, @config, @secret, @now, @now)
       ON CONFLICT (${column}, kind) WHERE ${column} IS NOT NULL
       DO UPDATE SET config = excluded.config, secret = excluded.secret, updated_at = excluded.updated_at
       WHERE integrations.account_id = excluded.account_id`,
    ),
    remove: db.prepare(`DELETE FROM integrations WHERE account_id = ? AND ${column} = ? AND kind = ?`),
  });
  const byNumber = statementsOn('phone_number');
  const byAgent = statementsOn('agent_id');
  const statementsFor = (t: IntegrationTarget) => ('phoneNumber' in t ? { s: byNumber, key: t.phoneNumber } : { s: byAgent, key: t.agentId });

  const insertFunction = db.prepare(
    `INSERT INTO custom_functions (id, account_id, phone_number, name, url, description, parameters, created_at)
     VALUES (@id, @account_id, @phone_number, @name, @url, @description, @parameters, @created_at)`,
  );
  const functionByName = db.prepare<[string, string, string], { id: string }>(
    'SELECT id FROM custom_functions WHERE account_id = ? AND phone_number = ? AND name = ?',
  );
  // Creation order: the order in which the functions are offered to the model.
  const listFunctions = db.prepare<[string, string], FunctionDbRow>(
    'SELECT * FROM custom_functions WHERE account_id = ? AND phone_number = ? ORDER BY created_at, rowid',
  );
  const removeFunction = db.prepare('DELETE FROM custom_functions WHERE account_id = ? AND phone_number = ? AND id = ?');

  const selectSecret = db.prepare<[string], { webhook_secret: Buffer | null }>('SELECT webhook_secret FROM accounts WHERE id = ?');
  const setSecretIfUnset = db.prepare('UPDATE accounts SET webhook_secret = ? WHERE id = ? AND webhook_secret IS NULL');
  // A rotation keeps the secret it replaces, still signing until `until` (migration 005).
  const rotate = db.prepare('UPDATE accounts SET webhook_secret = ?, webhook_secret_previous = webhook_secret, webhook_secret_previous_until = ? WHERE id = ?');
  const selectSigning = db.prepare<[string], { webhook_secret: Buffer | null; webhook_secret_previous: Buffer | null; webhook_secret_previous_until: number | null }>(
    'SELECT webhook_secret, webhook_secret_previous, webhook_secret_previous_until FROM accounts WHERE id = ?',
  );

  /** The account's signing secret, made on first use. Undefined only for an unknown account. */
  const webhookSecret = db.transaction((accountId: string): string | undefined => {
    const row = selectSecret.get(accountId);
    if (!row) return undefined;
    if (row.webhook_secret) return secrets.openText(row.webhook_secret);
    setSecretIfUnset.run(secrets.seal(newWebhookSecret()), accountId);
    return secrets.openText(selectSecret.get(accountId)!.webhook_secret!);
  });

  const fromFunctionRow = (r: FunctionDbRow): CustomFunctionRow => ({
    ...r,
    parameters: r.parameters === null ? null : (JSON.parse(r.parameters) as Record<string, unknown>),
  });

  return {
    numberOwned(accountId: string, phoneNumber: string): boolean {
      return ownsNumber.get(phoneNumber, accountId) !== undefined;
    },
    agentOwned(accountId: string, agentId: string): boolean {
      return ownsAgent.get(agentId, accountId) !== undefined;
    },

    get(accountId: string, kind: IntegrationKind, target: IntegrationTarget): Integration | undefined {
      const { s, key } = statementsFor(target);
      const row = s.get.get(accountId, key, kind);
      if (!row) return undefined;
      return {
        kind: row.kind,
        config: JSON.parse(row.config) as Record<string, unknown>,
        secret: row.secret ? secrets.openText(row.secret) : null,
        created_at: row.created_at,
        updated_at: row.updated_at,
      };
    },
    /** Creates or replaces; the caller has checked that the account owns the target. */
    put(accountId: string, kind: IntegrationKind, target: IntegrationTarget, config: Record<string, unknown>, secret: string | null, now: number): void {
      const { s, key } = statementsFor(target);
      s.put.run({ accountId, kind, key, config: JSON.stringify(config), secret: secret === null ? null : secrets.seal(secret), now });
    },
    /** True when a row was there to delete. */
    remove(accountId: string, kind: IntegrationKind, target: IntegrationTarget): boolean {
      const { s, key } = statementsFor(target);
      return s.remove.run(accountId, key, kind).changes > 0;
    },

    /** 'exists' when the number already has a function of that name. */
    createFunction(f: CustomFunctionRow): 'created' | 'exists' {
      if (functionByName.get(f.account_id, f.phone_number, f.name)) return 'exists';
      insertFunction.run({ ...f, parameters: f.parameters === null ? null : JSON.stringify(f.parameters) });
      return 'created';
    },
    listFunctions(accountId: string, phoneNumber: string): CustomFunctionRow[] {
      return listFunctions.all(accountId, phoneNumber).map(fromFunctionRow);
    },
    deleteFunction(accountId: string, phoneNumber: string, functionId: string): boolean {
      return removeFunction.run(accountId, phoneNumber, functionId).changes > 0;
    },

    webhookSecret,
    /**
     * Replaces the secret. The one it replaces keeps signing, beside the new one, until
     * `now + keepPreviousMs` (a second rotation in that window drops the oldest).
     */
    rotateWebhookSecret(accountId: string, now: number, keepPreviousMs: number): string {
      const secret = newWebhookSecret();
      rotate.run(secrets.seal(secret), now + keepPreviousMs, accountId);
      return secret;
    },
    /**
     * The secrets a delivery attempt is signed with now: the current one first (made on
     * first use), then the previous one while it is still within its window after a
     * rotation. Empty only for an unknown account.
     */
    signingSecrets(accountId: string, now: number): string[] {
      const current = webhookSecret(accountId);
      if (current === undefined) return [];
      const row = selectSigning.get(accountId)!;
      const previous = row.webhook_secret_previous !== null && (row.webhook_secret_previous_until ?? 0) > now ? secrets.openText(row.webhook_secret_previous) : null;
      return previous === null ? [current] : [current, previous];
    },
  };
}

export type IntegrationsRepo = ReturnType<typeof createIntegrationsRepo>;
