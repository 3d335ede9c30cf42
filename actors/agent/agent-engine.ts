// The agent engine (MEDIA_ENGINE=agent): the conversation on one call, as an actor of
// the conversation machine (so it lives in actors/, beside the call actors it reports to). Caller audio goes
// to the speech recogniser and to the voice activity detector; their events drive the
// conversation machine (machines/conversation.ts); the machine's effects start, pause,
// resume and cut replies (voice/conversation/reply.ts) whose audio the call's playout
// paces to the carrier. Final transcript lines, each reply's latency and the
// conversation's own hang-ups go to the call's actor as events, so they are durable.
import { createActor, type Actor } from 'xstate';
import { performance } from 'node:perf_hooks';
import { conversationMachine, type ConversationEndReason, type ReplyRequest, type ToolCall, type ToolRound, type TranscriptLine } from '../../machines/conversation.ts';
import { decodeMulaw } from '../../voice/audio/mulaw.ts';
import type { ConversationSetup } from './conversation-setup.ts';
import { startReply, type ReplyHandle, type ReplySource, type ReplyTimings } from '../../voice/conversation/reply.ts';
import { createEngineTransfer, type CallWatcher, type EngineTransfer } from './engine-transfer.ts';
import type { LlmClient, LlmMessage } from '../../voice/providers/llm.ts';
import type { SttClient, SttEvent, SttStream } from '../../voice/providers/stt.ts';
import type { TtsClient } from '../../voice/providers/tts.ts';
import type { ProviderError } from '../../voice/providers/errors.ts';
import { createVadDetector, type VadDetector, type VadEvent } from '../../voice/vad/vad-detector.ts';
import { VAD_DEFAULTS } from '../../voice/vad/vad-hysteresis.ts';
import type { VadBatcher } from '../../voice/vad/vad-batcher.ts';
import { createPlayout, type Playout } from '../../voice/media/playout.ts';
import type { PlayoutTicker } from '../../voice/media/playout-ticker.ts';
import type { ConversationEngine, EngineCall, EngineFactory, MediaOutput } from '../../voice/engine/engine.ts';
import type { CallEvent } from '../../machines/call-events.ts';
import { createEngineKeypad, type CarrierKeys, type EngineKeypad } from './engine-keypad.ts';
import { combineLocalTools, createEngineTools, type EngineTools } from './engine-tools.ts';
import { createEngineSms, type CallTexts, type EngineSms } from './engine-sms.ts';
import type { ToolOutcome, ToolRunDeps } from './tool-runner.ts';
import { conversationMessages } from '../../voice/conversation/tool-history.ts';
import { createEngineBookings, notConfirmedNote, type EngineBookings } from './engine-bookings.ts';
import { createCrmCalendarClient } from '../../voice/providers/crm-calendar.ts';
import { createEngineVoicemail, type EngineVoicemail } from './engine-voicemail.ts';
import type { AnalysisModel } from '../../voice/analysis/analysis-client.ts';
import { recordedOutput, type PlatformRecordings } from '../recordings/platform-recordings.ts';
import type { ProviderRecordings } from '../recordings/provider-recordings.ts';

export interface Providers {
  llm: LlmClient;
  stt: SttClient;
  tts: TtsClient;
}

/** One turn's latency and its parts, in ms (the /metrics histograms and the bench). */
export interface TurnLatency {
  /** Caller's end of speech to the reply's first audio frame sent. */
  totalMs: number;
  /** End of speech to the recogniser's final words. */
  sttMs: number;
  /** The wait after the final words (response_eagerness). */
  waitMs: number;
  /**
   * Model request to its first speakable segment: the first token and the tokens up to
   * the first sentence or clause end (the model's time, not ours).
   */
  llmMs: number;
  /** First text to the speech stream to its first audio. */
  ttsMs: number;
  /** Everything else: the engine's own time (what the bench budgets at 20 ms p95). */
  engineMs: number;
}

