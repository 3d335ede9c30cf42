// The service as the campaign benchmarks run it: forked (server.ts with the node flags of
// `npm start`) on a fresh data directory against both carriers' simulators in this
// process, alone on the last core and this process on the first, both at nice -10, so that
// "on one core" is literal and other work on a shared machine does not take the server's
// core mid-measurement (BENCH_PIN=0: neither). Its log is read for warnings and errors.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startCarrierSims, type CarrierSims } from '../test/helpers/fixtures.ts';
import { remote } from '../test/helpers/remote.ts';
import { benchServerPort } from './bench-customer.ts';
import { affinityOf, cpuMask, setAffinity, setNiceness } from './process-cpu.ts';
import { serverExecArgv } from './server-flags.ts';

/** Warnings and errors of the service's log, counted by message. */
export function watchLog(child: ChildProcess) {
  const byMsg = new Map<string, number>();
  const samples: string[] = [];
  if (child.stdout) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /"level":(\d+)/.exec(line);
      if (!m || Number(m[1]) < 40) return;
      let key = line.slice(0, 160);
      try {
        const j = JSON.parse(line) as { level: number; msg?: string; err?: { code?: string; message?: string } };
        key = `${j.level >= 50 ? 'error' : 'warn'}: ${j.msg ?? '?'}${j.err?.code ? ` (${j.err.code})` : j.err?.message ? ` (${j.err.message.slice(0, 100)})` : ''}`;
      } catch {
        // not JSON: the raw start of the line
      }
      byMsg.set(key, (byMsg.get(key) ?? 0) + 1);
      if (samples.length < 5) samples.push(line.slice(0, 600));
    });
  }
  return { byMsg, samples };
}

export interface BenchServer {
  child: ChildProcess;
  sims: CarrierSims;
  dataDir: string;
  url: string;
  server: ReturnType<typeof remote>;
  /** Where the server and this process run, for the report. */
  placement: string;
  log: ReturnType<typeof watchLog>;
  /** Why the server exited before it was stopped, or null. */
  exitedEarly(): string | null;
  /** Stops the server, gives this process its CPUs and priority back, closes the simulators and removes the data. */
  close(): Promise<void>;
}

/** `name` names the data directory; `env` is added to the server's (e.g. SMS_SEND_INTERVAL_MS). */
export async function startBenchServer(name: string, env: Record<string, string> = {}): Promise<BenchServer> {
  const sims = await startCarrierSims();
  const dataDir = mkdtempSync(join(tmpdir(), `switchboard-bench-${name}-`));
  const child = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [], {
    execArgv: serverExecArgv(),
    // BENCH_LOOP_DELAY: server.ts answers 'loop-delay' with how late its event loop ran since the last ask.
    env: { ...process.env, ...sims.env, DATA_DIR: dataDir, LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'info', BENCH_LOOP_DELAY: '1', ...env },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const log = watchLog(child);
  let exited: string | null = null;
  child.once('exit', (code, signal) => (exited = `the server exited (code ${code}, signal ${signal})`));
  const ownAffinity = affinityOf(process.pid);
  let pinned = false;
  let prioritized = false;
  async function close(): Promise<void> {
    if (child.exitCode === null && child.signalCode === null) {
      child.send('stop');
      await new Promise((r) => child.once('exit', r));
    }
    if (pinned && ownAffinity) setAffinity(process.pid, ownAffinity);
    if (prioritized) setNiceness(process.pid, 0);
    await sims.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  try {
    const port = await benchServerPort(child);
    const lastCpu = cpus().length - 1;
    if (process.env['BENCH_PIN'] !== '0') {
      if (lastCpu >= 1) pinned = setAffinity(child.pid!, cpuMask(lastCpu)) && setAffinity(process.pid, cpuMask(0));
      prioritized = setNiceness(child.pid!, -10) && setNiceness(process.pid, -10);
    }
    const placement = `server ${pinned ? `bound to CPU ${lastCpu}, this process to CPU 0` : 'NOT bound to a CPU'}${prioritized ? ', both at nice -10' : ', normal priority'}; ${cpus().length} CPUs`;
    const url = `http://127.0.0.1:${port}`;
    sims.twilio.route(sims.env['PUBLIC_BASE_URL']!, url);
    sims.telnyx.redirect(sims.env['PUBLIC_BASE_URL']!, url);
    return { child, sims, dataDir, url, server: remote(url), placement, log, exitedEarly: () => exited, close };
  } catch (err) {
    await close();
    throw err;
  }
}
