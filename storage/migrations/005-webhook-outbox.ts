// The webhook outbox (issue 10): one delivery row per (event, URL), inserted in the
// same transaction as the state change that caused it, and the account's previous
// signing secret, which keeps verifying for 24 hours after a rotation.
import type { Migration } from './index.ts';

export const webhookOutbox: Migration = {
  version: 5,
  name: 'webhook-outbox',
  sql: `
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,                  -- whd_…; also the webhook-id header, stable across retries
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  call_id TEXT,                         -- the public call id; null for webhook.test
  event TEXT NOT NULL,                  -- call.started, call.completed, webhook.test, …
  url TEXT NOT NULL,
  payload TEXT NOT NULL,                -- the exact body bytes every attempt sends (and signs)
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  last_status_code INTEGER,
  last_error TEXT,
  next_attempt_at INTEGER,              -- null once delivered or failed
  sent_at INTEGER,                      -- the last attempt's start, committed before the request left
  created_at INTEGER NOT NULL,
  delivered_at INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_account ON webhook_deliveries(account_id, created_at DESC);
CREATE INDEX webhook_deliveries_call ON webhook_deliveries(account_id, call_id);

ALTER TABLE accounts ADD COLUMN webhook_secret_previous BLOB;        -- sealed; still signs until the time below
ALTER TABLE accounts ADD COLUMN webhook_secret_previous_until INTEGER;
`,
};
