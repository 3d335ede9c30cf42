// Custom functions of a number through the real server: create, list, delete, the
// name rules (snake_case, 64 characters), duplicates, the parameters schema rules,
// and a model test of create/delete sequences against the list the API shows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { expectError, startTestServer, type TestServer } from './helpers/server.ts';
import { createAgent, importTwilioNumber, startCarrierSims, type CarrierSims } from './helpers/fixtures.ts';

let sims: CarrierSims;
let server: TestServer;

beforeAll(async () => {
  sims = await startCarrierSims();
  server = await startTestServer({ ...sims.env, ALLOW_PRIVATE_NETWORK_TARGETS: 'true' });
});
afterAll(async () => {
  await server?.close();
  await sims?.close();
});

async function owner(): Promise<{ key: string; agentId: string; phone: string }> {
  const { key } = await server.newAccount();
  const agentId = await createAgent(server, key);
  const phone = await importTwilioNumber(server, sims, key, agentId);
  return { key, agentId, phone };
}

const fnPath = (phone: string, id?: string) =>
  `/v1/integrations/custom-functions/number/${encodeURIComponent(phone)}${id === undefined ? '' : `/${encodeURIComponent(id)}`}`;
const FN_URL = 'https://tools.example.com/fn';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function list(key: string, phone: string) {
  const res = await server.request('GET', fnPath(phone), { key });
  expect(res.status).toBe(200);
  return res.body as { functions: Array<Record<string, unknown>>; count: number };
}

describe('create, list, delete', () => {
  it('creates with only name and url; description and parameters read back null', async () => {
    const o = await owner();
    const res = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'lookup_order', url: FN_URL } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      function: { id: expect.stringMatching(/^fn_[0-9A-Za-z]{24}$/), name: 'lookup_order', url: FN_URL, description: null, parameters: null, created_at: expect.stringMatching(ISO) },
    });
    expect(await list(o.key, o.phone)).toEqual({ functions: [res.body.function], count: 1 });
  });

  it('keeps description and a JSON Schema of the parameters as sent', async () => {
    const o = await owner();
    const parameters = {
      type: 'object',
      properties: { order_id: { type: 'string', description: 'The order number' }, items: { type: 'array', items: { type: 'string' } } },
      required: ['order_id'],
      additionalProperties: false,
    };
    const res = await server.request('POST', fnPath(o.phone), {
      key: o.key,
      body: { name: 'lookup_order', url: FN_URL, description: 'Looks up an order by its number.', parameters },
    });
    expect(res.status).toBe(201);
    expect(res.body.function).toMatchObject({ description: 'Looks up an order by its number.', parameters });
    expect((await list(o.key, o.phone)).functions[0]).toEqual(res.body.function);
  });

  it('lists oldest first, deletes one, and the rest stay', async () => {
    const o = await owner();
    const ids: string[] = [];
    for (const name of ['first', 'second', 'third']) {
      ids.push((await server.request('POST', fnPath(o.phone), { key: o.key, body: { name, url: `${FN_URL}/${name}` } })).body.function.id);
    }
    const before = await list(o.key, o.phone);
    expect(before.count).toBe(3);
    expect(before.functions.map((f) => f.name)).toEqual(['first', 'second', 'third']);

    const del = await server.request('DELETE', fnPath(o.phone, ids[1]), { key: o.key });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ function_id: ids[1], deleted: true });
    const after = await list(o.key, o.phone);
    expect(after).toEqual({ functions: [before.functions[0], before.functions[2]], count: 2 });

    expectError(await server.request('DELETE', fnPath(o.phone, ids[1]), { key: o.key }), 404, 'not_found', 'function_not_found');
  });

  it('an empty list is {functions: [], count: 0}', async () => {
    const o = await owner();
    expect(await list(o.key, o.phone)).toEqual({ functions: [], count: 0 });
  });

  it('unknown function ids are 404 function_not_found, also one from another number of the account', async () => {
    const o = await owner();
    const other = await importTwilioNumber(server, sims, o.key, o.agentId);
    const made = await server.request('POST', fnPath(other), { key: o.key, body: { name: 'on_other', url: FN_URL } });
    for (const id of ['fn_doesnotexist0000000000000', 'nonsense', made.body.function.id]) {
      expectError(await server.request('DELETE', fnPath(o.phone, id), { key: o.key }), 404, 'not_found', 'function_not_found');
    }
    expect((await list(o.key, other)).count).toBe(1);
  });

  it('an unknown number is 404 number_not_found', async () => {
    const o = await owner();
    const phone = '+14155550000';
    expectError(await server.request('POST', fnPath(phone), { key: o.key, body: { name: 'x', url: FN_URL } }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('GET', fnPath(phone), { key: o.key }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('DELETE', fnPath(phone, 'fn_x'), { key: o.key }), 404, 'not_found', 'number_not_found');
  });
});

