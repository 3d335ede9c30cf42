// GET /recordings/{file} as a client sees it (issue 18, defect 2): the file streamed, not
// read whole: the full body, ranges (206) and 416 as byteRange decides, HEAD with the
// length and no body, nosniff, a per-IP rate limit like /v1's (and the carriers' own), and
// every file handle closed again, also when the client goes away mid-download.
import { readdirSync, readlinkSync, unlinkSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';
import { parseResponses, requestText } from '../helpers/raw-http.ts';
import { saveRecording, type SavedRecording } from '../helpers/recordings.ts';

const RECORDINGS_PER_MIN = 6;
const CARRIER_PER_MIN = 4;

let server: TestServer;
let rec: SavedRecording;
let ipCounter = 0;
/** Each test downloads from its own client IP (TRUST_PROXY is on): the per-IP limit is low. */
const freshIp = () => `10.18.0.${++ipCounter}`;

beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_RECORDINGS_PER_MIN: String(RECORDINGS_PER_MIN), RATE_LIMIT_CARRIER_PER_MIN: String(CARRIER_PER_MIN) });
  const { accountId } = await server.newAccount();
  // 300 KiB of noise: several 64 KiB chunks, and a length no chunk divides.
  rec = saveRecording(server.storage, server.dataDir, accountId, Buffer.from(Array.from({ length: 300 * 1024 + 17 }, (_, i) => (i * 7919) % 251)));
});
afterAll(() => server?.close());

/** Sends each request on one connection after the previous answer came, and returns all that was read. */
async function oneByOne(requests: string[]): Promise<string> {
  const net = await import('node:net');
  const socket = net.connect(server.port, '127.0.0.1');
  let text = '';
  socket.on('data', (d) => (text += d.toString('latin1')));
  for (const request of requests) {
    const seen = text.length;
    socket.write(request);
    for (let i = 0; i < 250 && !text.slice(seen).includes('\r\n\r\n'); i++) await new Promise((r) => setTimeout(r, 20));
  }
  // Time for any stray body bytes of a HEAD answer to arrive.
  await new Promise((r) => setTimeout(r, 200));
  socket.destroy();
  return text;
}

