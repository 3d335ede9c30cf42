// What every conversation of the process shares, started once when MEDIA_ENGINE=agent:
// the Silero model and its cross-call batcher (one inference for many calls' windows),
// the one 20 ms playout clock, the setup loader and the metrics of each turn. Without
// providers nothing is loaded and every call ends at once (provider_not_configured).
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Metrics } from '../metrics.ts';
import type { Storage } from '../storage/index.ts';
import type { CallContext } from '../machines/call-outcome.ts';
import type { EngineFactory } from '../voice/engine/engine.ts';
import { loadSileroModel } from '../voice/vad/silero-thread.ts';
import { createVadBatcher } from '../voice/vad/vad-batcher.ts';
import { createPlayoutTicker } from '../voice/media/playout-ticker.ts';
import { createAgentEngineFactory, type Providers } from './agent-engine.ts';
import { createSetupLoader } from './conversation-setup.ts';

export interface ConversationRuntime {
  engine: EngineFactory;
  stop(): void;
}

export interface ConversationRuntimeDeps {
  providers: Providers | null;
  storage: Storage;
  contextOf(id: string): CallContext | null;
  config: Config;
  clock: () => number;
  metrics: Metrics;
  log: Logger;
}

export async function startConversationRuntime(deps: ConversationRuntimeDeps): Promise<ConversationRuntime> {
  const { metrics, log } = deps;
  if (!deps.providers) {
    return {
      engine: createAgentEngineFactory({ providers: null, loadSetup: () => null, vad: null, ticker: null, clock: deps.clock }),
      stop() {},
    };
  }
  const model = await loadSileroModel();
  const vad = createVadBatcher({ model, onError: (err) => log.error({ err }, 'voice activity inference failed') });
  const ticker = createPlayoutTicker({ onError: (err) => log.error({ err }, 'a call’s playout failed; its audio stopped') });
  const engine = createAgentEngineFactory({
    providers: deps.providers,
    loadSetup: createSetupLoader({ storage: deps.storage, contextOf: deps.contextOf, ttsProvider: deps.config.tts.provider, clock: deps.clock }),
    vad,
    ticker,
    clock: deps.clock,
    onTurn(l) {
      metrics.observeTurn({ total: l.totalMs / 1000, stt: l.sttMs / 1000, wait: l.waitMs / 1000, llm: l.llmMs / 1000, tts: l.ttsMs / 1000, engine: l.engineMs / 1000 });
    },
    onProviderError(call, err) {
      metrics.count('switchboard_provider_errors_total', 'Conversation provider failures by provider and kind.', 'provider', `${err.provider}:${err.kind}`);
      log.warn({ call_id: call.callId, provider: err.provider, kind: err.kind, retryable: err.retryable, status: err.status, msg: err.message }, 'conversation provider failed');
    },
  });
  return {
    engine,
    stop() {
      ticker.stop();
      vad.close();
      deps.providers?.tts.close?.();
    },
  };
}
