// The Silero session on its worker thread must answer exactly what a session on this
// thread answers (same model, same input, same state), keep the caller's buffers
// untouched and usable at once, answer concurrent inferences each with its own result,
// and turn a bad request into a rejected promise rather than a dead thread.
import { beforeAll, describe, expect, it } from 'vitest';
import { createSileroSession, SILERO_INPUT_SAMPLES, SILERO_STATE_SIZE, type SileroModel } from './silero-model.ts';
import { loadSileroModel } from './silero-thread.ts';

let threaded: SileroModel;
let local: SileroModel;

beforeAll(async () => {
  [threaded, local] = await Promise.all([loadSileroModel(), createSileroSession()]);
});

/** Deterministic speech-band noise, different per row. */
function windows(batch: number, seed: number): Float32Array {
  const out = new Float32Array(batch * SILERO_INPUT_SAMPLES);
  let x = seed;
  for (let i = 0; i < out.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = ((x >>> 8) / 0xffffff - 0.5) * 0.6 * Math.sin(i / 7);
  }
  return out;
}

describe('Silero on its own thread', () => {
  it('answers bit for bit what a session on this thread answers, state included', async () => {
    const batch = 37;
    const input = windows(batch, 1);
    let stateLocal: Float32Array = new Float32Array(batch * SILERO_STATE_SIZE);
    let stateThread: Float32Array = new Float32Array(batch * SILERO_STATE_SIZE);
    for (let step = 0; step < 4; step++) {
      const [a, b] = await Promise.all([local.infer(batch, input, stateLocal), threaded.infer(batch, input, stateThread)]);
      expect(Array.from(b.probabilities)).toEqual(Array.from(a.probabilities));
      expect(Array.from(b.state)).toEqual(Array.from(a.state));
      stateLocal = a.state.slice();
      stateThread = b.state;
    }
  });

  it('copies its input: the caller may overwrite its buffers as soon as infer returns', async () => {
    const input = windows(4, 2);
    const state = new Float32Array(4 * SILERO_STATE_SIZE);
    const expected = await local.infer(4, input.slice(), state.slice());
    const running = threaded.infer(4, input, state);
    input.fill(0.9);
    state.fill(0.9);
    const got = await running;
    expect(Array.from(got.probabilities)).toEqual(Array.from(expected.probabilities));
  });

  it('gives concurrent inferences each their own answer', async () => {
    const sizes = [1, 5, 64, 3];
    const inputs = sizes.map((n, i) => windows(n, 10 + i));
    const expected = await Promise.all(sizes.map((n, i) => local.infer(n, inputs[i]!, new Float32Array(n * SILERO_STATE_SIZE))));
    const got = await Promise.all(sizes.map((n, i) => threaded.infer(n, inputs[i]!, new Float32Array(n * SILERO_STATE_SIZE))));
    got.forEach((g, i) => {
      expect(g.probabilities.length).toBe(sizes[i]);
      expect(Array.from(g.probabilities)).toEqual(Array.from(expected[i]!.probabilities));
    });
  });

  it('rejects a malformed request and keeps serving', async () => {
    await expect(threaded.infer(2, new Float32Array(5), new Float32Array(2 * SILERO_STATE_SIZE))).rejects.toThrow(/input holds 5 floats/);
    const ok = await threaded.infer(1, windows(1, 3), new Float32Array(SILERO_STATE_SIZE));
    expect(ok.probabilities.length).toBe(1);
  });
});
