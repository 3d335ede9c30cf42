// The pre-call gate (issue 10): what the customer's pre-call webhook decided for an
// inbound call (action, whether it answered in time, latency), kept on the call's row as
// JSON and shown as `precall` on the call record.
import type { Migration } from './index.ts';

export const precall: Migration = {
  version: 7,
  name: 'precall',
  sql: `
ALTER TABLE calls ADD COLUMN precall TEXT;   -- JSON of PrecallRecord (actors/calls/precall-gate.ts); null: no gate ran
`,
};
