// The bucket client against a loopback HTTP server that misbehaves on purpose: every
// request is path-style and SigV4-signed with the payload's hash; a store that never
// answers, or stalls mid-download, costs at most its time bound; and a refusal says the
// operation, the status and the S3 error code — never the credentials or the object's name.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createBucketClient, type BucketClient } from './bucket-client.ts';

const SECRET = 'wJalrXUtnFEMI-secret-never-logged';
const KEY_ID = 'AKIDEXAMPLEKEYID';
const NAME = 'TOKENxxxxxxxxxxxxxxxxxxxxxxxxxxx.mp3';
const QUICK = { requestMs: 200, uploadMs: 300, readIdleMs: 200 };

let server: Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = null;
});

/** A store on loopback answering with `handle`; the client pointed at it. */
async function storeWith(handle: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): Promise<BucketClient> {
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => handle(req, res, Buffer.concat(parts)));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return createBucketClient(
    { bucket: 'rec', prefix: 'calls/a', endpoint: `http://127.0.0.1:${port}`, region: 'eu-test-1', accessKeyId: KEY_ID, secretAccessKey: SECRET },
    QUICK,
  );
}

describe('the recordings bucket client', () => {
  it('puts path-style, SigV4-signed with the payload’s SHA-256, and resolves only on a 2xx', async () => {
    const seen: { method: string; url: string; auth: string; hash: string; body: Buffer }[] = [];
    const bucket = await storeWith((req, res, body) => {
      seen.push({ method: req.method!, url: req.url!, auth: String(req.headers.authorization), hash: String(req.headers['x-amz-content-sha256']), body });
      res.writeHead(200).end();
    });
    const bytes = Buffer.from('ID3 not really an mp3');
    await bucket.put(NAME, bytes);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'PUT', url: `/rec/calls/a/${NAME}`, hash: createHash('sha256').update(bytes).digest('hex') });
    expect(seen[0]!.auth).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${KEY_ID}/\\d{8}/eu-test-1/s3/aws4_request, SignedHeaders=.*x-amz-content-sha256.*, Signature=[0-9a-f]{64}$`));
    expect(seen[0]!.body.equals(bytes)).toBe(true);
  });

  it('a refusal names the operation, the status and the S3 code, never a credential or the object', async () => {
    const bucket = await storeWith((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/xml' });
      res.end(`<Error><Code>SignatureDoesNotMatch</Code><AWSAccessKeyId>${KEY_ID}</AWSAccessKeyId><StringToSign>${SECRET} ${NAME}</StringToSign></Error>`);
    });
    const err = await bucket.put(NAME, Buffer.from('x')).catch((e: Error) => e);
    expect(err).toMatchObject({ name: 'BucketError', status: 403, message: 'upload: the store answered 403 SignatureDoesNotMatch' });
    await expect(bucket.size(NAME)).rejects.toMatchObject({ message: 'look-up: the store answered 403' });
    for (const text of [String(err), JSON.stringify(err)]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(KEY_ID);
      expect(text).not.toContain(NAME);
    }
  });

  it('a store that never answers costs each request its time bound', async () => {
    const bucket = await storeWith(() => {
      // Takes the request, answers nothing.
    });
    for (const attempt of [() => bucket.put(NAME, Buffer.from('x')), () => bucket.size(NAME), () => bucket.remove(NAME)]) {
      const started = performance.now();
      await expect(attempt()).rejects.toMatchObject({ name: 'BucketError', status: null, message: expect.stringMatching(/did not answer \(timed out\)$/) });
      expect(performance.now() - started).toBeLessThan(2_000);
    }
  });

  it('a download the store stalls in ends after the idle bound, with what had arrived', async () => {
    const bucket = await storeWith((req, res) => {
      expect(req.headers.range).toBe('bytes=10-1009');
      res.writeHead(206, { 'content-length': '1000', 'content-range': 'bytes 10-1009/5000' });
      res.write(Buffer.alloc(100, 7));
    });
    const got: Uint8Array[] = [];
    const started = performance.now();
    const read = (async () => {
      for await (const chunk of bucket.read(NAME, 10, 1009, new AbortController().signal)) got.push(chunk);
    })();
    await expect(read).rejects.toMatchObject({ name: 'BucketError', message: expect.stringMatching(/^download: the store stopped sending/) });
    expect(Buffer.concat(got).length).toBe(100);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('a missing object has no size, and deleting it again is not an error', async () => {
    const bucket = await storeWith((_req, res) => {
      res.writeHead(404).end();
    });
    expect(await bucket.size(NAME)).toBeNull();
    await bucket.remove(NAME);
  });
});
