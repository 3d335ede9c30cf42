// The production start (scripts/start.sh, the Procfile's `web`) as a child process, for
// the restore drill: restore if the data folder is empty, then the service under
// `litestream replicate -exec`. It runs in a process group of its own (detached), so one
// SIGKILL to the group takes Litestream and the service at the same instant, as a dead
// machine would; SIGTERM to the script's process (Litestream, after its exec) is the
// operator's stop.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));

/** The Litestream binary the start script runs (@flydotio/litestream's platform package). */
export const litestreamBin = `${root}node_modules/@flydotio/litestream-${process.platform}-${process.arch}/litestream`;

/** Groups still alive when the test process exits are killed with it. */
const live = new Set<number>();
process.once('exit', () => {
  for (const pid of live) killGroup(pid, 'SIGKILL');
});

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/**
 * The environment of a run: the test's own, without any replica or AWS settings of the
 * machine running the tests (they would point Litestream elsewhere or sign with other
 * credentials), with this Node first on PATH (the script runs `node`).
 */
export function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith('AWS_') || k.startsWith('LITESTREAM_')) continue;
    env[k] = v;
  }
  env['PATH'] = `${dirname(process.execPath)}:${env['PATH'] ?? ''}`;
  return { ...env, ...extra };
}

export interface StartedProcess {
  child: ChildProcess;
  /** Every stdout line so far: the service's log and Litestream's, both JSON. */
  lines: string[];
  stderr(): string;
  /** Resolves when the service logs "switchboard listening"; rejects if the process exits first or after `limitMs`. */
  listening(limitMs: number): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL to Litestream and the service at once. */
  killAll(): void;
  /** SIGTERM to the script's process (Litestream), as a process manager stops it. */
  stop(): void;
}

export function runStartScript(env: Record<string, string>): StartedProcess {
  const child = spawn('bash', ['scripts/start.sh'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const pid = child.pid!;
  live.add(pid);
  const lines: string[] = [];
  let stderr = '';
  let buffered = '';
  const waiters = new Set<() => void>();
  child.stdout!.on('data', (d) => {
    buffered += String(d);
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      lines.push(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
    }
    for (const w of waiters) w();
  });
  child.stderr!.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      live.delete(pid);
      resolve({ code, signal });
    }),
  );
  const lastWords = () => `${stderr.trim().slice(-1500)}\n${lines.slice(-8).join('\n')}`;
  return {
    child,
    lines,
    stderr: () => stderr,
    listening(limitMs) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!lines.some((l) => l.includes('"switchboard listening"'))) return;
          done();
          resolve();
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`the service did not listen within ${limitMs} ms:\n${lastWords()}`));
        }, limitMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        void exited.then(({ code, signal }) => {
          done();
          reject(new Error(`start.sh exited (${code ?? signal}) before the service listened:\n${lastWords()}`));
        });
        check();
      });
    },
    exited,
    killAll: () => killGroup(pid, 'SIGKILL'),
    stop: () => child.kill('SIGTERM'),
  };
}

/** `litestream restore` of the replica the environment names into `outFile` (the operator's command on a new machine, with -o). */
export function restoreReplica(env: Record<string, string>, dbFile: string, outFile: string): Promise<{ code: number | null; output: string }> {
  // Asynchronous: the S3 server answering it runs in this very process.
  const child = spawn(litestreamBin, ['restore', '-config', 'litestream.yml', '-o', outFile, dbFile], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += String(d)));
  child.stderr.on('data', (d) => (output += String(d)));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output: output.slice(-3000) })));
}
