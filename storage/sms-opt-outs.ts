// Who has texted STOP to which of an account's numbers (migration 12). Kept when an
// account erases its messages: an opt-out is the recipient's choice, not call history.
import type { Db } from './db.ts';

export function createSmsOptOutsRepo(db: Db) {
  const has = db.prepare<[string, string, string], { n: number }>('SELECT 1 AS n FROM sms_opt_outs WHERE account_id = ? AND number = ? AND phone = ?');
  const add = db.prepare<[string, string, string, number]>('INSERT OR IGNORE INTO sms_opt_outs (account_id, number, phone, created_at) VALUES (?, ?, ?, ?)');
  const remove = db.prepare<[string, string, string]>('DELETE FROM sms_opt_outs WHERE account_id = ? AND number = ? AND phone = ?');
  return {
    isOptedOut: (accountId: string, number: string, phone: string): boolean => has.get(accountId, number, phone) !== undefined,
    optOut: (accountId: string, number: string, phone: string, now: number): void => void add.run(accountId, number, phone, now),
    optIn: (accountId: string, number: string, phone: string): void => void remove.run(accountId, number, phone),
  };
}
