// The cross-call VAD batcher: every call's detector hands it one 288-sample window per
// 32 ms, and it runs the Silero model once for all the windows pending, because one
// inference of 64 windows costs about as much as four of one. It runs when `maxBatch`
// windows wait or `maxWaitMs` after the first one arrived, whichever is first, with at
// most one inference in flight (onnxruntime-node runs on the main thread anyway): windows
// that arrive meanwhile wait and all go into the next one, so under load the batches grow
// instead of the queue. Nothing is ever held longer than maxWaitMs plus one inference
// beyond the one running.
//
// Per window the path copies 288 floats in at submit and 256 floats of state in and out
// around the inference, into buffers that are reused (two input buffers, since windows
// arrive while the other is being read); nothing is allocated per window.
import { performance } from 'node:perf_hooks';
import { SILERO_INPUT_SAMPLES, SILERO_STATE_SIZE, SILERO_STATE_WIDTH, type SileroModel } from './silero-model.ts';

/** One call's side of the batcher (its detector). */
export interface VadClient {
  /**
   * The call's recurrent state, SILERO_STATE_SIZE floats (two rows of 128). Read when its
   * window goes into an inference and overwritten with the model's new state just before
   * `onProbability`. A client has at most one window in the batcher at a time, because
   * each window's state is the previous window's result.
   */
  readonly state: Float32Array;
  /** The window's speech probability, 0..1. */
  onProbability(probability: number): void;
  /** The inference failed; `state` was left as it was. */
  onFailure(error: unknown): void;
}

export interface VadBatcherOptions {
  model: SileroModel;
  /** Run as soon as this many windows wait (default 64, where the per-window cost flattens). */
  maxBatch?: number;
  /** Run at most this long after the first waiting window arrived (default 4 ms). */
  maxWaitMs?: number;
  /** Clock in ms (default performance.now); only for the hold times in the stats. */
  now?: () => number;
  /** Each failed inference (for the log); its clients hear of it through onFailure. */
  onError?: (error: unknown) => void;
}

export interface VadBatcherStats {
  /** Windows whose probability was handed back. */
  windows: number;
  inferences: number;
  /** Inferences that threw, and the windows in them (their clients heard onFailure). */
  failedInferences: number;
  failedWindows: number;
  /** Mean windows per inference. */
  meanBatch: number;
  maxBatch: number;
  /** Model time per window, in µs. */
  usPerWindow: number;
  /** Model time per inference, in µs. */
  usPerInference: number;
  /** Time from submit to probability handed back (wait plus inference), in ms. */
  holdP50Ms: number;
  holdP95Ms: number;
  holdP99Ms: number;
  holdMaxMs: number;
}

export interface VadBatcher {
  /**
   * Queues `window` (SILERO_INPUT_SAMPLES floats: 32 of context then 256 new, in [-1, 1])
   * for `client`. The samples are copied, so the caller may reuse its buffer at once.
   */
  submit(client: VadClient, window: Float32Array): void;
  /** Windows waiting for an inference (not counting the one running). */
  readonly pending: number;
  stats(): VadBatcherStats;
  resetStats(): void;
  /** Stops the timer; windows still pending are dropped and their clients never hear back. */
  close(): void;
}

/** Hold times are counted in 0.1 ms buckets up to this; longer ones land in the last. */
const HOLD_HISTOGRAM_MS = 200;
const HOLD_BUCKET_MS = 0.1;

/** The windows gathered for one inference. */
interface Batch {
  count: number;
  input: Float32Array;
  clients: (VadClient | undefined)[];
  submittedAt: Float64Array;
}

function newBatch(capacity: number): Batch {
  return {
    count: 0,
    input: new Float32Array(capacity * SILERO_INPUT_SAMPLES),
    clients: new Array<VadClient | undefined>(capacity).fill(undefined),
    submittedAt: new Float64Array(capacity),
  };
}

/** Doubles the batch's room, keeping what it holds (rare: only past 2 × maxBatch waiting). */
function grow(batch: Batch): void {
  const capacity = batch.submittedAt.length * 2;
  const input = new Float32Array(capacity * SILERO_INPUT_SAMPLES);
  input.set(batch.input);
  const submittedAt = new Float64Array(capacity);
  submittedAt.set(batch.submittedAt);
  batch.input = input;
  batch.submittedAt = submittedAt;
  for (let i = batch.clients.length; i < capacity; i++) batch.clients.push(undefined);
}

