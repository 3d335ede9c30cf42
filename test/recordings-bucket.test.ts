// Recordings in a bucket (issue 23, acceptance 2), against a real S3-compatible server on
// loopback (s3rver, test/helpers/bucket.ts) and the carrier and provider simulators: a
// platform recording and a carrier recording are written to the bucket (not kept in
// DATA_DIR), served at their unguessable link through the service (GET, HEAD, ranges,
// 416), and deleted there by DELETE /v1/calls/{id}, DELETE /v1/calls, DELETE /v1/account
// and the retention sweep. With the bucket unreachable the upload is retried from the
// file kept in DATA_DIR, survives a restart and lands once the bucket is back, while the
// recording is reported nowhere before the bucket confirmed it and call.completed goes
// out at its bound without it.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBucket, type TestBucket } from './helpers/bucket.ts';
import { eventually, getCall, newCustomer, PUBLIC_BASE, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack, type Provider } from './helpers/conversation.ts';
import { saveCompletedCall } from './helpers/recordings.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { storeRecording } from '../actors/recordings/recording-store.ts';
import { PLATFORM_RECORDING_WAIT_MS } from '../actors/recordings/platform-recordings.ts';
import { loadConfig } from '../config.ts';

const DAY = 86_400_000;
let bucket: TestBucket;
let stack: ConversationStack;
/** The service's clock runs this far ahead of the wall clock (retention, the call.completed bound). */
let offset = 0;
const clock = (): number => Date.now() + offset;
/** What the service logs (both its runs): checked for credentials and recording tokens. */
const logLines: string[] = [];
const log = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
const env = (b: TestBucket): Record<string, string> => ({
  ...b.env,
  // Carrier links and the number's webhook are on loopback.
  ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
  RECORDING_SWEEP_INTERVAL_MS: '200',
  RECORDINGS_BUCKET_RETRY_SCHEDULE_MS: '300,600',
});

