// SMS (issue 21): every message in and out is a row of sms_messages (created by
// migration 1 for usage), now with what sending it exactly once needs. An outbound row is
// its own effect intent: committed `queued` before anything leaves, `sending` (attempted_at)
// in a commit right before the carrier request, then `sent` with the carrier's id, or
// `failed`; status callbacks move it on to `delivered`, `undelivered` or `failed`. A row
// left `sending` by a crash has an unknown outcome and is reconciled with the carrier's
// own list, never sent blindly again.
// SMS campaigns are actors of their own kind; their row is the projection of the actor's
// status beside what creation fixed. Recipients are rows in send order (`seq`); a row's
// state follows its message (`delivered` once the carrier accepted it, `failed` when it
// was refused or failed later, `cancelled` with its campaign), so counting rows by state
// is what the API shows and the counts always add up.
// Opt-outs are per sending number: STOP from a phone stops that number texting it.
import type { Migration } from './index.ts';

export const sms: Migration = {
  version: 12,
  name: 'sms',
  sql: `
ALTER TABLE sms_messages ADD COLUMN agent_id TEXT;
ALTER TABLE sms_messages ADD COLUMN origin TEXT NOT NULL DEFAULT 'api';   -- api | campaign | reply | call | booking | opt_out | inbound
ALTER TABLE sms_messages ADD COLUMN campaign_id TEXT;
ALTER TABLE sms_messages ADD COLUMN campaign_seq INTEGER;
ALTER TABLE sms_messages ADD COLUMN call_id TEXT;                         -- the call an in-call text was sent from
ALTER TABLE sms_messages ADD COLUMN carrier TEXT;                         -- twilio | telnyx
ALTER TABLE sms_messages ADD COLUMN carrier_message_id TEXT;
ALTER TABLE sms_messages ADD COLUMN error_code TEXT;
ALTER TABLE sms_messages ADD COLUMN error_message TEXT;
ALTER TABLE sms_messages ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sms_messages ADD COLUMN attempted_at INTEGER;                 -- the last request's commit: set, the request may have left
ALTER TABLE sms_messages ADD COLUMN sent_at INTEGER;                      -- the carrier accepted it
ALTER TABLE sms_messages ADD COLUMN updated_at INTEGER;
ALTER TABLE sms_messages ADD COLUMN reply_state TEXT;                     -- inbound: pending | answered | failed | none
CREATE UNIQUE INDEX sms_carrier_id ON sms_messages(carrier, carrier_message_id) WHERE carrier_message_id IS NOT NULL;
CREATE INDEX sms_unsettled ON sms_messages(status, created_at) WHERE status IN ('queued', 'sending');
CREATE INDEX sms_thread ON sms_messages(account_id, from_number, to_number, created_at);
CREATE INDEX sms_campaign ON sms_messages(campaign_id, campaign_seq) WHERE campaign_id IS NOT NULL;
CREATE INDEX sms_awaiting_report ON sms_messages(created_at) WHERE status = 'sent';
CREATE INDEX sms_pending_replies ON sms_messages(reply_state) WHERE reply_state = 'pending';

CREATE TABLE sms_campaigns (
  id TEXT PRIMARY KEY,                 -- smscamp_…
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  from_number TEXT NOT NULL,
  name TEXT NOT NULL,
  message_template TEXT NOT NULL,
  context_prompt TEXT,
  reply_window_hours INTEGER NOT NULL,
  schedule_type TEXT NOT NULL CHECK (schedule_type IN ('now', 'schedule', 'draft')),
  scheduled_at INTEGER,
  status TEXT NOT NULL CHECK (status IN ('draft', 'scheduled', 'running', 'done', 'cancelled')),
  total_count INTEGER NOT NULL,
  source TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER
);
CREATE INDEX sms_campaigns_account ON sms_campaigns(account_id, created_at DESC);

CREATE TABLE sms_recipients (
  campaign_id TEXT NOT NULL REFERENCES sms_campaigns(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,                -- send order, 0 .. total_count - 1
  phone TEXT NOT NULL,                 -- E.164
  variables TEXT,                      -- JSON object; NULL when none
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
  message_id TEXT,
  PRIMARY KEY (campaign_id, seq)
);
CREATE INDEX sms_recipients_state ON sms_recipients(campaign_id, state);

-- What erased calls and messages counted for GET /v1/usage (api.md: DELETE /v1/calls
-- leaves billing records untouched): no numbers, no content, only what usage sums.
CREATE TABLE usage_erased (
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  what TEXT NOT NULL CHECK (what IN ('call', 'sms')),
  direction TEXT NOT NULL,
  at INTEGER NOT NULL,                 -- a call's started_at (else created_at); a message's created_at
  minutes REAL NOT NULL DEFAULT 0,     -- a call's charged_minutes
  counted INTEGER NOT NULL DEFAULT 1   -- a message: 1 when usage counts it (received, or taken by the carrier)
);
CREATE INDEX usage_erased_account ON usage_erased(account_id, at);

CREATE TABLE sms_opt_outs (
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  number TEXT NOT NULL,                -- our sending number
  phone TEXT NOT NULL,                 -- who texted STOP
  created_at INTEGER NOT NULL,
  PRIMARY KEY (account_id, number, phone)
);
`,
};
