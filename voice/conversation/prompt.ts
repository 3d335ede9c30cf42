// What the model is told on a call, assembled once when the call's media starts: the
// agent's system prompt, the number's custom prompt, the call's own prompt (outbound,
// `{name}` already filled from dynamic_vars), batch recipient variables, the caller's
// context record for this number, and the engine's standing instructions. Pure: the
// call's settings and the time come in as parameters.
import type { AgentSettings } from '../../storage/agents.ts';
import { lastCallLine } from '../analysis/caller-memory.ts';

/** The caller's record for this number, as far as the prompt uses it. */
export interface CallerFacts {
  name?: string | null;
  email?: string | null;
  phone?: string | null;
  location?: string | null;
  reference_id?: string | null;
  preference?: string | null;
  last_call?: string | null;
  open_item?: string | null;
}

export type PromptAgent = Pick<
  AgentSettings,
  'system_prompt' | 'language' | 'response_length' | 'incall_sms_enabled' | 'func_end_call' | 'timezone' | 'welcome_message' | 'greet_by_name' | 'dynamic_greeting'
>;

export interface PromptInput {
  agent: PromptAgent;
  /** The number's custom_prompt. */
  numberPrompt: string | null;
  /** The outbound call's prompt (used for this call only). */
  callPrompt: string | null;
  /** A batch recipient's variables, when the call belongs to a campaign. */
  recipientVars?: Record<string, string> | null;
  caller: CallerFacts | null;
  direction: 'inbound' | 'outbound';
  /** Epoch ms: the call's start, so the model knows the date. */
  now: number;
  /** Keypad input reaches the model on this call (dtmf_enabled, the number's setting first). */
  keypad?: boolean;
}

/** response_length as a token budget (max_tokens) and an instruction. */
export const RESPONSE_LENGTH = {
  short: { maxTokens: 150, instruction: 'Keep every reply to one or two short sentences.' },
  medium: { maxTokens: 300, instruction: 'Keep replies to a few sentences.' },
  long: { maxTokens: 600, instruction: 'You may give fuller answers when the caller needs detail, but stay conversational.' },
} as const;

const LANGUAGE_NAMES: Record<string, string> = {
  en: 'English', es: 'Spanish', fr: 'French', de: 'German', it: 'Italian', pt: 'Portuguese', nl: 'Dutch', hi: 'Hindi',
  ru: 'Russian', ja: 'Japanese', ar: 'Arabic', he: 'Hebrew', ko: 'Korean', zh: 'Chinese', pl: 'Polish',
};

/** A language code as the prompt names it ("en" → "English"); an unknown code as it is. */
export const languageName = (code: string): string => LANGUAGE_NAMES[code] ?? code;

const FACT_LABELS: [keyof CallerFacts, string][] = [
  ['name', 'Name'],
  ['email', 'Email'],
  ['phone', 'Other phone'],
  ['location', 'Location'],
  ['reference_id', 'Reference'],
  ['preference', 'Preference'],
  ['last_call', 'Last call'],
  ['open_item', 'Still open from before'],
];

const present = (v: string | null | undefined): v is string => typeof v === 'string' && v.trim() !== '';

// A formatter costs far more to build than to use, and every call builds a prompt: one per zone.
const formatters = new Map<string, Intl.DateTimeFormat | null>();
function formatterFor(zone: string): Intl.DateTimeFormat | null {
  let f = formatters.get(zone);
  if (f === undefined) {
    try {
      f = new Intl.DateTimeFormat('en-US', { dateStyle: 'full', timeStyle: 'short', timeZone: zone });
    } catch {
      f = null; // not a zone this runtime knows
    }
    formatters.set(zone, f);
  }
  return f;
}

/** A time as the agent's zone reads it (UTC when the zone is unknown). */
function formatIn(ms: number, timezone: string | null): string {
  const f = formatterFor(timezone ?? 'UTC') ?? formatterFor('UTC')!;
  return f.format(ms);
}

