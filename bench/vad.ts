// VAD benchmark: `calls` voice activity detectors in this process, each fed a 20 ms frame
// of caller audio every 20 ms of wall time (simulated real time, the calls' frame clocks
// spread evenly over the 20 ms as independent calls' would be; the first second is
// warm-up and not counted), all sharing one batcher
// and one Silero session as the engine does. The audio is the speech fixtures with line
// noise between them, each call starting at its own place, so batches mix speech and
// silence. Reports what the batcher counted (inferences, mean batch, model time per
// window, how long windows were held from submit to answer) plus the process's CPU share
// and how late the frame clock ran: each step runs twice, with the model on its own
// thread as the service runs it, and on the event loop, where a long inference delays
// every call's next frame.
//
// Run alone: `node --import tsx bench/vad.ts` (BENCH_VAD_CALLS=100,300,500 and
// BENCH_VAD_SECONDS=5 choose the steps); bench/run.ts calls runVadBench (BENCH_ONLY=vad).
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { concatMulaw, lineNoiseMulaw, loadSpeechFixture, SPEECH_FIXTURES } from '../test/fixtures/speech/noise.ts';
import { decodeMulaw } from '../voice/audio/mulaw.ts';
import { createSileroSession } from '../voice/vad/silero-model.ts';
import { loadSileroModel } from '../voice/vad/silero-thread.ts';
import { createVadBatcher } from '../voice/vad/vad-batcher.ts';
import { createVadDetector, type VadDetector } from '../voice/vad/vad-detector.ts';

export interface VadBenchResult {
  calls: number;
  seconds: number;
  /** Windows judged (each 32 ms of one call's audio). */
  windows: number;
  inferences: number;
  /** Mean windows per inference. */
  meanBatch: number;
  /** Model time per window, µs. */
  usPerWindow: number;
  /** Submit to probability handed back, ms (wait in the batcher plus the inference). */
  p50HoldMs: number;
  p95HoldMs: number;
  p99HoldMs: number;
  maxHoldMs: number;
  /** Windows the detectors dropped because the batcher fell behind (should be 0). */
  droppedWindows: number;
  /** speech_start events seen across all calls (a sanity check that detection ran). */
  speechStarts: number;
  /** This process's CPU time over wall time, % of one core. */
  cpuPercent: number;
  /** How late frames were pushed after they were due, ms (event-loop blocking): p99 and max. */
  p99FrameLateMs: number;
  maxFrameLateMs: number;
  /** Where the model ran. */
  where: ModelPlace;
}

/** `thread`: the service's way, the session on its own worker thread; `loop`: on the event loop, for comparison. */
export type ModelPlace = 'thread' | 'loop';

export interface VadBenchOptions {
  maxBatch?: number;
  maxWaitMs?: number;
  /** Streaming before the counts start, so JIT and allocator warm-up is not measured (default 1,000 ms). */
  warmupMs?: number;
  /** Where the Silero session runs (default `thread`, as in the service). */
  where?: ModelPlace;
}

const FRAME_MS = 20;
const FRAME_SAMPLES = 160;

/** One long caller track: every phrase, each followed by 1–3 s of line noise. */
function callerTrack(): Int16Array {
  const parts: Uint8Array[] = [];
  SPEECH_FIXTURES.forEach((f, i) => {
    parts.push(loadSpeechFixture(f.slug), lineNoiseMulaw(1000 + (i % 3) * 1000, { seed: 100 + i }));
  });
  return decodeMulaw(concatMulaw(...parts));
}

