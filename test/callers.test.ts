// Caller context through real HTTP: merge semantics of PUT, GET, list, DELETE, bulk
// import, and every error code of the sub-resource, each shown to change nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer, type TestResponse } from './helpers/server.ts';
import { createAgent, importTwilioNumber, startCarrierSims, type CarrierSims } from './helpers/fixtures.ts';

let sims: CarrierSims;
let server: TestServer;
let key: string;
let number: string;
let otherNumber: string;

// Strictly increasing, so every request gets its own updated_at and list order is exact.
let last = 0;
const clock = () => (last = Math.max(Date.now(), last + 1));

beforeAll(async () => {
  sims = await startCarrierSims();
  server = await startTestServer({ ...sims.env, RATE_LIMIT_WRITES_PER_MIN: '100000', RATE_LIMIT_READS_PER_MIN: '100000' }, { clock });
  ({ key } = await server.newAccount());
  const agentId = await createAgent(server, key);
  number = await importTwilioNumber(server, sims, key, agentId);
  otherNumber = await importTwilioNumber(server, sims, key, agentId);
});
afterAll(async () => {
  await server?.close();
  await sims?.close();
});

let callerSeq = 0;
/** A caller number no other test in this file uses. */
const newCaller = () => `+1650555${String(++callerSeq).padStart(4, '0')}`;
const enc = encodeURIComponent;
const callerPath = (caller: string, num = number) => `/v1/phone-numbers/${enc(num)}/callers/${enc(caller)}`;
const listPath = (num = number, q = '') => `/v1/phone-numbers/${enc(num)}/callers${q}`;
const importPath = (num = number) => `/v1/phone-numbers/${enc(num)}/callers/import`;

const put = (caller: string, body: unknown, num = number) => server.request('PUT', callerPath(caller, num), { key, body });
const get = (caller: string, num = number) => server.request('GET', callerPath(caller, num), { key });
const del = (caller: string, num = number) => server.request('DELETE', callerPath(caller, num), { key });
const importRows = (callers: unknown, num = number) => server.request('POST', importPath(num), { key, body: { callers } });
/** Everything stored on a number, for before/after comparisons. */
const everything = async (num = number) => (await server.request('GET', listPath(num, '?limit=100'), { key })).body;

async function putOk(caller: string, body: Record<string, unknown>): Promise<TestResponse> {
  const res = await put(caller, body);
  expect(res.status, res.text).toBe(200);
  return res;
}

/** Sends a request that must fail, and shows that nothing stored on either number changed. */
async function rejects(send: () => Promise<TestResponse>, status: number, type: string, code: string): Promise<TestResponse> {
  const before = [await everything(number), await everything(otherNumber)];
  const res = await send();
  expectError(res, status, type, code);
  expect([await everything(number), await everything(otherNumber)]).toEqual(before);
  return res;
}