describe('names', () => {
  it('accepts snake_case up to 64 characters', async () => {
    const o = await owner();
    for (const name of ['a', 'get_weather', 'v2_lookup', '_internal', '2fa_check', 'a'.repeat(64)]) {
      const res = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name, url: FN_URL } });
      expect(res.status, name).toBe(201);
      expect(res.body.function.name).toBe(name);
    }
  });

  it('refuses anything else with invalid_function_name naming the field, creating nothing', async () => {
    const o = await owner();
    for (const name of ['a'.repeat(65), '', 'GetWeather', 'get-weather', 'get weather', 'get.weather', 'función', 'x\n']) {
      const res = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name, url: FN_URL } });
      expectError(res, 400, 'invalid_request', 'invalid_function_name');
      expect(res.body.error.details).toEqual({ field: 'name' });
    }
    expect((await list(o.key, o.phone)).count).toBe(0);
  });

  it('a missing name or url is missing_field; a name that is not a string is invalid_request', async () => {
    const o = await owner();
    const noName = await server.request('POST', fnPath(o.phone), { key: o.key, body: { url: FN_URL } });
    expectError(noName, 400, 'invalid_request', 'missing_field');
    expect(noName.body.error.details).toEqual({ field: 'name' });
    const noUrl = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'x' } });
    expectError(noUrl, 400, 'invalid_request', 'missing_field');
    expect(noUrl.body.error.details).toEqual({ field: 'url' });
    const numeric = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 7, url: FN_URL } });
    expectError(numeric, 400, 'invalid_request', 'invalid_request');
    expect(numeric.body.error.details).toEqual({ field: 'name' });
    expect((await list(o.key, o.phone)).count).toBe(0);
  });

  it('a duplicate name on the same number is 409 function_exists; another number may reuse it', async () => {
    const o = await owner();
    const first = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'book', url: FN_URL } });
    expect(first.status).toBe(201);
    const dup = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'book', url: `${FN_URL}/other` } });
    expectError(dup, 409, 'conflict', 'function_exists');
    expect(dup.body.error.details).toEqual({ field: 'name' });
    expect(await list(o.key, o.phone)).toEqual({ functions: [first.body.function], count: 1 });

    const other = await importTwilioNumber(server, sims, o.key, o.agentId);
    expect((await server.request('POST', fnPath(other), { key: o.key, body: { name: 'book', url: FN_URL } })).status).toBe(201);

    // Once deleted, the name is free again.
    await server.request('DELETE', fnPath(o.phone, first.body.function.id), { key: o.key });
    expect((await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'book', url: FN_URL } })).status).toBe(201);
  });
});

