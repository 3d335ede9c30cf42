// CRM sync through the webhook outbox (issue 10): a delivery row now says what kind of
// target it goes to. `webhook` rows are the signed POSTs to customer URLs; a `crm` row
// upserts the caller as a contact of the number's CRM and adds a note about the call
// (actors/outbox/crm-delivery.ts). A CRM delivery has two requests, so it keeps its progress:
// once the note may have been sent, a later attempt first looks for it at the CRM
// instead of adding it again. A `recording` row fetches a carrier's recording of a call
// into DATA_DIR (actors/outbox/recording-fetch.ts).
import type { Migration } from './index.ts';

export const crmDeliveries: Migration = {
  version: 10,
  name: 'crm-deliveries',
  sql: `
ALTER TABLE webhook_deliveries ADD COLUMN kind TEXT NOT NULL DEFAULT 'webhook' CHECK (kind IN ('webhook', 'crm', 'recording'));
ALTER TABLE webhook_deliveries ADD COLUMN progress TEXT;   -- JSON; crm: {note_sent_at} once a note request may have left
`,
};
