// What the outbound and batch benches check as each dial reaches carrier A's simulator,
// before the simulator answers it: that what the service commits before a dial leaves it
// is durable already (the call's id on the status callback, its dial intent marked sent,
// its call row, its one actor snapshot). Each bench adds checks of its own.
import type { Db } from '../storage/db.ts';
import type { CarrierSims } from '../test/helpers/fixtures.ts';
import { TWILIO_ENDPOINTS, type TwilioSimRequest } from '../test/sim/twilio-sim.ts';

/** A form field's value (the first, when the field is repeated). */
export const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** Calls `probe` with every dial request as it reaches carrier A's simulator, before it is answered. */
export function probeEachDial(sims: CarrierSims, probe: (req: TwilioSimRequest) => void): void {
  // A fault that never applies: its predicate sees every request before it is routed.
  sims.twilio.fail({
    match: (req) => {
      if (TWILIO_ENDPOINTS.dial(req)) probe(req);
      return false;
    },
  });
}

export interface CallRowAtDial {
  to_number: string;
  account_id: string;
  campaign_id: string | null;
}

/** A check of one dial request: its number, its call's id, and what should be committed and is not (`rowIsOurs` judges the call's row beyond its number). */
export function dialCommits(db: Db, rowIsOurs: (row: CallRowAtDial) => boolean): (req: TwilioSimRequest) => { to: string; cid: string | null; missing: string[] } {
  const q = {
    intent: db.prepare<[string], { sent_at: number | null }>("SELECT sent_at FROM effect_intents WHERE actor_id = ? AND effect = 'dial'"),
    call: db.prepare<[string], CallRowAtDial>('SELECT to_number, account_id, campaign_id FROM calls WHERE internal_id = ?'),
    snapshot: db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM actor_snapshots WHERE actor_id = ?'),
  };
  return (req) => {
    const to = first(req.body.To) ?? '';
    const cb = first(req.body.StatusCallback);
    const cid = cb ? new URL(cb).searchParams.get('cid') : null;
    const missing: string[] = [];
    if (!cid) missing.push('cid');
    else {
      const intent = q.intent.get(cid);
      if (!intent) missing.push('dial intent');
      else if (intent.sent_at === null) missing.push('dial intent marked sent');
      const row = q.call.get(cid);
      if (!row || row.to_number !== to || !rowIsOurs(row)) missing.push('call row');
      if (q.snapshot.get(cid)!.n !== 1) missing.push('snapshot');
    }
    return { to, cid, missing };
  };
}
