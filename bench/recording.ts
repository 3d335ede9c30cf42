// Platform recording's cost at the end of a call: a call of `seconds` (the caller's
// frames throughout, the agent speaking a third of the time) mixed and encoded to MP3 as
// the service does it, slice by slice (actors/recordings/platform-recordings.ts). Reports the
// encoding's speed against real time and how long each slice holds the event loop (the
// live calls' 20 ms frames wait that long), beside mixing the whole call at once, in the
// same run. `BENCH_RECORDING_SECONDS` (600), rounds from BENCH_ROUNDS.
import { performance } from 'node:perf_hooks';
import { createCallRecorder, type CallRecorder } from '../voice/recording/call-recorder.ts';
import { encodeMp3From } from '../voice/recording/mp3.ts';

function recordedCall(seconds: number): CallRecorder {
  let t = 0;
  const rec = createCallRecorder(() => t);
  const speech = new Uint8Array(160);
  for (let i = 0; i < speech.length; i++) speech[i] = 0x20 + ((i * 37) % 90);
  for (let i = 0; i < seconds * 50; i++) {
    t = i * 20;
    rec.inbound(speech);
    if (i % 3 === 0) rec.outbound(speech);
  }
  return rec;
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

export async function runRecordingBench(opts: { seconds: number; rounds: number }): Promise<void> {
  const rec = recordedCall(opts.seconds);
  console.log(`\nPlatform recording (a ${opts.seconds} s call mixed and encoded to 32 kbit/s MP3, ${opts.rounds} rounds)`);
  console.log('round | encode ms  x real time | slice hold p50   p99   max ms | whole mix at once ms');
  for (let r = 1; r <= opts.rounds; r++) {
    const holds: number[] = [];
    const t0 = performance.now();
    let sliceStart = 0;
    await encodeMp3From(rec.length(), (from, out) => {
      // The time from this slice's read to the next one's is what the slice held the loop (mix + encode).
      const now = performance.now();
      if (from > 0) holds.push(now - sliceStart);
      sliceStart = now;
      rec.mixRange(from, out);
    });
    const encodeMs = performance.now() - t0;
    const m0 = performance.now();
    rec.mix();
    const wholeMs = performance.now() - m0;
    holds.sort((a, b) => a - b);
    const f = (n: number) => n.toFixed(1).padStart(5);
    console.log(
      `${String(r).padStart(5)} | ${f(encodeMs).padStart(9)} ${String(Math.round((opts.seconds * 1000) / encodeMs)).padStart(11)} | ${f(quantile(holds, 0.5)).padStart(16)} ${f(quantile(holds, 0.99))} ${f(holds.at(-1) ?? 0)} | ${f(wholeMs).padStart(20)}`,
    );
  }
  console.log('(slice hold includes the wait for the event loop between slices: on a busy machine it is an upper bound)');
}
