// `npm run bench`: the long benchmarks, kept out of CI. BENCH_SECONDS and BENCH_ROUNDS
// trade time for steadier medians.
import { runHttpBench } from './http.ts';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 5);
const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 50);

await runHttpBench({ seconds, rounds, connections });
