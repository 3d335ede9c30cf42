// Call recordings (issue 9): when a recording is on its way (call.completed waits for it,
// up to a bound) and when its file was saved (the 90-day retention counts from there).
import type { Migration } from './index.ts';

export const recordings: Migration = {
  version: 9,
  name: 'recordings',
  sql: `
ALTER TABLE calls ADD COLUMN recording_expected_until INTEGER;   -- epoch ms: a recording is coming; call.completed waits until then at most
ALTER TABLE calls ADD COLUMN recording_saved_at INTEGER;         -- epoch ms the file was stored; retention counts from it
ALTER TABLE calls ADD COLUMN recording_requested_at INTEGER;     -- epoch ms the carrier was asked to record (recording_source provider)
CREATE INDEX calls_recording_saved ON calls(recording_saved_at) WHERE recording_path IS NOT NULL;
`,
};
