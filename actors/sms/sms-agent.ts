// The SMS agent (issue 21): answers one received text on a number with sms_reply_enabled.
// It reads what a reply needs (the number's agent, the person's context record, the
// campaign they are replying to while its window lasts, the conversation so far), has
// voice/conversation/sms-prompt.ts build the prompt, and asks the model the analysis
// does (one non-streamed completion, under one deadline). It never retries: a failure
// throws, and sms-system.ts leaves the text unanswered and logs it.
import type { SmsRow } from '../../storage/sms-messages.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import type { Storage } from '../../storage/index.ts';
import type { Config } from '../../config.ts';
import { createAnalysisModel, type AnalysisModel } from '../../voice/analysis/analysis-client.ts';
import { ProviderError } from '../../voice/providers/errors.ts';
import {
  MAX_REPLY_WINDOW_HOURS,
  replyWindowCovers,
  SMS_MAX_TOKENS,
  SMS_THREAD_LIMIT,
  smsMessages,
  smsReplyText,
} from '../../voice/conversation/sms-prompt.ts';

export interface SmsAgent {
  /** The reply to send, or null for none. Throws when the model gives no answer (the text then stays unanswered, logged). */
  answer(inbound: SmsRow, number: PhoneNumberRow): Promise<string | null>;
}

/** A text is answered within this or not at all: nobody holds a line open, but a reply minutes late reads oddly. */
export const SMS_MODEL_TIMEOUT_MS = 20_000;

export interface SmsAgentDeps {
  storage: Pick<Storage, 'agents' | 'callers' | 'sms' | 'smsCampaigns'>;
  /** LLM_BASE_URL / LLM_API_KEY / LLM_MODEL: the model the conversation and the analysis use. */
  llm: Config['llm'];
  clock: () => number;
  timeoutMs?: number;
}

export function createSmsAgent(deps: SmsAgentDeps): SmsAgent {
  const { storage, clock } = deps;
  const model: AnalysisModel = createAnalysisModel({ ...deps.llm, timeoutMs: deps.timeoutMs ?? SMS_MODEL_TIMEOUT_MS, purpose: 'sms reply' });

  /** The campaign this person is replying to: the latest that texted them from this number, while its own window covers now. */
  function campaignOf(accountId: string, ourNumber: string, phone: string, now: number): { contextPrompt: string | null } | null {
    const last = storage.sms.lastCampaignTo(accountId, ourNumber, phone, now - MAX_REPLY_WINDOW_HOURS * 3_600_000);
    const row = last ? storage.smsCampaigns.byId(last.campaignId) : undefined;
    if (!last || !row || row.account_id !== accountId) return null;
    return replyWindowCovers(last.sentAt, row.reply_window_hours, now) ? { contextPrompt: row.context_prompt } : null;
  }

  return {
    async answer(inbound, number) {
      if (number.agent_id === null) return null;
      const agent = storage.agents.get(number.account_id, number.agent_id);
      if (!agent) throw new Error('the number’s agent no longer exists');
      const now = clock();
      const phone = inbound.from_number;
      const ours = number.phone_number;
      const messages = smsMessages({
        agent,
        smsPrompt: number.sms_prompt,
        caller: storage.callers.get(number.account_id, ours, phone) ?? null,
        campaign: campaignOf(number.account_id, ours, phone, now),
        thread: storage.sms.thread(number.account_id, ours, phone, SMS_THREAD_LIMIT).map((m) => ({ id: m.message_id, direction: m.direction, body: m.body })),
        text: { id: inbound.message_id, direction: 'inbound', body: inbound.body },
        now,
      });
      const answer = await model.complete({ messages, maxTokens: SMS_MAX_TOKENS, temperature: agent.temperature });
      const text = smsReplyText(answer);
      if (text === null) throw new ProviderError('llm', 'protocol', 'llm POST /chat/completions (sms reply): the answer has no text');
      return text;
    },
  };
}
