// How a message looks in the API (contract.md 4: `{message:{message_id, from, to, body,
// status, direction, created_at}}` and more).
import { isoOrNull, isoTime } from '../schemas.ts';
import type { SmsRow } from '../../storage/sms-messages.ts';

export function messageView(row: SmsRow) {
  return {
    message_id: row.message_id,
    from: row.from_number,
    to: row.to_number,
    body: row.body,
    status: row.status,
    direction: row.direction,
    origin: row.origin,
    agent_id: row.agent_id,
    campaign_id: row.campaign_id,
    call_id: row.call_id,
    error_code: row.error_code,
    error_message: row.error_message,
    created_at: isoTime(row.created_at),
    sent_at: isoOrNull(row.sent_at),
    updated_at: isoOrNull(row.updated_at),
  };
}
