// Fetching a carrier's recording of a call (recording_source `provider`) into DATA_DIR.
// The carrier's "ready" callback commits an outbox delivery of kind `recording` (event
// `recording.fetch`, URL the carrier's media URL), so the fetch is retried on the
// outbox's schedule and survives restarts like any delivery; a repeated callback adds
// no second one. One attempt downloads the file (carrier A with the number's account
// credentials, carrier B's pre-signed URL as it is), at most MAX_RECORDING_BYTES, and
// stores it (actors/recording-store.ts); a call erased meanwhile abandons it.
import { z } from 'zod';
import type { Storage } from '../storage/index.ts';
import type { DeliveryRow } from '../storage/webhook-deliveries.ts';
import { storeRecording } from './recording-store.ts';
import type { AttemptResult } from './webhook-retry.ts';

export const RECORDING_FETCH_EVENT = 'recording.fetch';
/** Four hours of 32 kbit/s mono MP3 is under 60 MB. */
export const MAX_RECORDING_BYTES = 100 * 1024 * 1024;

const jobSchema = z.object({
  internal_id: z.string().min(1),
  provider: z.enum(['twilio', 'telnyx']),
  /** The carrier's length of the recording, seconds; null when it did not say. */
  duration_seconds: z.number().nonnegative().nullable(),
});
export type RecordingFetchJob = z.infer<typeof jobSchema>;

/**
 * Commits the fetch of a recording the carrier says is ready (in the caller's
 * transaction, or on its own). Nothing when the call already has its file or a fetch of
 * it is already committed (the carrier repeated its callback). False when nothing was added.
 */
export function enqueueRecordingFetch(
  storage: Pick<Storage, 'calls' | 'webhookDeliveries'>,
  f: { accountId: string; internalId: string; url: string; job: Omit<RecordingFetchJob, 'internal_id'>; now: number },
): boolean {
  const row = storage.calls.getByInternalId(f.internalId);
  if (!row || row.account_id !== f.accountId || row.recording_path !== null) return false;
  if (storage.webhookDeliveries.hasOfKind(f.accountId, row.call_id, 'recording')) return false;
  const ids = storage.webhookDeliveries.enqueue({
    accountId: f.accountId,
    callId: row.call_id,
    event: RECORDING_FETCH_EVENT,
    urls: [f.url],
    payload: { internal_id: f.internalId, ...f.job },
    now: f.now,
    kind: 'recording',
  });
  return ids.length > 0;
}

export interface RecordingFetchDeps {
  storage: Storage;
  clock: () => number;
  publicBaseUrl: string;
  timeoutMs: number;
  signal: AbortSignal;
}

/** An MP3 starts with an ID3 tag or an MPEG frame sync. */
const looksLikeMp3 = (b: Uint8Array): boolean => (b[0] === 0x49 && b[1] === 0x44 && b[2] === 0x33) || (b[0] === 0xff && ((b[1] ?? 0) & 0xe0) === 0xe0);

/** One attempt; never rejects. The outbox has committed the attempt's start. */
export async function attemptRecordingFetch(row: DeliveryRow, deps: RecordingFetchDeps): Promise<AttemptResult> {
  let job: RecordingFetchJob;
  try {
    job = jobSchema.parse(JSON.parse(row.payload));
  } catch {
    return { kind: 'abandon', message: 'the stored recording fetch is unreadable' };
  }
  const call = deps.storage.calls.getByInternalId(job.internal_id);
  if (!call || call.account_id !== row.account_id) return { kind: 'abandon', message: 'the call was erased' };
  if (call.recording_path !== null) return { kind: 'answer', status: 200 };

  const headers: Record<string, string> = { accept: 'audio/mpeg' };
  if (job.provider === 'twilio') {
    // Carrier A's media URLs take the account's credentials; carrier B's are pre-signed.
    const number = call.phone_number === null ? undefined : deps.storage.numbers.get(row.account_id, call.phone_number);
    const creds = number ? deps.storage.numbers.openCredentials(number) : null;
    if (!creds || creds.provider !== 'twilio') return { kind: 'abandon', message: 'the call’s number and its carrier credentials are gone' };
    headers['authorization'] = 'Basic ' + Buffer.from(`${creds.account_sid}:${creds.auth_token}`).toString('base64');
  }

  let bytes: Uint8Array;
  try {
    const res = await fetch(row.url, { headers, redirect: 'follow', signal: AbortSignal.any([deps.signal, AbortSignal.timeout(deps.timeoutMs)]) });
    if (!res.ok) {
      await res.body?.cancel();
      return { kind: 'answer', status: res.status, retryAfter: res.headers.get('retry-after') ?? undefined };
    }
    const read = await readCapped(res, MAX_RECORDING_BYTES);
    if (read === null) return { kind: 'abandon', message: `the recording is larger than ${MAX_RECORDING_BYTES} bytes` };
    bytes = read;
  } catch (err) {
    return { kind: 'error', message: err instanceof Error ? err.message : String(err) };
  }
  if (!looksLikeMp3(bytes)) return { kind: 'error', message: 'the carrier’s file is not an MP3' };

  // The carrier's length when it said it; else what 32 kbit/s would make of the bytes.
  const seconds = job.duration_seconds ?? Math.round((bytes.length * 8) / 32_000);
  try {
    const stored = await storeRecording({ storage: deps.storage, publicBaseUrl: deps.publicBaseUrl, clock: deps.clock }, { accountId: row.account_id, internalId: job.internal_id }, bytes, seconds);
    if (stored === null) return { kind: 'abandon', message: 'the call was erased while its recording was fetched' };
  } catch (err) {
    return { kind: 'error', message: `storing the recording failed (${(err as Error).message})` };
  }
  return { kind: 'answer', status: 200 };
}

/** The whole body, or null past `max` bytes (the rest is never downloaded). */
async function readCapped(res: Response, max: number): Promise<Uint8Array | null> {
  const reader = res.body?.getReader();
  if (!reader) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel();
      return null;
    }
    parts.push(value);
  }
  return Buffer.concat(parts);
}
