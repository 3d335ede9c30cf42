// The providers a process talks through, built once from the configuration. A provider
// without credentials is "not configured": the service still starts, says so once in
// its log and in GET /readyz, and the agent engine ends calls it cannot serve with
// `provider_not_configured` instead of leaving the line silent.
import type { Config } from '../../config.ts';
import type { Providers } from './agent-engine.ts';
import { createOpenAiLlm } from '../../voice/providers/openai-llm.ts';
import { createOpenAiTts } from '../../voice/providers/openai-tts.ts';
import { createDeepgramStt } from '../../voice/providers/deepgram-stt.ts';
import { createCartesiaTts } from '../../voice/providers/cartesia-tts.ts';

export interface ProviderStatus {
  llm: { configured: boolean; model: string };
  stt: { configured: boolean; provider: 'deepgram'; model: string };
  tts: { configured: boolean; provider: 'openai' | 'cartesia'; model: string };
}

export interface ProviderSet {
  /** Null unless all three are configured. */
  providers: Providers | null;
  status: ProviderStatus;
  /** The environment variables to set, for the log line; empty when all are configured. */
  missing: string[];
}

export function createProviders(config: Config): ProviderSet {
  const { llm, stt, tts } = config;
  const status: ProviderStatus = {
    llm: { configured: Boolean(llm.apiKey), model: llm.model },
    stt: { configured: Boolean(stt.apiKey), provider: stt.provider, model: stt.model },
    tts: { configured: Boolean(tts.apiKey), provider: tts.provider, model: tts.model },
  };
  const missing: string[] = [];
  if (!llm.apiKey) missing.push('LLM_API_KEY');
  if (!stt.apiKey) missing.push('DEEPGRAM_API_KEY');
  if (!tts.apiKey) missing.push(tts.provider === 'cartesia' ? 'CARTESIA_API_KEY' : 'TTS_API_KEY (or LLM_API_KEY)');
  if (!llm.apiKey || !stt.apiKey || !tts.apiKey) return { providers: null, status, missing };
  return {
    status,
    missing,
    providers: {
      llm: createOpenAiLlm({ baseUrl: llm.baseUrl, apiKey: llm.apiKey, model: llm.model }),
      stt: createDeepgramStt({ baseUrl: stt.baseUrl, apiKey: stt.apiKey, model: stt.model }),
      tts:
        tts.provider === 'cartesia'
          ? createCartesiaTts({ baseUrl: tts.baseUrl, apiKey: tts.apiKey, model: tts.model })
          : createOpenAiTts({ baseUrl: tts.baseUrl, apiKey: tts.apiKey, model: tts.model }),
    },
  };
}
