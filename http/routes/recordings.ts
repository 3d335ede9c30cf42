// The public link of a call's recording: GET /recordings/<token>.mp3, without an API key.
// The token (32 random characters) is the whole credential: anyone holding the link can
// listen, nobody can list or guess one. A malformed, unknown or deleted token is the same 404.
// The answer names the file region; the adapter streams it with backpressure (a file is
// never read whole, a HEAD never opens it), and each client IP has its own rate limit.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { RECORDINGS_DIR } from '../../actors/recordings/recording-store.ts';

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

export function recordingRoutes(deps: AppDeps) {
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
        200: { description: 'The recording, `audio/mpeg`; a `Range: bytes=…` request gets 206 with that part.' },
        206: { description: 'The asked part of the recording.' },
        416: { description: 'The range starts past the end of the recording; `Content-Range: bytes */<size>` gives its size.' },
      },
      errors: ['recording_not_found'],
      handler: async ({ params, headers }) => {
        const file = params.file ?? '';
        const dataDir = deps.storage.recordings.dataDir;
        const path = `${RECORDINGS_DIR}/${file}`;
        if (!FILE.test(file) || dataDir === null || !deps.storage.recordings.byPath(path)) throw new ApiError('recording_not_found');
        const full = join(dataDir, path);
        let size: number;
        try {
          const info = await stat(full);
          if (!info.isFile()) throw new Error('not a file');
          size = info.size;
        } catch {
          throw new ApiError('recording_not_found');
        }
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
            file: { path: full, ...range },
          };
        }
        return { status: 200, body: '', contentType: 'audio/mpeg', headers: common, file: { path: full, start: 0, end: size - 1 } };
      },
    }),
  ];
}
