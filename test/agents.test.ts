// Agents through real HTTP: defaults, every field rule and its error code (and that a
// rejected request changed nothing), partial updates by PATCH and PUT, the list's
// filter, order and pagination, and deletion.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestResponse, type TestServer } from './helpers/server.ts';

let server: TestServer;
let now = Date.UTC(2026, 10, 22, 10, 0, 0, 0);
beforeAll(async () => {
  server = await startTestServer(
    { RATE_LIMIT_READS_PER_MIN: '1000000', RATE_LIMIT_WRITES_PER_MIN: '1000000' },
    { clock: () => now },
  );
});
afterAll(() => server.close());

let key: string;
let keyId: string;
beforeEach(async () => {
  ({ key, keyId } = await server.newAccount());
});

const post = (body: unknown, k = key) => server.request('POST', '/v1/agents', { key: k, body });
const get = (id: string, k = key) => server.request('GET', `/v1/agents/${id}`, { key: k });
const patch = (id: string, body: unknown, method = 'PATCH') => server.request(method, `/v1/agents/${id}`, { key, body });
const list = (query = '') => server.request('GET', `/v1/agents${query}`, { key });

async function create(body: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const res = await post(body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

function rejected(res: TestResponse, code: string, field?: string): void {
  expectError(res, 400, 'invalid_request', code);
  if (field !== undefined) expect(res.body.error.details?.field, res.text).toBe(field);
}

/** A create that must fail leaves the account's list exactly as it was. */
async function expectCreateRejected(body: unknown, code: string, field?: string): Promise<void> {
  const before = await list('?limit=100');
  rejected(await post(body), code, field);
  expect((await list('?limit=100')).body).toEqual(before.body);
}

/** An update that must fail leaves the agent exactly as it was, for PATCH and PUT alike. */
async function expectUpdateRejected(id: string, body: unknown, code: string, field?: string): Promise<void> {
  const before = await get(id);
  for (const method of ['PATCH', 'PUT']) {
    now += 1000;
    rejected(await patch(id, body, method), code, field);
    expect((await get(id)).body).toEqual(before.body);
  }
}

const DEFAULTS = {
  name: 'Untitled Agent',
  welcome_message: 'Hello! How can I help you today?',
  voice_id: 'Ashley',
  language: 'multi',
  is_active: true,
  temperature: 0.3,
  response_length: 'short',
  ai_speaks_first: true,
  dynamic_greeting: false,
  interruption_sensitivity: 50,
  response_eagerness: 200,
  boosted_keywords: null,
  pickup_delay: 10,
  max_call_duration_seconds: 600,
  silence_hangup_seconds: 30,
  record_call: true,
  recording_source: 'provider',
  amd_enabled: false,
  dtmf_enabled: null,
  require_booking_confirmation: false,
  webhook_url: null,
  func_end_call: true,
  transfer_whisper: null,
  func_send_sms: false,
  incall_sms_enabled: false,
  func_cold_transfer: false,
  transfer_type: 'cold',
  transfer_number: null,
  voice_speed: 0.85,
  speaking_rate: null,
  greet_by_name: true,
  fallback_message: 'I am sorry, could you say that again?',
  phone_number: null,
  voicemail_leave_enabled: false,
  voicemail_message: null,
  timezone: null,
  extraction_fields: [],
};

describe('create', () => {
  it('fills every default and shows the identifiers, owner and times', async () => {
    const res = await post({});
    expect(res.status).toBe(201);
    const a = res.body;
    expect(a).toMatchObject(DEFAULTS);
    expect(typeof a.system_prompt).toBe('string');
    expect(a.system_prompt.length).toBeGreaterThan(0);
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.agent_id).toMatch(/^agent_[0-9A-Za-z]{24}$/);
    expect(a.api_key_id).toBe(keyId);
    expect(a.created_at).toBe(new Date(now).toISOString());
    expect(a.updated_at).toBe(a.created_at);
    // Exactly the documented fields: no account id, no carrier credentials.
    expect(Object.keys(a).sort()).toEqual(
      [...Object.keys(DEFAULTS), 'system_prompt', 'id', 'agent_id', 'api_key_id', 'created_at', 'updated_at'].sort(),
    );
    expect((await get(a.agent_id)).body).toEqual(a);
  });

  it('accepts an empty body without a content type', async () => {
    const res = await server.request('POST', '/v1/agents', { key });
    expect(res.status).toBe(201);
    expect(res.body.name).toBe('Untitled Agent');
  });

  it('stores every field it is given and reads them back', async () => {
    const body = {
      name: 'Front desk',
      system_prompt: 'You book dental appointments.',
      welcome_message: 'Hi, this is the front desk.',
      voice_id: 'Brian',
      language: 'es',
      is_active: false,
      temperature: 1,
      response_length: 'long',
      ai_speaks_first: false,
      dynamic_greeting: true,
      interruption_sensitivity: 0,
      response_eagerness: 1000,
      boosted_keywords: 'Invisalign, molar, Dr. Okafor',
      pickup_delay: 30,
      max_call_duration_seconds: 1800,
      silence_hangup_seconds: 5,
      record_call: false,
      recording_source: 'platform',
      amd_enabled: true,
      dtmf_enabled: false,
      require_booking_confirmation: true,
      webhook_url: 'https://hooks.example.com/calls?token=abc',
      func_end_call: false,
      transfer_whisper: 'Caller wants a refund.',
      func_send_sms: true,
      incall_sms_enabled: true,
      func_cold_transfer: true,
      transfer_type: 'warm',
      transfer_number: '+14155550123',
      voice_speed: 1.2,
      speaking_rate: 1,
      greet_by_name: false,
      fallback_message: 'Pardon?',
      phone_number: '+442071838750',
      voicemail_leave_enabled: true,
      voicemail_message: 'Please call us back.',
      timezone: 'America/New_York',
      extraction_fields: [
        { name: 'appointment_date', type: 'string', description: 'The booked date, YYYY-MM-DD.' },
        { name: 'party_size', type: 'integer', description: 'How many people.' },
        { name: 'urgency', type: 'string', description: 'How urgent.', enum: ['low', 'high'] },
        { name: 'is_new_patient', type: 'boolean', description: 'First visit?' },
      ],
    };
    const a = await create(body);
    expect(a).toMatchObject(body);
    expect((await get(a.agent_id)).body).toEqual(a);
  });

  it('accepts the limits themselves: a 16000-character prompt, a 100-character name, 50 keywords, 20 extraction fields', async () => {
    const fields = Array.from({ length: 20 }, (_, i) => ({ name: `field_${i}`, type: 'number', description: 'x' }));
    const a = await create({
      system_prompt: 'p'.repeat(16000),
      name: 'n'.repeat(100),
      boosted_keywords: Array.from({ length: 50 }, (_, i) => `word${i}`).join(','),
      extraction_fields: fields,
      temperature: 0,
      pickup_delay: 5,
      max_call_duration_seconds: 60,
      silence_hangup_seconds: 45,
      interruption_sensitivity: 100,
      response_eagerness: 0,
    });
    expect(a.system_prompt.length).toBe(16000);
    expect(a.extraction_fields).toEqual(fields);
  });

  it('clamps speaking_rate to 0.5..1.5 and keeps null distinct from 1', async () => {
    expect((await create({ speaking_rate: 3 })).speaking_rate).toBe(1.5);
    expect((await create({ speaking_rate: 0.1 })).speaking_rate).toBe(0.5);
    expect((await create({ speaking_rate: -2 })).speaking_rate).toBe(0.5);
    expect((await create({ speaking_rate: 1.25 })).speaking_rate).toBe(1.25);
    expect((await create({ speaking_rate: 1 })).speaking_rate).toBe(1);
    expect((await create({ speaking_rate: null })).speaking_rate).toBeNull();
  });

  it('reads a nullable text field sent as "" back as null', async () => {
    const cleared = {
      boosted_keywords: '',
      webhook_url: '',
      transfer_whisper: '',
      transfer_number: '',
      phone_number: '',
      voicemail_message: '',
      timezone: '',
    };
    const a = await create(cleared);
    for (const f of Object.keys(cleared)) expect(a[f], f).toBeNull();
    expect((await get(a.agent_id)).body).toEqual(a);
  });

  it('rejects the read-only fields of the response on create, as unknown fields', async () => {
    await expectCreateRejected({ id: '7d0f2b4e-0000-4000-8000-000000000000' }, 'invalid_request', 'id');
    await expectCreateRejected({ agent_id: 'agent_x' }, 'invalid_request', 'agent_id');
  });
});

describe('create: every rejected value answers with its code and changes nothing', () => {
  it('deprecated_field for carrier credentials, whatever their value, before any other problem', async () => {
    await expectCreateRejected({ twilio_account_sid: 'AC' + '0'.repeat(32) }, 'deprecated_field', 'twilio_account_sid');
    await expectCreateRejected({ twilio_auth_token: null }, 'deprecated_field', 'twilio_auth_token');
    await expectCreateRejected({ twilio_auth_token: '' }, 'deprecated_field', 'twilio_auth_token');
    await expectCreateRejected({ name: 'ok', twilio_account_sid: {}, nonsense: 1, temperature: 7 }, 'deprecated_field', 'twilio_account_sid');
  });

  it('prompt_too_long above 16000 characters', async () => {
    await expectCreateRejected({ system_prompt: 'p'.repeat(16001) }, 'prompt_too_long', 'system_prompt');
  });

  it('invalid_voice_id for anything not in the catalogue, case included', async () => {
    for (const voice_id of ['ashley', 'ASHLEY', 'Nobody', '', 5, null]) {
      await expectCreateRejected({ voice_id }, 'invalid_voice_id', 'voice_id');
    }
  });

  it('invalid_language for codes outside the list', async () => {
    for (const language of ['english', 'EN', 'en-US', '', 1, null]) {
      await expectCreateRejected({ language }, 'invalid_language', 'language');
    }
  });

  it('invalid_recording_source for any value but provider or platform', async () => {
    for (const recording_source of ['carrier', 'Provider', '', 0, null, true]) {
      await expectCreateRejected({ recording_source }, 'invalid_recording_source', 'recording_source');
    }
  });

  it('voicemail_message_required when voicemail is enabled without a message', async () => {
    await expectCreateRejected({ voicemail_leave_enabled: true }, 'voicemail_message_required', 'voicemail_message');
    await expectCreateRejected({ voicemail_leave_enabled: true, voicemail_message: '' }, 'voicemail_message_required', 'voicemail_message');
    await expectCreateRejected({ voicemail_leave_enabled: true, voicemail_message: null }, 'voicemail_message_required', 'voicemail_message');
    await expectCreateRejected({ voicemail_leave_enabled: true, voicemail_message: '   ' }, 'voicemail_message_required', 'voicemail_message');
    // A message without the switch is fine: it waits to be used.
    expect((await create({ voicemail_message: 'Call back.' })).voicemail_leave_enabled).toBe(false);
  });

  it('invalid_timezone for a name that is not an IANA zone', async () => {
    for (const timezone of ['Mars/Olympus_Mons', 'EST5EDT/x', '+01:00', 'not a zone', 42]) {
      await expectCreateRejected({ timezone }, 'invalid_timezone', 'timezone');
    }
    expect((await create({ timezone: 'Europe/Berlin' })).timezone).toBe('Europe/Berlin');
    expect((await create({ timezone: null })).timezone).toBeNull();
  });

  it('invalid_request for every range, named by its field', async () => {
    const cases: Array<[string, unknown[]]> = [
      ['temperature', [-0.01, 1.01, '0.5', null]],
      ['interruption_sensitivity', [-1, 101, 50.5, '10']],
      ['response_eagerness', [-1, 1001, 0.5, '200']],
      ['pickup_delay', [4, 31, 10.5, '10']],
      ['max_call_duration_seconds', [59, 1801, 600.5, '600']],
      ['silence_hangup_seconds', [4, 46, 30.1, '30']],
      ['voice_speed', ['fast', null]],
      ['speaking_rate', ['1']],
    ];
    for (const [field, values] of cases) {
      for (const v of values) await expectCreateRejected({ [field]: v }, 'invalid_request', field);
    }
  });

  it('invalid_request for strict types: booleans, enums, strings and arrays', async () => {
    const cases: Array<[string, unknown]> = [
      ['is_active', 'true'],
      ['is_active', 1],
      ['is_active', null],
      ['record_call', 0],
      ['dtmf_enabled', 'false'],
      ['amd_enabled', null],
      ['response_length', 'tiny'],
      ['response_length', null],
      ['transfer_type', 'hot'],
      ['name', ''],
      ['name', 'n'.repeat(101)],
      ['name', null],
      ['name', 7],
      ['system_prompt', null],
      ['welcome_message', 12],
      ['fallback_message', null],
      ['boosted_keywords', Array.from({ length: 51 }, (_, i) => `w${i}`).join(',')],
      ['boosted_keywords', ['a', 'b']],
      ['extraction_fields', null],
      ['extraction_fields', {}],
    ];
    for (const [field, v] of cases) await expectCreateRejected({ [field]: v }, 'invalid_request', field);
  });

  it('invalid_request one character past each text limit, and the limit itself accepted', async () => {
    const limits: Array<[string, number]> = [
      ['welcome_message', 2000],
      ['fallback_message', 1000],
      ['transfer_whisper', 2000],
      ['voicemail_message', 2000],
    ];
    for (const [field, limit] of limits) {
      expect((await create({ [field]: 'x'.repeat(limit) }))[field]).toHaveLength(limit);
      await expectCreateRejected({ [field]: 'x'.repeat(limit + 1) }, 'invalid_request', field);
    }
    expect((await create({ boosted_keywords: `${'k'.repeat(100)},short` })).boosted_keywords).toBe(`${'k'.repeat(100)},short`);
    await expectCreateRejected({ boosted_keywords: `${'k'.repeat(101)},short` }, 'invalid_request', 'boosted_keywords');
    const desc = (n: number) => [{ name: 'note', type: 'string', description: 'd'.repeat(n) }];
    expect((await create({ extraction_fields: desc(500) })).extraction_fields).toEqual(desc(500));
    await expectCreateRejected({ extraction_fields: desc(501) }, 'invalid_request', 'extraction_fields.0.description');
  });

  it('invalid_request for bad extraction fields, naming the item', async () => {
    const f = (o: Record<string, unknown>) => ({ name: 'order_id', type: 'string', description: 'The order number.', ...o });
    await expectCreateRejected({ extraction_fields: Array.from({ length: 21 }, (_, i) => f({ name: `f_${i}` })) }, 'invalid_request', 'extraction_fields');
    await expectCreateRejected({ extraction_fields: [f({ name: 'OrderId' })] }, 'invalid_request', 'extraction_fields.0.name');
    await expectCreateRejected({ extraction_fields: [f({ name: 'a'.repeat(65) })] }, 'invalid_request', 'extraction_fields.0.name');
    await expectCreateRejected({ extraction_fields: [f({}), f({ type: 'date' })] }, 'invalid_request', 'extraction_fields.1.type');
    await expectCreateRejected({ extraction_fields: [f({ description: '' })] }, 'invalid_request', 'extraction_fields.0.description');
    await expectCreateRejected({ extraction_fields: [f({ type: 'number', enum: ['a'] })] }, 'invalid_request', 'extraction_fields.0.enum');
    await expectCreateRejected({ extraction_fields: [f({ enum: ['a', 'a'] })] }, 'invalid_request', 'extraction_fields.0.enum');
    await expectCreateRejected({ extraction_fields: [f({}), f({})] }, 'invalid_request', 'extraction_fields.1.name');
    await expectCreateRejected({ extraction_fields: [f({ extra: true })] }, 'invalid_request', 'extraction_fields.0.extra');
  });

  it('invalid_url for a webhook_url that is not https on a public host', async () => {
    for (const webhook_url of ['http://hooks.example.com/x', 'not a url', 'https://127.0.0.1/x', 'https://localhost/x', 'https://[::1]/x', 'https://10.1.2.3/x', 'https://user:pw@example.com/x',
      // Special-purpose ranges (issue 18): documentation, benchmarking, IETF protocol, IPv4-translated.
      'https://192.0.2.2:18443/', 'https://198.18.0.1/x', 'https://192.0.0.170/x', 'https://[::ffff:0:127.0.0.1]/x']) {
      await expectCreateRejected({ webhook_url }, 'invalid_url', 'webhook_url');
    }
  });

  it('invalid_phone_format for transfer_number and phone_number outside E.164', async () => {
    await expectCreateRejected({ transfer_number: '4155550123' }, 'invalid_phone_format', 'transfer_number');
    await expectCreateRejected({ phone_number: '+0123' }, 'invalid_phone_format', 'phone_number');
  });

  it('invalid_request naming an unknown field, and for a body that is not an object', async () => {
    await expectCreateRejected({ name: 'x', promt: 'typo' }, 'invalid_request', 'promt');
    await expectCreateRejected([], 'invalid_request');
    await expectCreateRejected('agent', 'invalid_request');
  });

  it('invalid_json and invalid_content_type for a malformed request', async () => {
    const before = await list();
    expectError(await server.request('POST', '/v1/agents', { key, rawBody: '{"name":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request', 'invalid_json');
    expectError(await server.request('POST', '/v1/agents', { key, rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 400, 'invalid_request', 'invalid_content_type');
    expect((await list()).body).toEqual(before.body);
  });
});

describe('update', () => {
  it('PATCH changes only the fields sent and moves updated_at', async () => {
    const a = await create({ name: 'Before', temperature: 0.5 });
    now += 60_000;
    const res = await patch(a.agent_id, { name: 'After', interruption_sensitivity: 80 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...a, name: 'After', interruption_sensitivity: 80, updated_at: new Date(now).toISOString() });
    expect((await get(a.agent_id)).body).toEqual(res.body);
  });

  it('PUT is accepted with the same partial meaning', async () => {
    const a = await create({ name: 'Before', voice_id: 'Nova' });
    now += 1000;
    const res = await patch(a.agent_id, { language: 'fr' }, 'PUT');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...a, language: 'fr', updated_at: new Date(now).toISOString() });
  });

  it('ignores the read-only fields, so a fetched agent can be sent back', async () => {
    const a = await create({ name: 'Round trip' });
    const other = await create({ name: 'Other' });
    now += 1000;
    for (const method of ['PATCH', 'PUT']) {
      const res = await patch(a.agent_id, { ...a, agent_id: other.agent_id, id: other.id, api_key_id: 'key_forged', created_at: '2000-01-01T00:00:00.000Z', name: method }, method);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ ...a, name: method, updated_at: new Date(now).toISOString() });
    }
    expect((await get(other.agent_id)).body).toEqual(other);
  });

  it('clears nullable fields with null or "" alike', async () => {
    const a = await create({ webhook_url: 'https://example.com/h', transfer_number: '+14155550100', timezone: 'Asia/Tokyo', dtmf_enabled: true, speaking_rate: 1.1 });
    const res = await patch(a.agent_id, { webhook_url: '', transfer_number: null, timezone: '', dtmf_enabled: null, speaking_rate: null });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ webhook_url: null, transfer_number: null, timezone: null, dtmf_enabled: null, speaking_rate: null });
  });

  it('toggles is_active both ways', async () => {
    const a = await create();
    expect((await patch(a.agent_id, { is_active: false })).body.is_active).toBe(false);
    expect((await get(a.agent_id)).body.is_active).toBe(false);
    expect((await patch(a.agent_id, { is_active: true })).body.is_active).toBe(true);
  });

  it('rejects what create rejects, with the same codes, and leaves the agent as it was', async () => {
    const a = await create({ name: 'Keep me' });
    await expectUpdateRejected(a.agent_id, { twilio_auth_token: 'x' }, 'deprecated_field', 'twilio_auth_token');
    await expectUpdateRejected(a.agent_id, { twilio_account_sid: null, bogus: 1 }, 'deprecated_field', 'twilio_account_sid');
    await expectUpdateRejected(a.agent_id, { system_prompt: 'x'.repeat(16001) }, 'prompt_too_long', 'system_prompt');
    await expectUpdateRejected(a.agent_id, { voice_id: 'brian' }, 'invalid_voice_id', 'voice_id');
    await expectUpdateRejected(a.agent_id, { language: 'xx' }, 'invalid_language', 'language');
    await expectUpdateRejected(a.agent_id, { recording_source: 'both' }, 'invalid_recording_source', 'recording_source');
    await expectUpdateRejected(a.agent_id, { timezone: 'Nowhere/City' }, 'invalid_timezone', 'timezone');
    await expectUpdateRejected(a.agent_id, { pickup_delay: '10' }, 'invalid_request', 'pickup_delay');
    await expectUpdateRejected(a.agent_id, { name: 'ok', temperature: 2 }, 'invalid_request', 'temperature');
    await expectUpdateRejected(a.agent_id, { nickname: 'x' }, 'invalid_request', 'nickname');
    await expectUpdateRejected(a.agent_id, { webhook_url: 'ftp://example.com' }, 'invalid_url', 'webhook_url');
  });

  it('voicemail_message_required looks at the stored message too', async () => {
    const a = await create();
    await expectUpdateRejected(a.agent_id, { voicemail_leave_enabled: true }, 'voicemail_message_required', 'voicemail_message');
    // Stored message first, then the switch alone: accepted.
    expect((await patch(a.agent_id, { voicemail_message: 'We will call you back.' })).status).toBe(200);
    const on = await patch(a.agent_id, { voicemail_leave_enabled: true });
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ voicemail_leave_enabled: true, voicemail_message: 'We will call you back.' });
    // Clearing the message while the switch is on would leave it enabled without one.
    await expectUpdateRejected(a.agent_id, { voicemail_message: '' }, 'voicemail_message_required', 'voicemail_message');
    await expectUpdateRejected(a.agent_id, { voicemail_message: null }, 'voicemail_message_required', 'voicemail_message');
    // Both off and cleared in one request is fine.
    const off = await patch(a.agent_id, { voicemail_leave_enabled: false, voicemail_message: null });
    expect(off.body).toMatchObject({ voicemail_leave_enabled: false, voicemail_message: null });
  });

  it('an empty body changes no setting', async () => {
    const a = await create({ name: 'Same' });
    const res = await patch(a.agent_id, {});
    expect(res.status).toBe(200);
    const { updated_at: _u, ...rest } = res.body;
    const { updated_at: _v, ...before } = a;
    expect(rest).toEqual(before);
  });
});

