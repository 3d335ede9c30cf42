// One call's voice activity detector: takes the caller's 8 kHz PCM as it arrives (20 ms
// frames of 160 samples, or any length), cuts it into Silero's 256-sample windows with
// the previous window's last 32 samples in front, sends each through the process's
// batcher and turns the probabilities into speech_start / speech_end (vad-hysteresis.ts).
// Event times are in the call's audio (ms since the first sample pushed), so they mean
// the same thing however long the batcher held a window.
//
// Each window's recurrent state is the previous window's result, so a call has at most one
// window in the batcher; windows cut meanwhile wait here in a small ring (normally none
// does: a window comes back in a few ms, the next is due in 32). If the ring overflows
// (the process is far behind) the oldest waiting window is dropped and counted rather
// than letting the delay grow. After `resetAfterSilenceMs` of silence the recurrent state
// is zeroed, as Pipecat does every 5 s, so hours of line noise cannot drift it somewhere
// the model never saw in training; during speech it is never touched.
import { SILERO_CONTEXT_SAMPLES, SILERO_INPUT_SAMPLES, SILERO_STATE_SIZE, SILERO_WINDOW_MS, SILERO_WINDOW_SAMPLES } from './silero-model.ts';
import type { VadBatcher, VadClient } from './vad-batcher.ts';
import { createVadHysteresis, VAD_DEFAULTS, type VadEvent, type VadHysteresisOptions } from './vad-hysteresis.ts';

export type { VadEvent } from './vad-hysteresis.ts';

export interface VadDetectorOptions extends Omit<VadHysteresisOptions, 'windowMs'> {
  batcher: VadBatcher;
  /** speech_start / speech_end, in order; never after close(). */
  onEvent: (event: VadEvent) => void;
  /** Every window's probability with the time its window ended (for traces and tuning). */
  onProbability?: (probability: number, windowEndMs: number) => void;
  /** Zero the model's state after this much silence in a row (default 5,000 ms). */
  resetAfterSilenceMs?: number;
  /** Windows that may wait here while one is in the batcher (default 8: 256 ms). */
  maxQueuedWindows?: number;
  /**
   * Windows quieter than this (RMS, dBFS) are judged silence without the model (default
   * -60; null: every window goes to the model). A phone line between words is mostly
   * near-digital silence, and the model costs far more than summing 256 squares; speech
   * is 30 dB and more above this.
   */
  gateDbfs?: number | null;
}

export interface VadDetectorStats {
  /** Windows whose probability came back. */
  windows: number;
  /** Windows dropped because the ring was full. */
  dropped: number;
  /** Windows whose inference failed. */
  failed: number;
  /** Times the model state was zeroed after silence. */
  resets: number;
  /** Windows judged silence by the level gate, without the model. */
  gated: number;
}

export interface VadDetector {
  /** The caller's next samples (8 kHz, 16-bit). Not kept: the caller may reuse the array. */
  push(pcm: Int16Array): void;
  /** Between a speech_start and its speech_end. */
  readonly speaking: boolean;
  /** The last window's speech probability (0 before the first). */
  readonly probability: number;
  /** Audio whose probability came back, in ms (the end of the last window judged). */
  readonly processedMs: number;
  stats(): VadDetectorStats;
  /** Stops: nothing more is submitted, results still in the batcher are ignored, no more events. */
  close(): void;
}

const SCALE = 1 / 32768;

