// Everything one call's conversation runs on, decided once when its media starts: the
// prompt, the greeting, the voice and speed (the number's overrides first), the
// recogniser's language and key terms, the model's settings and tools, and the turn-
// taking numbers of the conversation machine. `buildSetup` is pure (rows in, plain data
// out); the loader reads the rows with the call's own account (a call never reads
// another account's rows): its agent (defaults if it was deleted since), the number's
// overrides, the caller's context record for this number, and the outbound call's
// sealed prompt.
import type { ConversationInput } from '../machines/conversation.ts';
import type { LlmTool } from '../voice/providers/llm.ts';
import type { TtsVoice } from '../voice/providers/tts.ts';
import { providerVoice } from '../voice/voices.ts';
import { assemblePrompt, endCallTool, greetingInstruction, RESPONSE_LENGTH, staticGreeting, type CallerFacts } from '../voice/conversation/prompt.ts';
import type { Storage } from '../storage/index.ts';
import { AGENT_DEFAULTS, type AgentConfig } from '../storage/agents.ts';
import { settingsOf, type NumberSettings } from '../storage/phone-numbers.ts';
import type { CallContext } from '../machines/call-outcome.ts';
import type { EngineCall } from '../voice/engine/engine.ts';

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
}

export interface SetupInput {
  agent: AgentConfig;
  number: Pick<NumberSettings, 'custom_prompt' | 'voice_id' | 'speaking_rate'> | null;
  caller: CallerFacts | null;
  callPrompt: string | null;
  recipientVars?: Record<string, string> | null;
  direction: 'inbound' | 'outbound';
  ttsProvider: 'openai' | 'cartesia';
  now: number;
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
  return {
    systemPrompt: assemblePrompt({
      agent: a,
      numberPrompt: p.number?.custom_prompt ?? null,
      callPrompt: p.callPrompt,
      recipientVars: p.recipientVars ?? null,
      caller: p.caller,
      direction: p.direction,
      now: p.now,
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
    tools: a.func_end_call ? [endCallTool()] : [],
    conversation: {
      aiSpeaksFirst: a.ai_speaks_first,
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
    // The caller is the far end: `from` on inbound calls, `to` on outbound ones.
    const farEnd = ctx.direction === 'inbound' ? ctx.from : ctx.to;
    const caller = storage.callers.get(ctx.accountId, ctx.phoneNumber, farEnd) ?? null;
    return buildSetup({
      agent,
      number: numberRow ? settingsOf(numberRow) : null,
      caller,
      callPrompt: ctx.direction === 'outbound' ? storage.callPrompts.get(ctx.id) : null,
      direction: ctx.direction,
      ttsProvider: deps.ttsProvider,
      now: deps.clock(),
    });
  };
}
