// The agent's transfer tool: when the model is offered it, where it may send the caller,
// and what a call of it resolves to. Pure (the engine, actors/agent/agent-engine.ts, acts on it).
//
// The rule (api.md: transfers are "controlled by the prompt only"): the tool is offered
// when the developer's own prompt for the call (the agent's system_prompt, the number's
// custom_prompt, the call's prompt) mentions transferring, as the word "transfer" in any
// form (transfer, transfers, transferred, transferring), and there is somewhere to send
// the caller: the agent's transfer_number, or a phone number written in that prompt in
// international form (+…). The model may name a number only when it is one of those:
// every number it names is checked with libphonenumber-js and must equal transfer_number
// or a number the prompt wrote, so a caller cannot talk the agent into dialing anywhere.
import { findPhoneNumbersInText, parsePhoneNumberFromString } from 'libphonenumber-js';
import type { LlmTool } from '../providers/llm.ts';

export const TRANSFER_TOOL = 'transfer_call';

/** The agent's transfer settings (api.md agent table). */
export interface TransferSettings {
  transfer_type: 'cold' | 'warm';
  transfer_number: string | null;
  transfer_whisper: string | null;
}

/** What a call's conversation may do with transfers; null when the tool is not offered. */
export interface TransferPolicy {
  mode: 'cold' | 'warm';
  /** transfer_number, or the prompt's only number when there is no transfer_number. */
  defaultNumber: string | null;
  /** Every number the model may name (E.164), the default first. */
  allowed: string[];
  /** transfer_whisper (warm); null: the model writes the briefing. */
  whisper: string | null;
}

/** How long a model-written briefing may be (characters). */
export const MAX_BRIEFING = 500;

const MENTIONS_TRANSFER = /\btransfer(?:s|red|ring)?\b/i;

/** True when the developer's prompt asks for transfers (see the header). */
export function asksForTransfers(prompts: readonly (string | null | undefined)[]): boolean {
  return prompts.some((p) => typeof p === 'string' && MENTIONS_TRANSFER.test(p));
}

/** A valid phone number as E.164, or null (libphonenumber-js; international form only). */
export function e164Of(text: string): string | null {
  const parsed = parsePhoneNumberFromString(text.trim());
  return parsed && parsed.isValid() ? parsed.number : null;
}

/** The valid international numbers written in a text, as E.164, in order, once each. */
export function numbersIn(text: string): string[] {
  const out: string[] = [];
  for (const found of findPhoneNumbersInText(text)) {
    const n = found.number;
    if (n.isValid() && !out.includes(n.number)) out.push(n.number);
  }
  return out;
}

export function transferPolicy(agent: TransferSettings, prompts: readonly (string | null | undefined)[]): TransferPolicy | null {
  if (!asksForTransfers(prompts)) return null;
  const configured = agent.transfer_number ? e164Of(agent.transfer_number) : null;
  const written = prompts.flatMap((p) => (typeof p === 'string' ? numbersIn(p) : []));
  const allowed = [...new Set([...(configured ? [configured] : []), ...written])];
  if (allowed.length === 0) return null;
  const defaultNumber = configured ?? (allowed.length === 1 ? allowed[0]! : null);
  const whisper = agent.transfer_whisper?.trim() ? agent.transfer_whisper.trim() : null;
  return { mode: agent.transfer_type, defaultNumber, allowed, whisper };
}

/** The tool as the model is offered it. */
export function transferTool(policy: TransferPolicy): LlmTool {
  const numbers = policy.allowed.join(', ');
  const properties: Record<string, unknown> = {
    number: {
      type: 'string',
      description: policy.defaultNumber
        ? `Where to transfer, in E.164 form. Leave it out to use ${policy.defaultNumber}. Only these numbers are possible: ${numbers}.`
        : `Where to transfer, in E.164 form: one of ${numbers}, as your instructions say.`,
    },
  };
  if (policy.mode === 'warm' && policy.whisper === null) {
    properties['briefing'] = {
      type: 'string',
      description: 'One or two sentences for the person who takes the call, said to them before they are connected: who is calling and what they need.',
    };
  }
  return {
    type: 'function',
    function: {
      name: TRANSFER_TOOL,
      description:
        'Transfer the caller to a person at another phone number. Use it only when your instructions ask for a transfer and the caller needs it. ' +
        'In the same reply, first tell the caller in one short sentence that you are transferring them.',
      parameters: { type: 'object', properties, ...(policy.defaultNumber ? {} : { required: ['number'] }), additionalProperties: false },
    },
  };
}

export type TransferDecision = { ok: true; to: string; briefing: string | null } | { ok: false; why: string };

/** What a call of the tool (its arguments as the model wrote them) resolves to. */
export function resolveTransfer(policy: TransferPolicy, argsJson: string): TransferDecision {
  let args: Record<string, unknown> = {};
  try {
    const parsed: unknown = argsJson.trim() === '' ? {} : JSON.parse(argsJson);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
  } catch {
    // Unreadable arguments: as if none were given (the default number, if any).
  }
  const named = typeof args['number'] === 'string' && args['number'].trim() !== '' ? args['number'] : null;
  let to = policy.defaultNumber;
  if (named !== null) {
    const e164 = e164Of(named);
    if (e164 === null) return { ok: false, why: `${named} is not a valid phone number` };
    if (!policy.allowed.includes(e164)) return { ok: false, why: `${e164} is not a number you may transfer to` };
    to = e164;
  }
  if (to === null) return { ok: false, why: 'no number to transfer to was given' };
  const briefing = typeof args['briefing'] === 'string' && args['briefing'].trim() !== '' ? args['briefing'].trim().slice(0, MAX_BRIEFING) : null;
  return { ok: true, to, briefing };
}

/** What the model is told when a transfer did not reach the person (a system note for its next reply). */
export function transferFailedNote(why: 'busy' | 'no-answer' | 'rejected' | 'failed' | string): string {
  const what =
    why === 'busy'
      ? 'the line was busy'
      : why === 'no-answer'
        ? 'nobody answered'
        : why === 'rejected'
          ? 'the person could not take the call'
          : why === 'failed'
            ? 'the call could not be connected'
            : why;
  return `The transfer did not go through: ${what}. The caller is back with you and heard nothing about it yet. Tell them so in one short sentence and offer to help another way.`;
}

/** The instruction for a briefing the model writes when a warm transfer has no whisper. */
export const BRIEFING_INSTRUCTION =
  'You are about to transfer this caller to a colleague. Write the one or two sentences the colleague hears before being connected: ' +
  'who is calling and what they need. Reply with those sentences only.';

/** Said to the target when neither the agent's whisper nor a written briefing is available. */
export const FALLBACK_BRIEFING = 'You have a transferred call from the AI assistant. The caller is being connected now.';
