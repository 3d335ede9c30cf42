// Sends outbound messages exactly once. A message is a row committed `queued` before
// anything leaves (its effect intent); it then waits for its turn on its number's paced
// queue (paced-sender.ts), is marked `sending` in a commit right before the request, and
// settles with what the carrier answered:
//   accepted          → `sent`, with the carrier's id (status callbacks take it further);
//   refused for sure  → `failed` with the reason (an opted-out recipient, an unregistered
//                       sender); a request that never left is tried again a few times
//                       (an API send fails at once instead: its caller is told 502);
//   unknown           → stays `sending` and is reconciled: the carrier's own list is asked
//                       whether it took the message; found → `sent`, not found → queued
//                       again. Never sent again blindly.
// After a restart `resume` takes every queued and sending row back, oldest first.
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import type { SmsRow } from '../../storage/sms-messages.ts';
import { SmsOutcomeUnknown, SmsRefused, type CarrierSms } from '../../voice/carriers/sms.ts';
import type { Pacer } from './paced-sender.ts';

export interface SmsSenderDeps {
  storage: Storage;
  pacer: Pacer;
  /** The number's SMS client, built from its sealed credentials; throws when they cannot be opened. */
  carrierFor: (number: PhoneNumberRow) => CarrierSms;
  /** Where the carrier posts a message's delivery status. */
  statusCallbackUrl: (number: PhoneNumberRow) => string;
  clock: () => number;
  sleep: (ms: number) => Promise<void>;
  log: Logger;
  /**
   * How long a text whose answer was lost must stay missing from the carrier's list before
   * it is sent again (SMS_RESEND_AFTER_MS): a list read too soon may not show it yet.
   */
  resendAfterMs: number;
}

/** Sends whose request never left the host, tried again before the message fails. */
export const MAX_NOT_SENT_ATTEMPTS = 5;
/** Waits before asking the carrier about a send whose answer was lost, growing to the last. */
const RECONCILE_DELAYS_MS = [1000, 5000, 15_000, 30_000, 60_000, 300_000];
const NOT_SENT_DELAYS_MS = [1000, 5000, 15_000, 60_000];
/** A text the carrier took is asked about when its report has not come for this long... */
export const REPORT_QUIET_MS = 10 * 60_000;
/** ...up to this long after it was created (carriers give up on delivery within a few days). */
export const REPORT_WAIT_MS = 72 * 3_600_000;
/** Texts asked about in one sweep at most (the next sweep takes the rest). */
const REPORT_SWEEP_LIMIT = 1000;

/** How a delivery treats a request that never left; read at each attempt, so its caller may change it. */
export interface DeliverMode {
  failFast: boolean;
}

const SETTLED = new Set(['sent', 'delivered', 'undelivered', 'failed', 'cancelled', 'received']);
export const isSettled = (row: SmsRow): boolean => SETTLED.has(row.status);

/** The paced queue's lane of a message: each campaign its own, then single sends, replies and in-call texts. */
function laneOf(row: SmsRow): string {
  if (row.campaign_id !== null) return `campaign:${row.campaign_id}`;
  if (row.origin === 'reply' || row.origin === 'opt_out') return 'replies';
  if (row.origin === 'call' || row.origin === 'booking') return 'calls';
  return 'api';
}

