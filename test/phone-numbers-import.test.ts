// POST /v1/phone-numbers against both carrier simulators over real loopback HTTP: the
// checks in their documented order, the webhook re-pointing each carrier saw, re-import,
// carrier failures, and credentials that never show up in a response or in the database file.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, nextNumber, startCarrierSims, type CarrierSims } from './helpers/fixtures.ts';
import { expectError, startTestServer, type TestResponse, type TestServer } from './helpers/server.ts';
import { closedPort } from './sim/sim-http.ts';
import { twilioSid } from './sim/twilio-sim.ts';

const BASE = 'https://switchboard.test';
const FULL_FIELDS = [
  'phone_number', 'agent_id', 'provider', 'source', 'carrier_number_sid', 'inbound_enabled', 'outbound_enabled', 'custom_prompt',
  'voice_id', 'sms_reply_enabled', 'sms_prompt', 'web_prompt', 'speaking_rate', 'dtmf_enabled', 'record_call',
  'voicemail_leave_enabled', 'voicemail_message', 'require_booking_confirmation', 'created_at', 'updated_at',
].sort();
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let sims: CarrierSims;
let server: TestServer;
beforeAll(async () => {
  sims = await startCarrierSims();
  server = await startTestServer(sims.env);
});
afterAll(async () => {
  await server.close();
  await sims.close();
});

async function customer(): Promise<{ key: string; agentId: string }> {
  const { key } = await server.newAccount();
  return { key, agentId: await createAgent(server, key) };
}

const importNumber = (key: string, body: Record<string, unknown>) => server.request('POST', '/v1/phone-numbers', { key, body });
const getNumber = (key: string, n: string) => server.request('GET', `/v1/phone-numbers/${encodeURIComponent(n)}`, { key });

async function expectNotImported(key: string, n: string): Promise<void> {
  expectError(await getNumber(key, n), 404, 'not_found', 'number_not_found');
  const list = await server.request('GET', '/v1/phone-numbers', { key });
  expect(list.body.phone_numbers.map((p: { phone_number: string }) => p.phone_number)).not.toContain(n);
}

/** Every file of the data directory, the database and its write-ahead log included. */
function dataBytes(): Buffer {
  return Buffer.concat(readdirSync(server.dataDir).map((f) => readFileSync(join(server.dataDir, f))));
}

function expectNoSecrets(res: TestResponse, ...secrets: string[]): void {
  for (const s of secrets) expect(res.text).not.toContain(s);
  for (const f of ['twilio_auth_token', 'twilio_account_sid', 'telnyx_api_key', 'telnyx_connection_id', 'telnyx_public_key', 'events_token', 'credentials']) {
    expect(res.text).not.toContain(f);
  }
}

