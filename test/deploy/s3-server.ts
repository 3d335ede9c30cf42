// A real S3-compatible server on loopback for the tests: s3rver in a child process of its
// own (./s3rver-process.ts, which also mends two of its faults), on a random port, storing
// in a temporary folder. Its own process, because in the test's process its event loop
// queued Litestream's uploads behind the test's load (hundreds of requests a second): on a
// loaded machine an upload of a few hundred kilobytes took 600 ms there, which measured the
// test, not the replication. Remote object storage does not share the service's CPU either.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const program = fileURLToPath(new URL('./s3rver-process.ts', import.meta.url));

export interface S3Server {
  /** http://127.0.0.1:PORT */
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  close(): Promise<void>;
}

export async function startS3Server(bucket = 'switchboard-test'): Promise<S3Server> {
  const directory = mkdtempSync(join(tmpdir(), 's3rver-'));
  const child = spawn(process.execPath, ['--import', 'tsx', program, directory, bucket], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Not left running if the test process ends without closing it.
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  let stderr = '';
  let closing = false;
  child.stderr.on('data', (d) => (stderr = (stderr + String(d)).slice(-8000)));
  // A store that dies under the test shows up as refused connections; say why it died.
  void exited.then(() => closing || console.error(`[s3rver] exited unexpectedly:\n${stderr}`));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`s3rver did not start within 20 s: ${stderr}`)), 20_000);
    child.stdout.on('data', (d) => {
      out += String(d);
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (!line) return;
      clearTimeout(timer);
      resolve((JSON.parse(line) as { port: number }).port);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`s3rver exited before listening: ${stderr}`));
    });
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    // s3rver checks AWS signature V4 against these fixed credentials.
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    async close() {
      process.off('exit', kill);
      closing = true;
      child.kill('SIGTERM');
      await exited;
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
