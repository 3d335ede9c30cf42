// The durable actor runtime (issue 7): effect intents committed with the transition
// that produced them, deadlines routed by actor kind, and the per-call prompt kept,
// sealed, while its call is queued or live.
import type { Migration } from './index.ts';

export const durableRuntime: Migration = {
  version: 4,
  name: 'durable-runtime',
  sql: `
CREATE TABLE effect_intents (
  id TEXT PRIMARY KEY,                  -- stable: <actor id>:<effect>:<n>; carrier B's command_id derives from it
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  actor_kind TEXT NOT NULL,
  actor_id TEXT NOT NULL,
  effect TEXT NOT NULL,                 -- dial, hangup, findDial, checkCall, …
  params TEXT NOT NULL,                 -- JSON
  created_at INTEGER NOT NULL,
  sent_at INTEGER,                      -- committed just before the request left: after a crash, it may have arrived
  attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX effect_intents_actor ON effect_intents(actor_id);

ALTER TABLE deadlines ADD COLUMN actor_kind TEXT NOT NULL DEFAULT 'call';

CREATE TABLE call_prompts (
  internal_id TEXT PRIMARY KEY,         -- call_…
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  sealed BLOB NOT NULL                  -- AES-256-GCM under SECRETS_KEY; deleted when the call ends
);
`,
};