describe('carrier A (twilio)', () => {
  function carrierAccount(): { sid: string; token: string } {
    const sid = twilioSid('AC');
    const token = twilioSid('').slice(0, 32);
    sims.twilio.addAccount(sid, token);
    return { sid, token };
  }
  const body = (n: string, agentId: string, c: { sid: string; token: string }, extra: Record<string, unknown> = {}) => ({
    phone_number: n,
    agent_id: agentId,
    provider: 'twilio',
    twilio_account_sid: c.sid,
    twilio_auth_token: c.token,
    ...extra,
  });

  it('imports: records the PN sid, points voice, SMS and status webhooks here, and returns the full number with defaults', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    const pnSid = sims.twilio.addNumber(c.sid, n);
    const res = await importNumber(key, body(n, agentId, c));
    expect(res.status).toBe(201);
    const num = res.body.phone_number;
    expect(Object.keys(num).sort()).toEqual(FULL_FIELDS);
    expect(num).toEqual({
      phone_number: n,
      agent_id: agentId,
      provider: 'twilio',
      source: 'api',
      carrier_number_sid: pnSid,
      inbound_enabled: true,
      outbound_enabled: true,
      custom_prompt: null,
      voice_id: null,
      sms_reply_enabled: false,
      sms_prompt: null,
      web_prompt: null,
      speaking_rate: null,
      dtmf_enabled: null,
      record_call: null,
      voicemail_leave_enabled: null,
      voicemail_message: null,
      require_booking_confirmation: null,
      created_at: expect.stringMatching(ISO_MS),
      updated_at: expect.stringMatching(ISO_MS),
    });
    expectNoSecrets(res, c.token, c.sid);

    const carrierSide = sims.twilio.numbers.get(pnSid)!;
    expect(carrierSide.voice_url).toBe(`${BASE}/carrier/twilio/voice`);
    expect(carrierSide.voice_method).toBe('POST');
    expect(carrierSide.sms_url).toBe(`${BASE}/carrier/twilio/sms`);
    expect(carrierSide.sms_method).toBe('POST');
    expect(carrierSide.status_callback).toBe(`${BASE}/carrier/twilio/status`);

    const got = await getNumber(key, n);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ phone_number: num });
    expectNoSecrets(got, c.token, c.sid);
  });

  it('takes inbound_enabled and outbound_enabled at import', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.twilio.addNumber(c.sid, n);
    const res = await importNumber(key, body(n, agentId, c, { inbound_enabled: false, outbound_enabled: false }));
    expect(res.status).toBe(201);
    expect(res.body.phone_number).toMatchObject({ inbound_enabled: false, outbound_enabled: false });
  });

  it('answers carrier_auth_failed when the carrier refuses the token, and stores nothing', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    const pnSid = sims.twilio.addNumber(c.sid, n);
    const res = await importNumber(key, body(n, agentId, { sid: c.sid, token: 'f'.repeat(32) }));
    expectError(res, 400, 'invalid_request', 'carrier_auth_failed');
    expect(res.body.error.details.field).toBe('twilio_auth_token');
    await expectNotImported(key, n);
    expect(sims.twilio.numbers.get(pnSid)!.voice_url).toBe('');
  });

  it('answers number_not_in_carrier when the carrier account does not own the number', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const other = carrierAccount();
    const n = nextNumber();
    const pnSid = sims.twilio.addNumber(other.sid, n);
    const res = await importNumber(key, body(n, agentId, c));
    expectError(res, 400, 'invalid_request', 'number_not_in_carrier');
    expect(res.body.error.details.field).toBe('phone_number');
    await expectNotImported(key, n);
    expect(sims.twilio.numbers.get(pnSid)!.voice_url).toBe('');
  });

  it('answers invalid_carrier_sid for a SID that is not AC + 32 hex, without asking the carrier', async () => {
    const { key, agentId } = await customer();
    const n = nextNumber();
    for (const sid of ['AC123', 'XX' + 'a'.repeat(32), 'AC' + 'g'.repeat(32), 'AC' + 'a'.repeat(33), ` AC${'a'.repeat(32)}`]) {
      const before = sims.twilio.requests.length;
      const res = await importNumber(key, body(n, agentId, { sid, token: 'a'.repeat(32) }));
      expectError(res, 400, 'invalid_request', 'invalid_carrier_sid');
      expect(res.body.error.details).toEqual({ field: 'twilio_account_sid' });
      expect(sims.twilio.requests.length).toBe(before);
    }
    await expectNotImported(key, n);
  });

  it('answers carrier_invalid_credentials for missing, null or empty credentials, naming the field', async () => {
    const { key, agentId } = await customer();
    const n = nextNumber();
    const sid = twilioSid('AC');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ twilio_account_sid: sid }, 'twilio_auth_token'],
      [{ twilio_auth_token: 'a'.repeat(32) }, 'twilio_account_sid'],
      [{ twilio_account_sid: '', twilio_auth_token: 'a'.repeat(32) }, 'twilio_account_sid'],
      [{ twilio_account_sid: sid, twilio_auth_token: '' }, 'twilio_auth_token'],
      [{ twilio_account_sid: sid, twilio_auth_token: '   ' }, 'twilio_auth_token'],
      [{ twilio_account_sid: null, twilio_auth_token: null }, 'twilio_account_sid'],
      [{}, 'twilio_account_sid'],
    ];
    const before = sims.twilio.requests.length;
    for (const [creds, field] of cases) {
      const res = await importNumber(key, { phone_number: n, agent_id: agentId, provider: 'twilio', ...creds });
      expectError(res, 400, 'invalid_request', 'carrier_invalid_credentials');
      expect(res.body.error.details).toEqual({ field });
    }
    expect(sims.twilio.requests.length).toBe(before);
    await expectNotImported(key, n);
  });

  it('answers 409 for a number already on another agent of the account, without asking the carrier', async () => {
    const { key, agentId } = await customer();
    const second = await createAgent(server, key, { name: 'Second' });
    const c = carrierAccount();
    const n = nextNumber();
    sims.twilio.addNumber(c.sid, n);
    expect((await importNumber(key, body(n, agentId, c))).status).toBe(201);
    const stored = (await getNumber(key, n)).body;

    const before = sims.twilio.requests.length;
    const res = await importNumber(key, body(n, second, c));
    expectError(res, 409, 'conflict', 'number_already_imported');
    expect(res.body.error.details).toEqual({ field: 'phone_number', agent_id: agentId });
    expect(sims.twilio.requests.length).toBe(before);
    expect((await getNumber(key, n)).body).toEqual(stored);
  });

  it('answers 409 for a number another account imported, without asking the carrier or revealing the other account', async () => {
    const a = await customer();
    const b = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.twilio.addNumber(c.sid, n);
    expect((await importNumber(a.key, body(n, a.agentId, c))).status).toBe(201);

    const before = sims.twilio.requests.length;
    const res = await importNumber(b.key, body(n, b.agentId, c));
    expectError(res, 409, 'conflict', 'number_already_imported');
    expect(res.body.error.details).toBeUndefined();
    expect(res.text).not.toContain(a.agentId);
    expect(sims.twilio.requests.length).toBe(before);
    await expectNotImported(b.key, n);
  });

  it('re-imports onto the same agent with 200: new credentials are used and stored, settings and created_at kept', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    const pnSid = sims.twilio.addNumber(c.sid, n);
    const first = await importNumber(key, body(n, agentId, c));
    expect(first.status).toBe(201);
    const patched = await server.request('PATCH', `/v1/phone-numbers/${encodeURIComponent(n)}`, { key, body: { custom_prompt: 'Be brief.', inbound_enabled: false } });
    expect(patched.status).toBe(200);

    // The carrier rotated the token: the old one stops working there.
    const newToken = twilioSid('').slice(0, 32);
    sims.twilio.addAccount(c.sid, newToken);
    sims.twilio.numbers.get(pnSid)!.voice_url = 'https://elsewhere.example/voice';
    const before = sims.twilio.requests.length;
    const res = await importNumber(key, body(n, agentId, { sid: c.sid, token: newToken }));
    expect(res.status).toBe(200);
    expect(res.body.phone_number).toMatchObject({ agent_id: agentId, carrier_number_sid: pnSid, custom_prompt: 'Be brief.', inbound_enabled: false });
    expect(res.body.phone_number.created_at).toBe(first.body.phone_number.created_at);
    expectNoSecrets(res, newToken, c.token);
    const basic = 'Basic ' + Buffer.from(`${c.sid}:${newToken}`).toString('base64');
    const seen = sims.twilio.requests.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    for (const r of seen) expect(r.headers.authorization).toBe(basic);
    expect(sims.twilio.numbers.get(pnSid)!.voice_url).toBe(`${BASE}/carrier/twilio/voice`);

    // The carrier now refuses the old token, and a re-import with it is refused and changes nothing.
    const stale = await importNumber(key, body(n, agentId, c));
    expectError(stale, 400, 'invalid_request', 'carrier_auth_failed');
    expect((await getNumber(key, n)).body.phone_number).toMatchObject({ custom_prompt: 'Be brief.', inbound_enabled: false });
    const list = await server.request('GET', '/v1/phone-numbers', { key });
    expect(list.body.count).toBe(1);
  });

  it('answers 502 carrier_unreachable when the carrier fails, and stores nothing', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.twilio.addNumber(c.sid, n);
    sims.twilio.fail({ status: 503 });
    expectError(await importNumber(key, body(n, agentId, c)), 502, 'provider_error', 'carrier_unreachable');
    await expectNotImported(key, n);

    // The look-up passes and the webhook update fails: still nothing stored.
    sims.twilio.fail({ times: 1 });
    sims.twilio.fail({ status: 500 });
    const before = sims.twilio.requests.length;
    expectError(await importNumber(key, body(n, agentId, c)), 502, 'provider_error', 'carrier_unreachable');
    expect(sims.twilio.requests.slice(before).map((r) => r.method)).toEqual(['GET', 'POST']);
    await expectNotImported(key, n);

    // With the carrier back the same request goes through.
    expect((await importNumber(key, body(n, agentId, c))).status).toBe(201);
  });

  it('answers 502 carrier_unreachable when nothing listens at the carrier address', async () => {
    const port = await closedPort();
    const down = await startTestServer({ ...sims.env, TWILIO_API_BASE: `http://127.0.0.1:${port}` });
    try {
      const { key } = await down.newAccount();
      const agentId = await createAgent(down, key);
      const c = carrierAccount();
      const n = nextNumber();
      sims.twilio.addNumber(c.sid, n);
      const res = await down.request('POST', '/v1/phone-numbers', { key, body: body(n, agentId, c) });
      expectError(res, 502, 'provider_error', 'carrier_unreachable');
      expectError(await down.request('GET', `/v1/phone-numbers/${encodeURIComponent(n)}`, { key }), 404, 'not_found', 'number_not_found');
    } finally {
      await down.close();
    }
  });
});