describe('PUT merges a record', () => {
  it('creates the record and answers with the context that is set', async () => {
    const caller = newCaller();
    const res = await putOk(caller, { name: 'Ada Lovelace', email: 'ada@example.com' });
    expect(res.body).toEqual({
      caller: { phone_number: number, caller_number: caller, context: { name: 'Ada Lovelace', email: 'ada@example.com' }, updated_at: expect.any(String) },
    });
    expect(res.body.caller.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const got = await get(caller);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('keeps omitted fields, removes null ones, and never erases with an empty value', async () => {
    const caller = newCaller();
    await putOk(caller, { name: 'Grace', email: 'grace@example.com', phone: '+44 20 7946 0000', location: 'London' });
    const res = await putOk(caller, { name: null, email: '', phone: '   ', reference_id: 'ORD-1', preference: 'mornings' });
    const context = { email: 'grace@example.com', phone: '+44 20 7946 0000', location: 'London', reference_id: 'ORD-1', preference: 'mornings' };
    expect(res.body.caller.context).toEqual(context);
    expect('name' in res.body.caller.context).toBe(false);
    expect((await get(caller)).body.caller.context).toEqual(context);
  });

  it('last write wins per field and moves updated_at forward', async () => {
    const caller = newCaller();
    const first = await putOk(caller, { name: 'One' });
    const second = await putOk(caller, { name: 'Two' });
    expect(second.body.caller.context).toEqual({ name: 'Two' });
    expect(Date.parse(second.body.caller.updated_at)).toBeGreaterThan(Date.parse(first.body.caller.updated_at));
  });

  it('accepts every field at exactly its length limit', async () => {
    const caller = newCaller();
    const body = {
      name: 'n'.repeat(120),
      email: `${'e'.repeat(108)}@example.com`,
      phone: '1'.repeat(40),
      location: 'l'.repeat(120),
      reference_id: 'r'.repeat(64),
      preference: 'p'.repeat(200),
    };
    expect(body.email).toHaveLength(120);
    const res = await putOk(caller, body);
    expect(res.body.caller.context).toEqual(body);
  });

  it('creates an empty record when the only fields sent are removals', async () => {
    const caller = newCaller();
    const res = await putOk(caller, { name: null });
    expect(res.body.caller.context).toEqual({});
    expect((await get(caller)).body.caller.context).toEqual({});
  });

  it('accepts the + of the path unencoded too', async () => {
    const caller = newCaller();
    const res = await server.request('PUT', `/v1/phone-numbers/${number}/callers/${caller}`, { key, body: { name: 'Plain' } });
    expect(res.status).toBe(200);
    expect(res.body.caller.caller_number).toBe(caller);
  });

  it('keeps the same caller on another of the account’s numbers as a separate record', async () => {
    const caller = newCaller();
    await putOk(caller, { name: 'On the first number' });
    expect((await get(caller, otherNumber)).status).toBe(404);
    const res = await put(caller, { name: 'On the second number' }, otherNumber);
    expect(res.status).toBe(200);
    expect((await get(caller)).body.caller.context).toEqual({ name: 'On the first number' });
    expect((await get(caller, otherNumber)).body.caller.context).toEqual({ name: 'On the second number' });
  });
});

describe('PUT rejects bad input and changes nothing', () => {
  let caller: string;
  beforeAll(async () => {
    caller = newCaller();
    await putOk(caller, { name: 'Stored', email: 'stored@example.com' });
  });

  it.each([
    [{ last_call: 'yesterday' }, 'last_call'],
    [{ name: 'Ok', open_item: 'refund' }, 'open_item'],
    // Engine fields are reported before unknown ones and before types.
    [{ bogus: 1, last_call: 5 }, 'last_call'],
  ])('engine_only_field for %j', async (body, field) => {
    const res = await rejects(() => put(caller, body), 400, 'invalid_request', 'engine_only_field');
    expect(res.body.error.details).toEqual({ field });
  });

  it.each([
    [{ nickname: 'Ada' }, 'nickname'],
    [{ name: 'Ok', caller_number: '+14155550123' }, 'caller_number'],
    // Unknown fields are reported before wrong types.
    [{ name: 5, favourite_colour: 'blue' }, 'favourite_colour'],
  ])('unknown_field for %j', async (body, field) => {
    const res = await rejects(() => put(caller, body), 400, 'invalid_request', 'unknown_field');
    expect(res.body.error.details).toEqual({ field });
    expect(res.body.error.message).toContain(field);
  });

  it.each([
    [{ name: 42 }, 'name'],
    [{ email: { address: 'a@b.co' } }, 'email'],
    [{ preference: ['mornings'] }, 'preference'],
    [{ phone: true }, 'phone'],
    // Types are checked before lengths and emails.
    [{ name: 'x'.repeat(500), email: 'nope', location: 7 }, 'location'],
  ])('invalid_request naming the field for %j', async (body, field) => {
    const res = await rejects(() => put(caller, body), 400, 'invalid_request', 'invalid_request');
    expect(res.body.error.details).toEqual({ field });
  });

  it.each([[{}], [{ name: '' }], [{ name: '   ', email: '' }]])('missing_field when %j sets nothing', async (body) => {
    const res = await rejects(() => put(caller, body), 400, 'invalid_request', 'missing_field');
    expect(res.body.error.message).toMatch(/at least one of name/);
  });

  it.each([
    ['name', 121],
    ['email', 121],
    ['phone', 41],
    ['location', 121],
    ['reference_id', 65],
    ['preference', 201],
  ] as const)('field_too_long for %s of %i characters', async (field, length) => {
    const value = field === 'email' ? `${'e'.repeat(length - 12)}@example.com` : 'x'.repeat(length);
    const res = await rejects(() => put(caller, { [field]: value }), 400, 'invalid_request', 'field_too_long');
    expect(res.body.error.details).toEqual({ field });
  });

  it.each(['not-an-email', 'a@b', '@example.com', 'two@@example.com'])('invalid_email for %s', async (email) => {
    const res = await rejects(() => put(caller, { name: 'New name', email }), 400, 'invalid_request', 'invalid_email');
    expect(res.body.error.details).toEqual({ field: 'email' });
  });

  it.each(['14155550123', 'anonymous', '+0123456789', '+1415'])('invalid_phone_format for the path caller %s', async (bad) => {
    const res = await rejects(() => put(bad, { name: 'X' }), 400, 'invalid_request', 'invalid_phone_format');
    expect(res.body.error.details).toEqual({ field: 'caller_number' });
  });

  it.each(['+19995550000', 'not-a-number'])('phone_number_not_found for the number %s', async (num) => {
    await rejects(() => put(caller, { name: 'X' }, num), 404, 'not_found', 'phone_number_not_found');
  });

  it('invalid_request for a body that is not an object', async () => {
    await rejects(() => server.request('PUT', callerPath(caller), { key, body: [{ name: 'X' }] }), 400, 'invalid_request', 'invalid_request');
  });

  it('left the record as it was', async () => {
    expect((await get(caller)).body.caller.context).toEqual({ name: 'Stored', email: 'stored@example.com' });
  });
});

describe('GET, list and DELETE', () => {
  it('GET answers caller_not_found for a caller with no record, and invalid_phone_format for a bad one', async () => {
    expectError(await get(newCaller()), 404, 'not_found', 'caller_not_found');
    expectError(await get('4155550123'), 400, 'invalid_request', 'invalid_phone_format');
    expectError(await get(newCaller(), '+19995550001'), 404, 'not_found', 'phone_number_not_found');
  });

  it('lists newest updated first with count, limit and offset', async () => {
    const agentId = await createAgent(server, key);
    const fresh = await importTwilioNumber(server, sims, key, agentId);
    expect((await server.request('GET', listPath(fresh), { key })).body).toEqual({ callers: [], count: 0, limit: 25, offset: 0 });

    const [a, b, c] = [newCaller(), newCaller(), newCaller()];
    for (const caller of [a, b, c]) expect((await put(caller, { name: caller }, fresh)).status).toBe(200);
    expect((await put(a, { location: 'moved to the front' }, fresh)).status).toBe(200);

    const all = await server.request('GET', listPath(fresh), { key });
    expect(all.status).toBe(200);
    expect(all.body.count).toBe(3);
    expect(all.body.callers.map((x: { caller_number: string }) => x.caller_number)).toEqual([a, c, b]);
    expect(all.body.callers[0]).toEqual({ phone_number: fresh, caller_number: a, context: { name: a, location: 'moved to the front' }, updated_at: expect.any(String) });
    expect(all.body.callers[0]).toEqual((await get(a, fresh)).body.caller);

    const page = await server.request('GET', listPath(fresh, '?limit=1&offset=1'), { key });
    expect(page.body).toMatchObject({ count: 3, limit: 1, offset: 1 });
    expect(page.body.callers.map((x: { caller_number: string }) => x.caller_number)).toEqual([c]);

    const clamped = await server.request('GET', listPath(fresh, '?limit=500'), { key });
    expect(clamped.body.limit).toBe(100);
    expect(clamped.body.callers).toHaveLength(3);

    const beyond = await server.request('GET', listPath(fresh, '?offset=10'), { key });
    expect(beyond.body).toEqual({ callers: [], count: 3, limit: 25, offset: 10 });
  });

  it.each(['?limit=0', '?limit=abc', '?offset=-1'])('list rejects %s with invalid_request', async (q) => {
    expectError(await server.request('GET', listPath(number, q), { key }), 400, 'invalid_request', 'invalid_request');
  });

  it('list of an unknown number is phone_number_not_found', async () => {
    expectError(await server.request('GET', listPath('+19995550002'), { key }), 404, 'not_found', 'phone_number_not_found');
  });

  it('DELETE erases one record on one number only', async () => {
    const [gone, kept] = [newCaller(), newCaller()];
    await putOk(gone, { name: 'Gone' });
    await putOk(kept, { name: 'Kept' });
    expect((await put(gone, { name: 'Elsewhere' }, otherNumber)).status).toBe(200);

    const res = await del(gone);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ phone_number: number, caller_number: gone, deleted: true });
    expectError(await get(gone), 404, 'not_found', 'caller_not_found');
    expect((await get(kept)).body.caller.context).toEqual({ name: 'Kept' });
    expect((await get(gone, otherNumber)).body.caller.context).toEqual({ name: 'Elsewhere' });

    await rejects(() => del(gone), 404, 'not_found', 'caller_not_found');
    // A new write starts from nothing.
    expect((await putOk(gone, { email: 'new@example.com' })).body.caller.context).toEqual({ email: 'new@example.com' });
  });

  it('DELETE rejects a bad caller and an unknown number without changing anything', async () => {
    await rejects(() => del('abc'), 400, 'invalid_request', 'invalid_phone_format');
    await rejects(() => del(newCaller(), '+19995550003'), 404, 'not_found', 'phone_number_not_found');
  });
});

describe('POST …/callers/import', () => {
  it('imports rows, adds a missing +, and merges into existing records', async () => {
    const [a, b, c] = [newCaller(), newCaller(), newCaller()];
    await putOk(a, { email: 'keep@example.com', location: 'Paris' });
    const res = await importRows([
      { caller_number: a, name: 'Alice', location: null },
      { caller_number: b.slice(1), name: 'Bob', reference_id: 'B-7' },
      { caller_number: ` ${c} `, preference: 'text only', email: '' },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ phone_number: number, imported: 3 });
    expect((await get(a)).body.caller.context).toEqual({ name: 'Alice', email: 'keep@example.com' });
    expect((await get(b)).body.caller).toMatchObject({ caller_number: b, context: { name: 'Bob', reference_id: 'B-7' } });
    expect((await get(c)).body.caller.context).toEqual({ preference: 'text only' });
  });

  it('a caller repeated in the file ends on its last row, merged in order', async () => {
    const [a, b] = [newCaller(), newCaller()];
    const res = await importRows([
      { caller_number: a, name: 'First', email: 'first@example.com' },
      { caller_number: b, name: 'Only' },
      { caller_number: a.slice(1), name: 'Second' },
      { caller_number: a, location: 'Oslo', email: null },
      { caller_number: a, name: 'Last', location: '' },
    ]);
    expect(res.body).toEqual({ phone_number: number, imported: 2 });
    expect((await get(a)).body.caller.context).toEqual({ name: 'Last', location: 'Oslo' });
    expect((await get(b)).body.caller.context).toEqual({ name: 'Only' });
  });

  it('takes exactly 1000 rows', async () => {
    const agentId = await createAgent(server, key);
    const fresh = await importTwilioNumber(server, sims, key, agentId);
    const rows = Array.from({ length: 1000 }, (_, i) => ({ caller_number: `+1212555${String(i).padStart(4, '0')}`, name: `Caller ${i}` }));
    const res = await importRows(rows, fresh);
    expect(res.body).toEqual({ phone_number: fresh, imported: 1000 });
    expect((await server.request('GET', listPath(fresh, '?limit=1'), { key })).body.count).toBe(1000);
    expect((await get('+12125550999', fresh)).body.caller.context).toEqual({ name: 'Caller 999' });
  });

  it('one bad row out of 800 rejects the whole file, naming the row', async () => {
    const rows: Record<string, unknown>[] = Array.from({ length: 800 }, (_, i) => ({ caller_number: `+1312555${String(i).padStart(4, '0')}`, name: `Row ${i + 1}` }));
    rows[499] = { caller_number: '+13125550499', name: 'Bad', email: 'not-an-email' };
    const res = await rejects(() => importRows(rows), 400, 'invalid_request', 'invalid_email');
    expect(res.body.error.message).toMatch(/^Row 500: /);
    expect(res.body.error.details).toEqual({ row: 500, field: 'email' });
    expectError(await get('+13125550000'), 404, 'not_found', 'caller_not_found');
  });

  it('1001 rows is too_many_rows', async () => {
    const rows = Array.from({ length: 1001 }, (_, i) => ({ caller_number: `+1646555${String(i).padStart(4, '0')}`, name: 'X' }));
    const res = await rejects(() => importRows(rows), 400, 'invalid_request', 'too_many_rows');
    expect(res.body.error.details).toMatchObject({ field: 'callers' });
  });

  it.each([
    ['callers missing', {}],
    ['callers null', { callers: null }],
    ['callers not an array', { callers: { caller_number: '+14155550123', name: 'X' } }],
    ['callers a string', { callers: '+14155550123,Ada' }],
    ['callers empty', { callers: [] }],
  ])('invalid_body when %s', async (_, body) => {
    const res = await rejects(() => server.request('POST', importPath(), { key, body }), 400, 'invalid_request', 'invalid_body');
    expect(res.body.error.details).toEqual({ field: 'callers' });
  });

  it('unknown_field for a field beside callers', async () => {
    const res = await rejects(
      () => server.request('POST', importPath(), { key, body: { callers: [{ caller_number: newCaller(), name: 'X' }], overwrite: true } }),
      400,
      'invalid_request',
      'unknown_field',
    );
    expect(res.body.error.details).toEqual({ field: 'overwrite' });
  });

  const good = () => ({ caller_number: newCaller(), name: 'Good' });
  it.each([
    ['engine_only_field', [good(), { caller_number: '+16505559001', last_call: 'x' }], 2, 'last_call'],
    ['engine_only_field', [{ caller_number: 'garbage', open_item: 'x', bogus: 1 }], 1, 'open_item'],
    ['unknown_field', [good(), good(), { caller_number: '+16505559002', nickname: 'Al' }], 3, 'nickname'],
    ['unknown_field', [{ caller_number: 7, name: 5, bogus: 1 }], 1, 'bogus'],
    ['invalid_request', [good(), { caller_number: 16505559003, name: 'X' }], 2, 'caller_number'],
    ['invalid_request', [{ caller_number: '+16505559004', name: 5, email: 'bad' }], 1, 'name'],
    ['invalid_request', [{ name: 'x'.repeat(200), email: false }], 1, 'email'],
    ['missing_field', [good(), { name: 'No number' }], 2, 'caller_number'],
    ['missing_field', [{ caller_number: '', name: 'Blank number' }], 1, 'caller_number'],
    ['missing_field', [{ caller_number: null, name: 'Null number' }], 1, 'caller_number'],
    ['missing_field', [{ caller_number: 'nonsense' }], 1, undefined],
    ['missing_field', [good(), { caller_number: '+16505559005', name: '', email: '  ' }], 2, undefined],
    ['invalid_phone_format', [good(), { caller_number: 'call me', name: 'X' }], 2, 'caller_number'],
    ['invalid_phone_format', [{ caller_number: '0123456789', name: 'X' }], 1, 'caller_number'],
    ['invalid_phone_format', [{ caller_number: '+1 415 555 0123', name: 'X' }], 1, 'caller_number'],
    ['field_too_long', [{ caller_number: '+16505559006', reference_id: 'r'.repeat(65) }], 1, 'reference_id'],
    ['field_too_long', [good(), { caller_number: '+16505559007', preference: 'p'.repeat(201) }], 2, 'preference'],
    // Lengths and emails are checked in field order: name, email, phone, location, reference_id, preference.
    ['field_too_long', [{ caller_number: '+16505559009', email: 'bad', name: 'n'.repeat(121) }], 1, 'name'],
    ['invalid_email', [{ caller_number: '+16505559008', email: 'bad@' }], 1, 'email'],
    ['invalid_body', [good(), 'not a row'], 2, 'callers'],
    ['invalid_body', [null], 1, 'callers'],
  ] as const)('%s in a row: %j', async (code, rows, row, field) => {
    const res = await rejects(() => importRows(rows), 400, 'invalid_request', code);
    expect(res.body.error.message).toMatch(new RegExp(`^Row ${row}: `));
    expect(res.body.error.details.row).toBe(row);
    if (field) expect(res.body.error.details.field).toBe(field);
    else expect(res.body.error.details.fields).toEqual(['name', 'email', 'phone', 'location', 'reference_id', 'preference']);
  });

  it('phone_number_not_found for an unknown number', async () => {
    await rejects(() => importRows([good()], '+19995550004'), 404, 'not_found', 'phone_number_not_found');
  });
});

describe('OpenAPI', () => {
  it('documents the caller routes with their bodies and error codes', async () => {
    const doc = (await server.request('GET', '/v1/openapi.json')).body;
    const one = doc.paths['/v1/phone-numbers/{phone_number}/callers/{caller_number}'];
    expect(Object.keys(one).sort()).toEqual(['delete', 'get', 'put']);
    const putBody = one.put.requestBody.content['application/json'].schema;
    expect(Object.keys(putBody.properties)).toEqual(['name', 'email', 'phone', 'location', 'reference_id', 'preference']);
    expect(putBody.properties.reference_id.anyOf[0].maxLength).toBe(64);
    expect(JSON.stringify(one.put.responses['400'])).toContain('engine_only_field');
    expect(JSON.stringify(one.put.responses['400'])).toContain('unknown_field');
    expect(JSON.stringify(one.get.responses['404'])).toContain('caller_not_found');
    const imp = doc.paths['/v1/phone-numbers/{phone_number}/callers/import'].post;
    expect(imp.requestBody.content['application/json'].schema.properties.callers.maxItems).toBe(1000);
    for (const code of ['invalid_body', 'too_many_rows', 'invalid_phone_format']) expect(JSON.stringify(imp.responses['400'])).toContain(code);
    expect(JSON.stringify(imp.responses['404'])).toContain('phone_number_not_found');
    expect(doc.paths['/v1/phone-numbers/{phone_number}/callers'].get.parameters.map((p: { name: string }) => p.name)).toEqual(['phone_number', 'limit', 'offset']);
  });
});
