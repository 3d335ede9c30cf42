// Batch call campaigns (issue 20). A campaign is an actor of its own kind; its row is the
// kind's projection of the actor's snapshot (status, times), beside what creation fixed
// (agent, number, sealed prompt, window, counts of the request). Recipients are rows, in
// dial order (`seq`), so a campaign's snapshot stays small however many it has: a row is
// `pending` until the call placed for it is committed (`placed`, with the call's id, in
// the call's own first commit), then `completed`, `voicemail` or `failed` when that call
// ends (in the call's last commit), or `cancelled` with the campaign. Counting the rows by
// state is what the API shows, so the counts always add up to valid_count.
import type { Migration } from './index.ts';

export const batchCampaigns: Migration = {
  version: 11,
  name: 'batch-campaigns',
  sql: `
CREATE TABLE batch_campaigns (
  id TEXT PRIMARY KEY,                 -- batch_…
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  name TEXT,
  from_number TEXT NOT NULL,
  prompt BLOB NOT NULL,                -- sealed with SECRETS_KEY
  status TEXT NOT NULL CHECK (status IN ('scheduled', 'running', 'completed', 'cancelled', 'failed')),
  schedule_type TEXT NOT NULL CHECK (schedule_type IN ('now', 'schedule')),
  scheduled_date TEXT,                 -- YYYY-MM-DD, in the window's zone
  window_start_minutes INTEGER,
  window_end_minutes INTEGER,
  window_days TEXT,                    -- JSON array of mon..sun; NULL: every day
  timezone TEXT NOT NULL,              -- the window's zone, resolved at creation
  max_concurrent INTEGER,
  total_count INTEGER NOT NULL,        -- recipients in the request
  valid_count INTEGER NOT NULL,
  invalid_count INTEGER NOT NULL,
  invalid TEXT NOT NULL,               -- JSON [{phone, reason, row_index}]
  error TEXT,                          -- why it failed (campaign_launch_failed)
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  completed_at INTEGER
);
CREATE INDEX batch_campaigns_account ON batch_campaigns(account_id, created_at DESC);

CREATE TABLE campaign_recipients (
  campaign_id TEXT NOT NULL REFERENCES batch_campaigns(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,                -- dial order, 0 .. valid_count - 1
  row_index INTEGER NOT NULL,          -- the recipient's index in the request
  account_id TEXT NOT NULL,
  phone TEXT NOT NULL,                 -- E.164
  details BLOB,                        -- sealed JSON {variables, prompt_override}; NULL when neither
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'placed', 'completed', 'voicemail', 'failed', 'cancelled')),
  call_id TEXT,                        -- the call's internal id, once placed
  attempts INTEGER NOT NULL DEFAULT 0, -- calls placed for it (a call never placed at the carrier gives the row back)
  ended_reason TEXT,
  placed_at INTEGER,
  ended_at INTEGER,
  PRIMARY KEY (campaign_id, seq)
);
CREATE INDEX campaign_recipients_call ON campaign_recipients(call_id) WHERE call_id IS NOT NULL;
`,
};
