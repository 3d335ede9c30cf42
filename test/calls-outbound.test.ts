// POST /v1/calls/outbound end to end with both carrier simulators: every check in
// api.md's order (a request failing at step n also breaks the conditions of later
// steps, so the code proves which check ran first) and that a refused request changed
// nothing; the choice of the dialing number; then, for each carrier, real calls going
// initiated → ringing → in-progress → final with the right ended_reason, and a carrier
// refusal answered 502 with no record left.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, type TestResponse } from './helpers/server.ts';
import { createAgent, nextNumber } from './helpers/fixtures.ts';
import { callReaches, dial, importNumber, isFinal, newCustomer, rowCounts, startCallStack, type CallStack, type Customer, type Provider } from './helpers/calls.ts';

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack();
});
afterAll(async () => {
  await stack.close();
});

const outbound = (key: string, body: unknown): Promise<TestResponse> => stack.server.request('POST', '/v1/calls/outbound', { key, body });
const dialRequests = (): number =>
  stack.sims.twilio.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/Calls.json')).length +
  stack.sims.telnyx.requests.filter((r) => r.method === 'POST' && r.path === '/v2/calls').length;

describe('validation, in the order of api.md', () => {
  let c: Customer;
  let otherAgentNumber: string;
  let disabledNumber: string;
  let noNumberAgent: string;
  let disabledOnlyAgent: string;
  let legacyAgent: string;
  let foreignAgent: string;
  beforeAll(async () => {
    c = await newCustomer(stack, 'twilio');
    const other = await createAgent(stack.server, c.key);
    otherAgentNumber = (await importNumber(stack, c.key, other, 'twilio')).number;
    disabledNumber = (await importNumber(stack, c.key, c.agentId, 'twilio', { outbound_enabled: false })).number;
    noNumberAgent = await createAgent(stack.server, c.key);
    disabledOnlyAgent = await createAgent(stack.server, c.key);
    await importNumber(stack, c.key, disabledOnlyAgent, 'telnyx', { outbound_enabled: false });
    legacyAgent = await createAgent(stack.server, c.key, { phone_number: nextNumber() });
    const stranger = await stack.server.newAccount();
    foreignAgent = await createAgent(stack.server, stranger.key);
  });

  async function refused(body: Record<string, unknown>, status: number, type: string, code: string, field: string): Promise<void> {
    const before = dialRequests();
    const res = await outbound(c.key, body);
    expectError(res, status, type, code);
    expect(res.body.error.details.field).toBe(field);
    // Nothing happened: no call dialed, no record.
    expect(dialRequests()).toBe(before);
    expect((await stack.server.request('GET', '/v1/calls', { key: c.key })).body.count).toBe(0);
  }

  const TO = '+14155550123';
  const UNKNOWN_AGENT = 'agent_doesnotexist000000000';

  it('(1) agent_id, to_number and prompt must be present, and the prompt not blank: missing_field before every later check', async () => {
    await refused({ to_number: 'nonsense', prompt: 'x' }, 400, 'invalid_request', 'missing_field', 'agent_id');
    // `to` is not `to_number`: missing, even though the agent is unknown too.
    await refused({ agent_id: UNKNOWN_AGENT, to: TO, prompt: 'x' }, 400, 'invalid_request', 'missing_field', 'to_number');
    await refused({ agent_id: UNKNOWN_AGENT, to_number: 'nonsense', from_number: '+1999' }, 400, 'invalid_request', 'missing_field', 'prompt');
    await refused({ agent_id: UNKNOWN_AGENT, to_number: 'nonsense', prompt: ' \n\t ' }, 400, 'invalid_request', 'missing_field', 'prompt');
    await refused({ agent_id: null, to_number: TO, prompt: 'x' }, 400, 'invalid_request', 'missing_field', 'agent_id');
  });

  it('(2) to_number must be E.164: invalid_phone_format before the agent is looked at', async () => {
    for (const bad of ['4155550123', '+04155550123', '+1', 'call me', '+1 415 555 0123', 14155550123]) {
      await refused({ agent_id: UNKNOWN_AGENT, to_number: bad, prompt: 'x' }, 400, 'invalid_request', 'invalid_phone_format', 'to_number');
    }
  });

  it('(3) the agent must be the account’s: agent_not_found answered 400, missing and foreign alike, before the dialing number', async () => {
    await refused({ agent_id: UNKNOWN_AGENT, to_number: TO, prompt: 'x', from_number: '+19999999999' }, 400, 'invalid_request', 'agent_not_found', 'agent_id');
    await refused({ agent_id: foreignAgent, to_number: TO, prompt: 'x', from_number: '+19999999999' }, 400, 'invalid_request', 'agent_not_found', 'agent_id');
  });

  it('(4) the dialing number: from_number must be outbound-enabled on this agent; without it the agent needs one', async () => {
    const body = { agent_id: c.agentId, to_number: TO, prompt: 'x' };
    await refused({ ...body, from_number: '+19999999999' }, 400, 'invalid_request', 'from_number_not_found', 'from_number');
    await refused({ ...body, from_number: otherAgentNumber }, 400, 'invalid_request', 'from_number_not_found', 'from_number');
    await refused({ ...body, from_number: disabledNumber }, 400, 'invalid_request', 'from_number_not_found', 'from_number');
    await refused({ agent_id: noNumberAgent, to_number: TO, prompt: 'x' }, 400, 'invalid_request', 'agent_missing_phone_number', 'agent_id');
    await refused({ agent_id: disabledOnlyAgent, to_number: TO, prompt: 'x' }, 400, 'invalid_request', 'agent_missing_phone_number', 'agent_id');
    // The legacy agent would fail step (5) too: step (4) speaks first when from_number is wrong.
    await refused({ agent_id: legacyAgent, to_number: TO, prompt: 'x', from_number: '+19999999999' }, 400, 'invalid_request', 'from_number_not_found', 'from_number');
  });

  it('(5) the number dialed from must have carrier credentials: a legacy agent number never imported has none', async () => {
    await refused({ agent_id: legacyAgent, to_number: TO, prompt: 'x' }, 400, 'invalid_request', 'agent_missing_carrier_credentials', 'agent_id');
  });

  it('rejects unknown fields, naming them, once the required ones are right', async () => {
    await refused({ agent_id: c.agentId, to_number: TO, prompt: 'x', priority: 'high' }, 400, 'invalid_request', 'invalid_request', 'priority');
    await refused({ agent_id: c.agentId, to_number: TO, prompt: 'x', dynamic_vars: { n: 1 } }, 400, 'invalid_request', 'invalid_request', 'dynamic_vars.n');
  });

  it('refuses an inactive agent', async () => {
    const agent = await createAgent(stack.server, c.key, { is_active: false });
    await importNumber(stack, c.key, agent, 'twilio');
    await refused({ agent_id: agent, to_number: TO, prompt: 'x' }, 400, 'invalid_request', 'invalid_request', 'agent_id');
  });
});

