// How the outbox shares its places between accounts (issue 18, point 4). Deliveries go
// out in lanes of their own: events (signed webhooks and CRM syncs, short) and recordings
// (a carrier's file, up to two minutes), so a slow download never holds an event's place.
// Inside a lane no account has more than `perAccount` deliveries out at once, and free
// places are dealt one per account per round, fewest out first: an account whose
// endpoints hang keeps at most its own places busy, never another account's.
// Pure: the worker (webhook-outbox.ts) asks the database for due rows and lets this
// decide which of them leave now.
import type { DeliveryKind, DeliveryRow } from '../../storage/webhook-deliveries.ts';

export interface LaneSpec {
  name: 'events' | 'recordings';
  kinds: readonly DeliveryKind[];
  /** Deliveries of this lane out at once, every account together. */
  max: number;
  /** Deliveries of this lane out at once for one account. */
  perAccount: number;
}

/** The production lanes. A webhook attempt lasts at most WEBHOOK_TIMEOUT_MS (15 s), a recording fetch two minutes. */
export const DEFAULT_LANES: readonly LaneSpec[] = [
  { name: 'events', kinds: ['webhook', 'crm'], max: 32, perAccount: 4 },
  { name: 'recordings', kinds: ['recording'], max: 4, perAccount: 1 },
];

/**
 * Which of `due` (oldest first; none in flight) leave now, given `room` free places and
 * how many each account already has out. One per account per round, accounts with
 * fewer out (then with the older first row) first, no account past `perAccount`.
 */
export function pickFair(due: readonly DeliveryRow[], outByAccount: ReadonlyMap<string, number>, room: number, perAccount: number): DeliveryRow[] {
  const queues = new Map<string, DeliveryRow[]>();
  for (const row of due) {
    let q = queues.get(row.account_id);
    if (!q) queues.set(row.account_id, (q = []));
    q.push(row);
  }
  const out = new Map<string, number>();
  for (const account of queues.keys()) out.set(account, outByAccount.get(account) ?? 0);
  // Map order is first-seen order, i.e. by each account's oldest due row; the sort is stable.
  const order = [...queues.keys()].sort((a, b) => out.get(a)! - out.get(b)!);
  const picked: DeliveryRow[] = [];
  let progress = true;
  while (picked.length < room && progress) {
    progress = false;
    for (const account of order) {
      if (picked.length >= room) break;
      const q = queues.get(account)!;
      const n = out.get(account)!;
      if (q.length === 0 || n >= perAccount) continue;
      picked.push(q.shift()!);
      out.set(account, n + 1);
      progress = true;
    }
  }
  return picked;
}
