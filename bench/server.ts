// The benchmark's server process: the real service on its real pipeline, plus one
// bare uWS route answered without the pipeline, as the ceiling to compare against.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadConfig } from '../config.ts';
import { startSwitchboard } from '../server.ts';

const config = loadConfig({
  ...process.env,
  PORT: '0',
  HOST: '127.0.0.1',
  DATA_DIR: process.env['DATA_DIR'] ?? mkdtempSync(join(tmpdir(), 'switchboard-bench-')),
  RATE_LIMIT_READS_PER_MIN: '100000000',
  RATE_LIMIT_WRITES_PER_MIN: '100000000',
  KEY_CREATION_PER_HOUR_PER_IP: '100000000',
});

const sb = await startSwitchboard(config, {
  configure: (app) => {
    app.get('/bench/hello', (res) => {
      res.end('hello');
    });
  },
});
// The parent reads the port from this line.
process.send?.({ port: sb.port });
process.on('message', (m) => {
  if (m === 'stop') void sb.stop().then(() => process.exit(0));
  // This process's CPU time so far (every thread, microseconds): finer than /proc's clock
  // ticks, for a bench that times one request (batch.ts).
  if (m === 'cpu') process.send?.({ cpu: process.cpuUsage() });
});

// With BENCH_LOOP_DELAY=1 (the conversation bench) the parent can ask how late this
// process's event loop ran since it last asked: late turns of the loop are late audio
// frames for every call at once, which tells the service's stalls from the bench's.
if (process.env['BENCH_LOOP_DELAY'] === '1') {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  process.on('message', (m) => {
    if (m !== 'loop-delay') return;
    process.send?.({ loopDelay: { p99Ms: delay.percentile(99) / 1e6, maxMs: delay.max / 1e6 } });
    delay.reset();
  });
}
