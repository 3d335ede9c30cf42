// Where every recording ends up, whoever made it (the platform's own mix, or a file fetched
// from the carrier): written to <data dir>/recordings/<token>.mp3, then attached to its call
// with the public link `${PUBLIC_BASE_URL}/recordings/<token>.mp3` (http/routes/recordings.ts).
// The token is 32 random base64url characters: the link is the only way to the file,
// without an API key. The file is written before the row points at it; a call erased
// meanwhile gets no row, and its new file is removed at once.
//
// With a bucket (RECORDINGS_BUCKET_URL) the written file is synced and its upload committed
// instead (storage/recording-transfers.ts); the call's row points at the recording only
// once the bucket confirmed it (actors/recordings/bucket-transfers.ts), and the file under
// DATA_DIR stays until then, through failed attempts and restarts.
import { randomBytes } from 'node:crypto';
import { mkdir, open, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Storage } from '../../storage/index.ts';

export const RECORDINGS_DIR = 'recordings';

export interface RecordingStoreDeps {
  storage: Pick<Storage, 'recordings' | 'analysis' | 'recordingTransfers' | 'tx' | 'calls'>;
  publicBaseUrl: string;
  clock: () => number;
  /** RECORDINGS_BUCKET_URL is set: recordings go to the bucket. */
  toBucket: boolean;
}

export interface StoredRecording {
  url: string;
  path: string;
}

/** What became of a finished recording: attached to its call, waiting for the bucket, or dropped with its erased call. */
export type KeptRecording = { kind: 'attached'; url: string; path: string } | { kind: 'uploading'; path: string } | { kind: 'erased' };

/** Where a new recording goes: a fresh token's relative path and its full path (the directory exists). */
export interface RecordingSlot {
  token: string;
  path: string;
  full: string;
}

/** The public link of the recording at `path` (`recordings/<token>.mp3`). */
export const recordingLink = (publicBaseUrl: string, path: string): string => `${publicBaseUrl}/${path}`;

/** The object's name in the bucket: the file's name, `<token>.mp3`. */
export const objectName = (path: string): string => path.slice(RECORDINGS_DIR.length + 1);

/** A slot for a new file, or null when there is nowhere to keep one (an in-memory database). */
export async function newRecordingSlot(storage: Pick<Storage, 'recordings'>): Promise<RecordingSlot | null> {
  const dataDir = storage.recordings.dataDir;
  if (dataDir === null) return null;
  const token = randomBytes(24).toString('base64url');
  const path = `${RECORDINGS_DIR}/${token}.mp3`;
  await mkdir(join(dataDir, RECORDINGS_DIR), { recursive: true });
  return { token, path, full: join(dataDir, path) };
}

/**
 * Points the call at the file already written at `slot.full`. Null (and the file removed)
 * when the call was erased while its audio was on its way: nothing may keep its voice.
 */
export async function attachRecording(deps: Omit<RecordingStoreDeps, 'toBucket'>, call: { accountId: string; internalId: string }, slot: RecordingSlot, seconds: number): Promise<StoredRecording | null> {
  const url = recordingLink(deps.publicBaseUrl, slot.path);
  if (deps.storage.recordings.attach(call.accountId, call.internalId, url, slot.path, seconds, deps.clock())) {
    // The call's analysis may be waiting for this file (actors/post-call/analysis-plan.ts): now it need not.
    deps.storage.analysis.wake(call.internalId, deps.clock());
    return { url, path: slot.path };
  }
  await unlink(slot.full);
  return null;
}

/**
 * The file at `slot.full` (written) becomes the call's recording: attached at once, or,
 * with a bucket, synced to disk and its upload committed (the call's analysis keeps
 * waiting for it, up to its bound). A call erased meanwhile gets neither, and the file goes.
 */
export async function keepRecording(deps: RecordingStoreDeps, call: { accountId: string; internalId: string }, slot: RecordingSlot, seconds: number): Promise<KeptRecording> {
  if (!deps.toBucket) {
    const stored = await attachRecording(deps, call, slot, seconds);
    return stored === null ? { kind: 'erased' } : { kind: 'attached', ...stored };
  }
  // On disk for good before the upload row says it is there: a crash cannot leave a row without its file.
  const handle = await open(slot.full, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  const committed = deps.storage.tx(() => {
    const row = deps.storage.calls.getByInternalId(call.internalId);
    if (!row || row.account_id !== call.accountId) return false;
    deps.storage.recordingTransfers.enqueueUpload({ path: slot.path, accountId: call.accountId, internalId: call.internalId, seconds, now: deps.clock() });
    return true;
  });
  if (committed) return { kind: 'uploading', path: slot.path };
  await unlink(slot.full);
  return { kind: 'erased' };
}

/** Writes `mp3` as a new recording of the call and keeps it; null when there is nowhere to keep it (an in-memory database). */
export async function storeRecording(deps: RecordingStoreDeps, call: { accountId: string; internalId: string }, mp3: Uint8Array, seconds: number): Promise<KeptRecording | null> {
  const slot = await newRecordingSlot(deps.storage);
  if (slot === null) return null;
  await writeFile(slot.full, mp3);
  return keepRecording(deps, call, slot, seconds);
}