export function createVadDetector(options: VadDetectorOptions): VadDetector {
  const { batcher, onEvent } = options;
  const hysteresis = createVadHysteresis({ ...options, windowMs: SILERO_WINDOW_MS });
  const deactivation = options.deactivation ?? VAD_DEFAULTS.deactivation;
  const resetAfterSilenceMs = options.resetAfterSilenceMs ?? 5000;
  const ringSize = options.maxQueuedWindows ?? 8;
  if (!Number.isInteger(ringSize) || ringSize < 1) throw new RangeError(`maxQueuedWindows ${ringSize}`);

  /** The window being filled: context (the last window's tail, zeros at first) then samples. */
  const building = new Float32Array(SILERO_INPUT_SAMPLES);
  let filled = SILERO_CONTEXT_SAMPLES;
  /** Windows cut so far; window k ends at (k + 1) × 32 ms. */
  let cut = 0;

  // Windows waiting for the one in the batcher: a ring of preallocated views.
  const ring = new Float32Array(ringSize * SILERO_INPUT_SAMPLES);
  const slots = Array.from({ length: ringSize }, (_, i) => ring.subarray(i * SILERO_INPUT_SAMPLES, (i + 1) * SILERO_INPUT_SAMPLES));
  const slotIndex = new Float64Array(ringSize);
  let head = 0;
  let queued = 0;

  let awaiting = false;
  /** Index of the window in the batcher. */
  let inBatcher = 0;
  let closed = false;
  let probability = 0;
  let processedMs = 0;
  let quietMs = 0;
  const counts: VadDetectorStats = { windows: 0, dropped: 0, failed: 0, resets: 0, gated: 0 };
  const gate = options.gateDbfs === null ? -1 : 10 ** ((options.gateDbfs ?? -60) / 10) * SILERO_WINDOW_SAMPLES;

  const client: VadClient = {
    state: new Float32Array(SILERO_STATE_SIZE),
    onProbability(p) {
      if (closed) return;
      awaiting = false;
      counts.windows++;
      probability = p;
      processedMs = (inBatcher + 1) * SILERO_WINDOW_MS;
      const event = hysteresis.update(p, processedMs);
      quietMs = p < deactivation ? quietMs + SILERO_WINDOW_MS : 0;
      if (quietMs >= resetAfterSilenceMs && !hysteresis.speaking) {
        client.state.fill(0);
        quietMs = 0;
        counts.resets++;
      }
      sendNext(); // before the callbacks, so one that throws cannot stall this call's windows
      options.onProbability?.(p, processedMs);
      if (event) onEvent(event);
    },
    onFailure() {
      if (closed) return;
      awaiting = false;
      counts.failed++;
      sendNext();
    },
  };

  function sendNext(): void {
    if (queued === 0) return;
    const slot = head;
    head = (head + 1) % ringSize;
    queued--;
    submit(slots[slot]!, slotIndex[slot]!);
  }

  function submit(window: Float32Array, index: number): void {
    awaiting = true;
    inBatcher = index;
    batcher.submit(client, window);
  }

  /** Sum of squares of the window's new samples (floats in [-1, 1]). */
  function energy(): number {
    let sum = 0;
    for (let i = SILERO_CONTEXT_SAMPLES; i < SILERO_INPUT_SAMPLES; i++) sum += building[i]! * building[i]!;
    return sum;
  }

  /**
   * A window the gate judged silent: what the model's 0 would have done, in order. The
   * recurrent state starts afresh, as at the start of a call: left as it was, it would
   * carry the end of the last speech into the next.
   */
  function judgedQuiet(index: number): void {
    counts.gated++;
    client.state.fill(0);
    probability = 0;
    processedMs = (index + 1) * SILERO_WINDOW_MS;
    const event = hysteresis.update(0, processedMs);
    quietMs += SILERO_WINDOW_MS;
    options.onProbability?.(0, processedMs);
    if (event) onEvent(event);
  }

  /** The window in `building` is complete. */
  function windowDone(): void {
    const index = cut++;
    // Gated only when nothing is pending, so windows are still judged in order.
    if (!awaiting && queued === 0 && energy() < gate) {
      judgedQuiet(index);
    } else if (!awaiting) {
      submit(building, index);
    } else {
      if (queued === ringSize) {
        head = (head + 1) % ringSize; // the oldest goes: a late answer is worth less than a fresh one
        queued--;
        counts.dropped++;
      }
      const slot = (head + queued) % ringSize;
      slots[slot]!.set(building);
      slotIndex[slot] = index;
      queued++;
    }
    building.copyWithin(0, SILERO_INPUT_SAMPLES - SILERO_CONTEXT_SAMPLES);
    filled = SILERO_CONTEXT_SAMPLES;
  }

  return {
    push(pcm) {
      if (closed) return;
      const n = pcm.length;
      let i = 0;
      while (i < n) {
        const take = Math.min(n - i, SILERO_INPUT_SAMPLES - filled);
        for (let k = 0; k < take; k++) building[filled + k] = pcm[i + k]! * SCALE;
        filled += take;
        i += take;
        if (filled === SILERO_INPUT_SAMPLES) windowDone();
      }
    },
    get speaking() {
      return hysteresis.speaking;
    },
    get probability() {
      return probability;
    },
    get processedMs() {
      return processedMs;
    },
    stats() {
      return { ...counts };
    },
    close() {
      closed = true;
      queued = 0;
    },
  };
}
