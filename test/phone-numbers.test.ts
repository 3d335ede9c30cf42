// The phone-number resource after import, over real HTTP: the list (unpaginated up to
// 1000, or paginated on request), filters, GET, PATCH semantics for every field and
// error, DELETE, and agent deletion orphaning a number. A model test checks PATCH sequences.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, importTelnyxNumber, importTwilioNumber, nextNumber, startCarrierSims, type CarrierSims } from './helpers/fixtures.ts';
import { expectError, startTestServer, type TestServer } from './helpers/server.ts';

const LIST_FIELDS = ['phone_number', 'agent_id', 'provider', 'source', 'carrier_number_sid', 'inbound_enabled', 'outbound_enabled', 'custom_prompt', 'created_at'].sort();

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

const path = (n: string) => `/v1/phone-numbers/${encodeURIComponent(n)}`;
const getNumber = async (key: string, n: string) => (await server.request('GET', path(n), { key })).body?.phone_number;
const patch = (key: string, n: string, body: unknown) => server.request('PATCH', path(n), { key, body });
const list = (key: string, query = '') => server.request('GET', `/v1/phone-numbers${query}`, { key });

async function withNumber(): Promise<{ key: string; agentId: string; n: string }> {
  const { key } = await server.newAccount();
  const agentId = await createAgent(server, key);
  const n = await importTwilioNumber(server, sims, key, agentId);
  return { key, agentId, n };
}

describe('GET /v1/phone-numbers', () => {
  it('answers an empty list, not a 404, and no limit/offset when not paginating', async () => {
    const { key } = await server.newAccount();
    const res = await list(key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ phone_numbers: [], count: 0 });
  });

  it('lists every number newest first with the list fields, filters by agent, and paginates only on request', async () => {
    const { key } = await server.newAccount();
    const a1 = await createAgent(server, key, { name: 'One' });
    const a2 = await createAgent(server, key, { name: 'Two' });
    const n1 = await importTwilioNumber(server, sims, key, a1);
    const n2 = await importTelnyxNumber(server, sims, key, a2);
    const n3 = await importTwilioNumber(server, sims, key, a1);

    const all = await list(key);
    expect(all.status).toBe(200);
    expect(all.body.count).toBe(3);
    expect(all.body).not.toHaveProperty('limit');
    expect(all.body).not.toHaveProperty('offset');
    expect(all.body.phone_numbers.map((p: { phone_number: string }) => p.phone_number)).toEqual([n3, n2, n1]);
    for (const item of all.body.phone_numbers) expect(Object.keys(item).sort()).toEqual(LIST_FIELDS);
    expect(all.body.phone_numbers[1]).toMatchObject({ phone_number: n2, agent_id: a2, provider: 'telnyx', source: 'api', carrier_number_sid: null });
    expect(all.body.phone_numbers[0].carrier_number_sid).toMatch(/^PN[0-9a-f]{32}$/);

    const byAgent = await list(key, `?agent_id=${a1}`);
    expect(byAgent.body).toEqual({ phone_numbers: [all.body.phone_numbers[0], all.body.phone_numbers[2]], count: 2 });
    expect((await list(key, '?agent_id=agent_nobody')).body).toEqual({ phone_numbers: [], count: 0 });

    const first = await list(key, '?limit=2');
    expect(first.body).toEqual({ phone_numbers: all.body.phone_numbers.slice(0, 2), count: 3, limit: 2, offset: 0 });
    const rest = await list(key, '?offset=2');
    expect(rest.body).toEqual({ phone_numbers: all.body.phone_numbers.slice(2), count: 3, limit: 25, offset: 2 });
    const clamped = await list(key, '?limit=500&offset=0');
    expect(clamped.body).toMatchObject({ count: 3, limit: 100, offset: 0 });
    expect(clamped.body.phone_numbers).toHaveLength(3);
    const filteredPage = await list(key, `?agent_id=${a1}&limit=1&offset=1`);
    expect(filteredPage.body).toEqual({ phone_numbers: [all.body.phone_numbers[2]], count: 2, limit: 1, offset: 1 });
  });

  it('rejects a bad limit or offset with invalid_request naming the parameter', async () => {
    const { key } = await server.newAccount();
    for (const [q, field] of [['?limit=0', 'limit'], ['?limit=abc', 'limit'], ['?limit=1.5', 'limit'], ['?offset=-1', 'offset'], ['?offset=x', 'offset']] as const) {
      const res = await list(key, q);
      expectError(res, 400, 'invalid_request', 'invalid_request');
      expect(res.body.error.details).toEqual({ field });
    }
  });

  it('returns at most 1000 numbers unpaginated while count says how many there are', async () => {
    const { key, accountId } = await server.newAccount();
    const agentId = await createAgent(server, key);
    // 1001 imports through the carrier would only test the simulator; the operator path writes the same rows.
    const numbers = server.storage.numbers;
    const base = 1_000_000 + (process.pid % 1000) * 2000;
    for (let i = 0; i < 1001; i++) {
      numbers.import({
        accountId,
        phoneNumber: `+1999${String(base + i).padStart(7, '0')}`,
        agentId,
        credentials: { provider: 'twilio', account_sid: `AC${'0'.repeat(32)}`, auth_token: 'x' },
        source: 'dashboard',
        carrierNumberSid: null,
        carrierNumberId: null,
        eventsToken: null,
        inboundEnabled: undefined,
        outboundEnabled: undefined,
        now: 1_700_000_000_000 + i,
      });
    }
    const res = await list(key);
    expect(res.body.count).toBe(1001);
    expect(res.body.phone_numbers).toHaveLength(1000);
    expect(res.body.phone_numbers[0]).toMatchObject({ phone_number: `+1999${String(base + 1000).padStart(7, '0')}`, source: 'dashboard' });
    const page = await list(key, '?limit=100&offset=1000');
    expect(page.body).toMatchObject({ count: 1001, limit: 100, offset: 1000 });
    expect(page.body.phone_numbers.map((p: { phone_number: string }) => p.phone_number)).toEqual([`+1999${String(base).padStart(7, '0')}`]);
  });
});

