// `npm run bench`: the long benchmarks, kept out of CI. BENCH_SECONDS and BENCH_ROUNDS
// trade time for steadier medians; BENCH_ONLY=http|outbound|media runs one of them, and
// BENCH_ONLY=unclaimed only the media bench's probe of 2,000 silent sockets;
// BENCH_MEDIA_SECONDS sets the length of each media step. The outbound-call bench runs
// BENCH_SECONDS of load with BENCH_OUTBOUND_CONCURRENCY requests in flight (default
// BENCH_CONNECTIONS) against an account whose limit is BENCH_OUTBOUND_LIMIT.
import { runHttpBench } from './http.ts';
import { runMediaBench } from './media.ts';
import { runOutboundBench } from './outbound.ts';

const only = process.env['BENCH_ONLY'];
if (only !== undefined && only !== 'http' && only !== 'outbound' && only !== 'media' && only !== 'unclaimed') {
  throw new Error('BENCH_ONLY must be http, outbound, media or unclaimed');
}

const seconds = Number(process.env['BENCH_SECONDS'] ?? 5);
const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 50);

if (only === undefined || only === 'http') await runHttpBench({ seconds, rounds, connections });
if (only === undefined || only === 'outbound') {
  await runOutboundBench({
    seconds,
    concurrency: Number(process.env['BENCH_OUTBOUND_CONCURRENCY'] ?? connections),
    limit: Number(process.env['BENCH_OUTBOUND_LIMIT'] ?? 100_000),
    replays: 50,
  });
}
if (only === undefined || only === 'media' || only === 'unclaimed') {
  await runMediaBench({
    seconds: Number(process.env['BENCH_MEDIA_SECONDS'] ?? 5),
    steps: only === 'unclaimed' ? [] : [50, 100, 200, 300, 400, 500, 600, 800, 1000],
    p99LimitMs: 5,
    unclaimedProbe: 2000,
  });
}
