// Outbound texts other than campaign rows: a single send (POST /v1/sms), an auto-reply,
// a STOP/START confirmation, a text during a call. Each is committed `queued` (with what
// the caller commits beside it), and only after that commit handed to the number's paced
// sender (sms-sender.ts), which sends it exactly once.
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import type { SmsRow } from '../../storage/sms-messages.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import type { DeliverMode, SmsSender } from './sms-sender.ts';

export interface OutboundText {
  accountId: string;
  number: PhoneNumberRow;
  to: string;
  body: string;
  origin: 'api' | 'reply' | 'call' | 'booking' | 'opt_out';
  agentId: string | null;
  callId?: string | null;
}

export function createOutboundTexts(deps: { storage: Storage; sender: Pick<SmsSender, 'deliver'>; clock: () => number; sleep: (ms: number) => Promise<void>; log: Logger }) {
  const { storage, sender, clock, sleep, log } = deps;

  function queueText(m: OutboundText, mode: DeliverMode = { failFast: false }, inCommit?: (row: SmsRow) => void) {
    const messageId = newPrefixedId('msg');
    if (inCommit) {
      storage.tx(() => {
        queueRow();
        inCommit(storage.sms.byId(messageId)!);
      });
    } else queueRow();
    function queueRow() {
      storage.sms.queue({ messageId, accountId: m.accountId, from: m.number.phone_number, to: m.to, body: m.body, origin: m.origin, agentId: m.agentId, carrier: m.number.provider, callId: m.callId ?? null, now: clock() });
    }
    // After the current synchronous work: a caller that wrapped this in a transaction has committed it by then
    // (one rolled back leaves no row, and nothing is sent).
    const settled = Promise.resolve().then(() => sender.deliver(messageId, mode));
    settled.catch((err: unknown) => log.error({ err, message_id: messageId }, 'sending an SMS failed'));
    return { messageId, settled };
  }

  return {
    /**
     * Commits a text (inside the caller's transaction, when it runs in one) and starts it on
     * its way once that commits; `settled` resolves with its row when it settles.
     */
    queueText,

    /** POST /v1/sms: commits the text and waits a moment for its first attempt (a certain refusal is the API's error). */
    async sendOne(
      m: { accountId: string; number: PhoneNumberRow; to: string; body: string; agentId: string | null },
      waitMs: number,
      inCommit?: (row: SmsRow) => void,
    ): Promise<{ row: SmsRow; settled: boolean }> {
      // A request that never left fails the text while its sender still waits for the answer (502); after, it is tried again.
      const mode = { failFast: true };
      const { messageId, settled } = queueText({ ...m, origin: 'api' }, mode, inCommit);
      const first = await Promise.race([settled.then((r) => r ?? null), sleep(waitMs).then(() => null)]);
      mode.failFast = false;
      return { row: first ?? storage.sms.byId(messageId)!, settled: first !== null };
    },

    /** An in-call text (the agent's send_sms tool, a booking confirmation): committed, then paced like any text. */
    sendFromCall(m: { accountId: string; number: PhoneNumberRow; to: string; body: string; agentId: string | null; callId: string; origin: 'call' | 'booking' }): string {
      return queueText(m).messageId;
    },
  };
}

export type OutboundTexts = ReturnType<typeof createOutboundTexts>;
