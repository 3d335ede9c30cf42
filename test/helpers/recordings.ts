// A call with a recording, made the way the service records one: the file under
// DATA_DIR/recordings/<token>.mp3 first, then the call's row pointing at it through the
// storage API (storage/recordings.ts `attach`). Works on a running service's database from
// beside it (WAL), for tests that run the service as a child process.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Storage } from '../../storage/index.ts';

export interface SavedRecording {
  /** The link's path, `/recordings/<token>.mp3`. */
  link: string;
  /** The file on disk. */
  file: string;
  bytes: Buffer;
}

/** Saves `bytes` as a recording of a new completed call of `accountId`. */
export function saveRecording(storage: Storage, dataDir: string, accountId: string, bytes: Buffer, publicBaseUrl = 'http://localhost'): SavedRecording {
  const token = randomBytes(24).toString('base64url');
  const path = `recordings/${token}.mp3`;
  const file = join(dataDir, path);
  mkdirSync(join(dataDir, 'recordings'), { recursive: true });
  writeFileSync(file, bytes);
  const now = Date.now();
  const internalId = saveCompletedCall(storage, accountId, now);
  const link = `/recordings/${token}.mp3`;
  if (!storage.recordings.attach(accountId, internalId, `${publicBaseUrl}${link}`, path, 60, now)) throw new Error('the recording was not attached');
  return { link, file, bytes };
}

/** A completed minute-long inbound call of `accountId`, ended at `now`, without a recording; returns its internal (and public) id. */
export function saveCompletedCall(storage: Storage, accountId: string, now = Date.now()): string {
  const internalId = `call_${randomBytes(8).toString('hex')}`;
  storage.calls.save({
    internalId,
    callId: internalId,
    accountId,
    agentId: null,
    direction: 'inbound',
    callStatus: 'completed',
    fromNumber: '+14155550100',
    toNumber: '+14155550101',
    phoneNumber: '+14155550101',
    provider: 'twilio',
    carrierCallId: null,
    startedAt: now - 60_000,
    endedAt: now,
    durationMs: 60_000,
    endedReason: 'completed',
    chargedMinutes: 1,
    campaignId: null,
    voicemailDetected: false,
    transcript: null,
    avgLatencyMs: null,
    createdAt: now - 60_000,
    updatedAt: now,
  });
  return internalId;
}