describe('the dialing number', () => {
  it("is the agent's oldest outbound-enabled number, or exactly from_number", async () => {
    const c = await newCustomer(stack, 'twilio');
    const second = (await importNumber(stack, c.key, c.agentId, 'twilio')).number;
    const first = await dial(stack.server, c, nextNumber());
    expect(first.from).toBe(c.number);
    const chosen = await dial(stack.server, c, nextNumber(), { from_number: second });
    expect(chosen.from).toBe(second);
    const sent = stack.sims.twilio.requests.filter((r) => r.path.endsWith('/Calls.json')).map((r) => r.body['From']);
    expect(sent.slice(-2)).toEqual([c.number, second]);
  });

  it('fills {name} from dynamic_vars and stores the prompt nowhere', async () => {
    const c = await newCustomer(stack, 'telnyx');
    const marker = `Remind-${Date.now()}-about`;
    const created = await dial(stack.server, c, nextNumber(), { prompt: `${marker} {thing} for {who}`, dynamic_vars: { thing: 'the-dentist-visit' } });
    await callReaches(stack.server, c.key, created.call_id, 'in-progress');
    const files = readdirSync(stack.server.dataDir).filter((f) => f.startsWith('switchboard.db'));
    const bytes = Buffer.concat(files.map((f) => readFileSync(join(stack.server.dataDir, f)))).toString('latin1');
    expect(bytes).not.toContain(marker);
    expect(bytes).not.toContain('the-dentist-visit');
    await stack.sims.telnyx.hangup(created.call_id);
  });
});