describe('carrier B (telnyx)', () => {
  function carrierAccount(): { apiKey: string; connectionId: string; publicKey: string } {
    const apiKey = `KEY${twilioSid('').toUpperCase()}`;
    sims.telnyx.addApiKey(apiKey);
    return { apiKey, connectionId: sims.telnyx.addConnection(apiKey), publicKey: sims.telnyx.publicKeyOf(apiKey) };
  }
  // The carrier account's own public key unless `c` names another.
  const body = (n: string, agentId: string, c: { apiKey: string; connectionId: string; publicKey?: string }, extra: Record<string, unknown> = {}) => ({
    phone_number: n,
    agent_id: agentId,
    provider: 'telnyx',
    telnyx_api_key: c.apiKey,
    telnyx_connection_id: c.connectionId,
    telnyx_public_key: c.publicKey ?? sims.telnyx.publicKeyOf(c.apiKey),
    ...extra,
  });
  const EVENTS_URL = new RegExp(`^${BASE.replace(/\./g, '\\.')}/carrier/telnyx/events/([0-9A-Za-z]{32})$`);

  it('imports: carrier_number_sid null, the application sends v2 events to a per-number token URL, the number moves onto it', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    const numberId = sims.telnyx.addNumber(c.apiKey, n);
    const res = await importNumber(key, body(n, agentId, c));
    expect(res.status).toBe(201);
    expect(Object.keys(res.body.phone_number).sort()).toEqual(FULL_FIELDS);
    expect(res.body.phone_number).toMatchObject({ phone_number: n, agent_id: agentId, provider: 'telnyx', source: 'api', carrier_number_sid: null, inbound_enabled: true, outbound_enabled: true });

    const app = sims.telnyx.callControlApplications.get(c.connectionId)!;
    const url = String(app.webhook_event_url);
    const token = EVENTS_URL.exec(url)?.[1];
    expect(token).toBeDefined();
    expect(app.webhook_api_version).toBe('2');
    expect(sims.telnyx.numbers.get(numberId)!.connection_id).toBe(c.connectionId);
    expectNoSecrets(res, c.apiKey, token!);
    expectNoSecrets(await getNumber(key, n), c.apiKey, token!);
  });

  it('points the messaging profile at the same event URL when the number has one, and uses a fresh token per number', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const profile = sims.telnyx.addMessagingProfile(c.apiKey);
    const n = nextNumber();
    sims.telnyx.addNumber(c.apiKey, n, { messagingProfileId: profile });
    expect((await importNumber(key, body(n, agentId, c))).status).toBe(201);
    const url = String(sims.telnyx.callControlApplications.get(c.connectionId)!.webhook_event_url);
    expect(url).toMatch(EVENTS_URL);
    expect(sims.telnyx.messagingProfiles.get(profile)!.webhook_url).toBe(url);

    const c2 = carrierAccount();
    const n2 = nextNumber();
    sims.telnyx.addNumber(c2.apiKey, n2);
    expect((await importNumber(key, body(n2, agentId, c2))).status).toBe(201);
    const url2 = String(sims.telnyx.callControlApplications.get(c2.connectionId)!.webhook_event_url);
    expect(url2).toMatch(EVENTS_URL);
    expect(url2).not.toBe(url);
  });

  it('answers carrier_auth_failed for an API key the carrier refuses', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.telnyx.addNumber(c.apiKey, n);
    const res = await importNumber(key, body(n, agentId, { ...c, apiKey: 'KEYwrong' }));
    expectError(res, 400, 'invalid_request', 'carrier_auth_failed');
    expect(res.body.error.details.field).toBe('telnyx_api_key');
    await expectNotImported(key, n);
    expect(sims.telnyx.callControlApplications.get(c.connectionId)!.webhook_event_url).toBe('https://example.com/webhooks');
  });

  it('answers number_not_in_carrier when the carrier account does not own the number', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const other = carrierAccount();
    const n = nextNumber();
    sims.telnyx.addNumber(other.apiKey, n);
    expectError(await importNumber(key, body(n, agentId, c)), 400, 'invalid_request', 'number_not_in_carrier');
    await expectNotImported(key, n);
  });

  it('answers carrier_invalid_credentials for missing credentials, a connection the account lacks, or a malformed public key', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    const numberId = sims.telnyx.addNumber(c.apiKey, n);
    const before = sims.telnyx.requests.length;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ telnyx_api_key: c.apiKey }, 'telnyx_connection_id'],
      [{ telnyx_connection_id: c.connectionId }, 'telnyx_api_key'],
      [{ telnyx_api_key: '', telnyx_connection_id: c.connectionId }, 'telnyx_api_key'],
      [{ telnyx_api_key: c.apiKey, telnyx_connection_id: null }, 'telnyx_connection_id'],
      [{ telnyx_api_key: c.apiKey, telnyx_connection_id: c.connectionId, telnyx_public_key: 'not-a-key' }, 'telnyx_public_key'],
    ];
    for (const [creds, field] of cases) {
      const res = await importNumber(key, { phone_number: n, agent_id: agentId, provider: 'telnyx', ...creds });
      expectError(res, 400, 'invalid_request', 'carrier_invalid_credentials');
      expect(res.body.error.details).toEqual({ field });
    }
    expect(sims.telnyx.requests.length).toBe(before);

    const foreignApp = carrierAccount().connectionId;
    const res = await importNumber(key, body(n, agentId, { apiKey: c.apiKey, connectionId: foreignApp }));
    expectError(res, 400, 'invalid_request', 'carrier_invalid_credentials');
    expect(res.body.error.details.field).toBe('telnyx_connection_id');
    expect(sims.telnyx.numbers.get(numberId)!.connection_id).toBeNull();
    await expectNotImported(key, n);
  });

  it('requires telnyx_public_key: missing, null, empty or blank is carrier_invalid_credentials saying where the portal shows it, before the carrier is asked', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.telnyx.addNumber(c.apiKey, n);
    const before = sims.telnyx.requests.length;
    const { telnyx_public_key: _omitted, ...withoutKey } = body(n, agentId, c);
    for (const res of [
      await importNumber(key, withoutKey),
      await importNumber(key, body(n, agentId, c, { telnyx_public_key: null })),
      await importNumber(key, body(n, agentId, c, { telnyx_public_key: '' })),
      await importNumber(key, body(n, agentId, c, { telnyx_public_key: '   ' })),
    ]) {
      expectError(res, 400, 'invalid_request', 'carrier_invalid_credentials');
      expect(res.body.error.details).toEqual({ field: 'telnyx_public_key' });
      expect(res.body.error.message).toMatch(/telnyx_public_key is required/);
      expect(res.body.error.message).toMatch(/portal/i);
    }
    expect(sims.telnyx.requests.length).toBe(before);
    await expectNotImported(key, n);
    expect(sims.telnyx.callControlApplications.get(c.connectionId)!.webhook_event_url).toBe('https://example.com/webhooks');
  });

  it('keeps the public key on a re-import that leaves it out: the re-import is refused', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.telnyx.addNumber(c.apiKey, n);
    expect((await importNumber(key, body(n, agentId, c))).status).toBe(201);
    const stored = server.storage.numbers.get((await server.request('GET', '/v1/account', { key })).body.account_id, n)!;
    const { telnyx_public_key: _omitted, ...withoutKey } = body(n, agentId, c);
    const res = await importNumber(key, withoutKey);
    expectError(res, 400, 'invalid_request', 'carrier_invalid_credentials');
    expect(res.body.error.details).toEqual({ field: 'telnyx_public_key' });
    const after = server.storage.numbers.get(stored.account_id, n)!;
    expect(server.storage.numbers.openCredentials(after)).toEqual(server.storage.numbers.openCredentials(stored));
    expect(after.updated_at).toBe(stored.updated_at);
  });

  it('accepts a valid public key, and rejects the other carrier’s fields', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.telnyx.addNumber(c.apiKey, n);
    const wrongCarrier = await importNumber(key, body(n, agentId, c, { twilio_account_sid: twilioSid('AC') }));
    expectError(wrongCarrier, 400, 'invalid_request', 'invalid_request');
    expect(wrongCarrier.body.error.details).toEqual({ field: 'twilio_account_sid' });
    const publicKey = Buffer.alloc(32, 7).toString('base64');
    const res = await importNumber(key, body(n, agentId, c, { telnyx_public_key: publicKey }));
    expect(res.status).toBe(201);
    expectNoSecrets(res, publicKey);
  });

  it('answers 409 on another agent or another account, without asking the carrier', async () => {
    const a = await customer();
    const second = await createAgent(server, a.key, { name: 'Second' });
    const b = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.telnyx.addNumber(c.apiKey, n);
    expect((await importNumber(a.key, body(n, a.agentId, c))).status).toBe(201);
    const before = sims.telnyx.requests.length;
    expectError(await importNumber(a.key, body(n, second, c)), 409, 'conflict', 'number_already_imported');
    const other = await importNumber(b.key, body(n, b.agentId, c));
    expectError(other, 409, 'conflict', 'number_already_imported');
    expect(other.body.error.details).toBeUndefined();
    expect(sims.telnyx.requests.length).toBe(before);
  });

  it('re-imports onto the same agent with 200: the new API key is used, the events token is kept', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.telnyx.addNumber(c.apiKey, n);
    expect((await importNumber(key, body(n, agentId, c))).status).toBe(201);
    const url = sims.telnyx.callControlApplications.get(c.connectionId)!.webhook_event_url;

    // A second key of the same carrier account: the simulator ties records to one key, so share them.
    const newKey = `KEY${twilioSid('').toUpperCase()}`;
    sims.telnyx.addApiKey(newKey);
    const c2 = { apiKey: newKey, connectionId: sims.telnyx.addConnection(newKey) };
    const n2Id = sims.telnyx.addNumber(newKey, n);
    const before = sims.telnyx.requests.length;
    const res = await importNumber(key, body(n, agentId, c2));
    expect(res.status).toBe(200);
    const seen = sims.telnyx.requests.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    for (const r of seen) expect(r.headers.authorization).toBe(`Bearer ${newKey}`);
    expect(sims.telnyx.callControlApplications.get(c2.connectionId)!.webhook_event_url).toBe(url);
    expect(sims.telnyx.numbers.get(n2Id)!.connection_id).toBe(c2.connectionId);
    expectNoSecrets(res, newKey);
  });

  it('answers 502 carrier_unreachable when the carrier fails', async () => {
    const { key, agentId } = await customer();
    const c = carrierAccount();
    const n = nextNumber();
    sims.telnyx.addNumber(c.apiKey, n);
    sims.telnyx.fail({ status: 500 });
    expectError(await importNumber(key, body(n, agentId, c)), 502, 'provider_error', 'carrier_unreachable');
    await expectNotImported(key, n);
  });
});