beforeAll(async () => {
  bucket = await startTestBucket();
  stack = await startConversationStack(env(bucket), {}, { clock, log });
}, 30_000);
afterAll(async () => {
  await stack?.close();
  await bucket?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fileOf = (url: string): string => new URL(url).pathname.split('/').pop()!;
/** Recording files left under the service's DATA_DIR. */
const localFiles = (server: TestServer): string[] => {
  const dir = join(server.dataDir, 'recordings');
  return existsSync(dir) ? readdirSync(dir) : [];
};

async function link(server: TestServer, url: string, init: { method?: string; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${server.url}${new URL(url).pathname}`, init);
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

const recordingCustomer = (provider: Provider, source: 'platform' | 'provider'): Promise<Customer> =>
  newCustomer(stack, provider, { welcome_message: 'Hello, this is the pharmacy.', record_call: true, recording_source: source });

/** A short call: the agent's greeting, then the caller hangs up. Returns the far end and the call's id. */
async function greetAndHangUp(c: Customer) {
  const far = await ringAgent(stack, c);
  await agentSpeaks(far);
  await sleep(300);
  await far.hangup();
  return far;
}

const isMp3 = (b: Buffer): boolean => b.subarray(0, 3).toString('latin1') === 'ID3' || (b[0] === 0xff && (b[1]! & 0xe0) === 0xe0);

describe('recordings in the bucket', () => {
  it('a platform recording is written to the bucket, not kept on the box, served at its link, and deleted with its call', async () => {
    const c = await recordingCustomer('twilio', 'platform');
    const far = await greetAndHangUp(c);
    const record = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed' && r.analysis_status !== 'pending', 20_000, 'the call analysed');

    // Saved before call.completed (the analysis waited for the bucket's confirmation), and it is in the bucket.
    expect(record.recording_url).toMatch(/^https:\/\/switchboard\.test\/recordings\/[A-Za-z0-9_-]{32}\.mp3$/);
    const file = fileOf(record.recording_url);
    const stored = await bucket.object(file);
    expect(stored).not.toBeNull();
    expect(isMp3(stored!)).toBe(true);
    expect(record.recording_duration_seconds).toBeGreaterThan(0);
    // The local copy went once the bucket had it.
    await eventually(() => (localFiles(stack.server).length === 0 ? true : undefined), 5_000, 'the local file removed');

    // Served through the link: the object's bytes, whole and in part.
    const whole = await link(stack.server, record.recording_url);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('audio/mpeg');
    expect(whole.bytes.equals(stored!)).toBe(true);
    const head = await link(stack.server, record.recording_url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(stored!.length));
    expect(head.bytes.length).toBe(0);
    const part = await link(stack.server, record.recording_url, { headers: { range: 'bytes=0-99' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 0-99/${stored!.length}`);
    expect(part.bytes.equals(stored!.subarray(0, 100))).toBe(true);
    const past = await link(stack.server, record.recording_url, { headers: { range: `bytes=${stored!.length}-` } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${stored!.length}`);

    // Deleting the call deletes the object: gone by the time the answer comes.
    const del = await stack.server.request('DELETE', `/v1/calls/${encodeURIComponent(record.call_id)}`, { key: c.key });
    expect(del.body).toMatchObject({ deleted: true, recording_deleted: true });
    expect(await bucket.object(file)).toBeNull();
    expect((await link(stack.server, record.recording_url)).status).toBe(404);
  }, 60_000);

  it('a carrier recording is fetched once into the bucket, served at its link, and deleted with all calls', async () => {
    const c = await recordingCustomer('twilio', 'provider');
    const far = await greetAndHangUp(c);
    const record = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed' && r.analysis_status !== 'pending', 20_000, 'the call analysed');

    const call = stack.sims.twilio.calls.get(far.id)!;
    expect(call.recordings).toHaveLength(1);
    expect(call.recordings[0]!.downloads).toBe(1);
    expect(record.recording_url).toMatch(/^https:\/\/switchboard\.test\/recordings\/[A-Za-z0-9_-]{32}\.mp3$/);
    const file = fileOf(record.recording_url);
    const stored = await bucket.object(file);
    expect(stored).not.toBeNull();
    expect(isMp3(stored!)).toBe(true);
    await eventually(() => (localFiles(stack.server).length === 0 ? true : undefined), 5_000, 'the local file removed');
    const whole = await link(stack.server, record.recording_url);
    expect(whole.status).toBe(200);
    expect(whole.bytes.equals(stored!)).toBe(true);

    const del = await stack.server.request('DELETE', '/v1/calls', { key: c.key });
    expect(del.body).toMatchObject({ deleted: true, calls_deleted: 1, recordings_deleted: 1 });
    expect(await bucket.object(file)).toBeNull();
    expect((await link(stack.server, record.recording_url)).status).toBe(404);
  }, 60_000);

  it('a long object is served in ranges like a file; DELETE /v1/account and the retention sweep delete objects', async () => {
    const server = stack.server;
    /** A recording stored the way the service stores one (written, then uploaded), on a new completed call. */
    async function stored(accountId: string, bytes: Buffer): Promise<{ url: string; file: string; id: string }> {
      const id = saveCompletedCall(server.storage, accountId, clock());
      const kept = await storeRecording({ storage: server.storage, publicBaseUrl: PUBLIC_BASE, clock, toBucket: true }, { accountId, internalId: id }, bytes, 60);
      expect(kept?.kind).toBe('uploading');
      const row = await eventually(() => server.storage.calls.getByInternalId(id)?.recording_url ?? undefined, 10_000, 'the upload');
      return { url: row, file: fileOf(row), id };
    }
    // 300 KiB of noise: several 64 KiB chunks, and a length no chunk divides.
    const bytes = Buffer.from(Array.from({ length: 300 * 1024 + 17 }, (_, i) => (i * 7919) % 251));
    const { key, accountId } = await server.newAccount();
    const rec = await stored(accountId, bytes);
    expect((await bucket.object(rec.file))!.equals(bytes)).toBe(true);

    const size = bytes.length;
    for (const [range, start, end] of [
      ['bytes=0-0', 0, 0],
      ['bytes=60000-200000', 60000, 200000],
      ['bytes=-500', size - 500, size - 1],
      ['bytes=300000-', 300000, size - 1],
      ['bytes=307000-999999', 307000, size - 1],
    ] as const) {
      const res = await link(server, rec.url, { headers: { range } });
      expect(res.status, range).toBe(206);
      expect(res.headers.get('content-range'), range).toBe(`bytes ${start}-${end}/${size}`);
      expect(res.bytes.equals(bytes.subarray(start, end + 1)), range).toBe(true);
    }
    // Not one range the file serving answers either: the whole recording.
    const several = await link(server, rec.url, { headers: { range: 'bytes=0-1,5-6' } });
    expect(several.status).toBe(200);
    expect(several.bytes.equals(bytes)).toBe(true);
    expect((await link(server, rec.url, { headers: { range: 'bytes=999999-' } })).status).toBe(416);

    // The account's erasure takes its recordings out of the bucket.
    const other = await server.newAccount();
    const theirs = await stored(other.accountId, bytes.subarray(0, 1000));
    const gone = await server.request('DELETE', '/v1/account?confirm=true', { key: other.key });
    expect(gone.status, gone.text).toBe(200);
    expect(await bucket.object(theirs.file)).toBeNull();
    expect(await bucket.object(rec.file)).not.toBeNull();

    // 91 days on, the sweep deletes the object; the link and the row's recording go, the call stays.
    offset += 91 * DAY;
    await eventually(async () => ((await bucket.object(rec.file)) === null ? true : undefined), 10_000, 'the expired object deleted');
    const after = await getCall(server, key, rec.id);
    expect(after.body).toMatchObject({ recording_url: null, recording_duration_seconds: null });
    expect((await link(server, rec.url)).status).toBe(404);
  }, 60_000);

  it('with the bucket unreachable the recording is retried from DATA_DIR, not reported, survives a restart and lands when the bucket is back; call.completed goes at its bound', async () => {
    const c = await recordingCustomer('twilio', 'platform');
    // call.completed is committed to the number's webhook (which need not answer): its payload is what a developer gets.
    const hook = await stack.server.request('PUT', `/v1/integrations/webhook/number/${encodeURIComponent(c.number)}`, { key: c.key, body: { url: 'https://127.0.0.1:9/hooks' } });
    expect(hook.status, hook.text).toBe(200);
    await bucket.stop();

    const far = await greetAndHangUp(c);
    const db = stack.server.storage.db;
    const uploadOf = () =>
      db
        .prepare<[string], { path: string; attempts: number; last_error: string | null }>(
          'SELECT t.path, t.attempts, t.last_error FROM recording_transfers t JOIN calls c ON c.internal_id = t.internal_id WHERE c.call_id = ?',
        )
        .get(far.id);
    // Retried, from the file kept under DATA_DIR.
    const waiting = await eventually(() => {
      const u = uploadOf();
      return u && u.attempts >= 2 ? u : undefined;
    }, 15_000, 'upload attempts');
    expect(waiting.last_error).toMatch(/did not answer/);
    expect(existsSync(join(stack.server.dataDir, waiting.path))).toBe(true);
    // Not reported before the bucket confirmed it, and call.completed still waits (within its bound).
    const before = (await getCall(stack.server, c.key, far.id)).body;
    expect(before).toMatchObject({ recording_url: null, analysis_status: 'pending' });

    // The bound passes (30 s after the agent's leg ended, on the service's clock): call.completed goes without the recording.
    offset += PLATFORM_RECORDING_WAIT_MS + 1_000;
    const completed = await recordWhere(stack, c, far.id, (r) => r.analysis_status !== 'pending', 10_000, 'call.completed');
    expect(completed.recording_url).toBeNull();
    const event = db
      .prepare<[string], { payload: string }>("SELECT payload FROM webhook_deliveries WHERE call_id = ? AND event = 'call.completed'")
      .get(far.id);
    expect(JSON.parse(event!.payload)).toMatchObject({ event: 'call.completed', recording_url: null });
    expect(uploadOf()).toBeDefined();

    // A restart while the bucket is still down: the upload is resumed from its row and its file.
    const dataDir = stack.server.dataDir;
    await stack.server.stop();
    const again = await startTestServer({ ...stack.sims.env, ...env(bucket), DATA_DIR: dataDir }, { clock, log });
    try {
      const attemptsAtRestart = uploadOfIn(again, far.id)!.attempts;
      await eventually(() => (uploadOfIn(again, far.id)!.attempts > attemptsAtRestart ? true : undefined), 10_000, 'an attempt after the restart');
      expect((await getCall(again, c.key, far.id)).body.recording_url).toBeNull();

      // The bucket is back: the recording lands, the record points at it, the local file goes.
      await bucket.start();
      const landed = await eventually(async () => {
        const r = (await getCall(again, c.key, far.id)).body;
        return r.recording_url ? r : undefined;
      }, 10_000, 'the recording to land');
      const stored = await bucket.object(fileOf(landed.recording_url));
      expect(stored).not.toBeNull();
      expect(isMp3(stored!)).toBe(true);
      expect(landed.recording_duration_seconds).toBeGreaterThan(0);
      expect(uploadOfIn(again, far.id)).toBeUndefined();
      await eventually(() => (localFiles(again).length === 0 ? true : undefined), 5_000, 'the local file removed');
      const served = await link(again, landed.recording_url);
      expect(served.status).toBe(200);
      expect(served.bytes.equals(stored!)).toBe(true);

      // The operator saw the failures and the landing; no credential and no recording token was logged.
      const logs = logLines.join('');
      expect(logs).toContain('recording bucket transfer failed; it is tried again');
      expect(logs).toContain('call recording saved in the bucket');
      expect(logs).not.toContain(bucket.env.RECORDINGS_BUCKET_SECRET_ACCESS_KEY!);
      expect(logs).not.toContain(fileOf(landed.recording_url).replace(/\.mp3$/, ''));
    } finally {
      await again.close();
    }
  }, 60_000);
});

describe('RECORDINGS_BUCKET_* configuration', () => {
  const keys = { RECORDINGS_BUCKET_ACCESS_KEY_ID: 'AKID', RECORDINGS_BUCKET_SECRET_ACCESS_KEY: 'wJalr-secret-value' };
  it('reads the bucket, its prefix and endpoint; unset keeps recordings in DATA_DIR', () => {
    expect(loadConfig({}).recordings.bucket).toBeNull();
    expect(loadConfig({ RECORDINGS_BUCKET_URL: 's3://my-bucket/a/b/', RECORDINGS_BUCKET_ENDPOINT: 'https://s3.example.com/', ...keys }).recordings.bucket).toEqual({
      bucket: 'my-bucket',
      prefix: 'a/b',
      endpoint: 'https://s3.example.com',
      region: 'us-east-1',
      accessKeyId: 'AKID',
      secretAccessKey: 'wJalr-secret-value',
    });
    expect(loadConfig({ RECORDINGS_BUCKET_URL: 's3://my-bucket', ...keys }).recordings.bucket).toMatchObject({ prefix: '', endpoint: null });
  });

  it('refuses a half configuration, naming the variable and never its value', () => {
    const refused = (e: Record<string, string>): string => {
      try {
        loadConfig(e);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused({ RECORDINGS_BUCKET_URL: 's3://my-bucket' })).toMatch(/RECORDINGS_BUCKET_ACCESS_KEY_ID: required[\s\S]*RECORDINGS_BUCKET_SECRET_ACCESS_KEY: required/);
    expect(refused({ RECORDINGS_BUCKET_URL: 'https://my-bucket.s3.amazonaws.com', ...keys })).toMatch(/RECORDINGS_BUCKET_URL: must be s3:\/\//);
    expect(refused({ RECORDINGS_BUCKET_URL: 's3://my-bucket', RECORDINGS_BUCKET_ENDPOINT: 'ftp://x', ...keys })).toMatch(/RECORDINGS_BUCKET_ENDPOINT/);
    const stray = refused(keys);
    expect(stray).toMatch(/RECORDINGS_BUCKET_SECRET_ACCESS_KEY: set without RECORDINGS_BUCKET_URL/);
    expect(stray).not.toContain('wJalr-secret-value');
  });
});

function uploadOfIn(server: TestServer, callId: string): { attempts: number } | undefined {
  return server.storage.db
    .prepare<[string], { attempts: number }>('SELECT t.attempts FROM recording_transfers t JOIN calls c ON c.internal_id = t.internal_id WHERE c.call_id = ?')
    .get(callId);
}
