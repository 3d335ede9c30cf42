// Carrier B routes a call event by the number it names, not by the events token it
// arrived on (issue 11, defect 2). A Call Control application has ONE webhook URL, so
// when two accounts import numbers on the same application, the second import points
// that URL at its own number's token and every event of the application, calls to the
// first account's number included, arrives on the second account's token. The call
// must still be recorded in and answered by the account that owns the number called.
// And a token never vouches for a number outside its own application: an event naming
// one (or a number nobody imported, or signed for another key) is 403 with nothing written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateTelnyxKeyPair, signTelnyx } from '../voice/carriers/telnyx-signature.ts';
import { encodeClientState } from '../voice/carriers/telnyx-voice.ts';
import { expectError, type TestResponse } from './helpers/server.ts';
import { createAgent, nextNumber } from './helpers/fixtures.ts';
import { callReaches, eventually, getCall, PUBLIC_BASE, rowCounts, startCallStack, type CallStack } from './helpers/calls.ts';
import { twilioSid } from './sim/twilio-sim.ts';

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack();
});
afterAll(async () => {
  await stack.close();
});

interface Tenant {
  key: string;
  accountId: string;
  agentId: string;
  number: string;
  /** The carrier B API key this account imported with. */
  apiKey: string;
  token: string;
}

const newApiKey = () => `KEY${twilioSid('').slice(0, 32).toUpperCase()}`;

/**
 * A new account of ours importing a new number of the carrier account behind `apiKey`
 * onto `connectionId`, with `publicKey` (default: the carrier account's real one).
 */
async function tenant(apiKey: string, connectionId: string, publicKey?: string): Promise<Tenant> {
  const { server, sims } = stack;
  const { key, accountId } = await server.newAccount();
  const agentId = await createAgent(server, key, { name: `Agent of ${accountId}` });
  const number = nextNumber();
  sims.telnyx.addNumber(apiKey, number);
  const res = await server.request('POST', '/v1/phone-numbers', {
    key,
    body: {
      phone_number: number,
      agent_id: agentId,
      provider: 'telnyx',
      telnyx_api_key: apiKey,
      telnyx_connection_id: connectionId,
      telnyx_public_key: publicKey ?? sims.telnyx.publicKeyOf(apiKey),
    },
  });
  expect(res.status, res.text).toBe(201);
  const token = server.storage.numbers.get(accountId, number)!.events_token!;
  return { key, accountId, agentId, number, apiKey, token };
}

const listCalls = async (t: Tenant): Promise<string[]> => {
  const res = await stack.server.request('GET', '/v1/calls', { key: t.key });
  expect(res.status).toBe(200);
  return res.body.calls.map((c: { call_id: string }) => c.call_id);
};

/** The application's one webhook URL now carries this tenant's token. */
function expectWebhookOf(connectionId: string, t: Tenant): void {
  expect(stack.sims.telnyx.callControlApplications.get(connectionId)!.webhook_event_url).toBe(`${PUBLIC_BASE}/carrier/telnyx/events/${t.token}`);
}

const envelope = (eventType: string, payload: Record<string, unknown>) =>
  JSON.stringify({
    data: { record_type: 'event', event_type: eventType, id: crypto.randomUUID(), occurred_at: new Date().toISOString(), payload },
    meta: { attempt: 1 },
  });

/** Posts `body` to a token's events URL, signed with the carrier account's key behind `apiKey`. */
function postSigned(token: string, body: string, apiKey: string): Promise<TestResponse> {
  const ts = Math.floor(Date.now() / 1000);
  const key = stack.sims.telnyx.state.keyPairs.get(apiKey)!.privateKey;
  return stack.server.request('POST', `/carrier/telnyx/events/${token}`, {
    rawBody: body,
    headers: { 'content-type': 'application/json', 'telnyx-timestamp': String(ts), 'telnyx-signature-ed25519': signTelnyx(key, body, ts) },
  });
}

const incoming = (to: string) =>
  envelope('call.initiated', {
    call_control_id: `v3:${twilioSid('')}`,
    call_leg_id: crypto.randomUUID(),
    call_session_id: crypto.randomUUID(),
    direction: 'incoming',
    state: 'parked',
    client_state: null,
    from: nextNumber(),
    to,
  });