describe('list', () => {
  it('is empty for a new account', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ agents: [], count: 0, limit: 25, offset: 0 });
  });

  it('shows summaries newest first, ties broken by creation order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      if (i !== 3) now += 1000; // agents 2 and 3 share a millisecond
      ids.push((await create({ name: `Agent ${i}`, language: i % 2 ? 'en' : 'multi', voice_id: 'Sage' })).agent_id);
    }
    const res = await list();
    expect(res.body.count).toBe(5);
    expect(res.body.agents.map((a: { agent_id: string }) => a.agent_id)).toEqual([...ids].reverse());
    expect(res.body.agents[0]).toEqual({
      agent_id: ids[4],
      name: 'Agent 4',
      language: 'multi',
      voice_id: 'Sage',
      is_active: true,
      created_at: new Date(now).toISOString(),
    });
  });

  it('pages with limit and offset; count is the total', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      now += 1;
      ids.unshift((await create({ name: `A${i}` })).agent_id);
    }
    const p1 = await list('?limit=3');
    expect(p1.body).toMatchObject({ count: 7, limit: 3, offset: 0 });
    expect(p1.body.agents.map((a: any) => a.agent_id)).toEqual(ids.slice(0, 3));
    const p3 = await list('?limit=3&offset=6');
    expect(p3.body.agents.map((a: any) => a.agent_id)).toEqual(ids.slice(6));
    const past = await list('?offset=50');
    expect(past.body).toEqual({ agents: [], count: 7, limit: 25, offset: 50 });
  });

  it('clamps limit above 100 to 100 and rejects limits below 1 and bad numbers', async () => {
    const res = await list('?limit=101');
    expect(res.status).toBe(200);
    expect(res.body.limit).toBe(100);
    for (const q of ['?limit=0', '?limit=-5', '?limit=abc', '?limit=2.5']) rejected(await list(q), 'invalid_request', 'limit');
    for (const q of ['?offset=-1', '?offset=x']) rejected(await list(q), 'invalid_request', 'offset');
  });

  it('filters by is_active', async () => {
    const on = await create({ name: 'on' });
    now += 1;
    const off = await create({ name: 'off', is_active: false });
    const actives = await list('?is_active=true');
    expect(actives.body.count).toBe(1);
    expect(actives.body.agents.map((a: any) => a.agent_id)).toEqual([on.agent_id]);
    const inactives = await list('?is_active=false');
    expect(inactives.body.agents.map((a: any) => a.agent_id)).toEqual([off.agent_id]);
    expect(inactives.body.agents[0].is_active).toBe(false);
    expect((await list()).body.count).toBe(2);
    rejected(await list('?is_active=yes'), 'invalid_request', 'is_active');
    rejected(await list('?is_active=1'), 'invalid_request', 'is_active');
  });
});

