// The worker thread that owns the process's Silero session (see silero-thread.ts). It
// answers each { id, batch, input, state } with { id, probabilities, state, inferenceUs }
// or { id, error }, one at a time, in order. The arrays it sends back are its own copies
// and are transferred, not cloned.
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { createSileroSession } from './silero-model.ts';

/**
 * How much nicer than the event loop this thread runs. When both want the same core, a
 * late audio frame is heard by every call at once, while a window judged a few ms later
 * only delays one barge-in by as much: so the loop wins, and the model takes what is
 * left (Linux's weights at +5 give the loop about three quarters of a contested core,
 * and the model still every idle cycle).
 */
const NICER_THAN_LOOP = 5;

/** Linux: lowers this thread alone (a thread's id names it to setpriority). Elsewhere, or when not permitted, nothing. */
function yieldToTheLoop(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0 || tid === process.pid) return;
    setPriority(tid, Math.min(19, getPriority(tid) + NICER_THAN_LOOP));
  } catch {
    // no /proc (not Linux) or not permitted: the thread keeps the process's priority
  }
}

export interface InferRequest {
  id: number;
  batch: number;
  input: Float32Array;
  state: Float32Array;
}

export type InferReply =
  | { id: number; probabilities: Float32Array; state: Float32Array; inferenceUs: number }
  | { id: number; error: string };

const port = parentPort;
if (!port) throw new Error('silero-worker.ts runs as a worker thread (silero-thread.ts starts it)');

yieldToTheLoop();
const session = await createSileroSession();
port.on('message', (request: InferRequest) => {
  session.infer(request.batch, request.input, request.state).then(
    (out) => {
      // ORT's output arrays may share memory with the session's tensors: send copies.
      const probabilities = out.probabilities.slice();
      const state = out.state.slice();
      const reply: InferReply = { id: request.id, probabilities, state, inferenceUs: out.inferenceUs };
      port.postMessage(reply, [probabilities.buffer, state.buffer]);
    },
    (err: unknown) => {
      const reply: InferReply = { id: request.id, error: err instanceof Error ? err.message : String(err) };
      port.postMessage(reply);
    },
  );
});
port.postMessage({ ready: true });