export async function benchVad(calls: number, seconds: number, options: VadBenchOptions = {}): Promise<VadBenchResult> {
  const where = options.where ?? 'thread';
  const model = where === 'thread' ? await loadSileroModel() : await createSileroSession();
  const batcher = createVadBatcher({ model, maxBatch: options.maxBatch ?? 64, maxWaitMs: options.maxWaitMs ?? 4 });
  const track = callerTrack();
  let speechStarts = 0;

  interface Call {
    detector: VadDetector;
    /** Next sample of the track to send. */
    at: number;
    due: number;
    frame: Int16Array;
  }
  const t0 = performance.now() + 50;
  const list: Call[] = Array.from({ length: calls }, (_, i) => ({
    detector: createVadDetector({
      batcher,
      onEvent: (e) => {
        if (e.type === 'speech_start') speechStarts++;
      },
    }),
    at: ((i * 7919) % Math.floor(track.length / FRAME_SAMPLES)) * FRAME_SAMPLES,
    due: t0 + (i * FRAME_MS) / calls,
    frame: new Int16Array(FRAME_SAMPLES),
  }));

  let maxFrameLateMs = 0;
  let lates: number[] = [];
  const measureFrom = t0 + (options.warmupMs ?? 1000);
  const end = measureFrom + seconds * 1000;
  let measuring = false;
  let cpu0 = process.cpuUsage();
  let wall0 = performance.now();

  // One timer for every call, as one media socket loop would serve them: each tick sends
  // every frame that has fallen due.
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      if (!measuring && now >= measureFrom) {
        measuring = true;
        batcher.resetStats();
        speechStarts = 0;
        maxFrameLateMs = 0;
        lates = [];
        cpu0 = process.cpuUsage();
        wall0 = now;
      }
      for (const call of list) {
        while (call.due <= now && call.due < end) {
          const late = now - call.due;
          if (late > maxFrameLateMs) maxFrameLateMs = late;
          if (measuring) lates.push(late);
          for (let j = 0; j < FRAME_SAMPLES; j++) call.frame[j] = track[(call.at + j) % track.length]!;
          call.at = (call.at + FRAME_SAMPLES) % track.length;
          call.detector.push(call.frame);
          call.due += FRAME_MS;
        }
      }
      if (now >= end) {
        clearInterval(timer);
        resolve();
      }
    };
    const timer = setInterval(tick, 1);
  });
  // Let the last windows come back before reading the counts.
  while (batcher.pending > 0) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 20));

  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - wall0;
  const stats = batcher.stats();
  let droppedWindows = 0;
  for (const call of list) {
    droppedWindows += call.detector.stats().dropped;
    call.detector.close();
  }
  batcher.close();
  return {
    calls,
    seconds,
    windows: stats.windows,
    inferences: stats.inferences,
    meanBatch: stats.meanBatch,
    usPerWindow: stats.usPerWindow,
    p50HoldMs: stats.holdP50Ms,
    p95HoldMs: stats.holdP95Ms,
    p99HoldMs: stats.holdP99Ms,
    maxHoldMs: stats.holdMaxMs,
    droppedWindows,
    speechStarts,
    cpuPercent: ((cpu.user + cpu.system) / 1000 / wall) * 100,
    p99FrameLateMs: lates.sort((a, b) => a - b)[Math.floor(lates.length * 0.99)] ?? 0,
    maxFrameLateMs,
    where,
  };
}

/** Runs benchVad for each call count and prints one line per step (`npm run bench`, BENCH_ONLY=vad). */
export async function runVadBench(steps: number[], seconds: number): Promise<void> {
  console.log('\nVAD: model on its own thread (the service) and on the event loop (for comparison), alternating per step');
  console.log('where, calls, windows, inferences, mean batch, µs/window, hold p50/p95/p99/max ms, dropped, speech starts, CPU % (process, all threads), frame late p99/max ms');
  for (const calls of steps) {
    for (const where of ['thread', 'loop'] as const) {
    const r = await benchVad(calls, seconds, { where });
    console.log(
      [
        r.where.padEnd(6),
        r.calls,
        r.windows,
        r.inferences,
        r.meanBatch.toFixed(1),
        r.usPerWindow.toFixed(1),
        `${r.p50HoldMs.toFixed(1)}/${r.p95HoldMs.toFixed(1)}/${r.p99HoldMs.toFixed(1)}/${r.maxHoldMs.toFixed(1)}`,
        r.droppedWindows,
        r.speechStarts,
        r.cpuPercent.toFixed(0),
        `${r.p99FrameLateMs.toFixed(1)}/${r.maxFrameLateMs.toFixed(1)}`,
      ].join('  '),
    );
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await runVadBench((process.env['BENCH_VAD_CALLS'] ?? '50,100,200,300,400,600').split(',').map(Number), Number(process.env['BENCH_VAD_SECONDS'] ?? 5));
}