describe('delete', () => {
  it('answers {agent_id, deleted:true}, then 404 agent_not_found on every route', async () => {
    const keep = await create({ name: 'keep' });
    const gone = await create({ name: 'gone' });
    const res = await server.request('DELETE', `/v1/agents/${gone.agent_id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ agent_id: gone.agent_id, deleted: true });
    expectError(await get(gone.agent_id), 404, 'not_found', 'agent_not_found');
    expectError(await patch(gone.agent_id, { name: 'x' }), 404, 'not_found', 'agent_not_found');
    expectError(await patch(gone.agent_id, { name: 'x' }, 'PUT'), 404, 'not_found', 'agent_not_found');
    expectError(await server.request('DELETE', `/v1/agents/${gone.agent_id}`, { key }), 404, 'not_found', 'agent_not_found');
    const after = await list();
    expect(after.body.count).toBe(1);
    expect(after.body.agents.map((a: any) => a.agent_id)).toEqual([keep.agent_id]);
    expect((await get(keep.agent_id)).body).toEqual(keep);
  });

  it('404 agent_not_found for ids that never existed', async () => {
    for (const id of ['agent_000000000000000000000000', 'nonsense']) {
      expectError(await get(id), 404, 'not_found', 'agent_not_found');
      expectError(await patch(id, {}), 404, 'not_found', 'agent_not_found');
      expectError(await patch(id, {}, 'PUT'), 404, 'not_found', 'agent_not_found');
      expectError(await server.request('DELETE', `/v1/agents/${id}`, { key }), 404, 'not_found', 'agent_not_found');
    }
  });

  it('checks the body before the id, so a bad body is 400 whether or not the agent exists', async () => {
    expectError(await patch('agent_000000000000000000000000', { voice_id: 'x' }), 400, 'invalid_request', 'invalid_voice_id');
  });
});

describe('authentication', () => {
  it('every agent route needs a key', async () => {
    for (const [method, path] of [['POST', '/v1/agents'], ['GET', '/v1/agents'], ['GET', '/v1/agents/agent_x'], ['PATCH', '/v1/agents/agent_x'], ['PUT', '/v1/agents/agent_x'], ['DELETE', '/v1/agents/agent_x']] as const) {
      expectError(await server.request(method, path, { body: method === 'GET' || method === 'DELETE' ? undefined : {} }), 401, 'authentication_error', 'invalid_api_key');
    }
  });
});

describe('OpenAPI', () => {
  it('documents every agent route with its errors and the field defaults', async () => {
    const doc = (await server.request('GET', '/v1/openapi.json')).body;
    const ops = doc.paths['/v1/agents/{agent_id}'];
    expect(Object.keys(ops).sort()).toEqual(['delete', 'get', 'patch', 'put']);
    expect(Object.keys(doc.paths['/v1/agents']).sort()).toEqual(['get', 'post']);
    const post = doc.paths['/v1/agents'].post;
    const codes = JSON.stringify(post.responses['400']);
    for (const c of ['prompt_too_long', 'invalid_voice_id', 'invalid_language', 'deprecated_field', 'invalid_recording_source', 'voicemail_message_required']) {
      expect(codes).toContain(c);
    }
    const props = post.requestBody.content['application/json'].schema.properties;
    expect(props.voice_id.default).toBe('Ashley');
    expect(props.temperature).toMatchObject({ minimum: 0, maximum: 1, default: 0.3 });
    expect(props.system_prompt.maxLength).toBe(16000);
    expect(JSON.stringify(ops.get.responses['404'])).toContain('agent_not_found');
  });
});
