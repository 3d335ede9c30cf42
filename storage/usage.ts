// Usage of one account over a time range: calls by direction, charged minutes, SMS.
// Calls count by started_at, or created_at for calls that never connected; texts by
// created_at, sent ones once the carrier took them. Erased calls and texts still count.
import type { Db } from './db.ts';

export interface Usage {
  calls: number;
  inbound_calls: number;
  outbound_calls: number;
  charged_minutes: number;
  sms_sent: number;
  sms_received: number;
}

/** Whether usage counts a message row: every received one, and every one the carrier took (sms_sent). */
export const SMS_COUNTED = `(direction = 'inbound' OR status IN ('sent', 'delivered', 'undelivered') OR sent_at IS NOT NULL)`;

/** The first instant of `now`'s UTC month: where "this month" starts for GET /v1/usage and the operator's list. */
export function startOfUtcMonth(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

export function createUsageRepo(db: Db) {
  // Live rows and what erased ones counted (usage_erased, written by call-erasure.ts): an erasure never lowers usage.
  const calls = db.prepare<[string, number, number, string, number, number], { calls: number; inbound: number; outbound: number; minutes: number | null }>(
    `SELECT COUNT(*) AS calls,
            COALESCE(SUM(direction = 'inbound'), 0) AS inbound,
            COALESCE(SUM(direction = 'outbound'), 0) AS outbound,
            SUM(minutes) AS minutes
       FROM (SELECT direction, charged_minutes AS minutes FROM calls
              WHERE account_id = ? AND COALESCE(started_at, created_at) >= ? AND COALESCE(started_at, created_at) < ?
             UNION ALL
             SELECT direction, minutes FROM usage_erased WHERE account_id = ? AND what = 'call' AND at >= ? AND at < ?)`,
  );
  const sms = db.prepare<[string, number, number, string, number, number], { sent: number; received: number }>(
    `SELECT COALESCE(SUM(direction = 'outbound' AND counted), 0) AS sent, COALESCE(SUM(direction = 'inbound' AND counted), 0) AS received
       FROM (SELECT direction, ${SMS_COUNTED} AS counted FROM sms_messages WHERE account_id = ? AND created_at >= ? AND created_at < ?
             UNION ALL
             SELECT direction, counted FROM usage_erased WHERE account_id = ? AND what = 'sms' AND at >= ? AND at < ?)`,
  );
  return {
    forAccount(accountId: string, since: number, until: number): Usage {
      const c = calls.get(accountId, since, until, accountId, since, until)!;
      const s = sms.get(accountId, since, until, accountId, since, until)!;
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