export function createSmsSender(deps: SmsSenderDeps) {
  const { storage, pacer, clock, log } = deps;
  // One delivery per message in this process; a second `deliver` joins it.
  const inFlight = new Map<string, Promise<SmsRow | undefined>>();
  let stopped = false;

  const fail = (row: SmsRow, code: string, message: string) =>
    storage.sms.settle(row.message_id, { status: 'failed', errorCode: code, errorMessage: message, now: clock() });

  /** One turn on the number: the request, and its outcome committed. Returns the row after. */
  async function attempt(id: string, mode: DeliverMode): Promise<SmsRow | undefined> {
    const row = storage.sms.byId(id);
    if (!row || row.status !== 'queued') return row;
    const number = storage.numbers.get(row.account_id, row.from_number);
    if (!number) return fail(row, 'from_number_not_found', 'the sending number is no longer imported on this account');
    // A STOP that arrived while it waited: the recipient's choice wins (the STOP confirmation itself still goes).
    if (row.origin !== 'opt_out' && storage.smsOptOuts.isOptedOut(row.account_id, row.from_number, row.to_number)) {
      return fail(row, 'recipient_unsubscribed', 'the recipient texted STOP to this number');
    }
    let carrier: CarrierSms;
    try {
      carrier = deps.carrierFor(number);
    } catch {
      return fail(row, 'carrier_credentials_unreadable', 'the number’s carrier credentials cannot be opened with this SECRETS_KEY');
    }
    if (!storage.sms.markSending(id, clock())) return storage.sms.byId(id);
    try {
      const { carrierMessageId } = await carrier.send({ from: row.from_number, to: row.to_number, body: row.body, statusCallbackUrl: deps.statusCallbackUrl(number) });
      return storage.sms.settle(id, { status: 'sent', carrierMessageId, now: clock() });
    } catch (err) {
      if (err instanceof SmsRefused && err.code === 'carrier_unreachable' && !mode.failFast && row.attempts + 1 < MAX_NOT_SENT_ATTEMPTS) {
        // Never left this host: nothing to reconcile, it waits for another turn.
        storage.sms.requeue(id, clock());
        return storage.sms.byId(id);
      }
      if (err instanceof SmsRefused) return storage.sms.settle(id, { status: 'failed', errorCode: err.code, errorMessage: err.message, now: clock() });
      const unknown = err instanceof SmsOutcomeUnknown ? err : new SmsOutcomeUnknown(String(err));
      log.warn({ message_id: id, reason: unknown.message }, 'SMS send outcome unknown; it will be reconciled with the carrier');
      return storage.sms.byId(id);
    }
  }

  /** Asks the carrier whether it took a message whose answer was lost; requeues it once it has been missing long enough. */
  async function reconcile(row: SmsRow): Promise<boolean> {
    const number = storage.numbers.get(row.account_id, row.from_number);
    if (!number) {
      // Nobody can be asked any more; it may have gone, so it is not sent again.
      fail(row, 'outcome_unknown', 'the sending number was removed before the carrier could be asked whether it took this message');
      return true;
    }
    const since = row.attempted_at ?? row.created_at;
    const found = await deps.carrierFor(number).findSent({
      from: row.from_number,
      to: row.to_number,
      since,
      exclude: storage.sms.knownCarrierIds(number.provider, row.from_number, row.to_number, since - 3_600_000),
    });
    if (found) {
      storage.sms.settle(row.message_id, { status: 'sent', carrierMessageId: found.carrierMessageId, now: clock() });
      // Its status callbacks came while its id was unknown and found no message: the carrier's status now stands in for them.
      if (found.status !== 'sent') storage.sms.settle(row.message_id, { status: found.status, errorCode: found.errorCode, errorMessage: null, now: clock() });
      return true;
    }
    // Not listed (yet): sent again only once it has stayed missing for resendAfterMs since the request.
    if (clock() - since < deps.resendAfterMs) return false;
    storage.sms.requeue(row.message_id, clock());
    return true;
  }

  async function run(id: string, mode: DeliverMode): Promise<SmsRow | undefined> {
    let reconciles = 0;
    let notSent = 0;
    for (;;) {
      if (stopped) return storage.sms.byId(id);
      const row = storage.sms.byId(id);
      if (!row || isSettled(row)) return row;
      if (row.status === 'sending') {
        // Unknown outcome: give the carrier a moment to list it, then ask (in the number's turn, so no send of it races the answer).
        await deps.sleep(RECONCILE_DELAYS_MS[Math.min(reconciles++, RECONCILE_DELAYS_MS.length - 1)]!);
        try {
          await pacer.turn(row.from_number, laneOf(row), () => reconcile(row));
        } catch (err) {
          log.warn({ err, message_id: id }, 'asking the carrier about an SMS failed; asking again later');
        }
        continue;
      }
      const before = row.attempts;
      const after = await pacer.turn(row.from_number, laneOf(row), () => attempt(id, mode));
      if (after?.status === 'queued' && after.attempts > before) {
        // The request never left: wait a little before the next turn.
        await deps.sleep(NOT_SENT_DELAYS_MS[Math.min(notSent++, NOT_SENT_DELAYS_MS.length - 1)]!);
      }
    }
  }

  /**
   * Texts the carrier took whose final delivery report never came (sent while the service
   * was down, or lost on the way) are asked about, one at a time: those quiet since
   * `quietSince` (at boot: every one, since any report may have come while it was down).
   * Only a final status is recorded; a text still under way at the carrier is asked again
   * at the next sweep, until REPORT_WAIT_MS after it was created.
   */
  async function sweepReports(quietSince = clock() - REPORT_QUIET_MS): Promise<number> {
    const rows = storage.sms.awaitingReport(clock() - REPORT_WAIT_MS, quietSince, REPORT_SWEEP_LIMIT);
    let settled = 0;
    for (const row of rows) {
      if (stopped) break;
      const number = storage.numbers.get(row.account_id, row.from_number);
      if (!number || row.carrier_message_id === null) continue;
      try {
        const report = await deps.carrierFor(number).fetchStatus(row.carrier_message_id);
        if (report.status === 'sent') continue;
        storage.sms.settle(row.message_id, { status: report.status, errorCode: report.errorCode, now: clock() });
        settled++;
      } catch (err) {
        log.warn({ err, message_id: row.message_id }, 'asking the carrier for a delivery report failed; asking again at the next sweep');
      }
    }
    return settled;
  }

  return {
    sweepReports,
    /**
     * Takes a committed message to where it settles (sent, failed, cancelled) and resolves
     * with its row. While `mode.failFast` holds, a request that never left fails the
     * message at once (an API send whose caller is still waiting, answered 502) instead of
     * waiting for another turn; the caller clears it once it has answered otherwise.
     */
    deliver(id: string, mode: DeliverMode = { failFast: false }): Promise<SmsRow | undefined> {
      let p = inFlight.get(id);
      if (!p) {
        p = run(id, mode).finally(() => inFlight.delete(id));
        inFlight.set(id, p);
      }
      return p;
    },
    /** Boot: every message left queued or sending goes on (sending ones are reconciled first). */
    resume(): number {
      const rows = [...storage.sms.unsettled('sending'), ...storage.sms.unsettled('queued')];
      for (const row of rows) void this.deliver(row.message_id).catch((err: unknown) => log.error({ err, message_id: row.message_id }, 'resuming an SMS failed'));
      return rows.length;
    },
    stop(): void {
      stopped = true;
    },
    /** Messages being carried out by this process now. */
    active: (): number => inFlight.size,
  };
}

export type SmsSender = ReturnType<typeof createSmsSender>;
