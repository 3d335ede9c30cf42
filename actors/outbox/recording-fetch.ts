// Fetching a carrier's recording of a call (recording_source `provider`) into DATA_DIR
// (and from there into the bucket, when there is one: actors/recordings/recording-store.ts).
// The carrier's "ready" callback commits an outbox delivery of kind `recording` (event
// `recording.fetch`, URL the carrier's media URL), so the fetch is retried on the
// outbox's schedule and survives restarts like any delivery; a repeated callback adds
// no second one.
//
// A callback is signed with credentials the customer holds (carrier A's auth token, the
// carrier B public key they imported), so its URL is treated as the customer's: a fetch
// happens only for a call that asked its carrier to record, and only from where that
// carrier serves recordings (recordingUrlProblem): carrier A from the origin of
// TWILIO_API_BASE, the only place its credentials go; carrier B from https URLs whose
// resolved address is public unicast, checked at connect like every customer URL.
// Redirects lead only to URLs that pass the same checks; the download is capped in size
// and time; and the file is kept only if it is MP3 audio through and through
// (voice/recording/mp3-frames.ts), checked as it arrives.
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import type { Agent } from 'node:https';
import { Writable } from 'node:stream';
import { z } from 'zod';
import type { Storage } from '../../storage/index.ts';
import type { DeliveryRow } from '../../storage/webhook-deliveries.ts';
import { keepRecording, newRecordingSlot } from '../recordings/recording-store.ts';
import type { AttemptResult } from './webhook-retry.ts';
import { downloadTarget } from '../../voice/target-download.ts';
import { TargetRequestError, toTargetError } from '../../voice/target-request.ts';
import { Mp3FrameWalker, NotMp3Error, type Mp3Summary } from '../../voice/recording/mp3-frames.ts';

export const RECORDING_FETCH_EVENT = 'recording.fetch';
/** Four hours of 32 kbit/s mono MP3 is under 60 MB. */
export const MAX_RECORDING_BYTES = 100 * 1024 * 1024;
/** Redirects a carrier's media link may take (a CDN, a signed bucket URL). */
export const MAX_RECORDING_REDIRECTS = 3;

const jobSchema = z.object({
  internal_id: z.string().min(1),
  provider: z.enum(['twilio', 'telnyx']),
  /** The carrier's length of the recording, seconds; null when it did not say. */
  duration_seconds: z.number().nonnegative().nullable(),
});
export type RecordingFetchJob = z.infer<typeof jobSchema>;

/** Where each carrier's recordings may come from: the operator's configuration. */
export interface RecordingSources {
  /** TWILIO_API_BASE: carrier A serves recordings from its origin (and only there gets credentials). */
  twilioApiBase: string;
  /** ALLOW_PRIVATE_NETWORK_TARGETS: carrier B's links may then point at private addresses (tests, development). */
  allowPrivate: boolean;
}

/**
 * Why a carrier's recording link is not one this service fetches, or null. The address
 * of a carrier B link is judged again at connect (DNS may change); this is the shape.
 */
export function recordingUrlProblem(provider: 'twilio' | 'telnyx', url: string, sources: RecordingSources): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'the recording link is not a URL';
  }
  if (parsed.username || parsed.password) return 'the recording link carries credentials';
  if (provider === 'twilio') {
    return parsed.origin === new URL(sources.twilioApiBase).origin ? null : 'carrier A recordings are fetched only from the origin of TWILIO_API_BASE';
  }
  return parsed.protocol === 'https:' ? null : 'carrier B recordings are fetched only over https';
}

/** What became of a carrier's "recording ready" callback. */
export type RecordingCallbackOutcome =
  /** The fetch is committed (the outbox makes it). */
  | 'enqueued'
  /** Already fetched, or a fetch already committed: the carrier repeated itself. */
  | 'duplicate'
  /** The call never asked its carrier to record (or is not this account's): nothing is fetched. */
  | 'not_requested'
  /** The link is not where that carrier serves recordings: nothing is fetched, and the call stops waiting for a file. */
  | 'refused';

/**
 * Takes a carrier's "recording ready" callback for a call (in the caller's transaction,
 * or on its own): commits the fetch when the call asked its carrier to record and the
 * link is where that carrier serves recordings. A refused link means no file will come,
 * so the call's analysis (and call.completed) stops waiting for one.
 */
export function acceptRecordingCallback(
  storage: Pick<Storage, 'calls' | 'webhookDeliveries' | 'recordings' | 'analysis'>,
  f: { accountId: string; internalId: string; url: string; job: Omit<RecordingFetchJob, 'internal_id'>; now: number; sources: RecordingSources },
): RecordingCallbackOutcome {
  const row = storage.calls.getByInternalId(f.internalId);
  if (!row || row.account_id !== f.accountId) return 'not_requested';
  if (row.recording_path !== null) return 'duplicate';
  if (row.recording_requested_at === null) return 'not_requested';
  if (recordingUrlProblem(f.job.provider, f.url, f.sources) !== null) {
    storage.recordings.giveUp(f.accountId, f.internalId);
    storage.analysis.wake(f.internalId, f.now);
    return 'refused';
  }
  if (storage.webhookDeliveries.hasOfKind(f.accountId, row.call_id, 'recording')) return 'duplicate';
  storage.webhookDeliveries.enqueue({
    accountId: f.accountId,
    callId: row.call_id,
    event: RECORDING_FETCH_EVENT,
    urls: [f.url],
    payload: { internal_id: f.internalId, ...f.job },
    now: f.now,
    kind: 'recording',
  });
  return 'enqueued';
}

