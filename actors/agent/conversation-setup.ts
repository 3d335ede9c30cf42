// Everything one call's conversation runs on, decided once when its media starts: the
// prompt, the greeting, the voice and speed (the number's overrides first), the
// recogniser's language and key terms, the model's settings and tools, and the turn-
// taking numbers of the conversation machine. `buildSetup` is pure (rows in, plain data
// out); the loader reads the rows with the call's own account (a call never reads
// another account's rows): its agent (defaults if it was deleted since), the number's
// overrides, the caller's context record for this number, and the call's sealed prompt
// (an outbound call's `prompt`, or an inbound call's pre-call gate answer).
import type { ConversationInput } from '../../machines/conversation.ts';
import type { LlmTool } from '../../voice/providers/llm.ts';
import type { TtsVoice } from '../../voice/providers/tts.ts';
import { providerVoice } from '../../voice/voices.ts';
import { assemblePrompt, endCallTool, greetingInstruction, RESPONSE_LENGTH, type CallerFacts } from '../../voice/conversation/prompt.ts';
import { staticGreeting } from '../../voice/conversation/greeting.ts';
import { transferPolicy, transferTool, type TransferPolicy } from '../../voice/conversation/transfer-tool.ts';
import { resumeAfterTransfer, type TransferResume } from './engine-transfer.ts';
import type { Storage } from '../../storage/index.ts';
import { AGENT_DEFAULTS, type AgentConfig } from '../../storage/agents.ts';
import { settingsOf, type NumberSettings, type NumberSource } from '../../storage/phone-numbers.ts';
import type { CallContext } from '../../machines/call-outcome.ts';
import type { EngineCall } from '../../voice/engine/engine.ts';
import { httpTools, type CustomFunctionDef, type HttpTool } from '../../voice/conversation/tools.ts';
import { publicIdOf } from '../calls/call-kind.ts';
import { bookingToolDefinitions, bookingZone } from '../../voice/conversation/booking-tools.ts';
import type { BookingSetup } from './engine-bookings.ts';
import { voicemailSetupOf, type VoicemailSetup } from './engine-voicemail.ts';
import { sendSmsToolDefinition } from '../../voice/conversation/sms-tool.ts';
import type { CallSmsSetup } from './engine-sms.ts';

export interface ConversationSetup {
  systemPrompt: string;
  greeting: { mode: 'static'; text: string } | { mode: 'dynamic'; instruction: string };
  fallbackMessage: string;
  /** Said after a provider failure the engine could not retry away. */
  apology: string;
  voice: TtsVoice;
  stt: { language: string; keyterms: string[] };
  temperature: number;
  maxTokens: number;
  tools: LlmTool[];
  conversation: ConversationInput;
  /** Keypad input reaches the model (dtmf_enabled: the number's setting first, null inherits the agent's; unset is off). */
  keypad: boolean;
  /** The tools the engine runs over HTTP (custom functions, the in-call webhook); their definitions are in `tools` too. */
  httpTools: HttpTool[];
  /** What the tool endpoints are told about the call (contract.md 9: the public call_id and the agent_id). */
  toolCallIdentity: { callId: string; agentId: string | null };
  /** Transfers (voice/conversation/transfer-tool.ts): null when the prompt does not ask for them. */
  transfer: TransferPolicy | null;
  /** Set when the conversation comes back on a new stream after a failed transfer. */
  resume: TransferResume | null;
  /** The booking tools (actors/agent/engine-bookings.ts): null unless the number has a CRM integration with a calendar. */
  bookings: BookingSetup | null;
  /** Texts during the call (send_sms, booking confirmations; actors/agent/engine-sms.ts): null unless the agent has incall_sms_enabled. */
  sms: CallSmsSetup | null;
  /** The voicemail screen (actors/agent/engine-voicemail.ts): outbound calls without carrier AMD only. */
  voicemail: VoicemailSetup | null;
  /** record_call (the number's setting first, null inherits the agent's) with the agent's recording_source; null: not recorded. */
  recording: 'provider' | 'platform' | null;
}