export interface AgentEngineDeps {
  /** Null when a provider is not configured: calls then end at once (provider_not_configured). */
  providers: Providers | null;
  /** Everything the call's conversation runs on; null when the call cannot be set up (its agent is gone). */
  loadSetup(call: EngineCall): ConversationSetup | null;
  /** Null only together with `providers` (nothing runs then). */
  vad: VadBatcher | null;
  ticker: PlayoutTicker | null;
  /** Wall clock for the events the call actor records (epoch ms). */
  clock: () => number;
  onTurn?(latency: TurnLatency): void;
  onProviderError?(call: EngineCall, err: ProviderError): void;
  /** Watches the call's committed state (a transfer's outcome); without it a failed transfer is not noticed. */
  watchCall?: CallWatcher;
  /** How HTTP tools are sent (signing secrets, private targets); without it every tool call fails. */
  tools?: ToolRunDeps;
  onTool?(call: EngineCall, name: string, outcome: ToolOutcome, ms: number): void;
  /** Keys a carrier reports outside the media stream (carrier B call events). */
  carrierKeys?: CarrierKeys;
  /** CRM_BASE_URL: the calendar the booking tools use (without it a call has no booking tools). */
  crmBaseUrl?: string;
  /** The voicemail screen's one non-streamed classification (actors/agent/engine-voicemail.ts); without it the other evidence decides. */
  screenModel?: AnalysisModel | null;
  /** Platform recording (actors/recordings/platform-recordings.ts); without it `platform` calls are not recorded. */
  recordings?: PlatformRecordings;
  /** Provider recording (actors/recordings/provider-recordings.ts): the carrier is asked to record `provider` calls. */
  providerRecordings?: ProviderRecordings;
  /** Texts of a call (send_sms, booking confirmations) for agents with incall_sms_enabled; without it none are sent. */
  texts?: CallTexts;
}

/** Audio kept at the carrier ahead of real time (see voice/media/playout.ts). */
export const PLAYOUT_LEAD_MS = 120;

const MUTE: ConversationEngine = { onAudio() {}, onDtmf() {}, close() {} };

export function createAgentEngineFactory(deps: AgentEngineDeps): EngineFactory {
  return (output, call) => {
    const providers = deps.providers;
    const setup = providers ? deps.loadSetup(call) : null;
    if (!providers || !setup || !deps.vad || !deps.ticker) {
      // Nobody could talk on this call: end it at once rather than leave the line silent.
      call.deliver({ type: 'HANGUP.REQUESTED', at: deps.clock(), reason: providers ? 'provider_error' : 'provider_not_configured' });
      return MUTE;
    }
    return createAgentEngine(output, call, setup, providers, { ...deps, vad: deps.vad, ticker: deps.ticker });
  };
}

type LiveDeps = AgentEngineDeps & { vad: VadBatcher; ticker: PlayoutTicker };

