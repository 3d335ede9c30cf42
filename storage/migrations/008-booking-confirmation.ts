// A number's own require_booking_confirmation (issue 9): null inherits the agent's.
import type { Migration } from './index.ts';

export const bookingConfirmation: Migration = {
  version: 8,
  name: 'booking-confirmation',
  sql: `
ALTER TABLE phone_numbers ADD COLUMN require_booking_confirmation INTEGER;   -- 1/0; null inherits the agent's
`,
};
