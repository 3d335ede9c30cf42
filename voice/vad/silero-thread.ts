// The process's Silero session on its own worker thread (silero-worker.ts), behind the
// same SileroModel interface as a session on this thread. Why a thread: see
// silero-model.ts. Each infer copies its input and state (a batch of 300 windows is
// ~650 KB, a fraction of a millisecond to copy) so the caller's buffers are free at
// once, and the worker transfers its answers back without a copy.
//
// The worker is unref'd while it owes no answer: an idle model never keeps the process alive. If the thread
// dies (it should not), the inferences it held fail, the batcher tells their calls, and
// the next inference starts a new thread.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { SILERO_INPUT_SAMPLES, SILERO_STATE_SIZE, type SileroModel, type SileroOutput } from './silero-model.ts';
import type { InferReply, InferRequest } from './silero-worker.ts';

interface Pending {
  resolve(out: SileroOutput): void;
  reject(err: Error): void;
}

/**
 * The worker's entry: silero-worker.ts is TypeScript, and Node 20 does not carry this
 * thread's loader into a worker (not even with `--import tsx` in its execArgv), so a
 * small script registers tsx in the worker first and then imports the real entry.
 */
function workerBootstrap(): string {
  // tsx's ESM API (its package's `import` condition, which require.resolve does not pick).
  const tsxRoot = dirname(createRequire(import.meta.url).resolve('tsx/package.json'));
  const api = pathToFileURL(join(tsxRoot, 'dist/esm/api/index.mjs')).href;
  const entry = new URL('./silero-worker.ts', import.meta.url).href;
  return `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
}

function startWorker(): Promise<{ worker: Worker; pending: Map<number, Pending> }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerBootstrap(), { eval: true });
    const pending = new Map<number, Pending>();
    let ready = false;
    worker.on('message', (m: InferReply | { ready: true }) => {
      if ('ready' in m) {
        ready = true;
        worker.unref();
        resolve({ worker, pending });
        return;
      }
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (pending.size === 0) worker.unref();
      if ('error' in m) p.reject(new Error(`silero: ${m.error}`));
      else p.resolve({ probabilities: m.probabilities, state: m.state, inferenceUs: m.inferenceUs });
    });
    const fail = (err: Error) => {
      if (!ready) reject(err);
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`silero: the model's thread exited (code ${code})`)));
  });
}

async function createThreadedModel(): Promise<SileroModel> {
  let current = await startWorker();
  let alive = true;
  const onExit = () => {
    alive = false;
  };
  current.worker.on('exit', onExit);
  let nextId = 1;

  return {
    async infer(batch, input, state) {
      if (!Number.isInteger(batch) || batch < 1) throw new RangeError(`silero: batch ${batch}`);
      if (input.length !== batch * SILERO_INPUT_SAMPLES) {
        throw new RangeError(`silero: input holds ${input.length} floats, batch ${batch} needs ${batch * SILERO_INPUT_SAMPLES}`);
      }
      if (state.length !== batch * SILERO_STATE_SIZE) {
        throw new RangeError(`silero: state holds ${state.length} floats, batch ${batch} needs ${batch * SILERO_STATE_SIZE}`);
      }
      if (!alive) {
        current = await startWorker();
        alive = true;
        current.worker.on('exit', onExit);
      }
      // Copies of the views' own bytes only (posting a subarray would clone its whole
      // buffer), and the copies are transferred rather than cloned again.
      const copies = { input: new Float32Array(input), state: new Float32Array(state) };
      const request: InferRequest = { id: nextId++, batch, ...copies };
      const { worker, pending } = current;
      return new Promise<SileroOutput>((resolve, reject) => {
        // Referenced while it owes an answer, so an awaited inference is never cut off.
        if (pending.size === 0) worker.ref();
        pending.set(request.id, { resolve, reject });
        worker.postMessage(request, [copies.input.buffer, copies.state.buffer]);
      });
    },
  };
}

let loading: Promise<SileroModel> | null = null;

/** The process's one Silero session on its worker thread, started on first use (later calls share it). */
export function loadSileroModel(): Promise<SileroModel> {
  loading ??= createThreadedModel().catch((err: unknown) => {
    loading = null; // a failed load (missing file) may be retried once fixed
    throw err;
  });
  return loading;
}