function createAgentEngine(output: MediaOutput, call: EngineCall, setup: ConversationSetup, providers: Providers, deps: LiveDeps): ConversationEngine {
  const now = () => performance.now();
  // On the ticker's clock, so a reply's first frames leave as soon as they exist. The
  // carrier holds PLAYOUT_LEAD_MS of audio: an event-loop stall shorter than that is not
  // heard, and a barge-in's `clear` drops it anyway.
  // Platform recording taps both sides; a conversation resumed after a failed transfer is not recorded again.
  const recording = setup.recording === 'platform' && !setup.resume && deps.recordings ? deps.recordings.start(call) : null;
  if (setup.recording === 'provider' && !setup.resume) deps.providerRecordings?.start(call);
  const playout: Playout = createPlayout(recording ? recordedOutput(output, recording) : output, { now, leadMs: PLAYOUT_LEAD_MS });
  let closed = false;
  let reply: ReplyHandle | null = null;
  let replies = 0;
  /** Caller audio received, in ms (8 μ-law bytes per ms). */
  let audioMs = 0;
  /** Audio position of the last window the detector judged voiced. */
  let lastVoicedMs = 0;
  /** performance.now() of the caller's end of speech for the turn being answered, and of its final words. */
  let turnSpeechEndAt: number | null = null;
  let turnFinalAt: number | null = null;
  let pendingLatency: TurnLatency | null = null;
  const pcm = new Int16Array(160);
  // The call actor hears from the conversation after the conversation's step is over, in
  // order: its supervisor must not run inside one of this machine's actions.
  const toCall = (event: CallEvent): void => queueMicrotask(() => call.deliver(event));
  // Transfers (actors/agent/engine-transfer.ts): the tool, the hold chime, the call's transfer, a failed one's return.
  const transfer: EngineTransfer = createEngineTransfer({
    call,
    policy: setup.transfer,
    resume: setup.resume,
    llm: providers.llm,
    temperature: setup.temperature,
    playout: { enqueue: (mulaw) => playout.enqueue(mulaw), queuedMs: () => playout.queuedMs(), clear: () => playout.clear() },
    clock: deps.clock,
    watchCall: deps.watchCall,
    send: (event) => actor.send(event),
    isClosed: () => closed,
  });
  // Texts to the person on the call (actors/agent/engine-sms.ts): only with incall_sms_enabled.
  const texting: EngineSms | null = setup.sms && deps.texts ? createEngineSms({ setup: setup.sms, texts: deps.texts }) : null;
  // The booking tools (actors/agent/engine-bookings.ts): run beside the HTTP tools; each change reaches the call record (and is confirmed by text).
  const bookings: EngineBookings | null =
    setup.bookings && deps.crmBaseUrl
      ? createEngineBookings({
          setup: setup.bookings,
          client: createCrmCalendarClient({ baseUrl: deps.crmBaseUrl, token: setup.bookings.token }),
          record: (booking) => {
            toCall({ type: 'CONVERSATION.BOOKING', at: deps.clock(), booking });
            texting?.onBooking(booking);
          },
        })
      : null;
  let confirmedCalls = 0;
  /** The caller's answer to a read-back was not a clear yes: the next model reply is told (sourceFor). */
  let unconfirmed: ReturnType<EngineBookings['takeDecision']> = null;
  /** The read-back being said (until the caller's next turn). */
  let readBackSaid: string | null = null;
  // Custom functions and the in-call webhook (actors/agent/engine-tools.ts), keypad entries (actors/agent/engine-keypad.ts).
  const local = combineLocalTools([bookings, texting]);
  const tools: EngineTools = createEngineTools({
    ...(local ? { local } : {}),
    httpTools: setup.httpTools,
    allTools: setup.tools,
    accountId: call.accountId,
    identity: setup.toolCallIdentity,
    runner: deps.tools ?? { allowPrivate: false, secretsOf: () => [], clock: deps.clock, timeoutMs: 0 },
    send: (event) => actor.send(event),
    isClosed: () => closed,
    onRun: (name, outcome, ms) => deps.onTool?.(call, name, outcome, ms),
    now,
  });
  const keypad: EngineKeypad = createEngineKeypad({ enabled: setup.keypad, now, enter: (digits) => actor.send({ type: 'KEYPAD', digits }) });
  const unregisterKeys = setup.keypad ? deps.carrierKeys?.register(call.callId, (digit) => keypad.key(digit, 'event')) : undefined;

  const actor: Actor<typeof conversationMachine> = createActor(
    conversationMachine.provide({
      actions: {
        startReply: (_, params: ReplyRequest) => beginReply(params),
        interruptReply: () => reply?.interrupt(),
        cancelReply: () => {
          reply?.cancel();
          reply = null;
        },
        pausePlayback: () => playout.pause(),
        resumePlayback: () => playout.resume(),
        recordLine: (_, line: { speaker: 'agent' | 'caller'; text: string }) => {
          if (line.text.trim() === '') return;
          // The caller's answer to a booking read-back, if one is pending.
          if (line.speaker === 'caller' && bookings) {
            unconfirmed = null;
            readBackSaid = null;
            bookings.onCallerLine(line.text);
          }
          const latency = line.speaker === 'agent' ? pendingLatency : null;
          if (line.speaker === 'agent') pendingLatency = null;
          toCall({
            type: 'CONVERSATION.LINE',
            at: deps.clock(),
            speaker: line.speaker,
            text: line.text.slice(0, 20_000),
            ...(latency ? { latencyMs: Math.round(latency.totalMs) } : {}),
          });
        },
        requestHangup: (_, params: { reason: ConversationEndReason }) => {
          toCall({ type: 'HANGUP.REQUESTED', at: deps.clock(), reason: params.reason });
        },
        requestTransfer: (_, params: { lines: readonly TranscriptLine[] }) => transfer.begin(history(params.lines)),
        runTools: (_, params: { calls: ToolCall[] }) => tools.run(params.calls),
      },
    }),
    { input: setup.conversation },
  );

  const vad: VadDetector = createVadDetector({
    batcher: deps.vad,
    onEvent: (e: VadEvent) => {
      if (closed) return;
      if (voicemail?.screening) return voicemail.send({ type: e.type === 'speech_start' ? 'SPEECH.START' : 'SPEECH.END' });
      actor.send({ type: e.type === 'speech_start' ? 'SPEECH.START' : 'SPEECH.END' });
    },
  });

  const stt: SttStream = providers.stt.open({
    language: setup.stt.language,
    keyterms: setup.stt.keyterms,
    onEvent: (e: SttEvent) => {
      if (closed) return;
      // While the voicemail screen decides, the callee's words are its evidence, not a turn.
      if (voicemail?.screening && (e.type === 'interim' || e.type === 'final' || e.type === 'utterance_end')) {
        if (e.type !== 'utterance_end') voicemail.send({ type: 'WORDS', text: e.text, final: e.type === 'final' });
        return;
      }
      switch (e.type) {
        case 'interim':
          actor.send({ type: 'WORDS', text: e.text, final: false, endOfTurn: false });
          return;
        case 'final': {
          const endOfTurn = e.speechFinal || !vad.speaking;
          if (endOfTurn && e.text.trim() !== '') markTurnEnd();
          actor.send({ type: 'WORDS', text: e.text, final: true, endOfTurn });
          return;
        }
        case 'utterance_end':
          markTurnEnd();
          actor.send({ type: 'UTTERANCE.END' });
          return;
        case 'speech_started':
          return; // the detector on our side decides; the provider's hint would double it
        case 'error':
          deps.onProviderError?.(call, e.error);
          actor.send({ type: 'STT.FAILED' });
          return;
      }
    },
  });

  /** The caller's words are final: when did their speech end (wall time), for the latency. */
  function markTurnEnd(): void {
    // Words over the agent's reply (a backchannel) do not end a turn of the caller's.
    const state = actor.getSnapshot();
    if (state.matches('speaking') || state.matches('thinking')) return;
    const t = now();
    turnFinalAt ??= t;
    turnSpeechEndAt ??= t - Math.max(0, audioMs - lastVoicedMs);
  }

  function history(lines: readonly TranscriptLine[], rounds: readonly ToolRound[] = []): LlmMessage[] {
    const messages: LlmMessage[] = [{ role: 'system', content: setup.systemPrompt }];
    // Back on a new stream after a failed transfer: what was said before it comes first.
    for (const l of setup.resume?.lines ?? []) messages.push(l.speaker === 'agent' ? { role: 'assistant', content: l.text } : { role: 'user', content: l.text });
    // The lines with the tool rounds where they happened (voice/conversation/tool-history.ts).
    messages.push(...conversationMessages(lines, rounds));
    return messages;
  }

  function sourceFor(request: ReplyRequest): ReplySource {
    const { kind, lines, greeted } = request;
    const model = (extra?: string): ReplySource => {
      const messages = history(lines, request.toolRounds);
      if (extra) messages.push({ role: 'system', content: extra });
      return { kind: 'model', messages, tools: tools.offered(request), temperature: setup.temperature, maxTokens: setup.maxTokens };
    };
    const greeting = setup.greeting;
    switch (kind) {
      case 'greeting':
        // Back after a failed transfer: no greeting, the agent says what happened.
        if (setup.resume) return model(transfer.failedNote());
        return greeting.mode === 'static' ? { kind: 'text', text: greeting.text } : model(greeting.instruction);
      case 'answer': {
        // A booking the caller did not clearly confirm: nothing changed, and the model is told.
        // Kept for every model reply of this turn (a reply cancelled and asked again must say it too).
        const decision = unconfirmed;
        if (decision?.kind === 'not_confirmed') return model(notConfirmedNote(decision.answer === 'no' ? 'no' : 'unclear', decision.action.name));
        // The model asked for a calendar change that needs confirmation: the engine itself reads it back.
        // Kept until the caller answers: a read-back cancelled before it played is said again.
        const readBack = (readBackSaid ??= bookings?.takeReadBack() ?? null);
        if (readBack) return { kind: 'text', text: readBack };
        if (greeted) return model();
        // The caller spoke before the agent greeted: the answer opens with the greeting.
        return model(greeting.mode === 'static' ? `You have not greeted the caller yet: begin your reply with "${greeting.text}"` : greeting.instruction);
      }
      case 'fallback':
        return { kind: 'text', text: setup.fallbackMessage };
      case 'transfer_failed':
        return model(transfer.failedNote());
      case 'filler':
        return { kind: 'text', text: tools.nextFiller() };
      case 'apology':
        return { kind: 'text', text: setup.apology };
    }
  }

  function beginReply(request: ReplyRequest): void {
    const kind = request.kind;
    reply?.cancel();
    if (kind === 'answer' && confirmedChange()) return;
    const answering = kind === 'answer' && turnSpeechEndAt !== null;
    const speechEnd = turnSpeechEndAt;
    const finalAt = turnFinalAt;
    turnSpeechEndAt = null;
    turnFinalAt = null;
    const id = ++replies;
    const handle = startReply(
      id,
      sourceFor(request),
      { llm: providers.llm, tts: providers.tts, voice: setup.voice, playout: playoutForReplies, now },
      {
        firstAudio(t: ReplyTimings) {
          if (closed || reply !== handle) return;
          if (answering && speechEnd !== null && finalAt !== null) {
            pendingLatency = latencyOf(speechEnd, finalAt, t);
            deps.onTurn?.(pendingLatency);
          }
          actor.send({ type: 'REPLY.AUDIO' });
        },
        ended(heard, complete) {
          if (closed || reply !== handle) return;
          reply = null;
          // An interruption reports from inside the machine's own action: the event waits for that step to finish.
          queueMicrotask(() => {
            if (!closed) actor.send({ type: 'REPLY.ENDED', heard, complete });
          });
        },
        failed(provider, err) {
          if (closed || reply !== handle) return;
          reply = null;
          deps.onProviderError?.(call, err);
          actor.send({ type: 'REPLY.FAILED', provider, retryable: err.retryable });
        },
        toolCalls(calls) {
          if (closed || reply !== handle) return;
          tools.onModelCalls(calls);
        },
        toolCall(name, args) {
          if (closed || reply !== handle) return;
          if (transfer.onToolCall(name, args)) return;
          if (name === 'end_call' && setup.tools.some((t) => t.function.name === 'end_call')) actor.send({ type: 'END_CALL' });
        },
      },
    );
    reply = handle;
  }

  /**
   * The caller clearly said yes to a booking read-back: instead of a model reply, the
   * change runs as a tool call of its own (its answer then reaches the model, which
   * tells the caller). The empty reply ends at once, so the conversation waits for it.
   */
  function confirmedChange(): boolean {
    const decision = bookings?.takeDecision();
    if (!decision || decision.kind === 'none') return false;
    if (decision.kind !== 'perform') {
      // Not a yes: the reply about to start tells the model (sourceFor).
      unconfirmed = decision;
      return false;
    }
    const id = `confirmed_${++confirmedCalls}`;
    bookings!.authorize(id);
    reply = null;
    turnSpeechEndAt = null;
    turnFinalAt = null;
    queueMicrotask(() => {
      if (closed) return;
      tools.onModelCalls([{ id, name: decision.action.name, arguments: decision.action.arguments }]);
      actor.send({ type: 'REPLY.ENDED', heard: '', complete: true });
    });
    return true;
  }

  function latencyOf(speechEnd: number, finalAt: number, t: ReplyTimings): TurnLatency {
    const first = t.firstFrameSentAt ?? now();
    const totalMs = Math.max(0, first - speechEnd);
    const sttMs = Math.max(0, finalAt - speechEnd);
    const waitMs = Math.max(0, t.startedAt - finalAt);
    // A fixed line (fallback, apology) has no model time.
    const llmMs = t.llmFirstTokenAt !== null && t.ttsFirstPushAt !== null ? Math.max(0, t.ttsFirstPushAt - t.startedAt) : 0;
    const ttsMs = t.ttsFirstAudioAt !== null && t.ttsFirstPushAt !== null ? Math.max(0, t.ttsFirstAudioAt - t.ttsFirstPushAt) : 0;
    return { totalMs, sttMs, waitMs, llmMs, ttsMs, engineMs: Math.max(0, totalMs - sttMs - waitMs - llmMs - ttsMs) };
  }

  // The reply sees the playout through this adapter; the engine learns of sent audio after each tick.
  const playoutForReplies = {
    enqueue: (mulaw: Uint8Array, tag: number) => playout.enqueue(mulaw, tag),
    markEnd: (name: string) => playout.markEnd(name),
    clear: () => playout.clear(),
    progress: (tag: number) => playout.progress(tag),
    aheadMs: (at: number) => playout.aheadMs(at),
  };
  // Ticked by the process's one 20 ms clock; after each tick the reply learns whether its first frame went out.
  const tickable = {
    tick(at: number) {
      transfer.tick();
      playout.tick(at);
      reply?.onSent(at);
      voicemail?.tick(at);
    },
  };
  deps.ticker.add(tickable);

  // An outbound call without carrier AMD is screened first (actors/agent/engine-voicemail.ts):
  // the agent does not greet until the screen says a person answered.
  const voicemail: EngineVoicemail | null = setup.voicemail
    ? createEngineVoicemail({
        setup: setup.voicemail,
        llm: providers.llm,
        model: deps.screenModel ?? null,
        reply: { tts: providers.tts, voice: setup.voice, playout: playoutForReplies, now },
        toCall,
        clock: deps.clock,
        onHuman: () => actor.start(),
        isClosed: () => closed,
      })
    : null;
  if (!voicemail) actor.start();

  return {
    onAudio(mulaw) {
      if (closed) return;
      stt.send(mulaw);
      recording?.inbound(mulaw);
      const samples = mulaw.length === 160 ? decodeMulaw(mulaw, pcm) : decodeMulaw(mulaw);
      vad.push(samples);
      keypad.audio(samples);
      voicemail?.audio(samples);
      audioMs += mulaw.length / 8;
      if (vad.probability >= VAD_DEFAULTS.deactivation) lastVoicedMs = vad.processedMs;
      // The recogniser's stream paces itself by it (SttStream.callerSilence).
      stt.callerSilence(vad.speaking ? 0 : audioMs - lastVoicedMs);
    },
    onDtmf(digit) {
      keypad.key(digit, 'stream');
    },
    onMark(name) {
      playout.onMark(name);
    },
    close() {
      if (closed) return;
      closed = true;
      reply?.cancel();
      reply = null;
      voicemail?.close();
      actor.send({ type: 'HANGUP' });
      actor.stop();
      deps.ticker.remove(tickable);
      transfer.close();
      tools.close();
      keypad.close();
      unregisterKeys?.();
      playout.close();
      recording?.finish();
      vad.close();
      stt.close();
    },
  };
}