describe('parameters and description', () => {
  it.each([
    [{ type: 'string' }, 'parameters.type'],
    [{ properties: { a: { type: 'string' } } }, 'parameters.type'],
    [{ type: 'object', properties: [] }, 'parameters.properties'],
    [{ type: 'object', properties: { a: 'string' } }, 'parameters.properties.a'],
    [{ type: 'object', properties: { a: { type: 'string' } }, required: 'a' }, 'parameters.required'],
    [{ type: 'object', properties: { a: { type: 'string' } }, required: ['b'] }, 'parameters.required'],
    [{ type: 'object', description: 'x'.repeat(17_000) }, 'parameters'],
    [['type', 'object'], 'parameters'],
    ['{"type":"object"}', 'parameters'],
  ])('refuses parameters %j with invalid_request naming %s', async (parameters, field) => {
    const o = await owner();
    const res = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'f', url: FN_URL, parameters } });
    expectError(res, 400, 'invalid_request', 'invalid_request');
    expect(res.body.error.details).toEqual({ field });
    expect((await list(o.key, o.phone)).count).toBe(0);
  });

  it.each(['toString', 'constructor', '__proto__', 'hasOwnProperty'])('refuses required naming %s, which only the object prototype has (issue 11)', async (name) => {
    const o = await owner();
    const parameters = { type: 'object', properties: { a: { type: 'string' } }, required: [name] };
    const res = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'f', url: FN_URL, parameters } });
    expectError(res, 400, 'invalid_request', 'invalid_request');
    expect(res.body.error.details).toEqual({ field: 'parameters.required' });
    expect((await list(o.key, o.phone)).count).toBe(0);
  });

  it('answers 400, not 500, for parameters nested 5,000 levels deep (30 KB), and creates nothing (issue 11)', async () => {
    const o = await owner();
    const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
    const rawBody = `{"name":"f","url":"${FN_URL}","parameters":{"type":"object","properties":{"x":${deep}}}}`;
    const res = await server.request('POST', fnPath(o.phone), { key: o.key, rawBody, headers: { 'content-type': 'application/json' } });
    expectError(res, 400, 'invalid_request', 'invalid_request');
    expect(res.body.error.message).toMatch(/64 levels/);
    expect((await list(o.key, o.phone)).count).toBe(0);
  });

  it('still takes a schema nested as deeply as a real tool needs', async () => {
    const o = await owner();
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20; i++) schema = { type: 'object', properties: { inner: schema } };
    const res = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'nested', url: FN_URL, parameters: schema } });
    expect(res.status).toBe(201);
  });

  it('takes an object schema without properties, and null for no parameters', async () => {
    const o = await owner();
    const a = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'a', url: FN_URL, parameters: { type: 'object' } } });
    expect(a.body.function.parameters).toEqual({ type: 'object' });
    const b = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'b', url: FN_URL, parameters: null, description: null } });
    expect(b.body.function).toMatchObject({ parameters: null, description: null });
  });

  it('refuses a description over 1024 characters and unknown fields', async () => {
    const o = await owner();
    const long = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'a', url: FN_URL, description: 'd'.repeat(1025) } });
    expectError(long, 400, 'invalid_request', 'invalid_request');
    expect(long.body.error.details).toEqual({ field: 'description' });
    const extra = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: 'a', url: FN_URL, method: 'GET' } });
    expectError(extra, 400, 'invalid_request', 'invalid_request');
    expect(extra.body.error.details).toEqual({ field: 'method' });
    expect((await list(o.key, o.phone)).count).toBe(0);
  });
});

describe('model: any sequence of creates and deletes', () => {
  type Op = { kind: 'create'; name: string } | { kind: 'delete'; pick: number } | { kind: 'delete_unknown' };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('create' as const), name: fc.constantFrom('alpha', 'beta', 'gamma', 'delta') }),
    fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
    fc.constant({ kind: 'delete_unknown' as const }),
  );

  it('the list always equals the model, in creation order, and every answer is the expected one', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        const o = await owner();
        const model: Array<{ id: string; name: string }> = [];
        const deleted: string[] = [];
        for (const step of ops) {
          if (step.kind === 'create') {
            const res = await server.request('POST', fnPath(o.phone), { key: o.key, body: { name: step.name, url: `${FN_URL}/${step.name}` } });
            if (model.some((f) => f.name === step.name)) {
              expectError(res, 409, 'conflict', 'function_exists');
            } else {
              expect(res.status).toBe(201);
              model.push({ id: res.body.function.id, name: step.name });
            }
          } else if (step.kind === 'delete' && model.length > 0) {
            const [gone] = model.splice(step.pick % model.length, 1);
            const res = await server.request('DELETE', fnPath(o.phone, gone!.id), { key: o.key });
            expect(res.body).toEqual({ function_id: gone!.id, deleted: true });
            deleted.push(gone!.id);
          } else {
            const id = deleted[0] ?? 'fn_neverexisted000000000000';
            expectError(await server.request('DELETE', fnPath(o.phone, id), { key: o.key }), 404, 'not_found', 'function_not_found');
          }
          const shown = await list(o.key, o.phone);
          expect(shown.count).toBe(model.length);
          expect(shown.functions.map((f) => ({ id: f.id, name: f.name }))).toEqual(model);
        }
      }),
      { numRuns: 30 },
    );
  });
});
