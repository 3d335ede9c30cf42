// HTTP benchmark: one server process, one load-generating process (autocannon on
// loopback). Rounds alternate between targets so machine noise hits each alike, and
// the report is the ratio of medians, not a single time.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
// @ts-expect-error autocannon ships no types
import autocannon from 'autocannon';
import { serverExecArgv } from './server-flags.ts';

interface Target {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

interface Options {
  seconds: number;
  rounds: number;
  connections: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

function load(url: string, t: Target, o: Options): Promise<{ rps: number; p99: number; errors: number; non2xx: number }> {
  return new Promise((resolve, reject) => {
    autocannon(
      { url: url + t.path, method: t.method, headers: t.headers, body: t.body, duration: o.seconds, connections: o.connections },
      (err: Error | null, r: { requests: { average: number }; latency: { p99: number }; errors: number; non2xx: number }) => {
        if (err) reject(err);
        else resolve({ rps: r.requests.average, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx });
      },
    );
  });
}

export async function runHttpBench(o: Options): Promise<void> {
  const child = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [], {
    execArgv: serverExecArgv(),
    env: { ...process.env, LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'info' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  const url = `http://127.0.0.1:${port}`;
  try {
    const created = (await (await fetch(`${url}/v1/keys`, { method: 'POST' })).json()) as { key_id: string; key_secret: string };
    const auth = { authorization: `Bearer ${created.key_id}:${created.key_secret}` };
    const targets: Target[] = [
      { name: 'bare uWS route', method: 'GET', path: '/bench/hello' },
      { name: 'GET /v1/account (authenticated)', method: 'GET', path: '/v1/account', headers: auth },
      {
        name: 'POST /v1/keys (authenticated write)',
        method: 'POST',
        path: '/v1/keys',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bench' }),
      },
    ];
    const results = new Map<string, { rps: number[]; p99: number[]; bad: number }>();
    for (const t of targets) results.set(t.name, { rps: [], p99: [], bad: 0 });
    // Warm-up: JIT and SQLite page cache.
    for (const t of targets) await load(url, t, { ...o, seconds: 1 });
    for (let round = 0; round < o.rounds; round++) {
      for (const t of targets) {
        const r = await load(url, t, o);
        const agg = results.get(t.name)!;
        agg.rps.push(r.rps);
        agg.p99.push(r.p99);
        agg.bad += r.errors + r.non2xx;
      }
    }
    const bare = median(results.get(targets[0]!.name)!.rps);
    console.log(`\nHTTP (${o.rounds} rounds x ${o.seconds}s, ${o.connections} connections, medians)`);
    console.log('target'.padEnd(40), 'req/s'.padStart(10), 'p99 ms'.padStart(8), 'vs bare'.padStart(8), 'errors'.padStart(7));
    for (const t of targets) {
      const agg = results.get(t.name)!;
      const rps = median(agg.rps);
      console.log(t.name.padEnd(40), rps.toFixed(0).padStart(10), median(agg.p99).toFixed(1).padStart(8), (rps / bare).toFixed(2).padStart(8), String(agg.bad).padStart(7));
    }
    const ratio = median(results.get(targets[1]!.name)!.rps) / bare;
    console.log(`\nratio authenticated GET / bare route: ${ratio.toFixed(2)} (goal >= 0.5)`);
  } finally {
    child.send('stop');
    await new Promise((r) => child.once('exit', r));
  }
}
