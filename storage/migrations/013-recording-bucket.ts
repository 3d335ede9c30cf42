// Recordings in a bucket (issue 23): where a call's recording lives, and the durable
// transfers between the data directory and the bucket. An upload row is committed once
// the file is on disk, before the first request leaves, and removed in the transaction
// that attaches the recording, so a recording waiting for the bucket survives any number
// of failed attempts and restarts. A delete row outlives its call and its account (no
// foreign key): the object goes even when the row that pointed at it is long gone.
import type { Migration } from './index.ts';

export const recordingBucket: Migration = {
  version: 13,
  name: 'recording-bucket',
  sql: `
ALTER TABLE calls ADD COLUMN recording_store TEXT;   -- where recording_path lives: NULL the data directory, 'bucket' RECORDINGS_BUCKET_URL
CREATE TABLE recording_transfers (
  path TEXT PRIMARY KEY,                 -- recordings/<token>.mp3: the file under DATA_DIR and the object's name in the bucket
  action TEXT NOT NULL CHECK (action IN ('upload', 'delete')),
  account_id TEXT,                       -- upload: the call's account
  internal_id TEXT,                      -- upload: the call
  seconds REAL,                          -- upload: the recording's length
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,      -- epoch ms; 0 is due at once
  last_error TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX recording_transfers_due ON recording_transfers(next_attempt_at);
CREATE INDEX recording_transfers_call ON recording_transfers(internal_id) WHERE internal_id IS NOT NULL;
`,
};
