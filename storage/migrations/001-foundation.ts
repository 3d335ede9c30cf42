// Accounts, API keys, idempotency records, and the call and SMS tables that usage
// reads (later migrations add their remaining columns). Times are epoch milliseconds.
import type { Migration } from './index.ts';

export const foundation: Migration = {
  version: 1,
  name: 'foundation',
  sql: `
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  plan TEXT NOT NULL DEFAULT 'payg',
  concurrency_limit INTEGER NOT NULL DEFAULT 10,
  created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  name TEXT,
  email TEXT,
  secret_hash BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX api_keys_account ON api_keys(account_id, created_at);

-- scope is the account id, or 'ip:<address>' for unauthenticated key creation.
CREATE TABLE idempotency_keys (
  scope TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  key TEXT NOT NULL,
  body_hash BLOB NOT NULL,
  status INTEGER NOT NULL,
  response BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (scope, method, path, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);

CREATE TABLE calls (
  call_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  agent_id TEXT,
  direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
  call_status TEXT NOT NULL,
  from_number TEXT NOT NULL,
  to_number TEXT NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  duration_ms INTEGER,
  ended_reason TEXT,
  charged_minutes REAL NOT NULL DEFAULT 0,
  campaign_id TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX calls_account_created ON calls(account_id, created_at DESC);

CREATE TABLE sms_messages (
  message_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
  from_number TEXT NOT NULL,
  to_number TEXT NOT NULL,
  body TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX sms_account_created ON sms_messages(account_id, created_at DESC);
`,
};
