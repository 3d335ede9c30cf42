// A region of a file as a response body (a recording, up to hundreds of MB), streamed the
// way uWS's Backpressure example does: read a chunk (async, 64 KiB), hand it to tryEnd,
// and when the socket takes only part of it, keep the rest and go on from onWritable. So a
// response holds one chunk in memory whatever the file's size, the event loop never waits
// on the disk, and a client that stops reading stops the reads too (uWS closes it after
// its 10 s send timeout). The file is opened per response and closed on every way out:
// the last byte sent, the client gone (onAborted), a read failing.
import { open, type FileHandle } from 'node:fs/promises';
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
  // Registered before anything async (uWS rule): replaces the adapter's handler, keeps its flag.
  res.onAborted(() => {
    aborted.v = true;
    waiting?.(false);
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
    let file: FileHandle | null = null;
    try {
      if (total === 0) {
        send(new Uint8Array(0));
        return;
      }
      file = await open(region.path, 'r');
      const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, total));
      for (let at = region.start; at <= region.end; ) {
        if (aborted.v) return;
        const { bytesRead } = await file.read(buffer, 0, Math.min(buffer.length, region.end + 1 - at), at);
        // Shorter than the length already promised (the file shrank underneath): the
        // answer cannot be completed, so the connection is cut rather than left hanging.
        if (bytesRead === 0) throw new Error('file ended before the region did');
        at += bytesRead;
        if (!(await send(buffer.subarray(0, bytesRead)))) return;
      }
    } catch {
      if (!aborted.v) {
        aborted.v = true;
        res.close();
      }
    } finally {
      await file?.close().catch(() => undefined);
      done();
    }
  }

  void run();
}
