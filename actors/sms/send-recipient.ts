// The SMS campaign's one effect, `send`: recipient `seq`'s message. The campaign's intent
// was committed before this runs; the message row (its id derived from the intent's, so a
// run again after a crash finds the message it made) is committed `queued` with the
// recipient's row pointing at it, and the number's sender (sms-sender.ts) takes it to the
// carrier exactly once. A recipient who texted STOP to the number gets a `failed` row
// (recipient_unsubscribed) and nothing is sent.
import type { Storage } from '../../storage/index.ts';
import { derivedPrefixedId } from '../../storage/ids.ts';
import type { EffectHandler } from '../runtime/actor-kind.ts';
import type { SmsCampaignContext } from '../../machines/sms-campaign.ts';
import type { SmsCampaignEvent } from '../../machines/sms-campaign-events.ts';
import type { SmsSender } from './sms-sender.ts';
import { renderTemplate } from './message-template.ts';

export interface SendRecipientDeps {
  storage: Storage;
  sender: Pick<SmsSender, 'deliver'>;
  clock: () => number;
}

/** The id of the message an intent sends: `msg_` and 24 base62 characters of a hash of the intent's id. */
export const campaignMessageId = (intentId: string): string => derivedPrefixedId('msg', `sms-campaign:${intentId}`);

export function sendRecipientEffect(deps: SendRecipientDeps): EffectHandler<SmsCampaignContext> {
  const { storage, sender, clock } = deps;
  return {
    async run({ intent, context }): Promise<SmsCampaignEvent> {
      const { seq } = intent.params as { seq: number };
      const messageId = campaignMessageId(intent.id);
      if (!storage.sms.byId(messageId)) {
        const campaign = storage.smsCampaigns.byId(context.id);
        const recipient = storage.smsCampaigns.recipient(context.id, seq);
        // Cancelled meanwhile (or the campaign gone with its account): nothing to send.
        if (!campaign || campaign.status !== 'running' || !recipient || recipient.state !== 'pending') return { type: 'SKIPPED', at: clock(), seq };
        const number = storage.numbers.get(campaign.account_id, campaign.from_number);
        const optedOut = storage.smsOptOuts.isOptedOut(campaign.account_id, campaign.from_number, recipient.phone);
        const refusal = !number
          ? { errorCode: 'from_number_not_found', errorMessage: 'the campaign’s from_number is no longer imported on this account' }
          : optedOut
            ? { errorCode: 'recipient_unsubscribed', errorMessage: 'the recipient texted STOP to this number' }
            : null;
        storage.tx(() => {
          // A cancel that committed first wins: nothing is queued after it.
          if (storage.smsCampaigns.byId(context.id)?.status !== 'running') return;
          storage.sms.queue({
            messageId,
            accountId: campaign.account_id,
            from: campaign.from_number,
            to: recipient.phone,
            body: renderTemplate(campaign.message_template, recipient.variables),
            origin: 'campaign',
            agentId: campaign.agent_id,
            carrier: number?.provider ?? 'twilio',
            campaignId: campaign.id,
            campaignSeq: seq,
            ...(refusal ? { status: 'failed' as const, ...refusal } : {}),
            now: clock(),
          });
        });
        if (!storage.sms.byId(messageId)) return { type: 'SKIPPED', at: clock(), seq };
      }
      const row = await sender.deliver(messageId);
      if (!row || row.status === 'cancelled') return { type: 'SKIPPED', at: clock(), seq };
      if (row.status === 'failed' || row.status === 'undelivered') return { type: 'SENT', at: clock(), seq, outcome: 'failed' };
      if (row.status === 'queued' || row.status === 'sending') throw new Error('the sender stopped before the message settled');
      return { type: 'SENT', at: clock(), seq, outcome: 'accepted' };
    },
  };
}
