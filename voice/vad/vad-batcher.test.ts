// The batcher's scheduling with the real model: a full batch runs at once, a lone window
// runs after maxWaitMs, one inference at a time with everything that arrived meanwhile
// in the next, each client gets its own row's answer, and a failed inference reaches
// every client in it without stopping the next. A wrapper around the real model (the
// SileroModel interface) slows it down or makes it fail where a test needs that.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadSpeechFixture } from '../../test/fixtures/speech/noise.ts';
import { decodeMulaw } from '../audio/mulaw.ts';
import { SILERO_INPUT_SAMPLES, SILERO_STATE_SIZE, type SileroModel } from './silero-model.ts';
import { loadSileroModel } from './silero-thread.ts';
import { createVadBatcher, type VadClient } from './vad-batcher.ts';

let model: SileroModel;
beforeAll(async () => {
  model = await loadSileroModel();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `count` different windows of real speech (288 samples each, from successive places in a phrase). */
function speechWindows(count: number): Float32Array[] {
  const pcm = decodeMulaw(loadSpeechFixture('book-table'));
  return Array.from({ length: count }, (_, i) => {
    const w = new Float32Array(SILERO_INPUT_SAMPLES);
    for (let j = 0; j < w.length; j++) w[j] = pcm[2000 + i * 300 + j]! / 32768;
    return w;
  });
}

interface RecordingClient extends VadClient {
  results: { probability: number; at: number }[];
  failures: unknown[];
  /** Resolves with the first answer (or failure). */
  answered: Promise<void>;
}

function client(): RecordingClient {
  let done!: () => void;
  const answered = new Promise<void>((resolve) => (done = resolve));
  const c: RecordingClient = {
    state: new Float32Array(SILERO_STATE_SIZE),
    results: [],
    failures: [],
    answered,
    onProbability(probability) {
      c.results.push({ probability, at: performance.now() });
      done();
    },
    onFailure(error) {
      c.failures.push(error);
      done();
    },
  };
  return c;
}

/** The real model, slowed by `delayMs` per inference, recording batch sizes and overlap. */
function observed(delayMs: number, failFirst = false) {
  const seen = { batches: [] as number[], running: 0, maxRunning: 0 };
  let calls = 0;
  const wrapped: SileroModel = {
    async infer(batch, input, state) {
      seen.batches.push(batch);
      seen.running++;
      seen.maxRunning = Math.max(seen.maxRunning, seen.running);
      try {
        await sleep(delayMs);
        if (failFirst && calls++ === 0) throw new Error('model down');
        return await model.infer(batch, input, state);
      } finally {
        seen.running--;
      }
    },
  };
  return { wrapped, seen };
}

/** The probability the model gives one window alone, from a zero state. */
async function alone(window: Float32Array): Promise<number> {
  const out = await model.infer(1, window, new Float32Array(SILERO_STATE_SIZE));
  return out.probabilities[0]!;
}

describe('vad batcher', () => {
  it('runs a full batch at once, without waiting for maxWaitMs', async () => {
    const batcher = createVadBatcher({ model, maxBatch: 4, maxWaitMs: 10_000 });
    const clients = [client(), client(), client(), client()];
    const windows = speechWindows(4);
    const t0 = performance.now();
    clients.forEach((c, i) => batcher.submit(c, windows[i]!));
    await Promise.all(clients.map((c) => c.answered));
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(batcher.stats()).toMatchObject({ inferences: 1, windows: 4, meanBatch: 4, maxBatch: 4 });
    batcher.close();
  });

  it('runs a lone window after maxWaitMs', async () => {
    const batcher = createVadBatcher({ model, maxBatch: 64, maxWaitMs: 40 });
    const c = client();
    const t0 = performance.now();
    batcher.submit(c, speechWindows(1)[0]!);
    await sleep(20);
    expect(c.results).toEqual([]);
    await c.answered;
    const waited = c.results[0]!.at - t0;
    expect(waited).toBeGreaterThanOrEqual(39);
    expect(waited).toBeLessThan(500);
    expect(batcher.stats().holdP95Ms).toBeGreaterThanOrEqual(39);
    batcher.close();
  });

  it('hands each client the answer for its own window and writes back its own state', async () => {
    const batcher = createVadBatcher({ model, maxBatch: 8, maxWaitMs: 1 });
    const windows = speechWindows(8);
    const clients = windows.map(() => client());
    clients.forEach((c, i) => batcher.submit(c, windows[i]!));
    await Promise.all(clients.map((c) => c.answered));
    for (const [i, c] of clients.entries()) {
      const single = await model.infer(1, windows[i]!, new Float32Array(SILERO_STATE_SIZE));
      expect(Math.abs(c.results[0]!.probability - single.probabilities[0]!)).toBeLessThan(1e-4);
      // stateN comes back as [2, 1, 128]: the client's two rows, in order.
      const worst = Math.max(...Array.from(c.state, (v, j) => Math.abs(v - single.state[j]!)));
      expect(worst).toBeLessThan(1e-4);
    }
    batcher.close();
  });

  it('keeps one inference in flight and puts everything that arrived meanwhile in the next, however many', async () => {
    const { wrapped, seen } = observed(30);
    const batcher = createVadBatcher({ model: wrapped, maxBatch: 2, maxWaitMs: 0 });
    const windows = speechWindows(11);
    const first = client();
    batcher.submit(first, windows[0]!);
    await sleep(10); // the first inference is running
    const rest = windows.slice(1).map(() => client());
    rest.forEach((c, i) => batcher.submit(c, windows[i + 1]!)); // five times maxBatch: the batch grows
    expect(batcher.pending).toBe(10);
    await Promise.all([first, ...rest].map((c) => c.answered));
    expect(seen.maxRunning).toBe(1);
    expect(seen.batches).toEqual([1, 10]);
    // The second ran right after the first, not later: 30 ms each plus scheduling.
    expect(rest[0]!.results[0]!.at - first.results[0]!.at).toBeLessThan(200);
    for (const [i, c] of rest.entries()) {
      expect(Math.abs(c.results[0]!.probability - (await alone(windows[i + 1]!)))).toBeLessThan(1e-4);
    }
    expect(batcher.stats()).toMatchObject({ inferences: 2, windows: 11, maxBatch: 10 });
    batcher.close();
  });

  it('tells every client of a failed inference, and serves the next batch', async () => {
    const { wrapped } = observed(0, true);
    const errors: unknown[] = [];
    const batcher = createVadBatcher({ model: wrapped, maxBatch: 3, maxWaitMs: 1, onError: (e) => errors.push(e) });
    const windows = speechWindows(3);
    const failing = [client(), client(), client()];
    failing.forEach((c, i) => batcher.submit(c, windows[i]!));
    await Promise.all(failing.map((c) => c.answered));
    for (const c of failing) {
      expect(c.failures).toHaveLength(1);
      expect(c.results).toEqual([]);
      expect(c.state.every((v) => v === 0)).toBe(true);
    }
    expect(errors).toHaveLength(1);
    const next = client();
    batcher.submit(next, windows[0]!);
    await next.answered;
    expect(next.results).toHaveLength(1);
    expect(batcher.stats()).toMatchObject({ inferences: 1, failedInferences: 1, failedWindows: 3, windows: 1 });
    batcher.close();
  });

  it('drops what is pending on close: no answer comes', async () => {
    const batcher = createVadBatcher({ model, maxBatch: 64, maxWaitMs: 5 });
    const c = client();
    batcher.submit(c, speechWindows(1)[0]!);
    batcher.close();
    await sleep(30);
    expect(c.results).toEqual([]);
    expect(batcher.stats().inferences).toBe(0);
  });
});
