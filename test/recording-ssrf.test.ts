// Carrier recording callbacks as an attacker sends them (issue 18, point 1). The customer
// holds what signs them (carrier A's auth token, the carrier B public key they imported),
// so a signed callback can name any URL. The service must fetch a recording only for a
// call that asked its carrier to record, and only from where that carrier serves
// recordings: carrier A from TWILIO_API_BASE's origin, carrier B from public https. A
// listener on loopback stands for an internal host: it must see no connection at all.
// The file must be MP3 audio, or it is not kept. This server runs without
// ALLOW_PRIVATE_NETWORK_TARGETS, as production does.
import { createServer, type Server } from 'node:net';
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newCustomer, PUBLIC_BASE, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import { signTwilio } from '../voice/carriers/twilio-signature.ts';
import { signTelnyx } from '../voice/carriers/telnyx-signature.ts';

let stack: ConversationStack;
let listener: Server;
let port = 0;
/** Connections the internal host was asked for. */
let connections = 0;

beforeAll(async () => {
  listener = createServer((socket) => {
    connections++;
    socket.end('HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\nID3-internal');
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  port = (listener.address() as { port: number }).port;
  // Failed fetches are retried fast, so a refused recording is given up within the test.
  stack = await startConversationStack({ WEBHOOK_RETRY_SCHEDULE_MS: '100,100' });
});
afterAll(async () => {
  await stack?.close();
  await new Promise((r) => listener?.close(r));
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A short call: the greeting, then the caller hangs up. Returns the call's stored row. */
async function shortCall(c: Customer) {
  const far = await ringAgent(stack, c);
  await agentSpeaks(far);
  await far.hangup();
  const row = stack.server.storage.calls.getByPublicId(c.accountId, far.id)!;
  return { far, row };
}

async function recordingDeliveries(c: Customer, callId: string) {
  const res = await stack.server.request('GET', `/v1/webhooks/deliveries?call_id=${encodeURIComponent(callId)}`, { key: c.key });
  return (res.body.deliveries as Array<{ event: string; url: string; status: string; last_error: string | null; last_status_code: number | null }>).filter((d) => d.event === 'recording.fetch');
}

/** Carrier A's recording status callback for the call, signed with the customer's own auth token. */
async function forgeTwilioCallback(c: Customer, row: { internal_id: string | null; carrier_call_id: string | null }, recordingUrl: string) {
  const path = `/carrier/twilio/recording?cid=${encodeURIComponent(row.internal_id!)}`;
  const params = { CallSid: row.carrier_call_id!, RecordingStatus: 'completed', RecordingUrl: recordingUrl, RecordingDuration: '3' };
  const res = await stack.server.request('POST', path, {
    rawBody: new URLSearchParams(params).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signTwilio(c.carrierSecret, `${PUBLIC_BASE}${path}`, params) },
  });
  expect(res.status, res.text).toBe(204);
}

/** Carrier B's `call.recording.saved` for the call, made like one the carrier sent and signed with the account's key. */
async function forgeTelnyxRecordingSaved(c: Customer, callControlId: string, mp3Url: string) {
  const sim = stack.sims.telnyx;
  const call = sim.calls.calls.get(callControlId)!;
  const first = call.webhooks[0]!;
  const payload = { ...first.payload, client_state: call.clientState, recording_id: 'forged', channels: 'single', format: 'mp3', recording_urls: { mp3: mp3Url }, public_recording_urls: {} };
  const body = JSON.stringify({ data: { record_type: 'event', event_type: 'call.recording.saved', id: crypto.randomUUID(), occurred_at: new Date().toISOString(), payload }, meta: { attempt: 1, delivered_to: first.url } });
  const timestamp = String(Math.floor(Date.now() / 1000));
  const keys = sim.state.keyPairs.get(c.carrierAccount)!;
  const res = await stack.server.request('POST', new URL(first.url).pathname + new URL(first.url).search, {
    rawBody: body,
    headers: { 'content-type': 'application/json', 'telnyx-timestamp': timestamp, 'telnyx-signature-ed25519': signTelnyx(keys.privateKey, body, timestamp) },
  });
  expect(res.status, res.text).toBe(200);
}

describe('carrier A recording callbacks', () => {
  it('a call that records nothing fetches nothing, whatever a signed callback names', async () => {
    const c = await newCustomer(stack, 'twilio', { record_call: false });
    const { far, row } = await shortCall(c);
    await forgeTwilioCallback(c, row, `http://127.0.0.1:${port}/redirect?x=`);
    await sleep(1500);
    expect(connections).toBe(0);
    expect(await recordingDeliveries(c, far.id)).toEqual([]);
    const record = await recordWhere(stack, c, far.id, (r) => r.analysis_status !== 'pending', 20_000, 'the call analysed');
    expect(record.recording_url).toBeNull();
  }, 40_000);

  it('a recording link off the origin of TWILIO_API_BASE is never fetched, and the credentials go nowhere', async () => {
    const c = await newCustomer(stack, 'twilio', { record_call: true, recording_source: 'provider' });
    const { far, row } = await shortCall(c);
    await forgeTwilioCallback(c, row, `http://127.0.0.1:${port}/2010-04-01/Accounts/${c.carrierAccount}/Recordings/RE0`);
    await forgeTwilioCallback(c, row, `https://127.0.0.1:${port}/steal`);
    const record = await recordWhere(stack, c, far.id, (r) => r.analysis_status !== 'pending', 20_000, 'the call analysed');
    await sleep(1000);
    expect(connections).toBe(0);
    // Only the carrier's own link was fetched (once, from the simulator), never the forged ones.
    const deliveries = await recordingDeliveries(c, far.id);
    for (const d of deliveries) expect(d.url.startsWith(stack.sims.twilio.baseUrl)).toBe(true);
    const call = stack.sims.twilio.calls.get(far.id)!;
    expect(call.recordings.map((r) => r.downloads)).toEqual([deliveries.length === 1 ? 1 : 0]);
    if (record.recording_url !== null) expect(deliveries).toHaveLength(1);
  }, 40_000);

  it('a file that is not MP3 audio from the carrier’s own origin is not kept', async () => {
    const c = await newCustomer(stack, 'twilio', { record_call: true, recording_source: 'provider' });
    // What an internal page looks like when it starts with "ID3".
    stack.sims.twilio.fail({ status: 200, body: 'ID3<html><body>admin console</body></html>', times: 5, match: (r) => r.method === 'GET' && r.path.endsWith('.mp3') });
    const { far } = await shortCall(c);
    const deliveries = await eventually(async () => {
      const d = await recordingDeliveries(c, far.id);
      return d.length > 0 && d[0]!.status === 'failed' ? d : undefined;
    }, 20_000, 'the recording fetch to fail for good');
    expect(deliveries[0]!.last_error).toMatch(/^not_audio/);
    const record = await recordWhere(stack, c, far.id, (r) => r.analysis_status !== 'pending', 20_000, 'the call analysed');
    expect(record.recording_url).toBeNull();
    const dir = join(stack.server.dataDir, 'recordings');
    // Nothing of it stays on disk: no file, no part of one.
    if (existsSync(dir)) for (const f of readdirSync(dir)) expect(stack.server.storage.recordings.byPath(`recordings/${f}`)).not.toBeNull();
  }, 40_000);
});

describe('carrier B recording events', () => {
  it('a self-signed call.recording.saved naming loopback or http is never fetched', async () => {
    const c = await newCustomer(stack, 'telnyx', { record_call: true, recording_source: 'provider' });
    const { far, row } = await shortCall(c);
    const callControlId = row.carrier_call_id!;
    await forgeTelnyxRecordingSaved(c, callControlId, `https://127.0.0.1:${port}/bucket/rec.mp3`);
    await forgeTelnyxRecordingSaved(c, callControlId, `http://127.0.0.1:${port}/bucket/rec.mp3`);
    const deliveries = await eventually(async () => {
      const d = await recordingDeliveries(c, far.id);
      return d.length > 0 && d.every((x) => x.status === 'failed') ? d : undefined;
    }, 20_000, 'the forged fetch to be refused');
    expect(connections).toBe(0);
    // Refused before any connection: the category says so, with no address or port in it.
    expect(deliveries.map((d) => d.last_error)).toEqual([expect.stringMatching(/^refused_address: /)]);
    expect(deliveries[0]!.last_error).not.toContain('127.0.0.1');
    expect(deliveries[0]!.last_status_code).toBeNull();
  }, 40_000);
});
