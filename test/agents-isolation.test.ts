// Account isolation: another account's agent ids behave exactly like ids that do not
// exist (404 agent_not_found on every route), never show in its list, and the owner's
// agent is untouched by the attempts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from './helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('agents of another account', () => {
  it('are 404 agent_not_found on GET, PATCH, PUT and DELETE, and absent from the list', async () => {
    const owner = await server.newAccount();
    const intruder = await server.newAccount();
    const created = await server.request('POST', '/v1/agents', { key: owner.key, body: { name: 'Private', is_active: false } });
    expect(created.status).toBe(201);
    const agent = created.body;
    const own = await server.request('POST', '/v1/agents', { key: intruder.key, body: { name: 'Mine' } });
    const missing = 'agent_000000000000000000000000';

    for (const id of [agent.agent_id, missing]) {
      const path = `/v1/agents/${id}`;
      const responses = [
        await server.request('GET', path, { key: intruder.key }),
        await server.request('PATCH', path, { key: intruder.key, body: { name: 'Taken' } }),
        await server.request('PUT', path, { key: intruder.key, body: { name: 'Taken' } }),
        await server.request('DELETE', path, { key: intruder.key }),
      ];
      for (const res of responses) {
        expectError(res, 404, 'not_found', 'agent_not_found');
        // Foreign and missing read the same, message included.
        expect(res.body.error).toEqual(responses[0]!.body.error);
      }
    }

    for (const q of ['', '?is_active=false', '?limit=100']) {
      const list = await server.request('GET', `/v1/agents${q}`, { key: intruder.key });
      expect(list.status).toBe(200);
      expect(list.body.agents.map((a: { agent_id: string }) => a.agent_id)).not.toContain(agent.agent_id);
    }
    const intruderList = await server.request('GET', '/v1/agents', { key: intruder.key });
    expect(intruderList.body.count).toBe(1);
    expect(intruderList.body.agents[0].agent_id).toBe(own.body.agent_id);

    // The owner still sees it unchanged, and does not see the intruder's agent.
    expect((await server.request('GET', `/v1/agents/${agent.agent_id}`, { key: owner.key })).body).toEqual(agent);
    const ownerList = await server.request('GET', '/v1/agents', { key: owner.key });
    expect(ownerList.body.agents.map((a: { agent_id: string }) => a.agent_id)).toEqual([agent.agent_id]);
    expectError(await server.request('GET', `/v1/agents/${own.body.agent_id}`, { key: owner.key }), 404, 'not_found', 'agent_not_found');
  });

  it('a second key of the same account sees and changes the agent, and api_key_id keeps the creator', async () => {
    const owner = await server.newAccount();
    const second = await server.request('POST', '/v1/keys', { key: owner.key, body: { name: 'second' } });
    expect(second.status).toBe(201);
    const secondKey = `${second.body.key_id}:${second.body.key_secret}`;
    const agent = (await server.request('POST', '/v1/agents', { key: owner.key, body: {} })).body;
    const res = await server.request('PATCH', `/v1/agents/${agent.agent_id}`, { key: secondKey, body: { name: 'Renamed' } });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Renamed');
    expect(res.body.api_key_id).toBe(owner.keyId);
  });
});
