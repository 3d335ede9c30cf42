// What every conversation of the process shares, started once when MEDIA_ENGINE=agent:
// the Silero model and its cross-call batcher (one inference for many calls' windows),
// the one 20 ms playout clock, the setup loader and the metrics of each turn. Without
// providers nothing is loaded and every call ends at once (provider_not_configured).
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Metrics } from '../../metrics.ts';
import type { Storage } from '../../storage/index.ts';
import type { CallContext } from '../../machines/call-outcome.ts';
import type { EngineFactory } from '../../voice/engine/engine.ts';
import { loadSileroModel } from '../../voice/vad/silero-thread.ts';
import { createVadBatcher } from '../../voice/vad/vad-batcher.ts';
import { createPlayoutTicker } from '../../voice/media/playout-ticker.ts';
import { createAgentEngineFactory, type Providers } from './agent-engine.ts';
import { createSetupLoader } from './conversation-setup.ts';
import { createAnalysisModel } from '../../voice/analysis/analysis-client.ts';
import type { CallWatcher } from './engine-transfer.ts';
import type { CarrierKeys } from './engine-keypad.ts';
import type { PlatformRecordings } from '../recordings/platform-recordings.ts';
import type { ProviderRecordings } from '../recordings/provider-recordings.ts';
import type { SmsSystem } from '../sms/sms-system.ts';
import { createCallTexts } from './call-texts.ts';

export interface ConversationRuntime {
  engine: EngineFactory;
  stop(): void;
}

export interface ConversationRuntimeDeps {
  providers: Providers | null;
  storage: Storage;
  contextOf(id: string): CallContext | null;
  /** Watches a call's committed state (a transfer's outcome reaches its conversation this way). */
  watchCall?: CallWatcher;
  /** Keys carriers report outside the media stream (carrier B call events), routed to their call's conversation. */
  carrierKeys?: CarrierKeys;
  /** Platform recordings (actors/recordings/platform-recordings.ts); without them `platform` calls are not recorded. */
  recordings?: PlatformRecordings;
  /** Provider recordings (actors/recordings/provider-recordings.ts); without them `provider` calls are not recorded. */
  providerRecordings?: ProviderRecordings;
  /** The SMS system: texts during calls (incall_sms_enabled) go through it; without it none are sent. */
  sms?: Pick<SmsSystem, 'sendFromCall'>;
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
    watchCall: deps.watchCall,
    ...(deps.carrierKeys ? { carrierKeys: deps.carrierKeys } : {}),
    crmBaseUrl: deps.config.crmBaseUrl,
    // The voicemail screen's classification: one short non-streamed completion, answered within 5 s or not used.
    screenModel: deps.config.llm.apiKey ? createAnalysisModel({ ...deps.config.llm, timeoutMs: 5000 }) : null,
    recordings: deps.recordings,
    providerRecordings: deps.providerRecordings,
    ...(deps.sms ? { texts: createCallTexts({ storage: deps.storage, sms: deps.sms, log }) } : {}),
    tools: {
      allowPrivate: deps.config.allowPrivateNetworkTargets,
      // Signed like every webhook: the current secret, and the previous one within its window after a rotation.
      secretsOf: (accountId, now) => deps.storage.integrations.signingSecrets(accountId, now),
      clock: deps.clock,
    },
    onTool(call, name, outcome, ms) {
      metrics.count('switchboard_tool_calls_total', 'HTTP tool calls of the model (custom functions, in-call webhook) by outcome.', 'outcome', outcome.ok ? 'ok' : outcome.kind);
      // The tool's name is the customer's own label, not personal data; arguments and answers are never logged.
      if (!outcome.ok) log.warn({ call_id: call.callId, tool: name, kind: outcome.kind, status_code: outcome.status, ms: Math.round(ms) }, 'a tool call failed; the model was told');
    },
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
