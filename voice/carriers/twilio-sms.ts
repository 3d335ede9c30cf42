// Carrier A's SMS (carriers.md §1 "Send SMS"): `POST …/Messages.json` with a status
// callback; a lost answer is reconciled from the account's message list, which keeps
// every message it took.
import { createTwilioRest, type TwilioMessage, type TwilioRestOptions } from './twilio-rest.ts';
import { classifySendError, CLOCK_SLACK_MS, earliestUnknown, type CarrierSms, type SentMessage } from './sms.ts';

/** The resource's status as ours; queued, sending, accepted and the rest are still `sent` (the carrier has it). */
const STATUS: Record<string, 'delivered' | 'undelivered' | 'failed'> = { delivered: 'delivered', read: 'delivered', undelivered: 'undelivered', failed: 'failed' };

function statusOf(m: TwilioMessage): SentMessage {
  const status = STATUS[m.status] ?? 'sent';
  const errorCode = status === 'sent' || status === 'delivered' || m.error_code === null || m.error_code === undefined ? null : `carrier:${m.error_code}`;
  return { carrierMessageId: m.sid, status, errorCode };
}

export function createTwilioSms(opts: TwilioRestOptions): CarrierSms {
  const rest = createTwilioRest(opts);
  return {
    carrier: 'twilio',
    async send(m) {
      try {
        const msg = await rest.createMessage({ To: m.to, From: m.from, Body: m.body, StatusCallback: m.statusCallbackUrl });
        return { carrierMessageId: msg.sid };
      } catch (err) {
        throw classifySendError('twilio', err);
      }
    },
    async fetchStatus(sid) {
      const m = await rest.fetchMessage(sid);
      return statusOf(m);
    },
    async findSent(l) {
      // The list filters by UTC day; the exact instant is checked by earliestUnknown.
      const day = new Date(l.since - CLOCK_SLACK_MS).toISOString().slice(0, 10);
      const listed = await rest.listMessages({ To: l.to, From: l.from, SentOnOrAfter: day });
      const ours = listed.filter((m) => m.to === l.to && m.from === l.from && m.status !== 'received');
      return earliestUnknown(ours.map((m) => ({ id: m.sid, at: typeof m.date_created === 'string' ? Date.parse(m.date_created) : NaN, ...statusOf(m) })), l);
    },
  };
}
