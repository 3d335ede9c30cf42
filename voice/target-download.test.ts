// downloadTarget against real servers on loopback: an http "carrier API" that is the
// operator's trusted origin, an https receiver with a throwaway CA, and a bare listener
// that stands for an internal host and must never be reached. Redirects are followed only
// to URLs that pass the customer-URL checks, credentials never leave the trusted origin,
// and the size and time bounds hold.
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentTrusting, makeTestCa, startWebhookReceiver, type TestCa, type WebhookReceiver } from '../test/sim/webhook-receiver.ts';
import { downloadTarget, type DownloadOptions } from './target-download.ts';
import { TargetRequestError } from './target-request.ts';

let ca: TestCa;
let receiver: WebhookReceiver;
let api: HttpServer;
let apiBase = '';
let internal: NetServer;
let internalPort = 0;
let internalConnections = 0;
/** What the trusted origin answers, by path. */
const routes = new Map<string, (res: import('node:http').ServerResponse) => void>();
const apiSeen: Array<{ path: string; authorization: string | undefined }> = [];

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  api = createHttpServer((req, res) => {
    apiSeen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    const route = routes.get(req.url ?? '');
    if (route) route(res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  apiBase = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
  internal = createNetServer((s) => {
    internalConnections++;
    s.destroy();
  });
  await new Promise<void>((r) => internal.listen(0, '127.0.0.1', r));
  internalPort = (internal.address() as { port: number }).port;
});
afterAll(async () => {
  await receiver?.close();
  await new Promise((r) => api?.close(r));
  await new Promise((r) => internal?.close(r));
  ca?.dispose();
});

/** A sink that keeps what it is given. */
function collector(): Writable & { bytes: () => Buffer } {
  const parts: Buffer[] = [];
  const w = new Writable({
    write(chunk: Buffer, _e, done) {
      parts.push(chunk);
      done();
    },
  }) as Writable & { bytes: () => Buffer };
  w.bytes = () => Buffer.concat(parts);
  return w;
}

const options = (over: Partial<DownloadOptions> = {}): DownloadOptions => ({
  trustedOrigin: apiBase,
  trustedHeaders: { authorization: 'Basic c2VjcmV0' },
  allowPrivate: true,
  timeoutMs: 2000,
  maxBytes: 1024,
  maxRedirects: 3,
  agent: agentTrusting(ca),
  ...over,
});

const failure = async (p: Promise<unknown>): Promise<TargetRequestError> => {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(TargetRequestError);
  return err as TargetRequestError;
};

describe('downloadTarget', () => {
  it('fetches from the trusted origin over http, with the credentials', async () => {
    routes.set('/file', (res) => res.writeHead(200).end('0123456789'));
    const sink = collector();
    expect(await downloadTarget(`${apiBase}/file`, sink, options())).toEqual({ kind: 'saved', status: 200, bytes: 10 });
    expect(sink.bytes().toString()).toBe('0123456789');
    expect(apiSeen.at(-1)).toEqual({ path: '/file', authorization: 'Basic c2VjcmV0' });
  });

  it('follows a redirect to public https without the credentials', async () => {
    routes.set('/moved', (res) => res.writeHead(302, { location: receiver.url('/bucket/file.mp3') }).end());
    receiver.script('/bucket/file.mp3', { status: 200, body: 'audio-bytes' });
    const sink = collector();
    expect(await downloadTarget(`${apiBase}/moved`, sink, options())).toMatchObject({ kind: 'saved', status: 200 });
    expect(sink.bytes().toString()).toBe('audio-bytes');
    const [got] = receiver.to('/bucket/file.mp3');
    expect(got!.headers['authorization']).toBeUndefined();
  });

  it.each([
    ['to http on another origin', () => `http://127.0.0.1:${internalPort}/admin`, true, 'invalid_url'],
    ['to a loopback https address without ALLOW_PRIVATE_NETWORK_TARGETS', () => `https://127.0.0.1:${internalPort}/admin`, false, 'refused_address'],
    ['to a documentation address', () => `https://192.0.2.1:${internalPort}/`, false, 'refused_address'],
    ['to a URL with credentials', () => `https://user:pw@127.0.0.1:${internalPort}/`, true, 'invalid_url'],
  ])('refuses a redirect %s without connecting', async (_what, location, allowPrivate, kind) => {
    routes.set('/hop', (res) => res.writeHead(307, { location: location() }).end());
    const before = internalConnections;
    const err = await failure(downloadTarget(`${apiBase}/hop`, collector(), options({ allowPrivate })));
    expect(err.kind).toBe(kind);
    expect(err.publicMessage).not.toContain(String(internalPort));
    expect(internalConnections).toBe(before);
  });

  it('refuses a first URL off the trusted origin that is not public https', async () => {
    const before = internalConnections;
    expect((await failure(downloadTarget(`http://127.0.0.1:${internalPort}/x`, collector(), options()))).kind).toBe('invalid_url');
    expect((await failure(downloadTarget(`https://127.0.0.1:${internalPort}/x`, collector(), options({ allowPrivate: false })))).kind).toBe('refused_address');
    expect((await failure(downloadTarget(`https://127.0.0.1:${internalPort}/x`, collector(), options({ trustedOrigin: null, allowPrivate: false })))).kind).toBe('refused_address');
    expect(internalConnections).toBe(before);
  });

  it('stops following after maxRedirects and answers the redirect’s status', async () => {
    routes.set('/loop', (res) => res.writeHead(302, { location: '/loop' }).end());
    const seen = apiSeen.length;
    expect(await downloadTarget(`${apiBase}/loop`, collector(), options({ maxRedirects: 2 }))).toMatchObject({ kind: 'status', status: 302 });
    expect(apiSeen.length - seen).toBe(3);
  });

  it('answers a non-2xx status without writing anything', async () => {
    routes.set('/busy', (res) => res.writeHead(503, { 'retry-after': '7' }).end('try later'));
    const sink = collector();
    expect(await downloadTarget(`${apiBase}/busy`, sink, options())).toEqual({ kind: 'status', status: 503, retryAfter: '7' });
    expect(sink.bytes().length).toBe(0);
  });

  it('fails a file past maxBytes, and one that does not arrive in time', async () => {
    routes.set('/big', (res) => res.writeHead(200).end(Buffer.alloc(5000)));
    expect((await failure(downloadTarget(`${apiBase}/big`, collector(), options()))).kind).toBe('too_large');
    routes.set('/slow', (res) => {
      res.writeHead(200);
      res.write('part');
      setTimeout(() => res.end('rest'), 1500).unref();
    });
    const started = performance.now();
    const err = await failure(downloadTarget(`${apiBase}/slow`, collector(), options({ timeoutMs: 300 })));
    expect(err.kind).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(1200);
  });

  it('stops when the sink refuses the bytes, with the sink’s error', async () => {
    routes.set('/page', (res) => res.writeHead(200).end('<html>not audio</html>'));
    const picky = new Writable({ write: (_c, _e, done) => done(new Error('not the expected file')) });
    await expect(downloadTarget(`${apiBase}/page`, picky, options())).rejects.toThrow('not the expected file');
  });
});
