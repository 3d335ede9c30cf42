// Where every recording ends up, whoever made it (the platform's own mix, or a file fetched
// from the carrier): <data dir>/recordings/<token>.mp3, attached to its call with the public
// link `${PUBLIC_BASE_URL}/recordings/<token>.mp3` (http/routes/recordings.ts). The token is
// 32 random base64url characters: the link is the only way to the file, without an API key.
// The file is written before the row points at it; a call erased meanwhile gets no row, and
// its new file is removed at once.
import { randomBytes } from 'node:crypto';
import { mkdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Storage } from '../../storage/index.ts';

export const RECORDINGS_DIR = 'recordings';

export interface RecordingStoreDeps {
  storage: Pick<Storage, 'recordings' | 'analysis'>;
  publicBaseUrl: string;
  clock: () => number;
}

export interface StoredRecording {
  url: string;
  path: string;
}

/** Where a new recording goes: a fresh token's relative path and its full path (the directory exists). */
export interface RecordingSlot {
  token: string;
  path: string;
  full: string;
}

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
export async function attachRecording(deps: RecordingStoreDeps, call: { accountId: string; internalId: string }, slot: RecordingSlot, seconds: number): Promise<StoredRecording | null> {
  const url = `${deps.publicBaseUrl}/recordings/${slot.token}.mp3`;
  if (deps.storage.recordings.attach(call.accountId, call.internalId, url, slot.path, seconds, deps.clock())) {
    // The call's analysis may be waiting for this file (actors/post-call/analysis-plan.ts): now it need not.
    deps.storage.analysis.wake(call.internalId, deps.clock());
    return { url, path: slot.path };
  }
  await unlink(slot.full);
  return null;
}

/** Null when there is nowhere to keep it (an in-memory database) or the call is gone. */
export async function storeRecording(deps: RecordingStoreDeps, call: { accountId: string; internalId: string }, mp3: Uint8Array, seconds: number): Promise<StoredRecording | null> {
  const slot = await newRecordingSlot(deps.storage);
  if (slot === null) return null;
  await writeFile(slot.full, mp3);
  return attachRecording(deps, call, slot, seconds);
}