/** "It is now …" in the agent's zone (UTC when it has none or an unknown one); the SMS agent's prompt says it too. */
export function dateLine(now: number, timezone: string | null): string {
  let zone = timezone ?? 'UTC';
  let f = formatterFor(zone);
  if (!f) f = formatterFor((zone = 'UTC'))!;
  return `It is now ${f.format(now)} (${zone}).`;
}

/** The caller's record as prompt lines (`- Label: value`); the SMS agent's prompt shows it the same way. */
export function callerFactLines(caller: CallerFacts | null, timezone: string | null): string[] {
  if (!caller) return [];
  // last_call is the engine's JSON memory of the previous call: told as a sentence, its time in the agent's zone.
  const factText = (k: keyof CallerFacts, v: string): string => (k === 'last_call' ? lastCallLine(v, (ms) => formatIn(ms, timezone)) : v.trim());
  return FACT_LABELS.filter(([k]) => present(caller[k])).map(([k, label]) => `- ${label}: ${factText(k, caller[k]!)}`);
}

/** The system message of the call. */
export function assemblePrompt(p: PromptInput): string {
  const parts: string[] = [p.agent.system_prompt.trim()];
  if (present(p.numberPrompt)) parts.push(`## About this phone line\n${p.numberPrompt.trim()}`);
  if (present(p.callPrompt)) parts.push(`## This call\n${p.direction === 'outbound' ? 'You placed this call. ' : ''}${p.callPrompt.trim()}`);
  const vars = Object.entries(p.recipientVars ?? {}).filter(([, v]) => present(v));
  if (vars.length > 0) parts.push(`## About the person you are calling\n${vars.map(([k, v]) => `- ${k}: ${v}`).join('\n')}`);
  const facts = callerFactLines(p.caller, p.agent.timezone);
  if (facts.length > 0) parts.push(`## What we know about the caller\n${facts.join('\n')}`);
  parts.push(`## How to talk on this call\n${standingInstructions(p).map((l) => `- ${l}`).join('\n')}`);
  return parts.join('\n\n');
}

function standingInstructions(p: PromptInput): string[] {
  const a = p.agent;
  const lines = [
    'You are talking with a person on a phone call. Speak in plain spoken sentences: no lists, markdown, emoji or links.',
    RESPONSE_LENGTH[a.response_length].instruction,
    a.language === 'multi'
      ? 'Reply in the language the caller speaks.'
      : `Speak ${languageName(a.language)}.`,
    // api.md: transfers are "controlled by the prompt only".
    'Never offer or attempt to transfer the call unless the instructions above ask for transfers.',
    a.incall_sms_enabled
      ? 'You may offer to send the caller a text message when it helps.'
      : 'You cannot send text messages: never promise a text; confirm details aloud instead.',
    a.func_end_call
      ? 'When the conversation is finished and the caller has said goodbye, say a short goodbye and call the end_call tool.'
      : 'Never end the call yourself; the caller hangs up.',
    ...(p.keypad
      ? ['The caller can type on their phone keypad; what they type reaches you as "The caller pressed … on the keypad." You may ask them to type numbers such as an account or order number, ending with the pound key.']
      : []),
    dateLine(p.now, a.timezone),
  ];
  return lines;
}

/** The instruction for a model-made greeting (dynamic_greeting). */
export function greetingInstruction(direction: 'inbound' | 'outbound', greetByName: boolean, name: string | null | undefined): string {
  const who = greetByName && present(name) ? ` Greet them by name (${name!.trim()}).` : '';
  return direction === 'inbound'
    ? `The caller has just been connected. Greet them in one short sentence and ask how you can help.${who}`
    : `The person you called has just answered. Greet them in one short sentence and say why you are calling.${who}`;
}

/** The tools the model is offered on every call of this agent (later issues add more). */
export function endCallTool(): { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } } {
  return {
    type: 'function',
    function: {
      name: 'end_call',
      description: 'End the phone call. Call it only after you have said goodbye and the caller has nothing more to ask.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    },
  };
}
