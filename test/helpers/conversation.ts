// What the conversation suites share: both carrier simulators and the three provider
// simulators (model, speech to text, text to speech) on loopback, a real server with
// MEDIA_ENGINE=agent pointed at all of them, and a far end that speaks real speech
// fixtures (espeak-ng) into the call and hears what the agent plays back.
import { nextNumber } from './fixtures.ts';
import { API_POLL_MS, eventually, getCall, startCallStack, type CallStack, type Customer, type Provider, type SimOptions } from './calls.ts';
import type { StartOptions } from '../../server.ts';
import { startLlmSim, type LlmSim, type LlmSimOptions } from '../sim/llm-sim.ts';
import { startDeepgramSim, type DeepgramSim } from '../sim/deepgram-sim.ts';
import { startOpenAiTtsSim, type OpenAiTtsSim } from '../sim/openai-tts-sim.ts';
import { startCartesiaSim, type CartesiaSim } from '../sim/cartesia-sim.ts';
import { FarEndVoice } from '../sim/far-end-playback.ts';
import { loadSpeechFixture, speechFixture, type SpeechFixtureSlug } from '../fixtures/speech/speech.ts';

export const KEYS = { llm: 'sk-llm-test', stt: 'dg-test', tts: 'sk-tts-test', cartesia: 'cartesia-test' } as const;

export interface ConversationStack extends CallStack {
  llm: LlmSim;
  stt: DeepgramSim;
  tts: OpenAiTtsSim;
  cartesia: CartesiaSim;
}

export interface ProviderLatency {
  llmFirstTokenMs?: number;
  sttFinalMs?: number;
  ttsFirstAudioMs?: number;
}

/** `llmRespond`: the model simulator's answer when no reply is queued (see test/sim/llm-sim.ts). */
export async function startConversationStack(
  env: Record<string, string> = {},
  latency: ProviderLatency = {},
  opts: StartOptions = {},
  sims: { llmRespond?: LlmSimOptions['respond'] } & SimOptions = {},
): Promise<ConversationStack> {
  const llm = await startLlmSim({ apiKey: KEYS.llm, firstTokenMs: latency.llmFirstTokenMs ?? 40, tokenMs: 4, ...(sims.llmRespond ? { respond: sims.llmRespond } : {}) });
  const stt = await startDeepgramSim({ apiKey: KEYS.stt, finalLatencyMs: latency.sttFinalMs ?? 30 });
  const tts = await startOpenAiTtsSim({ apiKey: KEYS.tts, firstAudioMs: latency.ttsFirstAudioMs ?? 30 });
  const cartesia = await startCartesiaSim({ apiKey: KEYS.cartesia, firstAudioMs: latency.ttsFirstAudioMs ?? 30 });
  const stack = await startCallStack(
    {
      MEDIA_ENGINE: 'agent',
      LLM_BASE_URL: llm.baseUrl,
      LLM_API_KEY: KEYS.llm,
      DEEPGRAM_BASE_URL: stt.url,
      DEEPGRAM_API_KEY: KEYS.stt,
      TTS_BASE_URL: tts.baseUrl,
      TTS_API_KEY: KEYS.tts,
      CARTESIA_BASE_URL: cartesia.url,
      CARTESIA_API_KEY: KEYS.cartesia,
      SCHEDULER_INTERVAL_MS: '250',
      ...env,
    },
    undefined,
    opts,
    sims.telnyxRecordingTls ? { telnyxRecordingTls: sims.telnyxRecordingTls } : {},
  );
  return {
    ...stack,
    llm,
    stt,
    tts,
    cartesia,
    async close() {
      await stack.close();
      await Promise.all([llm.close(), stt.close(), tts.close(), cartesia.close()]);
    },
  };
}

/** A live call seen from the far end: it speaks fixtures and hears the agent. */
export interface FarEnd {
  /** The public call_id. */
  id: string;
  voice: FarEndVoice;
  /** Speaks a fixture: the speech recogniser simulator is told its words; resolves once the last frame was sent. */
  say(slug: SpeechFixtureSlug, words?: string): Promise<void>;
  /** μ-law bytes the agent has played to the far end so far. */
  heardBytes(): number;
  /** `clear` messages the service sent (barge-in). */
  clears(): number;
  hangup(): Promise<unknown>;
}

export async function ringAgent(stack: ConversationStack, c: Customer, from = nextNumber()): Promise<FarEnd> {
  const voice = new FarEndVoice();
  const say = (slug: SpeechFixtureSlug, words?: string) => {
    stack.stt.say(words ?? speechFixture(slug).text);
    return voice.say(loadSpeechFixture(slug));
  };
  if (c.provider === 'twilio') {
    const call = await stack.sims.twilio.placeInboundCall({ from, to: c.number, audio: voice });
    return {
      id: call.callSid,
      voice,
      say,
      heardBytes: () => call.receivedAudio().length,
      clears: () => call.stream?.clears ?? 0,
      hangup: () => call.hangup(),
    };
  }
  const handle = await stack.sims.telnyx.placeInboundCall({ from, to: c.number, apiKey: c.carrierAccount, audio: voice });
  return {
    id: handle.id,
    voice,
    say,
    heardBytes: () => (handle.call.media?.audio ?? []).reduce((n, a) => n + a.length, 0),
    clears: () => handle.call.media?.clears ?? 0,
    hangup: () => handle.hangup(),
  };
}

/**
 * Waits until the agent has spoken and fallen quiet: audio started arriving after
 * `since` bytes, then none for `quietMs`. Returns when it started (performance.now())
 * and how many bytes it played.
 */
export async function agentSpeaks(far: FarEnd, since = far.heardBytes(), timeoutMs = 15_000, quietMs = 400): Promise<{ startedAt: number; bytes: number }> {
  const startedAt = await eventually(() => (far.heardBytes() > since ? performance.now() : undefined), timeoutMs, 'the agent to speak');
  let last = far.heardBytes();
  let lastChange = performance.now();
  await eventually(() => {
    const now = far.heardBytes();
    if (now !== last) {
      last = now;
      lastChange = performance.now();
      return undefined;
    }
    return performance.now() - lastChange >= quietMs ? true : undefined;
  }, timeoutMs, 'the agent to finish speaking');
  return { startedAt, bytes: last - since };
}

/** Polls the call record until `probe` accepts it. */
export function recordWhere(stack: CallStack, c: Customer, id: string, probe: (r: any) => boolean, timeoutMs = 15_000, what = 'call record'): Promise<any> {
  return eventually(async () => {
    const res = await getCall(stack.server, c.key, id);
    return res.status === 200 && probe(res.body) ? res.body : undefined;
  }, timeoutMs, what, API_POLL_MS);
}

export type { Provider };
