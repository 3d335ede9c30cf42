// Runs the operator's command the way an operator does (`npm run admin -- …` is `node
// --import tsx admin.ts …`): a child process on the service's data folder, its exit code,
// stdout and stderr as they came.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface AdminRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (throws when it is not). */
  json(): any;
}

/** `env` adds to the test process's environment (carrier endpoints, SECRETS_KEY, …). */
export function runAdmin(dataDir: string, args: string[], env: Record<string, string> = {}): Promise<AdminRun> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'admin.ts', ...args],
      { cwd: root, env: { ...process.env, LOG_LEVEL: 'silent', ...env, DATA_DIR: dataDir }, maxBuffer: 256 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
        if (code === null) return reject(err ?? new Error('no exit code'));
        resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) });
      },
    );
  });
}