describe('validation order and body rules', () => {
  it('reports missing fields first, then the phone format, then the agent, then the credentials', async () => {
    const { key, agentId } = await customer();
    const sid = twilioSid('AC');
    const creds = { twilio_account_sid: sid, twilio_auth_token: 'a'.repeat(32) };
    const before = sims.twilio.requests.length;

    const noNumber = await importNumber(key, { agent_id: agentId, provider: 'twilio', ...creds });
    expectError(noNumber, 400, 'invalid_request', 'missing_field');
    expect(noNumber.body.error.details).toEqual({ field: 'phone_number' });
    const noAgent = await importNumber(key, { phone_number: 'nope', provider: 'twilio', ...creds });
    expectError(noAgent, 400, 'invalid_request', 'missing_field');
    expect(noAgent.body.error.details).toEqual({ field: 'agent_id' });
    const noProvider = await importNumber(key, { phone_number: nextNumber(), agent_id: agentId, ...creds });
    expectError(noProvider, 400, 'invalid_request', 'missing_field');
    expect(noProvider.body.error.details).toEqual({ field: 'provider' });
    const badProvider = await importNumber(key, { phone_number: nextNumber(), agent_id: agentId, provider: 'vonage', ...creds });
    expectError(badProvider, 400, 'invalid_request', 'invalid_request');
    expect(badProvider.body.error.details).toEqual({ field: 'provider' });
    const unknown = await importNumber(key, { phone_number: nextNumber(), agent_id: agentId, provider: 'twilio', ...creds, friendly_name: 'x' });
    expectError(unknown, 400, 'invalid_request', 'invalid_request');
    expect(unknown.body.error.details).toEqual({ field: 'friendly_name' });

    for (const bad of ['14155550123', '+0415555012', '+1415', 'tel:+14155550123', '+1 415 555 0123']) {
      const res = await importNumber(key, { phone_number: bad, agent_id: 'agent_missing', provider: 'twilio', twilio_account_sid: 'bad' });
      expectError(res, 400, 'invalid_request', 'invalid_phone_format');
      expect(res.body.error.details).toEqual({ field: 'phone_number' });
    }

    const missingAgent = await importNumber(key, { phone_number: nextNumber(), agent_id: 'agent_missing', provider: 'twilio', twilio_account_sid: 'bad' });
    expectError(missingAgent, 400, 'invalid_request', 'agent_not_found');
    expect(missingAgent.body.error.details).toEqual({ field: 'agent_id' });
    expect(sims.twilio.requests.length).toBe(before);
  });

  it('checks the credential format before the 409, and the 409 before the carrier', async () => {
    const { key, agentId } = await customer();
    const other = await createAgent(server, key, { name: 'Other' });
    const sid = twilioSid('AC');
    const token = 'b'.repeat(32);
    sims.twilio.addAccount(sid, token);
    const n = nextNumber();
    sims.twilio.addNumber(sid, n);
    expect((await importNumber(key, { phone_number: n, agent_id: agentId, provider: 'twilio', twilio_account_sid: sid, twilio_auth_token: token })).status).toBe(201);
    expectError(
      await importNumber(key, { phone_number: n, agent_id: other, provider: 'twilio', twilio_account_sid: 'AC1', twilio_auth_token: token }),
      400,
      'invalid_request',
      'invalid_carrier_sid',
    );
    // Wrong token but already imported elsewhere: the 409 comes without a carrier round trip.
    const before = sims.twilio.requests.length;
    expectError(
      await importNumber(key, { phone_number: n, agent_id: other, provider: 'twilio', twilio_account_sid: sid, twilio_auth_token: 'c'.repeat(32) }),
      409,
      'conflict',
      'number_already_imported',
    );
    expect(sims.twilio.requests.length).toBe(before);
  });

  it('rejects credentials of the wrong JSON type with invalid_request', async () => {
    const { key, agentId } = await customer();
    const res = await importNumber(key, { phone_number: nextNumber(), agent_id: agentId, provider: 'twilio', twilio_account_sid: 42, twilio_auth_token: 'x' });
    expectError(res, 400, 'invalid_request', 'invalid_request');
    expect(res.body.error.details).toEqual({ field: 'twilio_account_sid' });
  });
});

