// Post-call analysis (issue 10): one job row per ended call, written in the same
// transaction as the call's end, removed in the transaction that records the
// analysis's outcome (with the caller's memory and the call.completed deliveries). A
// job whose attempt was under way when the process died is simply due again.
import type { Migration } from './index.ts';

export const callAnalysis: Migration = {
  version: 6,
  name: 'call-analysis',
  sql: `
CREATE TABLE analysis_jobs (
  internal_id TEXT PRIMARY KEY,         -- the call's actor id (calls.internal_id)
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  due_at INTEGER NOT NULL,              -- the next attempt
  attempts INTEGER NOT NULL DEFAULT 0,  -- counted (committed) before each request to the model leaves
  last_error TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX analysis_jobs_due ON analysis_jobs(due_at);
`,
};