describe('GET /v1/phone-numbers/{phone_number}', () => {
  it('finds the number with %2B or a literal +, and answers 404 number_not_found for unknown or non-E.164 paths', async () => {
    const { key, n } = await withNumber();
    const encoded = await server.request('GET', path(n), { key });
    expect(encoded.status).toBe(200);
    const literal = await server.request('GET', `/v1/phone-numbers/${n}`, { key });
    expect(literal.body).toEqual(encoded.body);
    for (const p of [path(nextNumber()), '/v1/phone-numbers/not-a-number', `/v1/phone-numbers/${n.slice(1)}`, '/v1/phone-numbers/%ZZ']) {
      expectError(await server.request('GET', p, { key }), 404, 'not_found', 'number_not_found');
    }
  });
});

describe('PATCH /v1/phone-numbers/{phone_number}', () => {
  it('sets and clears the prompts; null and "" both read back null; the limits are inclusive', async () => {
    const { key, n } = await withNumber();
    const limits = { custom_prompt: 8000, sms_prompt: 20000, web_prompt: 20000 } as const;
    for (const [field, max] of Object.entries(limits)) {
      let res = await patch(key, n, { [field]: 'Hello there.' });
      expect(res.status).toBe(200);
      expect(res.body.phone_number[field]).toBe('Hello there.');
      res = await patch(key, n, { [field]: '' });
      expect(res.body.phone_number[field]).toBeNull();
      await patch(key, n, { [field]: 'again' });
      res = await patch(key, n, { [field]: null });
      expect(res.body.phone_number[field]).toBeNull();
      res = await patch(key, n, { [field]: 'x'.repeat(max) });
      expect(res.status).toBe(200);
      expect(res.body.phone_number[field]).toHaveLength(max);

      const before = await getNumber(key, n);
      const tooLong = await patch(key, n, { [field]: 'y'.repeat(max + 1), sms_reply_enabled: true });
      expectError(tooLong, 400, 'invalid_request', `${field}_too_long`);
      expect(tooLong.body.error.details).toEqual({ field });
      expect(await getNumber(key, n)).toEqual(before);
    }
  });

  it('answers the full number object and leaves omitted fields alone', async () => {
    const { key, agentId, n } = await withNumber();
    await patch(key, n, { custom_prompt: 'Keep me', voice_id: 'Nova' });
    const res = await patch(key, n, { sms_reply_enabled: true });
    expect(res.status).toBe(200);
    expect(res.body.phone_number).toMatchObject({ phone_number: n, agent_id: agentId, custom_prompt: 'Keep me', voice_id: 'Nova', sms_reply_enabled: true });
    expect(res.body).toEqual({ phone_number: await getNumber(key, n) });
  });

  it('checks voice_id against the catalogue; null or "" falls back to the agent voice', async () => {
    const { key, n } = await withNumber();
    expect((await patch(key, n, { voice_id: 'Brian' })).body.phone_number.voice_id).toBe('Brian');
    for (const bad of ['brian', 'Nobody', ' Brian']) {
      const res = await patch(key, n, { voice_id: bad });
      expectError(res, 400, 'invalid_request', 'invalid_voice_id');
      expect(res.body.error.details).toEqual({ field: 'voice_id' });
    }
    expect((await getNumber(key, n)).voice_id).toBe('Brian');
    expect((await patch(key, n, { voice_id: '' })).body.phone_number.voice_id).toBeNull();
    await patch(key, n, { voice_id: 'Ashley' });
    expect((await patch(key, n, { voice_id: null })).body.phone_number.voice_id).toBeNull();
  });

  it('clamps speaking_rate to 0.5..1.5, keeps 1 distinct from null, and rejects a string', async () => {
    const { key, n } = await withNumber();
    const cases: Array<[number | null, number | null]> = [[2, 1.5], [0.1, 0.5], [-3, 0.5], [1, 1], [0.75, 0.75], [1.5, 1.5], [null, null]];
    for (const [sent, stored] of cases) {
      const res = await patch(key, n, { speaking_rate: sent });
      expect(res.status).toBe(200);
      expect(res.body.phone_number.speaking_rate).toBe(stored);
    }
    const res = await patch(key, n, { speaking_rate: '1' });
    expectError(res, 400, 'invalid_request', 'invalid_request');
    expect(res.body.error.details).toEqual({ field: 'speaking_rate' });
    expect((await getNumber(key, n)).speaking_rate).toBeNull();
  });

  it('sets the switches: inherit-able ones take null, plain ones do not', async () => {
    const { key, n } = await withNumber();
    for (const field of ['dtmf_enabled', 'record_call', 'voicemail_leave_enabled', 'require_booking_confirmation']) {
      if (field === 'voicemail_leave_enabled') await patch(key, n, { voicemail_message: 'Call me back.' });
      for (const v of [false, true, null]) {
        const res = await patch(key, n, { [field]: v });
        expect(res.status).toBe(200);
        expect(res.body.phone_number[field]).toBe(v);
      }
    }
    for (const field of ['inbound_enabled', 'outbound_enabled', 'sms_reply_enabled']) {
      const flipped = field !== 'sms_reply_enabled' ? false : true;
      expect((await patch(key, n, { [field]: flipped })).body.phone_number[field]).toBe(flipped);
      const before = await getNumber(key, n);
      for (const bad of [null, 'true', 1]) {
        const res = await patch(key, n, { [field]: bad });
        expectError(res, 400, 'invalid_request', 'invalid_request');
        expect(res.body.error.details).toEqual({ field });
      }
      expect(await getNumber(key, n)).toEqual(before);
    }
  });

  it('needs a voicemail_message while voicemail_leave_enabled is true', async () => {
    const { key, n } = await withNumber();
    const alone = await patch(key, n, { voicemail_leave_enabled: true });
    expectError(alone, 400, 'invalid_request', 'voicemail_message_required');
    expect(alone.body.error.details).toEqual({ field: 'voicemail_message' });
    expect((await getNumber(key, n)).voicemail_leave_enabled).toBeNull();
    const both = await patch(key, n, { voicemail_leave_enabled: true, voicemail_message: 'Please call back.' });
    expect(both.body.phone_number).toMatchObject({ voicemail_leave_enabled: true, voicemail_message: 'Please call back.' });
    expectError(await patch(key, n, { voicemail_message: '' }), 400, 'invalid_request', 'voicemail_message_required');
    expectError(await patch(key, n, { voicemail_message: null }), 400, 'invalid_request', 'voicemail_message_required');
    expect((await getNumber(key, n)).voicemail_message).toBe('Please call back.');
    const off = await patch(key, n, { voicemail_leave_enabled: false, voicemail_message: null });
    expect(off.body.phone_number).toMatchObject({ voicemail_leave_enabled: false, voicemail_message: null });
    const tooLong = await patch(key, n, { voicemail_message: 'z'.repeat(2001) });
    expectError(tooLong, 400, 'invalid_request', 'invalid_request');
    expect(tooLong.body.error.details).toEqual({ field: 'voicemail_message' });
  });

  it('moves the number to another agent of the account, detaches it with null, and refuses a missing or foreign agent with 400', async () => {
    const { key, agentId, n } = await withNumber();
    const second = await createAgent(server, key, { name: 'Second' });
    const moved = await patch(key, n, { agent_id: second });
    expect(moved.body.phone_number.agent_id).toBe(second);
    expect((await list(key, `?agent_id=${agentId}`)).body.count).toBe(0);
    expect((await list(key, `?agent_id=${second}`)).body.count).toBe(1);

    const other = await server.newAccount();
    const foreign = await createAgent(server, other.key);
    const before = await getNumber(key, n);
    for (const bad of [foreign, 'agent_doesnotexist', '']) {
      const res = await patch(key, n, { agent_id: bad, custom_prompt: 'should not stick' });
      expectError(res, 400, 'invalid_request', 'agent_not_found');
      expect(res.body.error.details).toEqual({ field: 'agent_id' });
    }
    expect(await getNumber(key, n)).toEqual(before);

    expect((await patch(key, n, { agent_id: null })).body.phone_number.agent_id).toBeNull();
    expect((await patch(key, n, { agent_id: agentId })).body.phone_number.agent_id).toBe(agentId);
  });

  it('rejects an empty body, a body of read-only fields only, unknown fields, and a non-object, changing nothing', async () => {
    const { key, n } = await withNumber();
    const before = await getNumber(key, n);
    const empty = await patch(key, n, {});
    expectError(empty, 400, 'invalid_request', 'missing_field');
    const noBody = await server.request('PATCH', path(n), { key });
    expectError(noBody, 400, 'invalid_request', 'missing_field');
    expectError(await patch(key, n, { created_at: before.created_at, provider: 'telnyx' }), 400, 'invalid_request', 'missing_field');
    const unknown = await patch(key, n, { custom_prompt: 'x', twilio_auth_token: 'y' });
    expectError(unknown, 400, 'invalid_request', 'invalid_request');
    expect(unknown.body.error.details).toEqual({ field: 'twilio_auth_token' });
    expectError(await patch(key, n, [1]), 400, 'invalid_request', 'invalid_request');
    expect(await getNumber(key, n)).toEqual(before);
  });

  it('takes no carrier credentials: a carrier B number’s public key can be neither cleared nor set by PATCH', async () => {
    const { key, accountId } = await server.newAccount();
    const agentId = await createAgent(server, key);
    const n = await importTelnyxNumber(server, sims, key, agentId);
    const before = await getNumber(key, n);
    const credentials = () => server.storage.numbers.openCredentials(server.storage.numbers.get(accountId, n)!);
    const stored = credentials();
    expect(stored).toMatchObject({ provider: 'telnyx', public_key: expect.any(String) });
    for (const value of [null, '', Buffer.alloc(32, 9).toString('base64')]) {
      const res = await patch(key, n, { custom_prompt: 'x', telnyx_public_key: value });
      expectError(res, 400, 'invalid_request', 'invalid_request');
      expect(res.body.error.details).toEqual({ field: 'telnyx_public_key' });
    }
    expect(await getNumber(key, n)).toEqual(before);
    expect(credentials()).toEqual(stored);
  });

  it('accepts a fetched number sent back: read-only fields are ignored', async () => {
    const { key, n } = await withNumber();
    const current = await getNumber(key, n);
    const res = await patch(key, n, { ...current, custom_prompt: 'Changed', provider: 'telnyx', carrier_number_sid: null });
    expect(res.status).toBe(200);
    expect(res.body.phone_number).toEqual({ ...current, custom_prompt: 'Changed', updated_at: res.body.phone_number.updated_at });
  });

  it('answers 404 number_not_found for an unknown number', async () => {
    const { key } = await withNumber();
    expectError(await patch(key, nextNumber(), { custom_prompt: 'x' }), 404, 'not_found', 'number_not_found');
    expectError(await patch(key, 'garbage', { custom_prompt: 'x' }), 404, 'not_found', 'number_not_found');
  });
});