describe('credentials at rest', () => {
  it('never writes an auth token or API key into the database files in clear, replayable responses included', async () => {
    const { key, agentId } = await customer();
    const sid = twilioSid('AC');
    const token = `tok${twilioSid('').slice(0, 29)}`;
    sims.twilio.addAccount(sid, token);
    const n = nextNumber();
    sims.twilio.addNumber(sid, n);
    const idem = await server.request('POST', '/v1/phone-numbers', {
      key,
      headers: { 'idempotency-key': 'import-1' },
      body: { phone_number: n, agent_id: agentId, provider: 'twilio', twilio_account_sid: sid, twilio_auth_token: token },
    });
    expect(idem.status).toBe(201);

    const apiKey = `KEYsecret${twilioSid('').toUpperCase()}`;
    sims.telnyx.addApiKey(apiKey);
    const connectionId = sims.telnyx.addConnection(apiKey);
    const n2 = nextNumber();
    sims.telnyx.addNumber(apiKey, n2);
    const publicKey = sims.telnyx.publicKeyOf(apiKey);
    expect(
      (await importNumber(key, { phone_number: n2, agent_id: agentId, provider: 'telnyx', telnyx_api_key: apiKey, telnyx_connection_id: connectionId, telnyx_public_key: publicKey }))
        .status,
    ).toBe(201);

    const bytes = dataBytes();
    expect(bytes.length).toBeGreaterThan(0);
    // The number itself is stored in clear, so the search is known to look at the right bytes.
    expect(bytes.includes(Buffer.from(n))).toBe(true);
    for (const secret of [token, apiKey]) {
      expect(bytes.includes(Buffer.from(secret))).toBe(false);
      expect(bytes.includes(Buffer.from(secret, 'utf16le'))).toBe(false);
    }
  });
});
