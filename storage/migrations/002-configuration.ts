// What a customer configures before the first call: agents, imported numbers with
// their encrypted carrier credentials, caller context, integrations, custom functions
// and the webhook signing secret. Every row carries account_id: all queries scope by it.
import type { Migration } from './index.ts';

export const configuration: Migration = {
  version: 2,
  name: 'configuration',
  sql: `
CREATE TABLE agents (
  id TEXT PRIMARY KEY,                 -- internal UUID
  agent_id TEXT NOT NULL UNIQUE,       -- public id, agent_…
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  api_key_id TEXT NOT NULL,
  name TEXT NOT NULL,
  is_active INTEGER NOT NULL DEFAULT 1,
  settings TEXT NOT NULL,              -- JSON of every other settable field
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX agents_account_created ON agents(account_id, created_at DESC);

ALTER TABLE accounts ADD COLUMN webhook_secret BLOB;   -- sealed whsec_…, made on first use

CREATE TABLE phone_numbers (
  phone_number TEXT PRIMARY KEY,       -- E.164; one import across all accounts
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  agent_id TEXT REFERENCES agents(agent_id) ON DELETE SET NULL,
  provider TEXT NOT NULL CHECK (provider IN ('twilio', 'telnyx')),
  source TEXT NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'dashboard')),
  carrier_number_sid TEXT,             -- carrier A PN… sid; null for carrier B
  carrier_number_id TEXT,              -- the carrier's own id of the number (both carriers)
  credentials BLOB NOT NULL,           -- sealed JSON of the carrier credentials
  events_token TEXT UNIQUE,            -- carrier B: unguessable token in the event URL
  inbound_enabled INTEGER NOT NULL DEFAULT 1,
  outbound_enabled INTEGER NOT NULL DEFAULT 1,
  custom_prompt TEXT,
  voice_id TEXT,
  sms_reply_enabled INTEGER NOT NULL DEFAULT 0,
  sms_prompt TEXT,
  web_prompt TEXT,
  speaking_rate REAL,
  dtmf_enabled INTEGER,
  record_call INTEGER,
  voicemail_leave_enabled INTEGER,
  voicemail_message TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX phone_numbers_account_created ON phone_numbers(account_id, created_at DESC);
CREATE INDEX phone_numbers_agent ON phone_numbers(agent_id);

CREATE TABLE callers (
  phone_number TEXT NOT NULL REFERENCES phone_numbers(phone_number) ON DELETE CASCADE,
  caller_number TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  name TEXT,
  email TEXT,
  phone TEXT,
  location TEXT,
  reference_id TEXT,
  preference TEXT,
  last_call TEXT,                      -- engine-written
  open_item TEXT,                      -- engine-written
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (phone_number, caller_number)
) WITHOUT ROWID;
CREATE INDEX callers_account ON callers(account_id, phone_number, updated_at DESC);

-- One row per (kind, number) or (kind, agent): webhook, webhook2, automation, precall, crm.
CREATE TABLE integrations (
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('webhook', 'webhook2', 'automation', 'precall', 'crm')),
  phone_number TEXT REFERENCES phone_numbers(phone_number) ON DELETE CASCADE,
  agent_id TEXT REFERENCES agents(agent_id) ON DELETE CASCADE,
  config TEXT NOT NULL,                -- JSON of the non-secret settings
  secret BLOB,                         -- sealed token (CRM), never returned
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK ((phone_number IS NULL) <> (agent_id IS NULL))
);
CREATE UNIQUE INDEX integrations_by_number ON integrations(phone_number, kind) WHERE phone_number IS NOT NULL;
CREATE UNIQUE INDEX integrations_by_agent ON integrations(agent_id, kind) WHERE agent_id IS NOT NULL;

CREATE TABLE custom_functions (
  id TEXT PRIMARY KEY,                 -- fn_…
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  phone_number TEXT NOT NULL REFERENCES phone_numbers(phone_number) ON DELETE CASCADE,
  name TEXT NOT NULL,
  url TEXT NOT NULL,
  description TEXT,
  parameters TEXT,                     -- JSON Schema object, or null
  created_at INTEGER NOT NULL,
  UNIQUE (phone_number, name)
);
`,
};
