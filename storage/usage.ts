// Usage of one account over a time range: calls by direction, charged minutes, SMS.
// Calls count by started_at, or created_at for calls that never connected.
import type { Db } from './db.ts';

export interface Usage {
  calls: number;
  inbound_calls: number;
  outbound_calls: number;
  charged_minutes: number;
  sms_sent: number;
  sms_received: number;
}

export function createUsageRepo(db: Db) {
  const calls = db.prepare<[string, number, number], { calls: number; inbound: number; outbound: number; minutes: number | null }>(
    `SELECT COUNT(*) AS calls,
            COALESCE(SUM(direction = 'inbound'), 0) AS inbound,
            COALESCE(SUM(direction = 'outbound'), 0) AS outbound,
            SUM(charged_minutes) AS minutes
       FROM calls
      WHERE account_id = ? AND COALESCE(started_at, created_at) >= ? AND COALESCE(started_at, created_at) < ?`,
  );
  const sms = db.prepare<[string, number, number], { sent: number; received: number }>(
    `SELECT COALESCE(SUM(direction = 'outbound'), 0) AS sent, COALESCE(SUM(direction = 'inbound'), 0) AS received
       FROM sms_messages WHERE account_id = ? AND created_at >= ? AND created_at < ?`,
  );
  return {
    forAccount(accountId: string, since: number, until: number): Usage {
      const c = calls.get(accountId, since, until)!;
      const s = sms.get(accountId, since, until)!;
      return {
        calls: c.calls,
        inbound_calls: c.inbound,
        outbound_calls: c.outbound,
        charged_minutes: Math.round((c.minutes ?? 0) * 100) / 100,
        sms_sent: s.sent,
        sms_received: s.received,
      };
    },
  };
}
