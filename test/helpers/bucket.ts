// An S3-compatible store on loopback for the recording bucket suites: s3rver (npm) in the
// test process, on a random port over a temp directory, with one bucket. Objects are read
// back the way any S3 client would (signed requests through aws4fetch), independently of
// the service's own client. Stopping and starting it again keeps its port and its objects:
// the bucket unreachable for a while, then back.
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AwsClient } from 'aws4fetch';

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  httpServer?: Server;
}
// s3rver ships CommonJS without types.
const S3rver = createRequire(import.meta.url)('s3rver') as new (opts: Record<string, unknown>) => S3rverInstance;

const BUCKET = 'recordings-test';
const PREFIX = 'calls/rec';
// s3rver's one account; it checks the key id (not a v4 signature).
const KEY = 'S3RVER';

export interface TestBucket {
  /** RECORDINGS_BUCKET_* for the service. */
  env: Record<string, string>;
  port: number;
  running(): boolean;
  /** The object of a recording link's file name (`<token>.mp3`), or null when the store has none. */
  object(file: string): Promise<Buffer | null>;
  /** Every object's file name under the prefix. */
  files(): Promise<string[]>;
  /** Stops answering: connections are cut, the port is closed. */
  stop(): Promise<void>;
  /** Answers again on the same port, with the objects it had. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startTestBucket(): Promise<TestBucket> {
  const directory = mkdtempSync(join(tmpdir(), 's3rver-test-'));
  let port = 0;
  let server: S3rverInstance | null = null;
  const aws = new AwsClient({ accessKeyId: KEY, secretAccessKey: KEY, service: 's3', region: 'us-east-1', retries: 0 });

  async function start(): Promise<void> {
    const s = new S3rver({ address: '127.0.0.1', port, silent: true, directory, configureBuckets: [{ name: BUCKET }] });
    port = (await s.run()).port;
    server = s;
  }

  async function stop(): Promise<void> {
    const s = server;
    server = null;
    if (!s) return;
    const closing = s.close();
    // Keep-alive sockets of the service's fetch would hold close() open until they idle out.
    s.httpServer?.closeAllConnections();
    await closing;
  }

  await start();
  const base = () => `http://127.0.0.1:${port}/${BUCKET}`;
  return {
    env: {
      RECORDINGS_BUCKET_URL: `s3://${BUCKET}/${PREFIX}`,
      RECORDINGS_BUCKET_ENDPOINT: `http://127.0.0.1:${port}`,
      RECORDINGS_BUCKET_REGION: 'us-east-1',
      RECORDINGS_BUCKET_ACCESS_KEY_ID: KEY,
      RECORDINGS_BUCKET_SECRET_ACCESS_KEY: KEY,
    },
    get port() {
      return port;
    },
    running: () => server !== null,
    async object(file) {
      const res = await aws.fetch(`${base()}/${PREFIX}/${file}`);
      if (res.status === 404) {
        await res.body?.cancel();
        return null;
      }
      if (res.status !== 200) throw new Error(`the test bucket answered ${res.status}: ${await res.text()}`);
      return Buffer.from(await res.arrayBuffer());
    },
    async files() {
      const res = await aws.fetch(`${base()}?list-type=2&prefix=${encodeURIComponent(`${PREFIX}/`)}`);
      const xml = await res.text();
      if (res.status !== 200) throw new Error(`the test bucket answered ${res.status}: ${xml}`);
      return [...xml.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]!.slice(PREFIX.length + 1));
    },
    stop,
    start,
    async close() {
      await stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
