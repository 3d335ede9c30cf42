// Platform recording (recording_source `platform`): the conversation's two sides mixed
// (voice/recording/call-recorder.ts) and, when the AI leg ends, encoded to MP3 off the hot
// path (voice/recording/mp3.ts) into <data dir>/recordings/<token>.mp3. The token is 32
// random base64url characters: the public link `${PUBLIC_BASE_URL}/recordings/<token>.mp3`
// (http/routes/recordings.ts) is the only way to the file, without an API key.
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { EngineCall, MediaOutput } from '../../voice/engine/engine.ts';
import { createCallRecorder, type CallRecorder } from '../../voice/recording/call-recorder.ts';
import { encodeMp3From, MP3_SAMPLE_RATE } from '../../voice/recording/mp3.ts';
import { storeRecording, type RecordingStoreDeps } from './recording-store.ts';

export interface EngineRecording extends Pick<CallRecorder, 'inbound' | 'outbound' | 'clear'> {
  /** The AI leg ended: encode and attach the file to the call (asynchronously; never throws). */
  finish(): void;
}

export interface PlatformRecordings {
  start(call: EngineCall): EngineRecording;
  /** True while the call's conversation is being recorded here (its analysis waits: actors/post-call/analysis-plan.ts). */
  underWay(internalId: string): boolean;
  /** Resolves when every recording finished so far is written (tests, shutdown). */
  idle(): Promise<void>;
}

export interface PlatformRecordingsDeps {
  storage: RecordingStoreDeps['storage'];
  publicBaseUrl: string;
  /** RECORDINGS_BUCKET_URL is set: the file is uploaded before the call points at it. */
  toBucket?: boolean;
  log: Logger;
  /** Wall clock (epoch ms): when the file was saved. */
  clock: () => number;
  /** Monotonic clock (ms) of the recorder's timeline. */
  now?: () => number;
}

/**
 * From the leg's end, how long call.completed waits for the file at most. Encoding a
 * call's mix takes well under a second per ten minutes of audio; a file not attached by
 * then (the process died while encoding) is not waited for again after a restart.
 */
export const PLATFORM_RECORDING_WAIT_MS = 30_000;

export function createPlatformRecordings(deps: PlatformRecordingsDeps): PlatformRecordings {
  const pending = new Set<Promise<void>>();
  const recording = new Set<string>();

  async function save(call: EngineCall, rec: CallRecorder, samples: number): Promise<void> {
    const started = performance.now();
    // Mixed slice by slice as it is encoded: no long hold of the event loop the live calls share.
    const mp3 = await encodeMp3From(samples, (from, out) => rec.mixRange(from, out));
    const seconds = Math.round((samples / MP3_SAMPLE_RATE) * 100) / 100;
    const kept = await storeRecording(
      { storage: deps.storage, publicBaseUrl: deps.publicBaseUrl, clock: deps.clock, toBucket: deps.toBucket ?? false },
      { accountId: call.accountId, internalId: call.callId },
      mp3,
      seconds,
    );
    // `uploading`: written here and waiting for the bucket; it is saved once the bucket confirms it.
    const uploading = kept?.kind === 'uploading';
    deps.log.info(
      { call_id: call.callId, seconds, bytes: mp3.length, stored: kept !== null && kept.kind !== 'erased', encode_ms: Math.round(performance.now() - started) },
      uploading ? 'call recording written; its upload to the bucket is committed' : 'call recording saved',
    );
  }

  return {
    start(call) {
      const rec = createCallRecorder(deps.now ?? (() => performance.now()));
      recording.add(call.callId);
      let done = false;
      return {
        inbound: (m) => rec.inbound(m),
        outbound: (m) => rec.outbound(m),
        clear: () => rec.clear(),
        finish() {
          if (done) return;
          done = true;
          recording.delete(call.callId);
          const samples = rec.length();
          if (deps.storage.recordings.dataDir === null || samples === 0) return;
          // Committed before the encoding starts: a restart meanwhile still bounds the wait.
          deps.storage.recordings.expect(call.accountId, call.callId, deps.clock() + PLATFORM_RECORDING_WAIT_MS);
          const p = save(call, rec, samples)
            .catch((err: unknown) => {
              deps.log.error({ err, call_id: call.callId }, 'call recording could not be saved');
              deps.storage.recordings.giveUp(call.accountId, call.callId);
              deps.storage.analysis.wake(call.callId, deps.clock());
            })
            .finally(() => pending.delete(p));
          pending.add(p);
        },
      };
    },
    underWay: (internalId) => recording.has(internalId),
    async idle() {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}

/** The call's output with what it plays copied into the recording (audio a backed-up socket drops is not heard, so not kept). */
export function recordedOutput(output: MediaOutput, rec: EngineRecording): MediaOutput {
  const tapped: MediaOutput = {
    play(mulaw) {
      if (!output.backedUp?.()) rec.outbound(mulaw);
      output.play(mulaw);
    },
    mark: (name) => output.mark(name),
    clear() {
      rec.clear();
      output.clear();
    },
  };
  if (output.backedUp) tapped.backedUp = () => output.backedUp!();
  if (output.cork) tapped.cork = (fn) => output.cork!(fn);
  return tapped;
}