describe('two accounts, one Call Control application', () => {
  // One carrier account with two API keys (one per customer of ours), one application.
  const carrierKeyA = newApiKey();
  const carrierKeyB = newApiKey();
  let connectionId: string;
  let a: Tenant;
  let b: Tenant;
  beforeAll(async () => {
    stack.sims.telnyx.addApiKey(carrierKeyA);
    stack.sims.telnyx.addApiKey(carrierKeyB, { sameAccountAs: carrierKeyA });
    connectionId = stack.sims.telnyx.addConnection(carrierKeyA);
    a = await tenant(carrierKeyA, connectionId);
    b = await tenant(carrierKeyB, connectionId);
  });

  it('records a call to A’s number in A and answers it with A’s agent and A’s credentials, though it arrives on B’s token', async () => {
    expectWebhookOf(connectionId, b);
    const handle = await stack.sims.telnyx.placeInboundCall({ from: nextNumber(), to: a.number, apiKey: carrierKeyA });
    expect(handle.call.webhooks[0]!.url).toBe(`${PUBLIC_BASE}/carrier/telnyx/events/${b.token}`);
    expect(handle.call.webhooks[0]!.status).toBe(200);

    // Recorded in A, on A's number and agent; B sees nothing of it.
    expect(await listCalls(b)).not.toContain(handle.id);
    expectError(await getCall(stack.server, b.key, handle.id), 404, 'not_found', 'call_not_found');
    const record = await callReaches(stack.server, a.key, handle.id, 'in-progress');
    expect(record).toMatchObject({ call_id: handle.id, agent_id: a.agentId, direction: 'inbound', to_number: a.number });
    expect(await listCalls(a)).toContain(handle.id);

    // Answered with a media stream, through A's API key.
    expect(handle.call.commands.map((c) => c.action)).toEqual(['answer']);
    const answer = stack.sims.telnyx.requests.find((r) => r.method === 'POST' && r.path === `/v2/calls/${encodeURIComponent(handle.id)}/actions/answer`);
    expect(answer?.headers.authorization).toBe(`Bearer ${carrierKeyA}`);

    // Its later events (client_state names A's call) arrive on B's token too and end A's call.
    await handle.media();
    await handle.hangup();
    expect(handle.call.webhooks.find((w) => w.eventType === 'call.hangup')!.url).toBe(`${PUBLIC_BASE}/carrier/telnyx/events/${b.token}`);
    await callReaches(stack.server, a.key, handle.id, 'completed');
    expect(await listCalls(b)).not.toContain(handle.id);
  });

  it('still routes B’s own calls to B', async () => {
    const handle = await stack.sims.telnyx.placeInboundCall({ from: nextNumber(), to: b.number, apiKey: carrierKeyB });
    const record = await callReaches(stack.server, b.key, handle.id, 'in-progress');
    expect(record).toMatchObject({ agent_id: b.agentId, to_number: b.number });
    expect(await listCalls(a)).not.toContain(handle.id);
    await handle.hangup();
    await callReaches(stack.server, b.key, handle.id, 'completed');
  });
});

describe('what a token does not vouch for', () => {
  const carrierKey = newApiKey();
  let connectionId: string;
  let otherConnectionId: string;
  let wrongKeyed: Tenant;
  let last: Tenant;
  let elsewhere: Tenant;
  beforeAll(async () => {
    stack.sims.telnyx.addApiKey(carrierKey);
    connectionId = stack.sims.telnyx.addConnection(carrierKey);
    otherConnectionId = stack.sims.telnyx.addConnection(carrierKey);
    // Imported with a public key that is not the carrier account's.
    wrongKeyed = await tenant(carrierKey, connectionId, generateTelnyxKeyPair().publicKey);
    last = await tenant(carrierKey, connectionId);
    // Same carrier account, another application.
    elsewhere = await tenant(carrierKey, otherConnectionId);
  });

  /** Runs `send`, expects 403 invalid_signature and not one row added anywhere. */
  async function expectRefused(send: () => Promise<TestResponse>): Promise<void> {
    // The post-call analyses of the calls ended above delete their jobs when done, in the
    // background: counted while one is still running (on a loaded machine it can be), a
    // job finishing during `send` would look like a change. Count once they are done.
    await eventually(() => (rowCounts(stack.server)['analysis_jobs'] === 0 ? true : undefined), 30_000, 'the earlier calls’ analyses done');
    const before = rowCounts(stack.server);
    expectError(await send(), 403, 'permission_error', 'invalid_signature');
    expect(rowCounts(stack.server)).toEqual(before);
  }

  it('verifies the signature with the key of the number the event names, not the token’s number', async () => {
    expectWebhookOf(connectionId, last);
    const before = rowCounts(stack.server);
    const handle = await stack.sims.telnyx.placeInboundCall({ from: nextNumber(), to: wrongKeyed.number, apiKey: carrierKey });
    expect(handle.call.webhooks[0]!.url).toBe(`${PUBLIC_BASE}/carrier/telnyx/events/${last.token}`);
    expect(handle.call.webhooks[0]!.status).toBe(403);
    expect(handle.call.commands).toEqual([]);
    expect(rowCounts(stack.server)).toEqual(before);
    expect(await listCalls(wrongKeyed)).toEqual([]);
    expect(await listCalls(last)).toEqual([]);
    await handle.hangup();
  });

  it('refuses an incoming call naming a number of another application, or a number nobody imported', async () => {
    await expectRefused(() => postSigned(last.token, incoming(elsewhere.number), carrierKey));
    await expectRefused(() => postSigned(last.token, incoming(nextNumber()), carrierKey));
    expect(await listCalls(last)).toEqual([]);
    expect(await listCalls(elsewhere)).toEqual([]);
  });

  it('refuses an event of another application’s call; that call goes on and ends normally', async () => {
    const handle = await stack.sims.telnyx.placeInboundCall({ from: nextNumber(), to: elsewhere.number, apiKey: carrierKey });
    const callId = (await eventually(() => stack.server.storage.calls.getByCarrierCallId(elsewhere.accountId, handle.id)?.internal_id ?? undefined))!;
    await callReaches(stack.server, elsewhere.key, handle.id, 'in-progress');
    const hangup = envelope('call.hangup', {
      call_control_id: handle.id,
      client_state: encodeClientState(callId),
      from: handle.call.from,
      to: elsewhere.number,
      hangup_cause: 'normal_clearing',
      hangup_source: 'caller',
    });
    await expectRefused(() => postSigned(last.token, hangup, carrierKey));
    expect((await getCall(stack.server, elsewhere.key, handle.id)).body.call_status).toBe('in-progress');
    await handle.hangup();
    await callReaches(stack.server, elsewhere.key, handle.id, 'completed');
  });
});
