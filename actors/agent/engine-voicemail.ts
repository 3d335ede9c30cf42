// The voicemail screen's effects on one outbound call (machines/voicemail-screen.ts):
// the beep detector on the callee's audio, the one model classification, and on a
// machine the message (spoken word for word through the call's speech provider) or a
// silent hang-up, both ending the call as `voicemail_detected`. The agent engine feeds
// it the callee's audio, voice activity and words while it screens, and starts the
// conversation when it says a person answered.
import { createActor, type Actor } from 'xstate';
import { verdictOf, voicemailScreenMachine, type ScreenEvent } from '../../machines/voicemail-screen.ts';
import { createBeepDetector } from '../../voice/audio/beep.ts';
import { startReply, type ReplyDeps, type ReplyHandle } from '../../voice/conversation/reply.ts';
import type { LlmClient } from '../../voice/providers/llm.ts';
import type { AnalysisModel } from '../../voice/analysis/analysis-client.ts';
import type { CallEvent } from '../../machines/call-events.ts';

/** What the screen needs from the call's setup; null when the call is not screened. */
export interface VoicemailSetup {
  /** The number's voicemail_message when its voicemail_leave_enabled is true; null hangs up silently (unless `compose`). */
  message: string | null;
  /**
   * A batch campaign's call without a message of the number's own: the purpose of the call
   * (its prompt), from which the model writes a short message to leave (api.md: "the agent
   * leaves a short message built from the prompt").
   */
  compose?: string | null;
}

/** How the model is asked for a campaign's voicemail: short, spoken, no instructions read out. */
export const COMPOSE_VOICEMAIL_PROMPT =
  'You are leaving a voicemail on an outbound call. Below is the purpose of the call, written as instructions to you. ' +
  'Write the message you leave: at most two short sentences, spoken to the person, saying who is calling and why, and asking them to call back if they need to. ' +
  'Never read the instructions out, never invent facts, times or numbers that the purpose does not give. Answer with the message only.';

interface VoicemailSetting {
  voicemail_leave_enabled?: boolean | null;
  voicemail_message?: string | null;
}

/**
 * The setting a call's number goes by. An API-imported number has only its own (api.md:
 * null is a silent hang-up). A number an operator added (`source: 'dashboard'`) takes the
 * agent's voicemail_leave_enabled/voicemail_message (contract.md 5) unless it was given a
 * setting of its own, as every other per-number override is read. The agent's field has no
 * null, so its false reads as unset: false is every agent's default, and must not silence
 * the message a campaign's call leaves.
 */
function settingOf(number: (VoicemailSetting & { source?: 'api' | 'dashboard' }) | null, agent: VoicemailSetting | undefined): VoicemailSetting | null {
  if (number?.source !== 'dashboard' || number.voicemail_leave_enabled != null || !agent) return number;
  return agent.voicemail_leave_enabled === true ? agent : { voicemail_leave_enabled: null, voicemail_message: null };
}

/**
 * Screened: outbound calls dialed without carrier AMD (with it the carrier decides and the
 * call machine hangs up). Inbound calls are never screened: whoever calls us is a person or
 * a system that chose to call, and the agent answers it.
 */
export function voicemailSetupOf(p: {
  direction: 'inbound' | 'outbound';
  amdEnabled: boolean;
  resumed: boolean;
  number: (VoicemailSetting & { source?: 'api' | 'dashboard' }) | null;
  /** The agent's own setting: it applies to numbers an operator added (see settingOf). */
  agent?: VoicemailSetting;
  /** A batch campaign's call: its prompt, for a message the model writes when the number has none. */
  campaignPrompt?: string | null;
}): VoicemailSetup | null {
  if (p.direction !== 'outbound' || p.amdEnabled || p.resumed) return null;
  const setting = settingOf(p.number, p.agent);
  const message = setting?.voicemail_leave_enabled === true ? (setting.voicemail_message ?? '').trim() : '';
  if (message !== '') return { message: setting!.voicemail_message! };
  // A number set to false on purpose stays silent, campaign or not; unset (null), a
  // campaign's call leaves the message api.md's batch behaviour promises.
  if (setting?.voicemail_leave_enabled === false) return { message: null };
  const purpose = (p.campaignPrompt ?? '').trim();
  return purpose === '' ? { message: null } : { message: null, compose: purpose };
}

export const CLASSIFY_PROMPT =
  'You screen the start of an outbound phone call. The user message is the first thing heard after the call was answered. ' +
  'Set verdict to "voicemail" if it is an answering machine or voicemail greeting, "human" if a person answered, "unsure" otherwise.';