export interface RecordingFetchDeps {
  storage: Storage;
  clock: () => number;
  publicBaseUrl: string;
  sources: RecordingSources;
  timeoutMs: number;
  signal: AbortSignal;
  /** RECORDINGS_BUCKET_URL is set: the fetched file is uploaded there before the call points at it. */
  toBucket?: boolean;
  /** The https agent for carrier B's links (tests: one that trusts the simulator's CA). */
  agent?: Agent;
}

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
  // Fetched already: attached, or on its way to the bucket (a repeat after a crash fetches nothing twice).
  if (call.recording_path !== null || deps.storage.recordingTransfers.uploadPending(job.internal_id)) return { kind: 'answer', status: 200 };
  if (call.recording_requested_at === null) return { kind: 'abandon', message: 'the call no longer expects a carrier recording' };
  const problem = recordingUrlProblem(job.provider, row.url, deps.sources);
  if (problem !== null) return { kind: 'abandon', message: problem };

  const trustedHeaders: Record<string, string> = {};
  if (job.provider === 'twilio') {
    // Carrier A's media URLs take the account's credentials; carrier B's are pre-signed.
    const number = call.phone_number === null ? undefined : deps.storage.numbers.get(row.account_id, call.phone_number);
    const creds = number ? deps.storage.numbers.openCredentials(number) : null;
    if (!creds || creds.provider !== 'twilio') return { kind: 'abandon', message: 'the call’s number and its carrier credentials are gone' };
    trustedHeaders['authorization'] = 'Basic ' + Buffer.from(`${creds.account_sid}:${creds.auth_token}`).toString('base64');
  }

  let slot;
  try {
    slot = await newRecordingSlot(deps.storage);
  } catch (err) {
    return { kind: 'error', message: `the recordings folder cannot be written (${(err as Error).message})` };
  }
  if (slot === null) return { kind: 'abandon', message: 'this process keeps no files (in-memory database)' };
  const part = `${slot.full}.part`;
  const sink = new CheckedMp3File(part);
  let result: AttemptResult | null = null;
  try {
    const got = await downloadTarget(row.url, sink, {
      trustedOrigin: job.provider === 'twilio' ? new URL(deps.sources.twilioApiBase).origin : null,
      headers: { accept: 'audio/mpeg' },
      trustedHeaders,
      allowPrivate: deps.sources.allowPrivate,
      timeoutMs: deps.timeoutMs,
      maxBytes: MAX_RECORDING_BYTES,
      maxRedirects: MAX_RECORDING_REDIRECTS,
      signal: deps.signal,
      ...(deps.agent ? { agent: deps.agent } : {}),
    });
    if (got.kind === 'status') result = { kind: 'answer', status: got.status, retryAfter: got.retryAfter };
  } catch (err) {
    result = failure(err);
  } finally {
    await sink.discardUnlessFinished();
  }
  if (result !== null) {
    await unlink(part).catch(() => {});
    return result;
  }

  // The carrier's length when it said it; else the frames' own.
  const seconds = job.duration_seconds ?? Math.round(sink.summary!.seconds);
  try {
    await rename(part, slot.full);
    const kept = await keepRecording(
      { storage: deps.storage, publicBaseUrl: deps.publicBaseUrl, clock: deps.clock, toBucket: deps.toBucket ?? false },
      { accountId: row.account_id, internalId: job.internal_id },
      slot,
      seconds,
    );
    if (kept.kind === 'erased') return { kind: 'abandon', message: 'the call was erased while its recording was fetched' };
  } catch (err) {
    await unlink(part).catch(() => {});
    return { kind: 'error', message: `storing the recording failed (${(err as Error).message})` };
  }
  return { kind: 'answer', status: 200 };
}

/**
 * What a failed download tells the customer (the deliveries list): a category, never a
 * socket's message. A link that is not allowed, or a file past the bound, will not get
 * better by asking again.
 */
function failure(err: unknown): AttemptResult {
  if (err instanceof NotMp3Error) return { kind: 'error', message: `not_audio: the file is not an MP3 recording (${err.message})` };
  const e = err instanceof TargetRequestError ? err : toTargetError(err);
  if (e.kind === 'invalid_url' || e.kind === 'refused_address' || e.kind === 'too_large') return { kind: 'abandon', message: e.publicMessage };
  return { kind: 'error', message: e.publicMessage };
}

/**
 * The download's sink: each chunk is judged by the MP3 frame walker before it is written
 * to the `.part` file, so a file that is not MP3 audio stops the download at its first bad
 * bytes; the end judges the whole (no cut frames at the start, at least a few frames).
 */
class CheckedMp3File extends Writable {
  private readonly walker = new Mp3FrameWalker();
  private file: FileHandle | null = null;
  summary: Mp3Summary | null = null;

  constructor(private readonly path: string) {
    super();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    try {
      this.walker.push(chunk);
    } catch (err) {
      done(err as Error);
      return;
    }
    (this.file ? Promise.resolve(this.file) : open(this.path, 'w').then((f) => (this.file = f)))
      .then((f) => f.write(chunk))
      .then(() => done(), done);
  }

  override _final(done: (err?: Error | null) => void): void {
    try {
      this.summary = this.walker.finish();
    } catch (err) {
      done(err as Error);
      return;
    }
    const f = this.file;
    this.file = null;
    (f ? f.sync().then(() => f.close()) : open(this.path, 'w').then((h) => h.close())).then(() => done(), done);
  }

  /** Closes the file of a download that did not finish (the caller removes it). */
  async discardUnlessFinished(): Promise<void> {
    if (this.summary !== null && this.file === null) return;
    this.summary = null;
    const f = this.file;
    this.file = null;
    this.destroy();
    await f?.close().catch(() => {});
  }
}