describe('DELETE /v1/phone-numbers/{phone_number}', () => {
  it('deletes the number: 404 afterwards, gone from the list, and importable again', async () => {
    const { key, agentId, n } = await withNumber();
    const res = await server.request('DELETE', path(n), { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ phone_number: n, deleted: true });
    expectError(await server.request('GET', path(n), { key }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('DELETE', path(n), { key }), 404, 'not_found', 'number_not_found');
    expect((await list(key)).body).toEqual({ phone_numbers: [], count: 0 });
    // The carrier still owns it for this customer: importing again starts from the defaults.
    expect(await importTwilioNumber(server, sims, key, agentId, n)).toBe(n);
    expect((await getNumber(key, n)).custom_prompt).toBeNull();
  });
});

describe('deleting the agent', () => {
  it('orphans its numbers with agent_id null, settings kept, until PATCH attaches another agent', async () => {
    const { key, agentId, n } = await withNumber();
    await patch(key, n, { custom_prompt: 'Survives', voice_id: 'Echo' });
    const del = await server.request('DELETE', `/v1/agents/${agentId}`, { key });
    expect(del.status).toBe(200);
    const orphan = await getNumber(key, n);
    expect(orphan).toMatchObject({ phone_number: n, agent_id: null, custom_prompt: 'Survives', voice_id: 'Echo' });
    const listed = await list(key);
    expect(listed.body.phone_numbers[0]).toMatchObject({ phone_number: n, agent_id: null });
    expect((await list(key, `?agent_id=${agentId}`)).body.count).toBe(0);

    const next = await createAgent(server, key, { name: 'Next' });
    // Import is not the way to adopt an orphan: it says to use PATCH.
    const reimport = await server.request('POST', '/v1/phone-numbers', {
      key,
      body: { phone_number: n, agent_id: next, provider: 'twilio', twilio_account_sid: `AC${'a'.repeat(32)}`, twilio_auth_token: 't' },
    });
    expectError(reimport, 409, 'conflict', 'number_already_imported');
    expect(reimport.body.error.message).toContain('PATCH');
    expect((await patch(key, n, { agent_id: next })).body.phone_number).toMatchObject({ agent_id: next, custom_prompt: 'Survives' });
  });
});

describe('PATCH model', () => {
  type Model = Record<string, unknown>;
  const VOICES = ['Ashley', 'Brian', 'Nova'];
  const text = (max: number) =>
    fc.oneof(fc.constant(null), fc.constant(''), fc.string({ maxLength: 12 }), fc.constant('w'.repeat(max)), fc.constant('w'.repeat(max + 1)));
  const bodyArb = fc.record(
    {
      inbound_enabled: fc.boolean(),
      outbound_enabled: fc.boolean(),
      custom_prompt: text(8000),
      voice_id: fc.oneof(fc.constant(null), fc.constant(''), fc.constantFrom(...VOICES), fc.constant('Unknown')),
      sms_reply_enabled: fc.boolean(),
      sms_prompt: text(20000),
      web_prompt: fc.oneof(fc.constant(null), fc.string({ maxLength: 12 })),
      speaking_rate: fc.oneof(fc.constant(null), fc.double({ min: -1, max: 3, noNaN: true, noDefaultInfinity: true })),
      dtmf_enabled: fc.oneof(fc.constant(null), fc.boolean()),
      record_call: fc.oneof(fc.constant(null), fc.boolean()),
      voicemail_leave_enabled: fc.oneof(fc.constant(null), fc.boolean()),
      require_booking_confirmation: fc.oneof(fc.constant(null), fc.boolean()),
      voicemail_message: fc.oneof(fc.constant(null), fc.constant(''), fc.string({ minLength: 1, maxLength: 12 })),
    },
    { requiredKeys: [] },
  );

  /** What the API should do with `body` on `model`: the next state, or the error code. */
  function apply(model: Model, body: Record<string, unknown>): { next: Model } | { code: string } {
    if (Object.keys(body).length === 0) return { code: 'missing_field' };
    const tooLong: Array<[string, number, string]> = [
      ['custom_prompt', 8000, 'custom_prompt_too_long'],
      ['sms_prompt', 20000, 'sms_prompt_too_long'],
    ];
    for (const [f, max, code] of tooLong) if (typeof body[f] === 'string' && (body[f] as string).length > max) return { code };
    const next = { ...model };
    for (const [f, v] of Object.entries(body)) {
      if (f === 'speaking_rate') next[f] = v === null ? null : Math.min(1.5, Math.max(0.5, v as number));
      else next[f] = v === '' ? null : v;
    }
    if (typeof next['voice_id'] === 'string' && !VOICES.includes(next['voice_id'] as string) && body['voice_id'] !== undefined) return { code: 'invalid_voice_id' };
    if (next['voicemail_leave_enabled'] === true && next['voicemail_message'] === null) return { code: 'voicemail_message_required' };
    return { next };
  }

  it('agrees with a model over random sequences of PATCH bodies', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(bodyArb, { minLength: 1, maxLength: 6 }), async (bodies) => {
        const { key, n } = await withNumber();
        const initial = await getNumber(key, n);
        let model: Model = { ...initial };
        delete model['updated_at'];
        for (const body of bodies) {
          const res = await patch(key, n, body);
          const expected = apply(model, body);
          if ('code' in expected) {
            expect(res.status).toBe(400);
            expect(res.body.error.code).toBe(expected.code);
          } else {
            expect(res.status).toBe(200);
            model = expected.next;
          }
          const { updated_at, ...seen } = await getNumber(key, n);
          expect(typeof updated_at).toBe('string');
          expect(seen).toEqual(model);
        }
      }),
      { numRuns: 30 },
    );
  });
});