async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(server.url + path, { headers: { 'x-forwarded-for': freshIp(), ...headers } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe('a recording link', () => {
  it('answers 200 with the whole file, its length, audio/mpeg and nosniff', async () => {
    const res = await get(rec.link);
    expect(res.status).toBe(200);
    expect(res.bytes.equals(rec.bytes)).toBe(true);
    expect(res.headers.get('content-length')).toBe(String(rec.bytes.length));
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it.each([
    ['the first byte', 'bytes=0-0', 0, 0],
    ['a middle part across chunk boundaries', 'bytes=60000-200000', 60000, 200000],
    ['a suffix', 'bytes=-500', 300 * 1024 + 17 - 500, 300 * 1024 + 17 - 1],
    ['an open end', 'bytes=300000-', 300000, 300 * 1024 + 17 - 1],
    ['an end past the file, cut to it', 'bytes=307000-999999', 307000, 300 * 1024 + 17 - 1],
  ])('answers 206 with %s', async (_name, range, start, end) => {
    const res = await get(rec.link, { range });
    expect(res.status).toBe(206);
    expect(res.bytes.equals(rec.bytes.subarray(start, end + 1))).toBe(true);
    expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${rec.bytes.length}`);
    expect(res.headers.get('content-length')).toBe(String(end - start + 1));
  });

  it('answers 416 with the size for a range past the end', async () => {
    const res = await get(rec.link, { range: `bytes=${rec.bytes.length}-` });
    expect(res.status).toBe(416);
    expect(res.headers.get('content-range')).toBe(`bytes */${rec.bytes.length}`);
    expect(res.bytes.length).toBe(0);
  });

  it('answers HEAD with the length and no body, and the connection stays in step', async () => {
    const ip: [string, string] = ['X-Forwarded-For', freshIp()];
    // One request at a time: uWS closes a connection on which a request arrives while an
    // earlier answer is still being made (every answer of this route is, the file's size is read async).
    const out = await oneByOne([requestText(`HEAD ${rec.link}`, [ip]), requestText(`HEAD ${rec.link}`, [ip, ['Range', 'bytes=10-19']]), requestText('GET /healthz', [ip])]);
    const { responses, leftover } = parseResponses(out, new Set([0, 1]));
    expect(responses.map((r) => r.status)).toEqual([200, 206, 200]);
    expect(responses[0]!.headers['content-length']).toBe(String(rec.bytes.length));
    expect(responses[1]!.headers['content-length']).toBe('10');
    expect(responses[1]!.headers['content-range']).toBe(`bytes 10-19/${rec.bytes.length}`);
    expect(responses[2]!.body).toBe('{"ok":true}');
    expect(leftover).toBe('');
  });

  it('is the same 404 recording_not_found for an unknown token and for a file gone from disk', async () => {
    const unknown = await server.request('GET', `/recordings/${'A'.repeat(32)}.mp3`, { headers: { 'x-forwarded-for': freshIp() } });
    expectError(unknown, 404, 'not_found', 'recording_not_found');
    const { accountId } = await server.newAccount();
    const gone = saveRecording(server.storage, server.dataDir, accountId, Buffer.from('short'));
    unlinkSync(gone.file);
    const res = await server.request('GET', gone.link, { headers: { 'x-forwarded-for': freshIp() } });
    expectError(res, 404, 'not_found', 'recording_not_found');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it.runIf(process.platform === 'linux')('closes its file when the client goes away before the end', async () => {
    const { accountId } = await server.newAccount();
    const big = saveRecording(server.storage, server.dataDir, accountId, Buffer.alloc(32 * 1024 * 1024, 1));
    // The server runs in this process: its open files are this process's descriptors.
    const openOnIt = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === big.file;
        } catch {
          return false;
        }
      }).length;
    const net = await import('node:net');
    // Clients that ask for the whole file and never read: each stream stops at backpressure, its file open.
    const sockets = Array.from({ length: 4 }, () => {
      const s = net.connect(server.port, '127.0.0.1');
      s.on('error', () => {});
      s.write(requestText(`GET ${big.link}`, [['X-Forwarded-For', freshIp()]]));
      s.pause();
      return s;
    });
    for (let i = 0; i < 100 && openOnIt() < 4; i++) await new Promise((r) => setTimeout(r, 20));
    expect(openOnIt()).toBe(4);
    for (const s of sockets) s.destroy();
    for (let i = 0; i < 100 && openOnIt() > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(openOnIt()).toBe(0);
  });
});

describe('per-IP rate limits outside /v1', () => {
  it(`answer the ${RECORDINGS_PER_MIN + 1}th recording request of an IP in a minute 429 with Retry-After; another IP goes on`, async () => {
    const ip = freshIp();
    for (let i = 0; i < RECORDINGS_PER_MIN; i++) {
      const res = await server.request(i % 2 ? 'HEAD' : 'GET', rec.link, { headers: { 'x-forwarded-for': ip, range: 'bytes=0-0' } });
      expect(res.status).toBe(206);
      expect(res.headers.get('x-ratelimit-limit')).toBe(String(RECORDINGS_PER_MIN));
    }
    // Guessing links counts too: the limit is per IP, not per recording.
    const over = await server.request('GET', `/recordings/${'B'.repeat(32)}.mp3`, { headers: { 'x-forwarded-for': ip } });
    expectError(over, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(over.body.error.details.retry_after).toBe(Number(over.headers.get('retry-after')));
    expect((await get(rec.link, { range: 'bytes=0-0' })).status).toBe(206);
  });

  it(`answer the ${CARRIER_PER_MIN + 1}th carrier webhook of an IP in a minute 429`, async () => {
    const ip = { 'x-forwarded-for': freshIp(), 'content-type': 'application/x-www-form-urlencoded' };
    for (let i = 0; i < CARRIER_PER_MIN; i++) {
      const res = await server.request('POST', '/carrier/twilio/status', { headers: ip, rawBody: 'CallSid=CA1' });
      expect(res.status).not.toBe(429);
    }
    expectError(await server.request('POST', '/carrier/twilio/status', { headers: ip, rawBody: 'CallSid=CA1' }), 429, 'rate_limit_error', 'rate_limit_exceeded');
  });
});
