// Caller context is account data: another account's number answers every callers route
// with 404 phone_number_not_found, exactly like a number that does not exist, and its
// records can be neither read, listed, changed nor erased.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from './helpers/server.ts';
import { createAgent, importTwilioNumber, startCarrierSims, type CarrierSims } from './helpers/fixtures.ts';

let sims: CarrierSims;
let server: TestServer;
let mallory: { key: string; number: string };
let victim: { key: string; number: string };
const CALLER = '+16505550123';
const MISSING = '+19995550100';

const enc = encodeURIComponent;
const base = (num: string) => `/v1/phone-numbers/${enc(num)}/callers`;

beforeAll(async () => {
  sims = await startCarrierSims();
  server = await startTestServer(sims.env);
  const setup = async () => {
    const { key } = await server.newAccount();
    const number = await importTwilioNumber(server, sims, key, await createAgent(server, key));
    return { key, number };
  };
  mallory = await setup();
  victim = await setup();
  const res = await server.request('PUT', `${base(victim.number)}/${enc(CALLER)}`, {
    key: victim.key,
    body: { name: 'Victim Caller', email: 'private@example.com', reference_id: 'SECRET-1' },
  });
  expect(res.status).toBe(200);
});
afterAll(async () => {
  await server?.close();
  await sims?.close();
});

const victimState = async () => ({
  list: (await server.request('GET', base(victim.number), { key: victim.key })).body,
  one: (await server.request('GET', `${base(victim.number)}/${enc(CALLER)}`, { key: victim.key })).body,
});

/** Every route of the sub-resource, aimed at a number in the path. */
const routes: [string, (num: string) => [string, string, unknown]][] = [
  ['PUT', (n) => ['PUT', `${base(n)}/${enc(CALLER)}`, { name: 'Overwritten' }]],
  ['GET one', (n) => ['GET', `${base(n)}/${enc(CALLER)}`, undefined]],
  ['GET list', (n) => ['GET', base(n), undefined]],
  ['DELETE', (n) => ['DELETE', `${base(n)}/${enc(CALLER)}`, undefined]],
  ['import', (n) => ['POST', `${base(n)}/import`, { callers: [{ caller_number: CALLER, name: 'Imported' }] }]],
];

describe('another account’s number', () => {
  it.each(routes)('%s answers 404 phone_number_not_found, the same as a missing number, and changes nothing', async (_, build) => {
    const before = await victimState();
    const [method, path, body] = build(victim.number);
    const foreign = await server.request(method, path, { key: mallory.key, body });
    expectError(foreign, 404, 'not_found', 'phone_number_not_found');

    const [m2, p2, b2] = build(MISSING);
    const missing = await server.request(m2, p2, { key: mallory.key, body: b2 });
    expectError(missing, 404, 'not_found', 'phone_number_not_found');
    // Indistinguishable: the same envelope once the number itself is taken out.
    expect(JSON.parse(foreign.text.replaceAll(victim.number, 'N'))).toEqual(JSON.parse(missing.text.replaceAll(MISSING, 'N')));
    expect(foreign.text).not.toContain('Victim');

    expect(await victimState()).toEqual(before);
  });

  it('left the victim’s record whole', async () => {
    const { one, list } = await victimState();
    expect(one.caller.context).toEqual({ name: 'Victim Caller', email: 'private@example.com', reference_id: 'SECRET-1' });
    expect(list.count).toBe(1);
  });
});

describe('the same caller on each account', () => {
  it('is a separate record that neither account can see from the other', async () => {
    const own = `${base(mallory.number)}/${enc(CALLER)}`;
    expectError(await server.request('GET', own, { key: mallory.key }), 404, 'not_found', 'caller_not_found');
    expect((await server.request('GET', base(mallory.number), { key: mallory.key })).body).toEqual({ callers: [], count: 0, limit: 25, offset: 0 });

    const put = await server.request('PUT', own, { key: mallory.key, body: { name: 'Mallory’s view' } });
    expect(put.body.caller).toMatchObject({ phone_number: mallory.number, context: { name: 'Mallory’s view' } });
    const imported = await server.request('POST', `${base(mallory.number)}/import`, {
      key: mallory.key,
      body: { callers: [{ caller_number: CALLER, email: 'mallory@example.com' }] },
    });
    expect(imported.body).toEqual({ phone_number: mallory.number, imported: 1 });

    const mine = (await server.request('GET', base(mallory.number), { key: mallory.key })).body;
    expect(mine.count).toBe(1);
    expect(mine.callers[0].context).toEqual({ name: 'Mallory’s view', email: 'mallory@example.com' });
    expect((await server.request('DELETE', own, { key: mallory.key })).status).toBe(200);

    const { one } = await victimState();
    expect(one.caller.context).toEqual({ name: 'Victim Caller', email: 'private@example.com', reference_id: 'SECRET-1' });
  });

  it('the victim sees the same 404 for the attacker’s number', async () => {
    expectError(await server.request('GET', base(mallory.number), { key: victim.key }), 404, 'not_found', 'phone_number_not_found');
  });
});