/** Polls the record until it is final, keeping each status seen in order. */
async function trail(c: Customer, id: string): Promise<{ statuses: string[]; record: any }> {
  const statuses: string[] = [];
  const until = Date.now() + 10_000;
  for (;;) {
    const res = await stack.server.request('GET', `/v1/calls/${encodeURIComponent(id)}`, { key: c.key });
    expect(res.status).toBe(200);
    const s = res.body.call_status as string;
    if (statuses.at(-1) !== s) statuses.push(s);
    if (isFinal(s)) return { statuses, record: res.body };
    if (Date.now() > until) throw new Error(`call ${id} stuck: ${statuses.join(' → ')}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.each<Provider>(['twilio', 'telnyx'])('calls on carrier %s', (provider) => {
  const setScenario = (to: string, s: 'busy' | 'no-answer' | 'failed' | 'machine' | 'reject') =>
    provider === 'twilio' ? stack.sims.twilio.scenario(to, s) : stack.sims.telnyx.setScenario(to, s);
  const hangupFarEnd = (id: string) => (provider === 'twilio' ? stack.sims.twilio.hangup(id) : stack.sims.telnyx.hangup(id));

  it('goes initiated → ringing → in-progress → completed, callee_hangup when the callee hangs up', async () => {
    const c = await newCustomer(stack, provider);
    const to = nextNumber();
    const created = await dial(stack.server, c, to);
    expect(created).toEqual({ call_id: expect.any(String), status: 'initiated', to, from: c.number });
    expect(created.call_id).toMatch(provider === 'twilio' ? /^CA[0-9a-f]{32}$/ : /^v3:/);
    const answered = callReaches(stack.server, c.key, created.call_id, 'in-progress');
    const seen = trail(c, created.call_id);
    await answered;
    // The carrier's media stream reached the service and the echo engine plays it back.
    if (provider === 'twilio') {
      const call = stack.sims.twilio.calls.get(created.call_id)!;
      await expect.poll(() => call.stream?.receivedAudio().length ?? 0, { timeout: 5000 }).toBeGreaterThan(0);
    } else {
      const media = await stack.sims.telnyx.call(created.call_id).media();
      await expect.poll(() => media.audio.length, { timeout: 5000 }).toBeGreaterThan(0);
    }
    await hangupFarEnd(created.call_id);
    const { statuses, record } = await seen;
    // The create answer said `initiated` (asserted above); the carrier's first webhook may
    // already have moved the call on before the first GET. Carrier B's ringing is its
    // outgoing call.initiated webhook (Call Control has no ringing event).
    expect(statuses.filter((s) => s !== 'initiated')).toEqual(['ringing', 'in-progress', 'completed']);
    expect(record).toMatchObject({ direction: 'outbound', from_number: c.number, to_number: to, ended_reason: 'callee_hangup', voicemail_detected: false });
    expect(record.started_at).not.toBeNull();
    expect(Date.parse(record.ended_at)).toBeGreaterThanOrEqual(Date.parse(record.started_at));
    expect(record.duration_ms).toBe(Date.parse(record.ended_at) - Date.parse(record.started_at));
    expect(record.charged_minutes).toBe(Math.round((Math.ceil(record.duration_ms / 1000) * 100) / 60) / 100);
  });

  it.each(['busy', 'no-answer', 'failed'] as const)('ends %s with that status and reason when the callee never connects', async (scenario) => {
    const c = await newCustomer(stack, provider);
    const to = nextNumber();
    setScenario(to, scenario);
    const created = await dial(stack.server, c, to);
    const { record } = await trail(c, created.call_id);
    expect(record).toMatchObject({ call_status: scenario, ended_reason: scenario, started_at: null, duration_ms: 0, charged_minutes: 0 });
  });

  it('hangs up on an answering machine the carrier detected, when amd_enabled: voicemail_detected', async () => {
    const c = await newCustomer(stack, provider, { amd_enabled: true });
    const to = nextNumber();
    setScenario(to, 'machine');
    const created = await dial(stack.server, c, to);
    const { record } = await trail(c, created.call_id);
    expect(record).toMatchObject({ call_status: 'completed', ended_reason: 'voicemail_detected', voicemail_detected: true });
    if (provider === 'twilio') expect(stack.sims.twilio.calls.get(created.call_id)!.params['MachineDetection']).toBe('Enable');
    else expect(stack.sims.telnyx.calls.calls.get(created.call_id)!.amd).toBe('detect');
    // We hung up: the carrier has the call over.
    if (provider === 'twilio') expect(await stack.sims.twilio.calls.get(created.call_id)!.ended).toBe('completed');
    else await stack.sims.telnyx.call(created.call_id).waitFor('ended');
  });

  it('answers 502 outbound_failed (outcome rejected) with the carrier’s error when the carrier refuses; the call is recorded failed', async () => {
    const c = await newCustomer(stack, provider);
    const to = nextNumber();
    setScenario(to, 'reject');
    const res = await outbound(c.key, { agent_id: c.agentId, to_number: to, prompt: 'x' });
    expectError(res, 502, 'provider_error', 'outbound_failed');
    expect(res.body.error.details.outcome).toBe('rejected');
    const err = res.body.error.details.carrier_error;
    expect(err).toMatchObject({ carrier: provider, status: provider === 'twilio' ? 400 : 422 });
    expect(err.code).toBe(provider === 'twilio' ? 21211 : '10015');
    expect(typeof err.message).toBe('string');
    // The intent was written before the dial: the record says what became of it.
    const record = (await stack.server.request('GET', `/v1/calls/${res.body.error.details.call_id}`, { key: c.key })).body;
    expect(record).toMatchObject({ call_status: 'failed', ended_reason: 'failed', to_number: to });
    expect((await stack.server.request('GET', '/v1/calls', { key: c.key })).body.count).toBe(1);
  });

  it('answers 502 outbound_failed (outcome unknown, with call_id) when the carrier answers 5xx, and reconciles instead of redialing', async () => {
    const c = await newCustomer(stack, provider);
    const to = nextNumber();
    (provider === 'twilio' ? stack.sims.twilio : stack.sims.telnyx).fail({ status: 503 });
    const res = await outbound(c.key, { agent_id: c.agentId, to_number: to, prompt: 'x' });
    expectError(res, 502, 'provider_error', 'outbound_failed');
    expect(res.body.error.details).toMatchObject({ outcome: 'unknown', call_id: expect.stringMatching(/^call_/) });
    expect(res.body.error.details.carrier_error).toMatchObject({ carrier: provider, status: 503 });
    // The simulated carrier failed before placing it. It is never dialed again: carrier A's
    // call list shows no such call, so it ends failed; carrier B lists only live calls, so
    // the call waits for the carrier's word (or the give-up deadline) still unknown.
    const id = res.body.error.details.call_id as string;
    const dials = () =>
      provider === 'twilio'
        ? stack.sims.twilio.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/Calls.json') && r.body['To'] === to).length
        : stack.sims.telnyx.requests.filter((r) => r.method === 'POST' && r.path === '/v2/calls' && (r.body as { to?: string })['to'] === to).length;
    if (provider === 'twilio') {
      const record = await callReaches(stack.server, c.key, id, 'failed', 10_000);
      expect(record).toMatchObject({ call_id: id, ended_reason: 'failed' });
    } else {
      await new Promise((r) => setTimeout(r, 500));
      expect((await stack.server.request('GET', `/v1/calls/${id}`, { key: c.key })).body).toMatchObject({ call_id: id, call_status: 'initiated' });
    }
    expect(dials()).toBe(1);
  });
});

describe('max_call_duration_seconds', () => {
  // The service's clock, moved forward by the test: the durable deadline fires on it.
  let offset = 0;
  let timed: CallStack;
  beforeAll(async () => {
    timed = await startCallStack({}, undefined, { clock: () => Date.now() + offset });
  });
  afterAll(async () => {
    await timed.close();
  });

  it('hangs up a call that reaches the agent’s limit: completed, max_duration_reached', async () => {
    const c = await newCustomer(timed, 'twilio', { max_call_duration_seconds: 60 });
    const created = await dial(timed.server, c, nextNumber());
    await callReaches(timed.server, c.key, created.call_id, 'in-progress');
    offset += 57_000;
    await new Promise((r) => setTimeout(r, 1300));
    expect((await timed.server.request('GET', `/v1/calls/${created.call_id}`, { key: c.key })).body.call_status).toBe('in-progress');
    offset += 4_000;
    const record = await callReaches(timed.server, c.key, created.call_id, 'completed', 5000);
    expect(record.ended_reason).toBe('max_duration_reached');
    expect(record.duration_ms).toBeGreaterThanOrEqual(60_000);
    // We ended it at the carrier.
    expect(await timed.sims.twilio.calls.get(created.call_id)!.ended).toBe('completed');
    expect(timed.sims.twilio.requests.some((r) => r.path.endsWith(`/Calls/${created.call_id}.json`) && r.body['Status'] === 'completed')).toBe(true);
  });
});