export interface SetupInput {
  agent: AgentConfig;
  number:
    | (Pick<NumberSettings, 'custom_prompt' | 'voice_id' | 'speaking_rate'> &
        Partial<Pick<NumberSettings, 'dtmf_enabled' | 'voicemail_leave_enabled' | 'voicemail_message' | 'require_booking_confirmation' | 'record_call'>> & {
          /** How the number was added: an operator's (`dashboard`) takes the agent's voicemail setting. */
          source?: NumberSource;
        })
    | null;
  /** The call was dialed with carrier answering-machine detection (then the engine does not screen). */
  amdEnabled?: boolean;
  /** The number's custom functions, oldest first. */
  functions?: readonly CustomFunctionDef[];
  /** The number's automation integration's in_call_url. */
  inCallUrl?: string | null;
  /** The call's public id and agent, for the tool endpoints. */
  identity?: { callId: string; agentId: string | null };
  caller: CallerFacts | null;
  callPrompt: string | null;
  /** The call belongs to a batch campaign: on an answering machine it leaves a message built from `callPrompt`. */
  campaignCall?: boolean;
  recipientVars?: Record<string, string> | null;
  direction: 'inbound' | 'outbound';
  ttsProvider: 'openai' | 'cartesia';
  now: number;
  /** The conversation so far, when it comes back after a failed transfer (actors/agent/engine-transfer.ts). */
  resume?: TransferResume | null;
  /** The number's CRM integration (its token opened), when it names a calendar. */
  crm?: { token: string; locationId: string; calendarId: string } | null;
  /** The far end's number (the CRM contact a booking is made under, and whom texts go to). */
  callerPhone?: string;
  /** The call's account and number (texts go from it). */
  line?: { accountId: string; phoneNumber: string };
  /**
   * A web call from a browser (POST /v1/web-calls): `number.custom_prompt` holds the
   * number's web_prompt; there is no carrier leg to transfer or key in on, and nothing
   * but the platform can record it.
   */
  web?: boolean;
}

export const SPEAKING_RATE = { min: 0.5, max: 1.5 } as const;
/** A pause with no words for this long is a false interruption: the agent resumes. */
export const RESUME_AFTER_MS = 2000;
export const MAX_KEYTERMS = 50;

/**
 * interruption_sensitivity (0..100) as the overlapping speech that pauses the agent:
 * 0 (hardest) needs 1.2 s, the default 50 needs 650 ms, 100 needs 100 ms.
 */
export function interruptMsOf(sensitivity: number): number {
  const s = Math.min(100, Math.max(0, sensitivity));
  return Math.round(1200 - 11 * s);
}

/** The number's rate first, then the agent's; null means normal (1); clamped to 0.5..1.5. */
export function speedOf(numberRate: number | null | undefined, agentRate: number | null): number {
  const rate = numberRate ?? agentRate ?? 1;
  return Math.min(SPEAKING_RATE.max, Math.max(SPEAKING_RATE.min, rate));
}

export function keytermsOf(boosted: string | null): string[] {
  if (!boosted) return [];
  return boosted
    .split(',')
    .map((w) => w.trim())
    .filter((w) => w !== '')
    .slice(0, MAX_KEYTERMS);
}

export function buildSetup(p: SetupInput): ConversationSetup {
  const a = p.agent;
  const name = p.caller?.name ?? null;
  const voiceId = p.number?.voice_id || a.voice_id;
  // Offered only when the developer's own prompt for the call asks for transfers.
  const transfer = p.web ? null : transferPolicy(a, [a.system_prompt, p.number?.custom_prompt, p.callPrompt]);
  const keypad = !p.web && (p.number?.dtmf_enabled ?? a.dtmf_enabled) === true;
  const http = httpTools(p.functions ?? [], p.inCallUrl ?? null);
  const zone = bookingZone(a.timezone);
  const identity = p.identity ?? { callId: '', agentId: null };
  // Off, the model is never offered the tool and no confirmation is texted, whatever the prompt says.
  const sms: CallSmsSetup | null = a.incall_sms_enabled && p.line && p.callerPhone ? { ...p.line, to: p.callerPhone, agentId: identity.agentId, callId: identity.callId } : null;
  const bookings: BookingSetup | null = p.crm
    ? { ...p.crm, timezone: zone, confirm: (p.number?.require_booking_confirmation ?? a.require_booking_confirmation) === true, callerPhone: p.callerPhone ?? '' }
    : null;
  return {
    systemPrompt: assemblePrompt({
      // The prompt offers texts only when the call can send one (incall_sms_enabled, and a far end to text).
      agent: sms || !a.incall_sms_enabled ? a : { ...a, incall_sms_enabled: false },
      numberPrompt: p.number?.custom_prompt ?? null,
      callPrompt: p.callPrompt,
      recipientVars: p.recipientVars ?? null,
      caller: p.caller,
      direction: p.direction,
      now: p.now,
      keypad,
    }),
    greeting: a.dynamic_greeting
      ? { mode: 'dynamic', instruction: greetingInstruction(p.direction, a.greet_by_name, name) }
      : { mode: 'static', text: staticGreeting(a.welcome_message, a.greet_by_name, name) },
    fallbackMessage: a.fallback_message,
    apology: 'I am sorry, I am having a technical problem on my side.',
    voice: { voice: providerVoice(voiceId, p.ttsProvider), speed: speedOf(p.number?.speaking_rate, a.speaking_rate), language: a.language },
    stt: { language: a.language, keyterms: keytermsOf(a.boosted_keywords) },
    temperature: a.temperature,
    maxTokens: RESPONSE_LENGTH[a.response_length].maxTokens,
    tools: [
      ...(a.func_end_call ? [endCallTool()] : []),
      ...(transfer ? [transferTool(transfer)] : []),
      ...(sms ? [sendSmsToolDefinition()] : []),
      ...http.map((t) => t.definition),
      ...(bookings ? bookingToolDefinitions(zone) : []),
    ],
    keypad,
    httpTools: http,
    toolCallIdentity: identity,
    transfer,
    resume: p.resume ?? null,
    bookings,
    sms,
    voicemail: voicemailSetupOf({
      direction: p.direction,
      amdEnabled: p.amdEnabled === true,
      resumed: !!p.resume,
      number: p.number,
      agent: a,
      campaignPrompt: p.campaignCall ? p.callPrompt : null,
    }),
    recording: (p.number?.record_call ?? a.record_call) ? (p.web ? 'platform' : a.recording_source) : null,
    conversation: {
      // Back after a failed transfer the agent speaks at once: the caller is waiting to hear.
      aiSpeaksFirst: p.resume ? true : a.ai_speaks_first,
      pickupDelayMs: a.pickup_delay * 1000,
      eagernessMs: a.response_eagerness,
      interruptMs: interruptMsOf(a.interruption_sensitivity),
      silenceHangupMs: a.silence_hangup_seconds * 1000,
      resumeAfterMs: RESUME_AFTER_MS,
    },
  };
}

