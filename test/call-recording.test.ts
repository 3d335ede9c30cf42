// Platform recording (recording_source `platform`) end to end, on both carriers: the
// conversation's two sides are mixed into an MP3 under DATA_DIR that a standard decoder
// reads (ffprobe and ffmpeg, the static builds that @ffprobe-installer/ffprobe and
// @ffmpeg-installer/ffmpeg ship: test/helpers/binaries.ts), served at an unguessable link
// without an API key, saved before the analysis and call.completed; the number's
// record_call wins over the agent's; deleting the call deletes the file.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpegPath, ffprobePath } from './helpers/binaries.ts';
import { newCustomer, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack, type Provider } from './helpers/conversation.ts';
import { speechFixture } from './fixtures/speech/speech.ts';
import { agentTrusting, makeTestCa, type TestCa } from './sim/webhook-receiver.ts';

let stack: ConversationStack;
let scratch: string;
let ca: TestCa;
beforeAll(async () => {
  // Carrier B's recording links are https on its file host (the service fetches no other),
  // on loopback: the service trusts the simulator's CA and allows private targets.
  ca = makeTestCa();
  stack = await startConversationStack({ ALLOW_PRIVATE_NETWORK_TARGETS: 'true' }, {}, { webhookAgent: agentTrusting(ca) }, { telnyxRecordingTls: { cert: ca.certPem, key: ca.keyPem } });
  scratch = mkdtempSync(join(tmpdir(), 'recording-test-'));
});
afterAll(async () => {
  await stack?.close();
  ca?.dispose();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const base = () => `http://127.0.0.1:${stack.server.port}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** GET without an API key, the way a customer's systems fetch the link. */
async function fetchLink(path: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; bytes: Buffer; headers: Headers }> {
  const res = await fetch(base() + path, { headers });
  return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

/** What ffprobe reads in an MP3: its codec and duration (s). */
function probe(bytes: Buffer): { codec: string; duration: number } {
  const file = join(scratch, `probe-${Math.random().toString(36).slice(2)}.mp3`);
  writeFileSync(file, bytes);
  const out = JSON.parse(execFileSync(ffprobePath(), ['-v', 'error', '-show_entries', 'stream=codec_name:format=duration', '-of', 'json', file], { encoding: 'utf8' }));
  return { codec: out.streams[0].codec_name, duration: Number(out.format.duration) };
}

/** The MP3 decoded by ffmpeg to 8 kHz 16-bit mono samples. */
function decode(bytes: Buffer): Int16Array {
  const file = join(scratch, `decode-${Math.random().toString(36).slice(2)}.mp3`);
  writeFileSync(file, bytes);
  const pcm = execFileSync(ffmpegPath(), ['-v', 'error', '-i', file, '-f', 's16le', '-ac', '1', '-ar', '8000', '-'], { maxBuffer: 64 << 20 });
  return new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length >> 1);
}

/** Root mean square of the samples between `fromS` and `toS` seconds, as a share of full scale. */
function rmsBetween(pcm: Int16Array, fromS: number, toS: number): number {
  const a = Math.max(0, Math.round(fromS * 8000));
  const b = Math.min(pcm.length, Math.round(toS * 8000));
  if (b <= a) return 0;
  let sum = 0;
  for (let i = a; i < b; i++) sum += pcm[i]! * pcm[i]!;
  return Math.sqrt(sum / (b - a)) / 32768;
}

const recordingCustomer = (provider: Provider, agent: Record<string, unknown> = {}, s: ConversationStack = stack): Promise<Customer> =>
  newCustomer(s, provider, { welcome_message: 'Hello, this is the pharmacy.', record_call: true, recording_source: 'platform', response_eagerness: 100, ...agent });

async function setNumberRecording(c: Customer, value: boolean | null): Promise<void> {
  const res = await stack.server.request('PATCH', `/v1/phone-numbers/${encodeURIComponent(c.number)}`, { key: c.key, body: { record_call: value } });
  expect(res.status, res.text).toBe(200);
}

/**
 * A short conversation: the greeting, a pause, the caller's question, the agent's answer,
 * a pause, the caller hangs up. Returns when each part happened, in seconds from the
 * greeting's first audio, and the finished call record (its analysis recorded).
 */
async function converse(c: Customer, s: ConversationStack = stack) {
  const far = await ringAgent(s, c);
  const greeting = await agentSpeaks(far);
  const t0 = greeting.startedAt;
  const at = () => (performance.now() - t0) / 1000;
  await sleep(1500);
  s.llm.reply({ text: 'We open at nine tomorrow morning.' });
  const asked = at();
  const fixture = speechFixture('book-table');
  await far.say('book-table');
  const answer = await agentSpeaks(far);
  const answered = (answer.startedAt - t0) / 1000;
  await sleep(1500);
  await far.hangup();
  const record = await recordWhere(s, c, far.id, (r) => r.call_status === 'completed' && r.analysis_status !== 'pending', 20_000, 'the call analysed');
  // The conversation's length as the carrier streamed it: the far end sends a 20 ms frame
  // every 20 ms from the stream's start to the hang-up.
  const media = c.provider === 'twilio' ? s.sims.twilio.calls.get(far.id)?.stream : s.sims.telnyx.calls.calls.get(far.id)?.media;
  const streamedSeconds = (media?.framesSent ?? 0) * 0.02;
  return {
    streamedSeconds, far, record, asked, askedFor: fixture.durationMs / 1000, answered, greetingFor: greeting.bytes / 8000, answerFor: answer.bytes / 8000 };
}

describe.each<Provider>(['twilio', 'telnyx'])('platform recording on carrier %s', (provider) => {
  it('is an MP3 of both sides, at an unguessable link served without a key, saved before call.completed', async () => {
    const c = await recordingCustomer(provider);
    const { record, asked, askedFor, answered, answerFor, greetingFor, streamedSeconds } = await converse(c);

    // The analysis (and call.completed with it) waited for the file: both are on the record together.
    expect(record.recording_url).toMatch(/^https:\/\/switchboard\.test\/recordings\/[A-Za-z0-9_-]{32}\.mp3$/);
    expect(record.transcript).toContain('Agent: We open at nine tomorrow morning.');
    const path = new URL(record.recording_url).pathname;
    const got = await fetchLink(path);
    expect(got.status).toBe(200);
    expect(got.type).toBe('audio/mpeg');

    // A standard decoder reads it; its length is the conversation's (the media stream the
    // carrier carried, start to hang-up), within half a second.
    const { codec, duration } = probe(got.bytes);
    expect(codec).toBe('mp3');
    expect(streamedSeconds).toBeGreaterThan(5);
    expect(Math.abs(duration - record.recording_duration_seconds)).toBeLessThan(0.5);
    expect(Math.abs(record.recording_duration_seconds - streamedSeconds)).toBeLessThan(0.5);
    // The call itself ran from the answer, a moment before the stream started.
    expect(record.duration_ms / 1000).toBeGreaterThanOrEqual(record.recording_duration_seconds - 0.5);

    // Both sides where they were heard: the greeting, silence in the pause, the caller's
    // question, the agent's answer. The timeline starts with the media stream, a little
    // before the greeting's first audio reached the far end: found from the first sound.
    const pcm = decode(got.bytes);
    let first = 0;
    while (first < pcm.length && Math.abs(pcm[first]!) < 600) first++;
    const start = first / 8000;
    const quiet = 0.01;
    // What a failure shows: the timings, and the recording's level in 100 ms steps (# sound, . quiet).
    const levels = Array.from({ length: Math.ceil(pcm.length / 800) }, (_, i) => (rmsBetween(pcm, i / 10, (i + 1) / 10) > quiet ? '#' : '.')).join('');
    const seen = `start ${start.toFixed(2)} s, greeting ${greetingFor.toFixed(2)} s, asked at ${asked.toFixed(2)} s, answered at ${answered.toFixed(2)} s; ${levels}`;
    expect(rmsBetween(pcm, start, start + Math.min(1, greetingFor)), seen).toBeGreaterThan(quiet * 3);
    // The agent's audio is recorded where the carrier plays it, which trails what the far
    // end received by the carrier's buffer (120 ms, more on a loaded machine), while the
    // caller's is recorded as it arrives: so the question can start in the recording up to
    // that much before `start + asked`. The pause is checked clear of that margin.
    const PLAYOUT_MARGIN_S = 0.6;
    expect(rmsBetween(pcm, start + greetingFor + 0.4, start + asked - PLAYOUT_MARGIN_S), seen).toBeLessThan(quiet);
    expect(rmsBetween(pcm, start + asked + 0.2, start + asked + askedFor - 0.3), seen).toBeGreaterThan(quiet * 3);
    expect(rmsBetween(pcm, start + answered + 0.1, start + answered + Math.min(1, answerFor)), seen).toBeGreaterThan(quiet * 3);

    // A range of it, as players ask.
    const part = await fetchLink(path, { range: 'bytes=0-99' });
    expect(part.status).toBe(206);
    expect(part.bytes.length).toBe(100);
    expect(part.headers.get('content-range')).toBe(`bytes 0-99/${got.bytes.length}`);

    // Deleting the call deletes the file and the link.
    const del = await stack.server.request('DELETE', `/v1/calls/${encodeURIComponent(record.call_id)}`, { key: c.key });
    expect(del.body).toMatchObject({ deleted: true, recording_deleted: true });
    expect((await fetchLink(path)).status).toBe(404);
    expect(existsSync(join(stack.server.dataDir, path.slice(1)))).toBe(false);
  }, 60_000);
});

describe.each<Provider>(['twilio', 'telnyx'])('provider recording on carrier %s', (provider) => {
  it('the carrier is asked to record the call; its file is fetched once into DATA_DIR and served at the call’s link before call.completed', async () => {
    const c = await recordingCustomer(provider, { recording_source: 'provider' });
    const { far, record } = await converse(c);

    // What the carrier saw: one recording asked for on the call, its file downloaded once.
    if (provider === 'twilio') {
      const call = stack.sims.twilio.calls.get(far.id)!;
      expect(call.recordings).toHaveLength(1);
      expect(call.recordings[0]!.downloads).toBe(1);
      expect(call.webhooks.filter((w) => w.kind === 'recording').map((w) => w.status)).toEqual([204]);
    } else {
      const call = stack.sims.telnyx.calls.calls.get(far.id)!;
      expect(call.commands.filter((x) => x.action === 'record_start').map((x) => [x.body['format'], x.body['channels']])).toEqual([['mp3', 'single']]);
      expect(call.recording?.downloads).toBe(1);
    }

    // The analysis waited for it: the link and its length are on the record with the analysis.
    expect(record.recording_url).toMatch(/^https:\/\/switchboard\.test\/recordings\/[A-Za-z0-9_-]{32}\.mp3$/);
    const got = await fetchLink(new URL(record.recording_url).pathname);
    expect(got.status).toBe(200);
    expect(got.type).toBe('audio/mpeg');
    const { codec, duration } = probe(got.bytes);
    expect(codec).toBe('mp3');
    expect(record.recording_duration_seconds).toBeGreaterThan(0);
    expect(Math.abs(duration - record.recording_duration_seconds)).toBeLessThan(1);
    // The agent's voice is in it (the simulated carrier records what the service played).
    const pcm = decode(got.bytes);
    expect(rmsBetween(pcm, 0, pcm.length / 8000)).toBeGreaterThan(0.005);
  }, 60_000);
});

describe('a carrier recording whose download fails', () => {
  it('is fetched again on the delivery schedule, and the analysis waits for it', async () => {
    const c = await recordingCustomer('twilio', { recording_source: 'provider' });
    stack.sims.twilio.fail({ status: 503, match: (r) => r.method === 'GET' && r.path.endsWith('.mp3') });
    const { far, record } = await converse(c);
    const call = stack.sims.twilio.calls.get(far.id)!;
    const downloads = stack.sims.twilio.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`${call.recordings[0]!.sid}.mp3`));
    expect(downloads.map((r) => r.fault ?? 'ok')).toEqual(['status', 'ok']);
    expect(record.recording_url).toMatch(/\/recordings\/[A-Za-z0-9_-]{32}\.mp3$/);
    const deliveries = await stack.server.request('GET', `/v1/webhooks/deliveries?call_id=${encodeURIComponent(far.id)}`, { key: c.key });
    expect(deliveries.body.deliveries.filter((d: { event: string }) => d.event === 'recording.fetch')).toMatchObject([{ status: 'delivered', attempts: 2 }]);
  }, 60_000);
});

describe('what is not recorded', () => {
  it('a recording callback that is not signed with the number’s auth token is refused and changes nothing', async () => {
    const res = await stack.server.request('POST', '/carrier/twilio/recording?cid=call_nobody', {
      rawBody: 'CallSid=CA00000000000000000000000000000000&RecordingStatus=completed&RecordingUrl=https%3A%2F%2Fexample.com%2Fr',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'not-a-signature' },
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ type: 'permission_error', code: 'invalid_signature' });
  });

  it('the number’s record_call false beats the agent’s true: no link, the transcript kept; null inherits the agent', async () => {
    const c = await recordingCustomer('telnyx');
    await setNumberRecording(c, false);
    const off = await converse(c);
    expect(off.record.recording_url).toBeNull();
    expect(off.record.recording_duration_seconds).toBeNull();
    expect(off.record.transcript).toContain('Agent: We open at nine tomorrow morning.');

    await setNumberRecording(c, null);
    const inherited = await converse(c);
    expect(inherited.record.recording_url).toMatch(/\/recordings\/[A-Za-z0-9_-]{32}\.mp3$/);
  }, 60_000);

  it('a link that was never made, or is malformed, is the same 404 for everyone', async () => {
    for (const path of ['/recordings/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.mp3', '/recordings/switchboard.db', '/recordings/short.mp3']) {
      const res = await fetchLink(path);
      expect(res.status, path).toBe(404);
      expect(JSON.parse(res.bytes.toString()).error).toMatchObject({ code: 'recording_not_found' });
    }
    // The files themselves are not listed anywhere: the folder holds only tokens.
    const dir = join(stack.server.dataDir, 'recordings');
    if (existsSync(dir)) for (const f of readdirSync(dir)) expect(f).toMatch(/^[A-Za-z0-9_-]{32}\.mp3$/);
  });
});

describe('retention', () => {
  let moved: ConversationStack;
  let offset = 0;
  const DAY = 86_400_000;
  beforeAll(async () => {
    moved = await startConversationStack({ RECORDING_SWEEP_INTERVAL_MS: '200' }, {}, { clock: () => Date.now() + offset });
  });
  afterAll(async () => {
    await moved?.close();
  });

  it('deletes a recording 90 days after it was saved: the file and the link go, the transcript stays', async () => {
    const c = await recordingCustomer('twilio', {}, moved);
    const { record } = await converse(c, moved);
    const path = new URL(record.recording_url).pathname;
    const file = join(moved.server.dataDir, path.slice(1));
    const link = async () => (await fetch(`http://127.0.0.1:${moved.server.port}${path}`)).status;
    expect(existsSync(file)).toBe(true);

    offset += 89 * DAY;
    await sleep(800); // four sweeps
    expect(await link()).toBe(200);

    offset += 2 * DAY;
    const after = await recordWhere(moved, c, record.call_id, (r) => r.recording_url === null, 5_000, 'the recording to expire');
    expect(after.recording_duration_seconds).toBeNull();
    expect(after.transcript).toBe(record.transcript);
    expect(existsSync(file)).toBe(false);
    expect(await link()).toBe(404);
  }, 60_000);
});
