// The voice activity detector on real speech: the real Silero model through the real
// batcher, fed the espeak-ng fixtures and the generated line noise as a call would feed
// them (μ-law decoded to PCM, in frames). It must find each phrase (start and end near
// the words' own), find nothing on a quiet or noisy line, give every call the same
// probabilities batched as alone, and stay silent once closed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  concatMulaw,
  humMulaw,
  lineNoiseMulaw,
  loadSpeechFixture,
  noiseBurstMulaw,
  silenceMulaw,
  SPEECH_FIXTURES,
  speechOnLineMulaw,
} from '../../test/fixtures/speech/noise.ts';
import { decodeMulaw } from '../audio/mulaw.ts';
import {
  SILERO_CONTEXT_SAMPLES,
  SILERO_INPUT_SAMPLES,
  SILERO_STATE_SIZE,
  SILERO_WINDOW_SAMPLES,
  type SileroModel,
} from './silero-model.ts';
import { loadSileroModel } from './silero-thread.ts';
import { createVadBatcher, type VadBatcher } from './vad-batcher.ts';
import { createVadDetector, type VadDetector, type VadDetectorOptions, type VadEvent } from './vad-detector.ts';

let model: SileroModel;
let batcher: VadBatcher;

beforeAll(async () => {
  model = await loadSileroModel();
  batcher = createVadBatcher({ model, maxBatch: 64, maxWaitMs: 1 });
});
afterAll(() => batcher.close());