export interface SetupLoaderDeps {
  storage: Storage;
  contextOf(id: string): CallContext | null;
  ttsProvider: 'openai' | 'cartesia';
  clock: () => number;
}

export function createSetupLoader(deps: SetupLoaderDeps): (call: EngineCall) => ConversationSetup | null {
  const { storage } = deps;
  return (call) => {
    const ctx = deps.contextOf(call.callId);
    if (!ctx || ctx.accountId !== call.accountId) return null;
    const agent = (ctx.agentId ? storage.agents.get(ctx.accountId, ctx.agentId) : undefined) ?? AGENT_DEFAULTS;
    const numberRow = storage.numbers.get(ctx.accountId, ctx.phoneNumber);
    // The caller is the far end: `from` on inbound calls, `to` on outbound ones. A web call's has no phone number.
    const web = ctx.provider === 'web';
    const farEnd = ctx.direction === 'inbound' ? ctx.from : ctx.to;
    const caller = web ? null : (storage.callers.get(ctx.accountId, ctx.phoneNumber, farEnd) ?? null);
    const settings = numberRow ? { ...settingsOf(numberRow), source: numberRow.source } : null;
    return buildSetup({
      agent,
      // A web call on a number takes the number's web_prompt where a phone call takes its custom_prompt.
      number: settings && web ? { ...settings, custom_prompt: numberRow!.web_prompt } : settings,
      web,
      caller,
      // Outbound: the call's prompt; inbound: the pre-call gate's custom_prompt/dynamic_vars, if any.
      callPrompt: storage.callPrompts.get(ctx.id),
      campaignCall: ctx.campaignId !== null,
      direction: ctx.direction,
      amdEnabled: ctx.amdEnabled,
      ttsProvider: deps.ttsProvider,
      now: deps.clock(),
      resume: resumeAfterTransfer(ctx),
      functions: storage.integrations.listFunctions(ctx.accountId, ctx.phoneNumber),
      inCallUrl: inCallUrlOf(storage.integrations.get(ctx.accountId, 'automation', { phoneNumber: ctx.phoneNumber })?.config),
      identity: { callId: publicIdOf(ctx), agentId: ctx.agentId },
      crm: crmOf(storage.integrations.get(ctx.accountId, 'crm', { phoneNumber: ctx.phoneNumber })),
      ...(web ? {} : { callerPhone: farEnd }),
      line: { accountId: ctx.accountId, phoneNumber: ctx.phoneNumber },
    });
  };
}

/** The CRM integration as the booking tools need it: only with a token, a location and a calendar. */
function crmOf(i: { config: Record<string, unknown>; secret: string | null } | undefined): SetupInput['crm'] {
  const locationId = i?.config['location_id'];
  const calendarId = i?.config['calendar_id'];
  if (!i?.secret || typeof locationId !== 'string' || locationId === '' || typeof calendarId !== 'string' || calendarId === '') return null;
  return { token: i.secret, locationId, calendarId };
}

function inCallUrlOf(config: Record<string, unknown> | undefined): string | null {
  const url = config?.['in_call_url'];
  return typeof url === 'string' && url !== '' ? url : null;
}
