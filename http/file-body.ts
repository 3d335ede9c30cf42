// A region of a file as a response body (a recording, up to hundreds of MB), streamed the
// way uWS's Backpressure example does: read a chunk (async, 64 KiB), hand it to tryEnd,
// and when the socket takes only part of it, keep the rest and go on from onWritable. So a
// response holds one chunk in memory whatever the file's size, the event loop never waits
// on the disk, and a client that stops reading stops the reads too (uWS closes it after
// its 10 s send timeout). The file is opened per response and closed on every way out:
// the last byte sent, the client gone (onAborted), a read failing. A region that is a
// stream (a recording in the bucket) is pulled the same way, a chunk at a time, so the
// store is read only as fast as the client takes it; the client going away aborts it.
import { open } from 'node:fs/promises';
import type { HttpResponse } from 'uWebSockets.js';
import type { FileRegion } from './route.ts';

const CHUNK_BYTES = 64 * 1024;

/** Bytes in a region (`end` is inclusive, as in Content-Range). */
export const regionLength = (r: FileRegion): number => r.end - r.start + 1;

/**
 * Sends `status`, `headers`, a Content-Length and the bytes of `region`. `aborted` is the
 * adapter's flag for this response: it is set here too when the client goes away. `done`
 * runs once, when the response is over whichever way (the file is closed by then).
 */
export function sendFile(res: HttpResponse, aborted: { v: boolean }, status: string, headers: Record<string, string>, region: FileRegion, done: () => void): void {
  const total = regionLength(region);
  /** Resolves a send waiting for onWritable: false when the client went away meanwhile. */
  let waiting: ((sent: boolean) => void) | null = null;
  let headWritten = false;
  /** Aborted when the client goes away: a stream's source stops waiting on its store. */
  const gone = new AbortController();
  // Registered before anything async (uWS rule): replaces the adapter's handler, keeps its flag.
  res.onAborted(() => {
    aborted.v = true;
    waiting?.(false);
    gone.abort();
  });

  /** Hands `chunk` to uWS: true once all of it was taken, false when the client went away. */
  function send(chunk: Uint8Array): boolean | Promise<boolean> {
    if (aborted.v) return false;
    const base = res.getWriteOffset();
    let ok = false;
    let complete = false;
    // Outside uWS's own callbacks every write is corked by hand: status, headers and chunk go out together.
    res.cork(() => {
      if (!headWritten) {
        headWritten = true;
        res.writeStatus(status);
        for (const name in headers) res.writeHeader(name, headers[name]!);
      }
      [ok, complete] = res.tryEnd(chunk, total);
    });
    if (ok || complete) return true;
    return new Promise<boolean>((resolve) => {
      let settled = false;
      waiting = (sent) => {
        settled = true;
        waiting = null;
        resolve(sent);
      };
      res.onWritable((offset) => {
        // A writable event after this chunk was sent (while the next one is read) has nothing to do.
        if (settled) return true;
        const [more, finished] = res.tryEnd(chunk.subarray(offset - base), total);
        if (more || finished) waiting?.(true);
        return more;
      });
    });
  }

  async function run(): Promise<void> {
    let sent = 0;
    try {
      if (total === 0) {
        send(new Uint8Array(0));
        return;
      }
      const chunks = 'path' in region ? fileChunks(region.path, region.start, region.end) : region.stream(gone.signal);
      // Leaving the loop early (the client gone, the body complete) closes the source: the file, or the store's response.
      for await (const chunk of chunks) {
        if (aborted.v) return;
        // Never more than the length already promised, whatever the source sends.
        const part = chunk.length > total - sent ? chunk.subarray(0, total - sent) : chunk;
        sent += part.length;
        if (!(await send(part))) return;
        if (sent === total) return;
      }
      // Shorter than the length already promised (the file shrank underneath, the store
      // stopped): the answer cannot be completed, so the connection is cut rather than left hanging.
      throw new Error('the source ended before the region did');
    } catch {
      if (!aborted.v) {
        aborted.v = true;
        res.close();
      }
    } finally {
      gone.abort();
      done();
    }
  }

  void run();
}

/** The bytes `start` to `end` of a file, one reused 64 KiB buffer at a time; the file is closed however the reading ends. */
async function* fileChunks(path: string, start: number, end: number): AsyncGenerator<Uint8Array> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, end + 1 - start));
    for (let at = start; at <= end; ) {
      const { bytesRead } = await file.read(buffer, 0, Math.min(buffer.length, end + 1 - at), at);
      if (bytesRead === 0) return;
      at += bytesRead;
      // The buffer is read again only after the consumer asked for the next chunk, so it has sent this one.
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await file.close().catch(() => undefined);
  }
}
