// Calls as actors: the rest of the call record, the actors' persisted snapshots and
// the durable deadlines of the scheduler.
import type { Migration } from './index.ts';

export const calls: Migration = {
  version: 3,
  name: 'calls',
  sql: `
ALTER TABLE calls ADD COLUMN internal_id TEXT;             -- call_…, the actor id
ALTER TABLE calls ADD COLUMN carrier_call_id TEXT;
ALTER TABLE calls ADD COLUMN provider TEXT;
ALTER TABLE calls ADD COLUMN phone_number TEXT;            -- the account's own number on the call
ALTER TABLE calls ADD COLUMN media_token TEXT;             -- one-time media websocket token
ALTER TABLE calls ADD COLUMN transcript TEXT;
ALTER TABLE calls ADD COLUMN summary TEXT;
ALTER TABLE calls ADD COLUMN sentiment TEXT;
ALTER TABLE calls ADD COLUMN successful INTEGER;
ALTER TABLE calls ADD COLUMN extracted TEXT;               -- JSON object or null
ALTER TABLE calls ADD COLUMN bookings TEXT NOT NULL DEFAULT '[]';
ALTER TABLE calls ADD COLUMN recording_url TEXT;
ALTER TABLE calls ADD COLUMN recording_path TEXT;          -- file under DATA_DIR, when recorded here
ALTER TABLE calls ADD COLUMN recording_duration_seconds REAL;
ALTER TABLE calls ADD COLUMN voicemail_detected INTEGER NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN avg_latency_ms REAL;
ALTER TABLE calls ADD COLUMN analysis_status TEXT NOT NULL DEFAULT 'pending';
ALTER TABLE calls ADD COLUMN updated_at INTEGER;
CREATE UNIQUE INDEX calls_internal_id ON calls(internal_id);
CREATE INDEX calls_carrier_call_id ON calls(carrier_call_id);
CREATE UNIQUE INDEX calls_media_token ON calls(media_token);
CREATE INDEX calls_account_started ON calls(account_id, COALESCE(started_at, created_at) DESC);

CREATE TABLE actor_snapshots (
  actor_id TEXT PRIMARY KEY,            -- call_… (campaigns later)
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,                   -- 'call'
  snapshot TEXT NOT NULL,               -- JSON of actor.getPersistedSnapshot()
  done INTEGER NOT NULL DEFAULT 0,      -- reached a final state: not restored at boot
  updated_at INTEGER NOT NULL
);
CREATE INDEX actor_snapshots_unfinished ON actor_snapshots(done, kind);

CREATE TABLE deadlines (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  actor_id TEXT NOT NULL,
  name TEXT NOT NULL,                   -- e.g. max_duration; one live deadline per (actor, name)
  event TEXT NOT NULL,                  -- JSON of the event to send
  due_at INTEGER NOT NULL,
  UNIQUE (actor_id, name)
);
CREATE INDEX deadlines_due ON deadlines(due_at);
`,
};
