// What the SMS agent is told when it answers a received text (issue 21): the agent's
// system prompt, the number's sms_prompt, the person's context record on this number
// (shown as a call shows it), the campaign they are replying to while its reply window
// lasts (contract.md 8: its context_prompt), and standing SMS instructions; then the
// conversation so far as user (their texts) and assistant (ours) messages, ending with
// the new text. Pure: rows in, messages out.
import type { AgentSettings } from '../../storage/agents.ts';
import type { LlmMessage } from '../providers/llm.ts';
import { callerFactLines, dateLine, languageName, type CallerFacts } from './prompt.ts';

/** Messages of the conversation the model reads (the latest ones). */
export const SMS_THREAD_LIMIT = 20;
/** A campaign's reply window when it has none (contract.md 8). */
export const DEFAULT_REPLY_WINDOW_HOURS = 72;
/** The longest reply window a campaign can have (the API's maximum): how far back to look for one. */
export const MAX_REPLY_WINDOW_HOURS = 720;
/** The longest text both carriers take in one request. */
export const SMS_MAX_CHARS = 1600;
/** About 1600 characters of English. */
export const SMS_MAX_TOKENS = 400;

const HOUR_MS = 3_600_000;

export interface SmsThreadMessage {
  id: string;
  direction: 'inbound' | 'outbound';
  body: string;
}

export interface SmsPromptInput {
  agent: Pick<AgentSettings, 'system_prompt' | 'language' | 'timezone'>;
  /** The number's sms_prompt. */
  smsPrompt: string | null;
  /** The person's context record on this number. */
  caller: CallerFacts | null;
  /** The campaign the person is replying to, only while its reply window covers now. */
  campaign: { contextPrompt: string | null } | null;
  /** The conversation so far, oldest first (it may already hold the new text). */
  thread: readonly SmsThreadMessage[];
  /** The text being answered. */
  text: SmsThreadMessage;
  now: number;
}

const present = (v: string | null | undefined): v is string => typeof v === 'string' && v.trim() !== '';

/** Whether a campaign text sent at `sentAt` is still being replied to at `now`. */
export function replyWindowCovers(sentAt: number, replyWindowHours: number | null | undefined, now: number): boolean {
  const hours = replyWindowHours && replyWindowHours > 0 ? replyWindowHours : DEFAULT_REPLY_WINDOW_HOURS;
  return now >= sentAt && now - sentAt <= hours * HOUR_MS;
}

/** The system message of a reply. */
export function smsSystemPrompt(p: Omit<SmsPromptInput, 'thread' | 'text'>): string {
  const parts: string[] = [];
  if (present(p.agent.system_prompt)) parts.push(p.agent.system_prompt.trim());
  if (present(p.smsPrompt)) parts.push(`## Texting on this number\n${p.smsPrompt.trim()}`);
  if (p.campaign) {
    const context = present(p.campaign.contextPrompt) ? `\n${p.campaign.contextPrompt.trim()}` : '';
    parts.push(`## The campaign this person is replying to\nThis person is replying to a text message our campaign sent them.${context}`);
  }
  const facts = callerFactLines(p.caller, p.agent.timezone);
  if (facts.length > 0) parts.push(`## What we know about this person\n${facts.join('\n')}`);
  parts.push(`## How to text\n${standingInstructions(p).map((l) => `- ${l}`).join('\n')}`);
  return parts.join('\n\n');
}

function standingInstructions(p: Omit<SmsPromptInput, 'thread' | 'text'>): string[] {
  return [
    'You are texting with a person by SMS. Write plain text only: no markdown, lists, headings or links unless you were given the link.',
    `Keep each reply short: one to three sentences, never more than ${SMS_MAX_CHARS} characters.`,
    p.agent.language === 'multi' ? 'Reply in the language the person writes in.' : `Write in ${languageName(p.agent.language)}.`,
    // The agent cannot place a call from a text; a promise it cannot keep is worse than none.
    'Never promise to call the person, or that someone will, unless the instructions above say calls can be arranged.',
    'If you do not know something, say so rather than guessing.',
    dateLine(p.now, p.agent.timezone),
  ];
}

/** The request's messages: the system prompt, then the conversation, ending with the new text. */
export function smsMessages(p: SmsPromptInput): LlmMessage[] {
  const messages: LlmMessage[] = [{ role: 'system', content: smsSystemPrompt(p) }];
  const recent = p.thread.filter((m) => m.id !== p.text.id).slice(-(SMS_THREAD_LIMIT - 1));
  for (const m of [...recent, p.text]) {
    if (m.body.trim() === '') continue;
    messages.push(m.direction === 'inbound' ? { role: 'user', content: m.body } : { role: 'assistant', content: m.body });
  }
  return messages;
}

/** The model's answer as a text: trimmed and cut to what one SMS request takes; null when there is nothing to send. */
export function smsReplyText(answer: string): string | null {
  const text = answer.trim().slice(0, SMS_MAX_CHARS).trimEnd();
  return text === '' ? null : text;
}
