// Provider recording (recording_source `provider`): when the agent's conversation starts
// on a connected call, the carrier is asked to record the whole call — carrier A with a
// recording on the call (`POST …/Calls/{Sid}/Recordings.json`, its status callback to
// /carrier/twilio/recording), carrier B with `record_start` (mp3, one channel; its
// `call.recording.saved` event comes to the number's event URL). The file is fetched
// when the carrier says it is ready (actors/outbox/recording-fetch.ts) into DATA_DIR.
//
// `recording_requested_at` is committed before the request leaves: call.completed then
// waits for the file a bounded time after the call's end (actors/post-call/analysis-plan.ts). A
// refused request gives that wait up. Carrier B's command_id makes a repeat harmless;
// a request whose answer was lost is not repeated (a second recording would be billed
// twice): if the carrier did start it, its callback still brings the file.
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Storage } from '../../storage/index.ts';
import type { EngineCall } from '../../voice/engine/engine.ts';
import { createTwilioRest } from '../../voice/carriers/twilio-rest.ts';
import { createTelnyxRest } from '../../voice/carriers/telnyx-rest.ts';

/** Carrier A's recording status callback: `cid` names our call; signed like every carrier A webhook. */
export const TWILIO_RECORDING_PATH = '/carrier/twilio/recording';

export interface ProviderRecordings {
  /** Asks the call's carrier to record it (asynchronously; never throws). */
  start(call: EngineCall): void;
  /** Resolves when every request made so far has been answered (tests, shutdown). */
  idle(): Promise<void>;
}

export interface ProviderRecordingsDeps {
  storage: Pick<Storage, 'calls' | 'numbers' | 'recordings' | 'analysis'>;
  config: Pick<Config, 'publicBaseUrl' | 'twilioApiBase' | 'telnyxApiBase'>;
  clock: () => number;
  log: Logger;
}

export function createProviderRecordings(deps: ProviderRecordingsDeps): ProviderRecordings {
  const { storage, config, clock, log } = deps;
  const pending = new Set<Promise<void>>();

  async function ask(call: EngineCall): Promise<void> {
    const row = storage.calls.getByInternalId(call.callId);
    const number = row?.phone_number ? storage.numbers.get(call.accountId, row.phone_number) : undefined;
    if (!row || row.account_id !== call.accountId || !number || row.carrier_call_id === null) {
      log.warn({ call_id: call.callId }, 'provider recording not started: the call has no carrier call or number');
      return;
    }
    storage.recordings.requested(call.accountId, call.callId, clock());
    const credentials = storage.numbers.openCredentials(number);
    try {
      if (credentials.provider === 'twilio') {
        const rest = createTwilioRest({ baseUrl: config.twilioApiBase, accountSid: credentials.account_sid, authToken: credentials.auth_token });
        const statusCallback = `${config.publicBaseUrl}${TWILIO_RECORDING_PATH}?cid=${encodeURIComponent(call.callId)}`;
        const sid = await rest.startRecording(row.carrier_call_id, { statusCallback });
        log.info({ call_id: call.callId, recording_sid: sid }, 'carrier recording started');
      } else {
        const rest = createTelnyxRest({ baseUrl: config.telnyxApiBase, apiKey: credentials.api_key });
        await rest.recordStart(row.carrier_call_id, { format: 'mp3', channels: 'single', command_id: `record-${call.callId}` });
        log.info({ call_id: call.callId }, 'carrier recording started');
      }
    } catch (err) {
      log.warn({ err, call_id: call.callId }, 'the carrier did not start the recording; the call is not recorded');
      storage.recordings.giveUp(call.accountId, call.callId);
      storage.analysis.wake(call.callId, clock());
    }
  }

  return {
    start(call) {
      const p = ask(call)
        .catch((err: unknown) => log.error({ err, call_id: call.callId }, 'provider recording request failed'))
        .finally(() => pending.delete(p));
      pending.add(p);
    },
    async idle() {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}
