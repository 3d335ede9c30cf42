// Account isolation of phone numbers over real HTTP: another account's number looks
// exactly like a missing one on GET, PATCH and DELETE, never shows in a list, cannot be
// re-imported (409 that reveals nothing), and its agent cannot be referenced.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, importTelnyxNumber, importTwilioNumber, nextNumber, startCarrierSims, type CarrierSims } from './helpers/fixtures.ts';
import { expectError, startTestServer, type TestServer } from './helpers/server.ts';
import { twilioSid } from './sim/twilio-sim.ts';

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

async function owner() {
  const acct = await server.newAccount();
  const agentId = await createAgent(server, acct.key);
  const twilio = await importTwilioNumber(server, sims, acct.key, agentId);
  const telnyx = await importTelnyxNumber(server, sims, acct.key, agentId);
  return { ...acct, agentId, numbers: [twilio, telnyx] };
}

describe('another account’s numbers', () => {
  it('answer GET, PATCH and DELETE exactly like a number that does not exist, and stay unchanged', async () => {
    const a = await owner();
    const b = await server.newAccount();
    const missing = nextNumber();
    const strip = (body: { error: Record<string, unknown> }) => body.error;
    for (const n of a.numbers) {
      const before = (await server.request('GET', path(n), { key: a.key })).body;
      const requests: Array<[string, unknown]> = [['GET', undefined], ['PATCH', { custom_prompt: 'hijack', agent_id: null }], ['DELETE', undefined]];
      for (const [method, body] of requests) {
        const foreign = await server.request(method, path(n), { key: b.key, body });
        const absent = await server.request(method, path(missing), { key: b.key, body });
        expectError(foreign, 404, 'not_found', 'number_not_found');
        expect(strip(foreign.body)).toEqual(strip(absent.body));
      }
      expect((await server.request('GET', path(n), { key: a.key })).body).toEqual(before);
    }
  });

  it('never appear in the other account’s list, even filtered by the owner’s agent', async () => {
    const a = await owner();
    const b = await server.newAccount();
    const bAgent = await createAgent(server, b.key);
    const own = await importTwilioNumber(server, sims, b.key, bAgent);
    const res = await server.request('GET', '/v1/phone-numbers', { key: b.key });
    expect(res.body).toMatchObject({ count: 1, phone_numbers: [{ phone_number: own }] });
    expect((await server.request('GET', `/v1/phone-numbers?agent_id=${a.agentId}`, { key: b.key })).body).toEqual({ phone_numbers: [], count: 0 });
    expect((await server.request('GET', '/v1/phone-numbers?limit=100', { key: b.key })).body.count).toBe(1);
    expect((await server.request('GET', '/v1/phone-numbers', { key: a.key })).body.count).toBe(2);
  });

  it('cannot be imported by another account: 409 with no details, before any carrier call', async () => {
    const a = await owner();
    const b = await server.newAccount();
    const bAgent = await createAgent(server, b.key);
    // B even holds valid carrier credentials that own the number at the carrier.
    const sid = twilioSid('AC');
    const token = twilioSid('').slice(0, 32);
    sims.twilio.addAccount(sid, token);
    sims.twilio.addNumber(sid, a.numbers[0]!);
    const before = { twilio: sims.twilio.requests.length, telnyx: sims.telnyx.requests.length };
    for (const n of a.numbers) {
      const res = await server.request('POST', '/v1/phone-numbers', {
        key: b.key,
        body: { phone_number: n, agent_id: bAgent, provider: 'twilio', twilio_account_sid: sid, twilio_auth_token: token },
      });
      expectError(res, 409, 'conflict', 'number_already_imported');
      expect(res.body.error.details).toBeUndefined();
      for (const secret of [a.agentId, a.accountId, a.keyId]) expect(res.text).not.toContain(secret);
    }
    expect({ twilio: sims.twilio.requests.length, telnyx: sims.telnyx.requests.length }).toEqual(before);
    expect((await server.request('GET', '/v1/phone-numbers', { key: b.key })).body.count).toBe(0);
    const still = await server.request('GET', path(a.numbers[0]!), { key: a.key });
    expect(still.body.phone_number.agent_id).toBe(a.agentId);
  });

  it('cannot be attached to, or imported onto, another account’s agent: 400 agent_not_found like a missing agent', async () => {
    const a = await owner();
    const b = await server.newAccount();
    const bAgent = await createAgent(server, b.key);
    const bNumber = await importTwilioNumber(server, sims, b.key, bAgent);
    const before = (await server.request('GET', path(bNumber), { key: b.key })).body;

    const foreign = await server.request('PATCH', path(bNumber), { key: b.key, body: { agent_id: a.agentId } });
    const absent = await server.request('PATCH', path(bNumber), { key: b.key, body: { agent_id: 'agent_notthere' } });
    expectError(foreign, 400, 'invalid_request', 'agent_not_found');
    expect(foreign.body.error.details).toEqual(absent.body.error.details);
    expect(foreign.body.error.message.replace(a.agentId, 'X')).toBe(absent.body.error.message.replace('agent_notthere', 'X'));
    expect((await server.request('GET', path(bNumber), { key: b.key })).body).toEqual(before);

    const twilioCount = sims.twilio.requests.length;
    const imp = await server.request('POST', '/v1/phone-numbers', {
      key: b.key,
      body: { phone_number: nextNumber(), agent_id: a.agentId, provider: 'twilio', twilio_account_sid: twilioSid('AC'), twilio_auth_token: 'x' },
    });
    expectError(imp, 400, 'invalid_request', 'agent_not_found');
    expect(sims.twilio.requests.length).toBe(twilioCount);
  });

  it('holds for any interleaving of owner and stranger requests (model)', async () => {
    const a = await owner();
    const op = fc.constantFrom<'get' | 'patch' | 'delete' | 'list'>('get', 'patch', 'delete', 'list');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(op, fc.constantFrom(0, 1), fc.string({ maxLength: 8 })), { minLength: 1, maxLength: 5 }), async (ops) => {
        const stranger = await server.newAccount();
        const snapshot = await Promise.all(a.numbers.map(async (n) => (await server.request('GET', path(n), { key: a.key })).body));
        for (const [kind, which, prompt] of ops) {
          const n = a.numbers[which]!;
          if (kind === 'list') {
            expect((await server.request('GET', '/v1/phone-numbers', { key: stranger.key })).body).toEqual({ phone_numbers: [], count: 0 });
            continue;
          }
          const method = kind === 'get' ? 'GET' : kind === 'patch' ? 'PATCH' : 'DELETE';
          const res = await server.request(method, path(n), { key: stranger.key, body: kind === 'patch' ? { custom_prompt: prompt } : undefined });
          expectError(res, 404, 'not_found', 'number_not_found');
        }
        const after = await Promise.all(a.numbers.map(async (n) => (await server.request('GET', path(n), { key: a.key })).body));
        expect(after).toEqual(snapshot);
      }),
      { numRuns: 30 },
    );
  });
});