export function createVadBatcher(options: VadBatcherOptions): VadBatcher {
  const model = options.model;
  const maxBatch = options.maxBatch ?? 64;
  const maxWaitMs = options.maxWaitMs ?? 4;
  const now = options.now ?? (() => performance.now());
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new RangeError(`maxBatch ${maxBatch}`);
  if (!(maxWaitMs >= 0)) throw new RangeError(`maxWaitMs ${maxWaitMs}`);

  // `filling` takes submissions while `running` is read by the inference in flight.
  let filling = newBatch(maxBatch * 2);
  let running = newBatch(maxBatch * 2);
  let state = new Float32Array(maxBatch * 2 * SILERO_STATE_SIZE);
  let inFlight = false;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  let windows = 0;
  let inferences = 0;
  let failedInferences = 0;
  let failedWindows = 0;
  let largestBatch = 0;
  let inferenceUs = 0;
  const holds = new Uint32Array(Math.ceil(HOLD_HISTOGRAM_MS / HOLD_BUCKET_MS) + 1);
  let holdMaxMs = 0;

  function recordHold(ms: number): void {
    const bucket = Math.min(holds.length - 1, Math.floor(ms / HOLD_BUCKET_MS));
    holds[bucket]!++;
    if (ms > holdMaxMs) holdMaxMs = ms;
  }

  function holdPercentile(q: number): number {
    let total = 0;
    for (const n of holds) total += n;
    if (total === 0) return 0;
    const rank = Math.ceil(q * total);
    let seen = 0;
    for (let b = 0; b < holds.length; b++) {
      seen += holds[b]!;
      if (seen >= rank) return (b + 1) * HOLD_BUCKET_MS; // the bucket's upper edge: never flatters
    }
    return holdMaxMs;
  }

  function onTimer(): void {
    timer = null;
    if (!inFlight) void run();
    // else: the inference in flight starts the next one as soon as it ends
  }

  async function run(): Promise<void> {
    if (filling.count === 0 || closed) return;
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    const batch = filling;
    filling = running;
    running = batch;
    const n = batch.count;
    inFlight = true;

    // Gather each client's state into the model's [2, n, 128] layout.
    if (state.length < n * SILERO_STATE_SIZE) state = new Float32Array(n * 2 * SILERO_STATE_SIZE);
    const half = n * SILERO_STATE_WIDTH;
    for (let i = 0; i < n; i++) {
      const s = batch.clients[i]!.state;
      const at = i * SILERO_STATE_WIDTH;
      for (let j = 0; j < SILERO_STATE_WIDTH; j++) {
        state[at + j] = s[j]!;
        state[half + at + j] = s[SILERO_STATE_WIDTH + j]!;
      }
    }

    try {
      const out = await model.infer(n, batch.input.subarray(0, n * SILERO_INPUT_SAMPLES), state.subarray(0, n * SILERO_STATE_SIZE));
      inferences++;
      inferenceUs += out.inferenceUs;
      if (n > largestBatch) largestBatch = n;
      if (!closed) {
        const doneAt = now();
        for (let i = 0; i < n; i++) {
          const client = batch.clients[i]!;
          batch.clients[i] = undefined;
          const s = client.state;
          const at = i * SILERO_STATE_WIDTH;
          for (let j = 0; j < SILERO_STATE_WIDTH; j++) {
            s[j] = out.state[at + j]!;
            s[SILERO_STATE_WIDTH + j] = out.state[half + at + j]!;
          }
          windows++;
          recordHold(doneAt - batch.submittedAt[i]!);
          deliver(client, out.probabilities[i]!);
        }
      }
    } catch (error) {
      failedInferences++;
      options.onError?.(error);
      if (!closed) {
        for (let i = 0; i < n; i++) {
          const client = batch.clients[i]!;
          batch.clients[i] = undefined;
          failedWindows++;
          fail(client, error);
        }
      }
    } finally {
      batch.count = 0;
      batch.clients.fill(undefined, 0, n);
      inFlight = false;
    }

    // Whatever arrived meanwhile goes now if it is due: full, or its wait is up.
    if (!closed && filling.count > 0) {
      if (filling.count >= maxBatch || timer === null) void run();
    }
  }

  /** A client's callback that throws must not starve the rest of the batch. */
  function deliver(client: VadClient, probability: number): void {
    try {
      client.onProbability(probability);
    } catch (error) {
      options.onError?.(error);
    }
  }

  function fail(client: VadClient, error: unknown): void {
    try {
      client.onFailure(error);
    } catch (err) {
      options.onError?.(err);
    }
  }

  return {
    submit(client, window) {
      if (closed) return;
      if (window.length !== SILERO_INPUT_SAMPLES) {
        throw new RangeError(`vad window holds ${window.length} samples, needs ${SILERO_INPUT_SAMPLES}`);
      }
      if (client.state.length !== SILERO_STATE_SIZE) {
        throw new RangeError(`vad client state holds ${client.state.length} floats, needs ${SILERO_STATE_SIZE}`);
      }
      const b = filling;
      if (b.count === b.submittedAt.length) grow(b);
      const i = b.count++;
      b.input.set(window, i * SILERO_INPUT_SAMPLES);
      b.clients[i] = client;
      b.submittedAt[i] = now();
      if (inFlight) {
        // The running inference starts this batch when it ends; the timer only marks when
        // it falls due, so a batch that waited its maxWaitMs goes at once, not after more.
        if (b.count === 1) timer = setTimeout(onTimer, maxWaitMs);
        return;
      }
      if (b.count >= maxBatch) void run();
      else if (b.count === 1) timer = setTimeout(onTimer, maxWaitMs);
    },
    get pending() {
      return filling.count;
    },
    stats() {
      const total = holds.reduce((sum, n) => sum + n, 0);
      return {
        windows,
        inferences,
        failedInferences,
        failedWindows,
        meanBatch: inferences === 0 ? 0 : windows / inferences,
        maxBatch: largestBatch,
        usPerWindow: windows === 0 ? 0 : inferenceUs / windows,
        usPerInference: inferences === 0 ? 0 : inferenceUs / inferences,
        holdP50Ms: holdPercentile(0.5),
        holdP95Ms: holdPercentile(0.95),
        holdP99Ms: holdPercentile(0.99),
        holdMaxMs: total === 0 ? 0 : holdMaxMs,
      };
    },
    resetStats() {
      windows = inferences = failedInferences = failedWindows = largestBatch = inferenceUs = holdMaxMs = 0;
      holds.fill(0);
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      filling.count = 0;
      filling.clients.fill(undefined);
    },
  };
}
