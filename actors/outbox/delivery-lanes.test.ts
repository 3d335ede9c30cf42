// pickFair, the outbox's dealing of free places between accounts: never past a cap,
// never a place left empty while an account below its cap has due work, and every
// account with work served before any account gets a second place.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DeliveryRow } from '../../storage/webhook-deliveries.ts';
import { pickFair } from './delivery-lanes.ts';

const row = (id: string, account: string): DeliveryRow => ({
  id, account_id: account, call_id: null, event: 'call.started', url: 'https://example.com/', payload: '{}', status: 'pending', attempts: 0,
  last_status_code: null, last_error: null, next_attempt_at: 0, sent_at: null, created_at: 0, delivered_at: null, kind: 'webhook', progress: null,
});

const ACCOUNTS = ['a', 'b', 'c', 'd'];
const scenario = fc.record({
  due: fc.array(fc.constantFrom(...ACCOUNTS), { maxLength: 60 }),
  out: fc.tuple(...ACCOUNTS.map(() => fc.nat(5))),
  room: fc.nat(12),
  perAccount: fc.integer({ min: 1, max: 5 }),
});

describe('pickFair', () => {
  it('respects the room and each account’s cap, and leaves no place empty while an account below its cap waits', () => {
    fc.assert(
      fc.property(scenario, ({ due, out, room, perAccount }) => {
        const rows = due.map((a, i) => row(`r${i}`, a));
        const outBy = new Map(ACCOUNTS.map((a, i) => [a, out[i]!]));
        const picked = pickFair(rows, outBy, room, perAccount);
        expect(picked.length).toBeLessThanOrEqual(room);
        const got = new Map<string, number>();
        for (const r of picked) got.set(r.account_id, (got.get(r.account_id) ?? 0) + 1);
        for (const a of ACCOUNTS) {
          const after = outBy.get(a)! + (got.get(a) ?? 0);
          // Never past the cap (an account already past it gets nothing).
          if ((got.get(a) ?? 0) > 0) expect(after).toBeLessThanOrEqual(perAccount);
          // Each account's own rows leave oldest first.
          const mine = picked.filter((r) => r.account_id === a).map((r) => r.id);
          expect(mine).toEqual(rows.filter((r) => r.account_id === a).slice(0, mine.length).map((r) => r.id));
        }
        if (picked.length < room) {
          // Places left: every account that still has due rows is at its cap.
          for (const a of ACCOUNTS) {
            const waiting = rows.filter((r) => r.account_id === a).length - (got.get(a) ?? 0);
            if (waiting > 0) expect(outBy.get(a)! + (got.get(a) ?? 0)).toBeGreaterThanOrEqual(perAccount);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('serves every account with work once before any account twice', () => {
    fc.assert(
      fc.property(scenario, ({ due, room }) => {
        const rows = due.map((a, i) => row(`r${i}`, a));
        const picked = pickFair(rows, new Map(), room, 100);
        const withWork = new Set(due);
        const firstRound = picked.slice(0, Math.min(room, withWork.size)).map((r) => r.account_id);
        expect(new Set(firstRound).size).toBe(firstRound.length);
      }),
      { numRuns: 300 },
    );
  });

  it('puts the account with fewer deliveries out first', () => {
    const rows = [row('x1', 'busy'), row('x2', 'busy'), row('y1', 'idle')];
    expect(pickFair(rows, new Map([['busy', 3]]), 1, 4).map((r) => r.id)).toEqual(['y1']);
  });
});