describe('OpenAPI', () => {
  it('documents the five routes with their error codes', async () => {
    const doc = (await server.request('GET', '/v1/openapi.json')).body;
    const list = doc.paths['/v1/phone-numbers'];
    const one = doc.paths['/v1/phone-numbers/{phone_number}'];
    expect(Object.keys(list).sort()).toEqual(['get', 'post']);
    expect(Object.keys(one).sort()).toEqual(['delete', 'get', 'patch']);
    const codes = (op: { responses: Record<string, { content?: { 'application/json': { schema: { allOf?: Array<{ properties?: { error: { properties: { code: { enum: string[] } } } } }> } } } }> }) =>
      Object.values(op.responses).flatMap((r) => r.content?.['application/json'].schema.allOf?.[1]?.properties?.error.properties.code.enum ?? []);
    expect(codes(list.post)).toEqual(expect.arrayContaining(['invalid_phone_format', 'invalid_carrier_sid', 'number_not_in_carrier', 'carrier_invalid_credentials', 'carrier_auth_failed', 'number_already_imported', 'carrier_unreachable', 'agent_not_found']));
    expect(codes(one.patch)).toEqual(expect.arrayContaining(['missing_field', 'custom_prompt_too_long', 'sms_prompt_too_long', 'web_prompt_too_long', 'invalid_voice_id', 'number_not_found']));
    expect(codes(one.get)).toContain('number_not_found');
    expect(codes(one.delete)).toContain('number_not_found');
    expect(list.post.requestBody.content['application/json'].schema.properties.provider.enum).toEqual(['twilio', 'telnyx']);
  });
});