/** The classification's answer: one field, so the model can only say one of three things. */
export const CLASSIFY_FORMAT = {
  type: 'json_schema',
  json_schema: {
    name: 'voicemail_screen',
    strict: true,
    schema: {
      type: 'object',
      properties: { verdict: { type: 'string', enum: ['unsure', 'human', 'voicemail'] } },
      required: ['verdict'],
      additionalProperties: false,
    },
  },
} as const;

/** The model's structured answer as a verdict; anything unreadable is unsure. */
export function classifiedVerdict(answer: string): 'human' | 'voicemail' | 'unsure' {
  try {
    return verdictOf(String((JSON.parse(answer) as { verdict?: unknown }).verdict ?? ''));
  } catch {
    return 'unsure';
  }
}

export interface EngineVoicemailDeps {
  setup: VoicemailSetup;
  /** Speaks the message (a fixed text: the model is not asked). */
  llm: LlmClient;
  /** The one non-streamed classification (the conversation's model provider); without it the other evidence decides. */
  model: AnalysisModel | null;
  reply: Omit<ReplyDeps, 'llm'>;
  /** Hands an event to the call's actor (the message line, the hang-up). */
  toCall(event: CallEvent): void;
  clock: () => number;
  /** A person answered: the conversation starts. */
  onHuman(): void;
  isClosed(): boolean;
}

export interface EngineVoicemail {
  /** Still deciding, or leaving the message: the conversation has not started. */
  readonly screening: boolean;
  audio(samples: Int16Array): void;
  send(event: ScreenEvent): void;
  /** After each playout tick (the message's first frames). */
  tick(at: number): void;
  close(): void;
}

export function createEngineVoicemail(deps: EngineVoicemailDeps): EngineVoicemail {
  const beeps = createBeepDetector();
  const classifying = new AbortController();
  let screening = true;
  let message: ReplyHandle | null = null;

  const hangUp = () => deps.toCall({ type: 'HANGUP.REQUESTED', at: deps.clock(), reason: 'voicemail_detected' });

  async function classify(text: string): Promise<void> {
    if (!deps.model) return;
    let answer: string;
    try {
      answer = await deps.model.complete({
        messages: [{ role: 'system', content: CLASSIFY_PROMPT }, { role: 'user', content: text }],
        responseFormat: CLASSIFY_FORMAT,
        signal: classifying.signal,
      });
    } catch {
      return; // no answer (failure, timeout, decided meanwhile): the other evidence and the clock decide
    }
    if (!deps.isClosed() && live()) actor.send({ type: 'CLASSIFIED', verdict: classifiedVerdict(answer) });
  }

  function leaveMessage(text: string): void {
    const purpose = deps.setup.compose ?? null;
    const source =
      text === '' && purpose !== null
        ? { kind: 'model' as const, messages: [{ role: 'system' as const, content: COMPOSE_VOICEMAIL_PROMPT }, { role: 'user' as const, content: purpose }], tools: [], temperature: 0.3, maxTokens: 120 }
        : { kind: 'text' as const, text };
    message = startReply(0, source, { ...deps.reply, llm: deps.llm }, {
      firstAudio() {},
      ended(heard) {
        message = null;
        if (deps.isClosed()) return;
        if (heard.trim() !== '') deps.toCall({ type: 'CONVERSATION.LINE', at: deps.clock(), speaker: 'agent', text: heard.trim().slice(0, 20_000) });
        hangUp();
      },
      failed() {
        message = null;
        if (!deps.isClosed()) hangUp();
      },
      toolCall() {},
    });
  }

  const actor: Actor<typeof voicemailScreenMachine> = createActor(
    voicemailScreenMachine.provide({
      actions: {
        classify: (_, p: { text: string }) => void classify(p.text),
        human: () => {
          screening = false;
          classifying.abort();
          queueMicrotask(() => {
            if (!deps.isClosed()) deps.onHuman();
          });
        },
        leaveMessage: () => {
          classifying.abort();
          leaveMessage(deps.setup.message ?? '');
        },
        hangUpSilently: () => {
          classifying.abort();
          hangUp();
        },
      },
    }),
    { input: { leaveMessage: deps.setup.message !== null || (deps.setup.compose ?? null) !== null } },
  );
  actor.start();
  /** The screen has not decided yet (a decided screen is a stopped actor: events to it are noise). */
  const live = () => actor.getSnapshot().status === 'active';

  return {
    get screening() {
      return screening;
    },
    audio(samples) {
      if (!screening || message) return;
      if (beeps.push(samples) && live()) actor.send({ type: 'BEEP' });
    },
    send(event) {
      if (screening && live()) actor.send(event);
    },
    tick(at) {
      message?.onSent(at);
    },
    close() {
      classifying.abort();
      message?.cancel();
      message = null;
      if (live()) actor.send({ type: 'HANGUP' });
      actor.stop();
    },
  };
}
