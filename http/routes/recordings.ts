// The public link of a call's recording: GET /recordings/<token>.mp3, without an API key.
// The token (32 random characters) is the whole credential: anyone holding the link can
// listen, nobody can list or guess one. A malformed, unknown or deleted token is the same 404.
// The answer names the file region; the adapter streams it with backpressure (a file is
// never read whole, a HEAD never opens it), and each client IP has its own rate limit.
//
// A recording kept in the bucket (RECORDINGS_BUCKET_URL) is streamed through this service,
// not redirected to a pre-signed URL: the link stays the only credential (a redirect would
// hand out a second, bearer URL valid until it expires, and show where the bucket is), and
// ranges are answered exactly as for a file — the size comes from a HEAD of the object,
// byteRange decides 200/206/416 here, and only the bytes of the asked range are read from
// the bucket, when the body is sent (never for a HEAD).
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiError } from '../errors.ts';
import { defineRoute, type FileRegion } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { objectName, RECORDINGS_DIR } from '../../actors/recordings/recording-store.ts';

const FILE = /^[A-Za-z0-9_-]{32,64}\.mp3$/;

/** One `bytes=a-b` / `bytes=a-` / `bytes=-n` range, or null when absent or not satisfiable as one range. */
export function byteRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    start = Math.max(0, size - Number(m[2]));
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  return start > end || start >= size ? 'unsatisfiable' : { start, end };
}

/** A recording's length and how to read a region of it. */
interface Source {
  size: number;
  region(start: number, end: number): FileRegion;
}

export function recordingRoutes(deps: AppDeps) {
  const notFound = () => new ApiError('recording_not_found');

  async function onDisk(path: string): Promise<Source> {
    const dataDir = deps.storage.recordings.dataDir;
    if (dataDir === null) throw notFound();
    const full = join(dataDir, path);
    try {
      const info = await stat(full);
      if (!info.isFile()) throw new Error('not a file');
      return { size: info.size, region: (start, end) => ({ path: full, start, end }) };
    } catch {
      throw notFound();
    }
  }

  async function inBucket(path: string): Promise<Source> {
    const bucket = deps.recordings.bucket;
    // Kept in a bucket this process is no longer configured with: nowhere to read it from.
    if (bucket === null) throw notFound();
    const name = objectName(path);
    let size: number | null;
    try {
      size = await bucket.size(name);
    } catch {
      throw new ApiError('recording_store_unreachable');
    }
    if (size === null) throw notFound();
    return { size, region: (start, end) => ({ start, end, stream: (signal) => bucket.read(name, start, end, signal) }) };
  }

  return [
    defineRoute({
      method: 'GET',
      path: '/recordings/{file}',
      summary: 'A call recording (public link)',
      tag: 'Calls',
      auth: 'none',
      rateLimit: 'recordings',
      async: true,
      responses: {
        200: {
          description:
            'The recording, `audio/mpeg`; a `Range: bytes=…` request gets 206 with that part. A recording kept in the operator’s bucket ' +
            '(RECORDINGS_BUCKET_URL) is streamed through this link the same way (never a redirect): the link stays the only credential.',
        },
        206: { description: 'The asked part of the recording.' },
        416: { description: 'The range starts past the end of the recording; `Content-Range: bytes */<size>` gives its size.' },
      },
      errors: ['recording_not_found', 'recording_store_unreachable'],
      handler: async ({ params, headers }) => {
        const file = params.file ?? '';
        const path = `${RECORDINGS_DIR}/${file}`;
        const row = FILE.test(file) ? deps.storage.recordings.byPath(path) : null;
        if (!row) throw notFound();
        const source = row.store === 'bucket' ? await inBucket(path) : await onDisk(path);
        const size = source.size;
        const common = { 'Accept-Ranges': 'bytes', 'Cache-Control': 'private, no-store' };
        const range = byteRange(headers.range, size);
        if (range === 'unsatisfiable') {
          return { status: 416, body: '', contentType: 'audio/mpeg', headers: { ...common, 'Content-Range': `bytes */${size}` } };
        }
        if (range) {
          return {
            status: 206,
            body: '',
            contentType: 'audio/mpeg',
            headers: { ...common, 'Content-Range': `bytes ${range.start}-${range.end}/${size}` },
            file: source.region(range.start, range.end),
          };
        }
        return { status: 200, body: '', contentType: 'audio/mpeg', headers: common, file: source.region(0, size - 1) };
      },
    }),
  ];
}