interface Run {
  events: VadEvent[];
  /** Every window's probability, in order. */
  probabilities: number[];
  detector: VadDetector;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Feeds the whole recording at once in `frame`-sample pieces (a queue deep enough to hold
 * it all, so no window is dropped) and resolves once every whole window has come back.
 */
async function detect(mulaw: Uint8Array, frame = 160, options: Partial<VadDetectorOptions> = {}): Promise<Run> {
  const events: VadEvent[] = [];
  const probabilities: number[] = [];
  const pcm = decodeMulaw(mulaw);
  const windows = Math.floor(pcm.length / SILERO_WINDOW_SAMPLES);
  const detector = createVadDetector({
    batcher,
    onEvent: (e) => events.push(e),
    onProbability: (p) => probabilities.push(p),
    maxQueuedWindows: windows + 1,
    ...options,
  });
  for (let at = 0; at < pcm.length; at += frame) detector.push(pcm.subarray(at, at + frame));
  const deadline = Date.now() + 8000;
  const judged = () => detector.stats().windows + detector.stats().gated;
  while (judged() < windows && Date.now() < deadline) await sleep(2);
  expect(judged()).toBe(windows);
  expect(detector.stats()).toMatchObject({ dropped: 0, failed: 0 });
  return { events, probabilities, detector };
}

/** The model alone, one window at a time, windows cut straight from the PCM: the reference. */
async function unbatched(mulaw: Uint8Array): Promise<number[]> {
  const pcm = decodeMulaw(mulaw);
  let state: Float32Array = new Float32Array(SILERO_STATE_SIZE);
  const out: number[] = [];
  for (let k = 0; (k + 1) * SILERO_WINDOW_SAMPLES <= pcm.length; k++) {
    const input = new Float32Array(SILERO_INPUT_SAMPLES);
    for (let j = 0; j < SILERO_INPUT_SAMPLES; j++) {
      const at = k * SILERO_WINDOW_SAMPLES - SILERO_CONTEXT_SAMPLES + j;
      input[j] = at < 0 ? 0 : pcm[at]! / 32768;
    }
    const result = await model.infer(1, input, state);
    out.push(result.probabilities[0]!);
    state = result.state;
  }
  return out;
}

const BEFORE_MS = 500;
const AFTER_MS = 1000;

describe('Silero VAD on the speech fixtures', () => {
  it('finds each phrase, clean and on a noisy line: one speech_start near its first word, one speech_end near its last', async () => {
    const runs = await Promise.all(
      SPEECH_FIXTURES.flatMap((f) => {
        const speech = loadSpeechFixture(f.slug);
        const clean = concatMulaw(silenceMulaw(BEFORE_MS), speech, silenceMulaw(AFTER_MS));
        const noisy = speechOnLineMulaw(speech, { beforeMs: BEFORE_MS, afterMs: AFTER_MS, seed: f.durationMs });
        return [clean, noisy].map(async (audio) => ({ fixture: f, run: await detect(audio) }));
      }),
    );
    for (const { fixture, run } of runs) {
      const label = `${fixture.slug}: ${JSON.stringify(run.events)}`;
      expect(run.events.map((e) => e.type), label).toEqual(['speech_start', 'speech_end']);
      const [start, end] = run.events as [VadEvent, VadEvent & { type: 'speech_end' }];
      const wordsEnd = BEFORE_MS + fixture.durationMs;
      expect(start.atMs, label).toBeGreaterThanOrEqual(BEFORE_MS - 64);
      expect(start.atMs, label).toBeLessThanOrEqual(BEFORE_MS + 100);
      expect(end.atMs, label).toBeGreaterThanOrEqual(wordsEnd - 100);
      expect(end.atMs, label).toBeLessThanOrEqual(wordsEnd + 300);
      expect(end.speechMs).toBe(end.atMs - start.atMs);
      expect(run.detector.speaking).toBe(false);
    }
  });

  it('finds no speech in silence, line noise, mains hum or a noise burst', async () => {
    const quiet: [string, Uint8Array][] = [
      ['digital silence', silenceMulaw(3000)],
      ['line noise', lineNoiseMulaw(3000, { seed: 11 })],
      ['louder line noise', lineNoiseMulaw(3000, { seed: 12, noiseDbfs: -40, humDbfs: -45 })],
      ['60 Hz hum', humMulaw(3000)],
      ['-40 dBFS burst', concatMulaw(lineNoiseMulaw(500, { seed: 13 }), noiseBurstMulaw(400), lineNoiseMulaw(1000, { seed: 14 }))],
    ];
    const runs = await Promise.all(quiet.map(async ([name, audio]) => ({ name, run: await detect(audio) })));
    for (const { name, run } of runs) {
      expect(run.events, name).toEqual([]);
      expect(Math.max(...run.probabilities), name).toBeLessThan(0.5);
    }
  });

  it('zeroes the model state after long silence and still finds the speech that follows', async () => {
    const audio = concatMulaw(lineNoiseMulaw(6000, { seed: 21 }), loadSpeechFixture('okay'), lineNoiseMulaw(1000, { seed: 22 }));
    const run = await detect(audio, 160, { resetAfterSilenceMs: 2000 });
    expect(run.detector.stats().resets).toBeGreaterThanOrEqual(2);
    expect(run.events.map((e) => e.type)).toEqual(['speech_start', 'speech_end']);
    expect(run.events[0]!.atMs).toBeGreaterThanOrEqual(6000 - 64);
  });
});

describe('batching across calls', () => {
  it('gives each of several interleaved calls the probabilities the model gives it alone (within 1e-4)', async () => {
    const calls = [
      { audio: speechOnLineMulaw(loadSpeechFixture('saturday-hours'), { seed: 1 }), frame: 160 },
      { audio: concatMulaw(silenceMulaw(300), loadSpeechFixture('uh-huh'), lineNoiseMulaw(700)), frame: 80 },
      { audio: speechOnLineMulaw(loadSpeechFixture('thank-you-goodbye'), { seed: 3, beforeMs: 200 }), frame: 333 },
      { audio: lineNoiseMulaw(1500, { seed: 4 }), frame: 256 },
      { audio: concatMulaw(loadSpeechFixture('yeah'), loadSpeechFixture('okay')), frame: 160 },
    ];
    const before = batcher.stats();
    // The model's own probabilities for every window: no level gate.
    const batched = await Promise.all(calls.map((c) => detect(c.audio, c.frame, { gateDbfs: null })));
    const shared = batcher.stats();
    // They really were run together: windows of several calls shared inferences.
    expect(shared.maxBatch).toBeGreaterThanOrEqual(calls.length);
    expect(shared.windows - before.windows).toBeGreaterThan(shared.inferences - before.inferences);

    for (const [i, call] of calls.entries()) {
      const alone = await unbatched(call.audio);
      const got = batched[i]!.probabilities;
      expect(got.length).toBe(alone.length);
      const worst = Math.max(...got.map((p, k) => Math.abs(p - alone[k]!)));
      expect(worst, `call ${i}`).toBeLessThan(1e-4);
    }
  });
});

describe('the level gate', () => {
  it('judges digital silence without the model, and still finds the speech after it', async () => {
    const audio = concatMulaw(silenceMulaw(2000), loadSpeechFixture('book-table'), silenceMulaw(1000));
    const before = batcher.stats().windows;
    const run = await detect(audio);
    const s = run.detector.stats();
    expect(s.gated).toBeGreaterThanOrEqual(Math.floor(2000 / 32) - 1);
    expect(batcher.stats().windows - before).toBe(s.windows);
    expect(run.events.map((e) => e.type)).toEqual(['speech_start', 'speech_end']);
    expect(run.events[0]!.atMs).toBeGreaterThanOrEqual(1950);
    expect(run.events[0]!.atMs).toBeLessThan(2100);
  });

  it('lets line noise through to the model (it is above the gate) and finds no speech in it', async () => {
    const run = await detect(lineNoiseMulaw(1500, { seed: 9 }));
    expect(run.detector.stats().gated).toBe(0);
    expect(run.events).toEqual([]);
  });
});

describe('closing a detector', () => {
  it('delivers no event after close, even for windows already in the batcher, while the other calls carry on', async () => {
    const speech = concatMulaw(silenceMulaw(200), loadSpeechFixture('book-table'), silenceMulaw(1000));
    const closedEvents: VadEvent[] = [];
    const closing = createVadDetector({ batcher, onEvent: (e) => closedEvents.push(e), maxQueuedWindows: 1000, gateDbfs: null });
    const pcm = decodeMulaw(speech);
    const other = detect(speech);
    for (let at = 0; at < pcm.length; at += 160) closing.push(pcm.subarray(at, at + 160));
    closing.close();
    for (let at = 0; at < pcm.length; at += 160) closing.push(pcm.subarray(at, at + 160)); // ignored
    const run = await other;
    await sleep(20);
    expect(closedEvents).toEqual([]);
    expect(closing.stats().windows).toBe(0);
    expect(run.events.map((e) => e.type)).toEqual(['speech_start', 'speech_end']);
  });

  it('stops a detector mid-speech with no speech_end', async () => {
    const pcm = decodeMulaw(concatMulaw(silenceMulaw(200), loadSpeechFixture('maria-order')));
    const events: VadEvent[] = [];
    const detector = createVadDetector({ batcher, onEvent: (e) => events.push(e), maxQueuedWindows: 1000, gateDbfs: null });
    for (let at = 0; at < 8000; at += 160) detector.push(pcm.subarray(at, at + 160)); // the first second
    const deadline = Date.now() + 5000;
    while (!detector.speaking && Date.now() < deadline) await sleep(2);
    expect(detector.speaking).toBe(true);
    detector.close();
    for (let at = 8000; at < pcm.length; at += 160) detector.push(pcm.subarray(at, at + 160));
    await sleep(50);
    expect(events.map((e) => e.type)).toEqual(['speech_start']);
  });
});
