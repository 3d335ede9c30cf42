// The worker thread that owns the process's Silero session (see silero-thread.ts). It
// answers each { id, batch, input, state } with { id, probabilities, state, inferenceUs }
// or { id, error }, one at a time, in order. The arrays it sends back are its own copies
// and are transferred, not cloned.
import { parentPort } from 'node:worker_threads';
import { createSileroSession } from './silero-model.ts';

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
