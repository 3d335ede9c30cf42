// Carrier B's SMS (carriers.md §5 "Messaging"): `POST /v2/messages`, status events to the
// number's events URL; a lost answer is reconciled from the carrier's message detail
// records (`GET /v2/detail_records?filter[record_type]=messaging`, developers.telnyx.com
// api-reference/detail-records), whose `uuid` is the message id, `cli` the sender and
// `cld` the recipient; the message found is then read (`GET /v2/messages/{id}`) for how
// its delivery went, since its status events came while its id was unknown here (and a
// message whose final event never came is read the same way: fetchStatus).
import { createTelnyxRest, type TelnyxRestOptions } from './telnyx-rest.ts';
import { classifySendError, CLOCK_SLACK_MS, earliestUnknown, type CarrierSms, type SentMessage } from './sms.ts';

/** A message's `to[].status` as ours (carriers.md §5); anything still under way is `sent` (the carrier has it). */
const MESSAGE_STATUS: Record<string, 'sent' | 'delivered' | 'undelivered' | 'failed'> = {
  queued: 'sent',
  sending: 'sent',
  sent: 'sent',
  delivery_unconfirmed: 'sent',
  delivered: 'delivered',
  delivery_failed: 'undelivered',
  sending_failed: 'failed',
};

/** A detail record's status as ours (the carrier's MDR values); anything still under way is `sent` (the carrier has it). */
const MDR_STATUS: Record<string, 'delivered' | 'undelivered' | 'failed'> = {
  delivered: 'delivered',
  failed: 'undelivered',
  delivery_failed: 'undelivered',
  gw_reject: 'failed',
  sending_failed: 'failed',
};

export function createTelnyxSms(opts: TelnyxRestOptions): CarrierSms {
  const rest = createTelnyxRest(opts);
  /** The message as the carrier has it now: `to[0].status`, and its first error's code when it failed. */
  async function fetchStatus(id: string): Promise<SentMessage> {
    const message = await rest.getMessage(id);
    const status = MESSAGE_STATUS[String(message.to?.[0]?.status ?? '')] ?? 'sent';
    const err = message.errors?.[0];
    const code = err && (typeof err.code === 'string' || typeof err.code === 'number') ? `carrier:${String(err.code)}` : null;
    return { carrierMessageId: id, status, errorCode: status === 'sent' || status === 'delivered' ? null : code };
  }
  return {
    carrier: 'telnyx',
    async send(m) {
      try {
        const sent = await rest.sendMessage({ from: m.from, to: m.to, text: m.body, webhook_url: m.statusCallbackUrl });
        return { carrierMessageId: sent.id };
      } catch (err) {
        throw classifySendError('telnyx', err);
      }
    },
    fetchStatus,
    async findSent(l) {
      const records = await rest.listMessageRecords({ cli: l.from, cld: l.to, since: new Date(l.since - CLOCK_SLACK_MS).toISOString() });
      const ours = records.filter((r) => r.direction !== 'inbound');
      const found = earliestUnknown(
        ours.map((r) => {
          const status = MDR_STATUS[String(r.status ?? '').toLowerCase()] ?? 'sent';
          return { id: r.uuid, at: Date.parse(r.created_at), status, errorCode: status === 'sent' || status === 'delivered' ? null : `carrier:${String(r.status)}` };
        }),
        l,
      );
      if (found === null) return null;
      // The message itself says more than its record (the delivery's error code); the record stands when it cannot be read.
      try {
        return await fetchStatus(found.carrierMessageId);
      } catch {
        // the record's status is what is known
      }
      return found;
    },
  };
}
