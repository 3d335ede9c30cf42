// Cross-account isolation of integrations and custom functions: another account's
// number, agent or function id answers exactly like one that does not exist, on
// every route and method, and the owner's settings stay as they were.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const enc = encodeURIComponent;
const NUMBER_KINDS: Array<[kind: string, body: Record<string, unknown>]> = [
  ['webhook', { url: 'https://a.example.com/webhook' }],
  ['webhook2', { url: 'https://a.example.com/webhook2' }],
  ['automation', { post_call_url: 'https://a.example.com/post', in_call_url: 'https://a.example.com/live' }],
  ['precall', { url: 'https://a.example.com/precall' }],
  ['crm', { pit: 'owner-crm-token', location_id: 'loc_owner', calendar_id: 'cal_owner' }],
];
const INTRUDER_BODIES: Record<string, Record<string, unknown>> = {
  webhook: { url: 'https://evil.example.com/w' },
  webhook2: { url: 'https://evil.example.com/w2' },
  automation: { post_call_url: 'https://evil.example.com/post' },
  precall: { url: 'https://evil.example.com/pre' },
  crm: { pit: 'evil', location_id: 'loc_evil' },
};

interface Party {
  key: string;
  agentId: string;
  phone: string;
}

async function party(): Promise<Party> {
  const { key } = await server.newAccount();
  const agentId = await createAgent(server, key);
  const phone = await importTwilioNumber(server, sims, key, agentId);
  return { key, agentId, phone };
}

describe('integrations of another account', () => {
  let owner: Party;
  let intruder: Party;
  let functionId: string;
  /** Every GET the owner can make, with its answer before the intruder tries anything. */
  let snapshot: Array<[path: string, body: unknown]>;

  const ownerReads = () => [
    ...NUMBER_KINDS.map(([kind]) => `/v1/integrations/${kind}/number/${enc(owner.phone)}`),
    `/v1/integrations/precall/agent/${owner.agentId}`,
    `/v1/integrations/custom-functions/number/${enc(owner.phone)}`,
  ];

  beforeAll(async () => {
    [owner, intruder] = await Promise.all([party(), party()]);
    for (const [kind, body] of NUMBER_KINDS) {
      const res = await server.request('PUT', `/v1/integrations/${kind}/number/${enc(owner.phone)}`, { key: owner.key, body });
      expect(res.status).toBe(200);
    }
    expect((await server.request('PUT', `/v1/integrations/precall/agent/${owner.agentId}`, { key: owner.key, body: { url: 'https://a.example.com/agent' } })).status).toBe(200);
    const fn = await server.request('POST', `/v1/integrations/custom-functions/number/${enc(owner.phone)}`, {
      key: owner.key,
      body: { name: 'owner_tool', url: 'https://a.example.com/tool' },
    });
    expect(fn.status).toBe(201);
    functionId = fn.body.function.id;
    snapshot = [];
    for (const path of ownerReads()) snapshot.push([path, (await server.request('GET', path, { key: owner.key })).body]);
  });

  async function expectOwnerUnchanged(): Promise<void> {
    for (const [path, body] of snapshot) {
      expect((await server.request('GET', path, { key: owner.key })).body, path).toEqual(body);
    }
    // The snapshot holds real settings, so "unchanged" cannot pass by everything being empty.
    for (const [path, body] of snapshot) {
      const b = body as { is_set?: boolean; count?: number };
      expect(b.is_set === true || b.count === 1, path).toBe(true);
    }
  }

  it.each(NUMBER_KINDS)('%s: GET, PUT and DELETE on the owner number are 404 number_not_found', async (kind) => {
    const path = `/v1/integrations/${kind}/number/${enc(owner.phone)}`;
    expectError(await server.request('GET', path, { key: intruder.key }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('PUT', path, { key: intruder.key, body: INTRUDER_BODIES[kind] }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('DELETE', path, { key: intruder.key }), 404, 'not_found', 'number_not_found');
    await expectOwnerUnchanged();
  });

  it('foreign answers are indistinguishable from missing ones', async () => {
    const foreign = await server.request('GET', `/v1/integrations/webhook/number/${enc(owner.phone)}`, { key: intruder.key });
    const missing = await server.request('GET', `/v1/integrations/webhook/number/${enc('+14155550000')}`, { key: intruder.key });
    expect(foreign.status).toBe(missing.status);
    expect(foreign.body).toEqual(missing.body);
    const foreignAgent = await server.request('GET', `/v1/integrations/precall/agent/${owner.agentId}`, { key: intruder.key });
    const missingAgent = await server.request('GET', '/v1/integrations/precall/agent/agent_nosuchagent00000000000', { key: intruder.key });
    expect(foreignAgent.body).toEqual(missingAgent.body);
  });

  it('pre-call on the owner agent: GET, PUT and DELETE are 404 agent_not_found', async () => {
    const path = `/v1/integrations/precall/agent/${owner.agentId}`;
    expectError(await server.request('GET', path, { key: intruder.key }), 404, 'not_found', 'agent_not_found');
    expectError(await server.request('PUT', path, { key: intruder.key, body: { url: 'https://evil.example.com/pre' } }), 404, 'not_found', 'agent_not_found');
    expectError(await server.request('DELETE', path, { key: intruder.key }), 404, 'not_found', 'agent_not_found');
    await expectOwnerUnchanged();
  });

  it('custom functions on the owner number: POST, GET and DELETE are 404 number_not_found', async () => {
    const base = `/v1/integrations/custom-functions/number/${enc(owner.phone)}`;
    expectError(await server.request('POST', base, { key: intruder.key, body: { name: 'evil_tool', url: 'https://evil.example.com/t' } }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('GET', base, { key: intruder.key }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('DELETE', `${base}/${functionId}`, { key: intruder.key }), 404, 'not_found', 'number_not_found');
    await expectOwnerUnchanged();
  });

  it("the owner's function id through the intruder's own number is 404 function_not_found", async () => {
    const path = `/v1/integrations/custom-functions/number/${enc(intruder.phone)}/${functionId}`;
    expectError(await server.request('DELETE', path, { key: intruder.key }), 404, 'not_found', 'function_not_found');
    await expectOwnerUnchanged();
  });

  it("the intruder's own settings and names do not touch the owner's", async () => {
    for (const [kind] of NUMBER_KINDS) {
      const res = await server.request('PUT', `/v1/integrations/${kind}/number/${enc(intruder.phone)}`, { key: intruder.key, body: INTRUDER_BODIES[kind] });
      expect(res.status).toBe(200);
      expect((await server.request('DELETE', `/v1/integrations/${kind}/number/${enc(intruder.phone)}`, { key: intruder.key })).status).toBe(200);
    }
    // The same function name is free on another account's number.
    const fn = await server.request('POST', `/v1/integrations/custom-functions/number/${enc(intruder.phone)}`, {
      key: intruder.key,
      body: { name: 'owner_tool', url: 'https://evil.example.com/t' },
    });
    expect(fn.status).toBe(201);
    expect((await server.request('GET', `/v1/integrations/precall/agent/${intruder.agentId}`, { key: intruder.key })).body.is_set).toBe(false);
    await expectOwnerUnchanged();
  });
});
