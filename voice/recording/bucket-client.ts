// The recordings bucket on the wire: PUT, HEAD, ranged GET and DELETE of one object in an
// S3-compatible store (RECORDINGS_BUCKET_*), each request signed with SigV4 by aws4fetch.
// aws4fetch rather than the AWS SDK: it is a few kilobytes with no dependencies and only
// signs a plain fetch request, so time bounds, streaming and error handling stay ours, and it
// works against any S3-compatible store (AWS, R2, B2, MinIO…); @aws-sdk/client-s3 v3 is
// megabytes of code for these four requests. The endpoint is operator configuration (like
// TWILIO_API_BASE), so it gets no address check. Every request has a time bound. No
// error says more than the operation, the HTTP status and the store's error code: never a
// credential, and never the object's name (its token is the recording link's credential).
import { createHash } from 'node:crypto';
import { AwsClient } from 'aws4fetch';

export interface BucketConfig {
  bucket: string;
  /** Key prefix without leading or trailing slashes; '' for none. */
  prefix: string;
  /** An S3-compatible endpoint (path-style addressing); null: AWS, virtual-hosted. */
  endpoint: string | null;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** HEAD and DELETE, start to end; a download's wait for its headers. */
export const BUCKET_REQUEST_TIMEOUT_MS = 15_000;
/** An upload of up to 100 MiB (the largest carrier recording kept). */
export const BUCKET_UPLOAD_TIMEOUT_MS = 120_000;
/** A download streamed to a client ends when the store sends nothing for this long. */
export const BUCKET_READ_IDLE_MS = 30_000;
/** Of an error answer only this much is read (to find its <Code>). */
const MAX_ERROR_BYTES = 4096;

export class BucketError extends Error {
  constructor(
    message: string,
    /** The store's HTTP status; null when it did not answer. */
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'BucketError';
  }
}

export interface BucketClient {
  /** Stores `bytes` as `name`; resolves only once the store confirmed it (2xx), else throws BucketError. */
  put(name: string, bytes: Uint8Array, signal?: AbortSignal): Promise<void>;
  /** The object's size in bytes; null when the store has no such object. */
  size(name: string): Promise<number | null>;
  /** Bytes `start` to `end` (inclusive) of the object as they arrive; throws BucketError when the store fails or stalls. */
  read(name: string, start: number, end: number, signal: AbortSignal): AsyncIterable<Uint8Array>;
  /** Deletes the object; one already gone counts as deleted. */
  remove(name: string, signal?: AbortSignal): Promise<void>;
}

/** The time bound, and the caller's abort (a shutdown) when there is one. */
const bounded = (ms: number, signal?: AbortSignal): AbortSignal => (signal ? AbortSignal.any([AbortSignal.timeout(ms), signal]) : AbortSignal.timeout(ms));

/** The time bounds above; tests shorten them. */
export interface BucketTimeouts {
  requestMs: number;
  uploadMs: number;
  readIdleMs: number;
}

const TIMEOUTS: BucketTimeouts = { requestMs: BUCKET_REQUEST_TIMEOUT_MS, uploadMs: BUCKET_UPLOAD_TIMEOUT_MS, readIdleMs: BUCKET_READ_IDLE_MS };

export function createBucketClient(cfg: BucketConfig, timeouts: BucketTimeouts = TIMEOUTS): BucketClient {
  // retries: 0 — aws4fetch would retry 5xx answers itself, ten times; retries here are the
  // durable ones of actors/recordings/bucket-transfers.ts, and a download is not repeated.
  const aws = new AwsClient({ accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey, service: 's3', region: cfg.region, retries: 0 });
  const base = cfg.endpoint === null ? `https://${cfg.bucket}.s3.${cfg.region}.amazonaws.com` : `${cfg.endpoint}/${cfg.bucket}`;
  const urlOf = (name: string): string => `${base}/${cfg.prefix === '' ? '' : `${cfg.prefix}/`}${name}`;

  async function send(op: string, name: string, init: RequestInit): Promise<Response> {
    try {
      return await aws.fetch(urlOf(name), init);
    } catch (err) {
      throw new BucketError(`${op}: the store did not answer (${reasonOf(err)})`, null);
    }
  }

  return {
    async put(name, bytes, signal) {
      const res = await send('upload', name, {
        method: 'PUT',
        // A plain byte view of the file as read (fetch's types want one over an ArrayBuffer).
        body: bytes as Uint8Array<ArrayBuffer>,
        // The payload's hash is signed: the store refuses bytes changed on the way.
        headers: { 'content-type': 'audio/mpeg', 'x-amz-content-sha256': createHash('sha256').update(bytes).digest('hex') },
        signal: bounded(timeouts.uploadMs, signal),
      });
      if (!res.ok) throw await answerError('upload', res);
      await res.body?.cancel();
    },
    async size(name) {
      const res = await send('look-up', name, { method: 'HEAD', signal: AbortSignal.timeout(timeouts.requestMs) });
      await res.body?.cancel();
      if (res.status === 404) return null;
      if (!res.ok) throw new BucketError(`look-up: the store answered ${res.status}`, res.status);
      const length = Number(res.headers.get('content-length'));
      if (!Number.isSafeInteger(length) || length < 0) throw new BucketError('look-up: the store gave no object length', res.status);
      return length;
    },
    async *read(name, start, end, signal) {
      // One controller for the caller's abort, the wait for headers and each wait for a chunk.
      const ctl = new AbortController();
      const stop = (): void => ctl.abort();
      signal.addEventListener('abort', stop, { once: true });
      let timer: NodeJS.Timeout | undefined;
      const arm = (ms: number): void => {
        clearTimeout(timer);
        timer = setTimeout(stop, ms);
      };
      try {
        arm(timeouts.requestMs);
        const res = await send('download', name, { method: 'GET', headers: { range: `bytes=${start}-${end}` }, signal: ctl.signal });
        if (res.status !== 206 && !(res.status === 200 && start === 0)) throw await answerError('download', res);
        if (res.body === null) throw new BucketError('download: the store sent no body', res.status);
        const chunks = res.body[Symbol.asyncIterator]();
        for (;;) {
          // Timed only while waiting on the store: a slow client is not the store stalling.
          arm(timeouts.readIdleMs);
          let next: IteratorResult<Uint8Array>;
          try {
            next = await chunks.next();
          } catch (err) {
            throw new BucketError(`download: the store stopped sending (${reasonOf(err)})`, res.status);
          }
          clearTimeout(timer);
          if (next.done) return;
          yield next.value;
        }
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', stop);
        ctl.abort();
      }
    },
    async remove(name, signal) {
      const res = await send('delete', name, { method: 'DELETE', signal: bounded(timeouts.requestMs, signal) });
      if (!res.ok && res.status !== 404) throw await answerError('delete', res);
      await res.body?.cancel();
    },
  };
}

/** The store's refusal: its status and S3 error code (never its whole answer, which can echo the request). */
async function answerError(op: string, res: Response): Promise<BucketError> {
  let code = '';
  try {
    const text = await readCapped(res, MAX_ERROR_BYTES);
    code = /<Code>([A-Za-z0-9.]{1,64})<\/Code>/.exec(text)?.[1] ?? '';
  } catch {
    // The answer's status says enough.
  }
  return new BucketError(`${op}: the store answered ${res.status}${code ? ` ${code}` : ''}`, res.status);
}

async function readCapped(res: Response, max: number): Promise<string> {
  if (res.body === null) return '';
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(parts).subarray(0, max).toString('utf8');
}

/** A failed request's category: a timeout, or the socket error's code (ECONNREFUSED, …). */
function reasonOf(err: unknown): string {
  const e = err as { name?: string; cause?: { code?: string; name?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.cause?.name === 'TimeoutError') return 'timed out';
  return e?.cause?.code ?? 'connection failed';
}
