// Texts to our numbers (their carrier webhooks verified by the routes): stored once per
// carrier message; STOP and START (opt-out.ts) take effect in the commit that stores them
// and are confirmed by text; any other text, on a number with sms_reply_enabled, is
// answered by the SMS agent (sms-agent.ts). A text whose answer was not yet committed when
// the process stopped is answered at the next start; a model that fails leaves it
// unanswered and logged, never retried in a loop.
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import type { SmsRow } from '../../storage/sms-messages.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import { keywordOf, OPT_IN_CONFIRMATION, OPT_OUT_CONFIRMATION } from './opt-out.ts';
import type { SmsAgent } from './sms-agent.ts';
import type { OutboundTexts } from './outbound-texts.ts';

export function createInboundTexts(deps: { storage: Storage; outbound: Pick<OutboundTexts, 'queueText'>; agent: SmsAgent | null; clock: () => number; log: Logger }) {
  const { storage, clock, log } = deps;
  const queueText = deps.outbound.queueText;

  /** Answers one received text with the agent (sms-agent.ts); a provider failure leaves it unanswered and logged. */
  async function answer(inbound: SmsRow): Promise<void> {
    const number = storage.numbers.get(inbound.account_id, inbound.to_number);
    if (!deps.agent || !number || !number.sms_reply_enabled || number.agent_id === null) {
      storage.sms.setReplyState(inbound.message_id, 'failed', clock());
      if (!deps.agent) log.warn({ message_id: inbound.message_id }, 'SMS auto-reply is on but no model is configured (LLM_API_KEY): the text stays unanswered');
      return;
    }
    let body: string | null;
    try {
      body = await deps.agent.answer(inbound, number);
    } catch (err) {
      log.warn({ err, message_id: inbound.message_id }, 'the model did not answer a text; it stays unanswered');
      storage.sms.setReplyState(inbound.message_id, 'failed', clock());
      return;
    }
    if (body === null || body.trim() === '') {
      storage.sms.setReplyState(inbound.message_id, 'answered', clock());
      return;
    }
    let reply: ReturnType<typeof queueText> | undefined;
    storage.tx(() => {
      // The reply and the inbound's answered mark commit together: a crash answers it again or not at all.
      reply = queueText({ accountId: inbound.account_id, number, to: inbound.from_number, body: body!.slice(0, 1600), origin: 'reply', agentId: number.agent_id });
      storage.sms.setReplyState(inbound.message_id, 'answered', clock());
    });
    await reply?.settled;
  }

  return {
    /** Boot: texts whose answer was never committed are answered now. */
    resumeReplies(): void {
      for (const row of storage.sms.pendingReplies()) void answer(row);
    },

    /** A text the carrier delivered to one of our numbers (its webhook verified). */
    receive(number: PhoneNumberRow, m: { from: string; body: string; carrierMessageId: string }): 'stored' | 'duplicate' {
      const now = clock();
      const keyword = keywordOf(m.body);
      const replies = number.sms_reply_enabled === 1 && number.agent_id !== null && keyword === null;
      const messageId = newPrefixedId('msg');
      let stored = false;
      storage.tx(() => {
        stored = storage.sms.receive({
          messageId,
          accountId: number.account_id,
          from: m.from,
          to: number.phone_number,
          body: m.body,
          agentId: number.agent_id,
          carrier: number.provider,
          carrierMessageId: m.carrierMessageId,
          replyState: replies ? 'pending' : 'none',
          now,
        });
        if (!stored || keyword === null) return;
        // STOP and START take effect in the commit that stores them; the confirmation goes like any text.
        if (keyword === 'stop') storage.smsOptOuts.optOut(number.account_id, number.phone_number, m.from, now);
        else storage.smsOptOuts.optIn(number.account_id, number.phone_number, m.from);
        queueText({ accountId: number.account_id, number, to: m.from, body: keyword === 'stop' ? OPT_OUT_CONFIRMATION : OPT_IN_CONFIRMATION, origin: 'opt_out', agentId: number.agent_id });
      });
      if (!stored) return 'duplicate';
      if (replies) void answer(storage.sms.byId(messageId)!);
      return 'stored';
    },

  };
}
