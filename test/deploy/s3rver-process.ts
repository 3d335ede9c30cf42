// The program of ./s3-server.ts's child process: s3rver (a devDependency) on 127.0.0.1, a
// random port, storing in the folder given as argv[2], with the bucket argv[3]; it prints
// {"port":N} once it listens. Clients reach it path-style (http://127.0.0.1:PORT/bucket/key)
// and sign with its fixed credentials, S3RVER / S3RVER.
//
// Two faults of s3rver 3.7.1 are mended here, so that it keeps S3's promises:
// 1. An upload cut off mid-body (its client killed) is stored as an object anyway: the
//    body is streamed straight into the object's file, and an object without its
//    metadata file is listed and served all the same. S3 stores an object only once its
//    whole body arrived (and matched its signed length and hash), and a reader sees all of
//    it or nothing. SIGKILLed mid-upload, Litestream left an empty WAL segment that the
//    restore then failed on ("cannot download wal …: EOF"). The mend receives the whole
//    body first, checks its Content-Length and x-amz-content-sha256, writes the metadata,
//    then renames the finished file into place. (A multipart upload's parts are stored as
//    they come, as before: an upload never completed never becomes an object.)
// 2. A listing with a delimiter (GET /bucket?prefix=p/&delimiter=/) walks the folders below
//    the prefix but skips every folder whose path below the prefix holds the delimiter, so
//    a key two levels down (p/a/b/key) is never seen, and its common prefix p/a/ is never
//    reported. Litestream lists its generations that way (prefix …/generations/, delimiter
//    /) and every object of a generation sits two levels down (…/<generation>/snapshots/…,
//    …/wal/…), so a restore finds nothing: "no matching backups found". The mend lists the
//    prefix without the delimiter (that walk is right) and folds the keys into common
//    prefixes itself, as S3 does.
import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';

const require = createRequire(import.meta.url);

interface ListOptions {
  delimiter?: string;
  prefix?: string;
  startAfter?: string;
  maxKeys?: number;
}
interface ListResult {
  objects: Array<{ key: string }>;
  commonPrefixes: string[];
  isTruncated: boolean;
}
type ListObjects = (this: unknown, bucket: string, options: ListOptions) => Promise<ListResult>;
interface PutObject {
  bucket: string;
  key: string;
  content: Buffer | IncomingMessage | NodeJS.ReadableStream;
  metadata: Record<string, string>;
}
interface FilesystemStore {
  listObjects: ListObjects;
  putObject(this: FilesystemStore, object: PutObject): Promise<{ size: number; md5: string }>;
  getResourcePath(bucket: string, key: string, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
}
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverClass = new (options: Record<string, unknown>) => S3rverInstance;

const S3rver = require('s3rver') as S3rverClass;
const store = (require('s3rver/lib/stores/filesystem') as { prototype: FilesystemStore }).prototype;
{
  const walkAll = store.listObjects;
  store.listObjects = async function (bucket, options) {
    if (!options.delimiter) return walkAll.call(this, bucket, options);
    const prefix = options.prefix ?? '';
    const all = await walkAll.call(this, bucket, { ...options, delimiter: '', maxKeys: Infinity });
    const objects: ListResult['objects'] = [];
    const commonPrefixes = new Set<string>();
    for (const o of all.objects) {
      const at = o.key.indexOf(options.delimiter, prefix.length);
      if (at === -1) objects.push(o);
      else commonPrefixes.add(o.key.slice(0, at + 1));
    }
    // Litestream's listings here are a few keys: one page, never truncated.
    return { objects, commonPrefixes: [...commonPrefixes].sort(), isTruncated: false };
  };
  let uploads = 0;
  store.putObject = async function (object) {
    const body = Buffer.isBuffer(object.content) ? object.content : await wholeBody(object.content);
    const md5 = createHash('md5').update(body).digest('hex');
    const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
    await mkdir(dirname(objectPath), { recursive: true });
    // Listings and reads see only files named …._S3rver_object: the partial one is not.
    const partial = `${objectPath}.${process.pid}-${uploads++}.partial`;
    await writeFile(partial, body);
    await this.putMetadata(object.bucket, object.key, object.metadata, md5);
    await rename(partial, objectPath);
    return { size: body.length, md5 };
  };
}

/** The request's whole body, or a rejection if it was cut off or does not match its length or signed hash. */
function wholeBody(req: IncomingMessage | NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', reject);
    req.on('close', () => ended || reject(new Error('upload cut off')));
    req.on('end', () => {
      ended = true;
      const body = Buffer.concat(chunks);
      // A completed multipart upload arrives as the parts' files joined, with no headers.
      const headers = 'headers' in req ? req.headers : {};
      const length = headers['content-length'];
      const sha = headers['x-amz-content-sha256'];
      if (length !== undefined && Number(length) !== body.length) reject(new Error(`upload of ${body.length} of ${length} bytes`));
      else if (typeof sha === 'string' && /^[0-9a-f]{64}$/.test(sha) && createHash('sha256').update(body).digest('hex') !== sha) reject(new Error('upload does not match its x-amz-content-sha256'));
      else resolve(body);
    });
  });
}

const [directory, bucket] = process.argv.slice(2);
if (!directory || !bucket) throw new Error('usage: s3rver-process.ts <directory> <bucket>');
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
const { port } = await server.run();
process.stdout.write(`${JSON.stringify({ port })}\n`);
process.once('SIGTERM', () => process.exit(0));
