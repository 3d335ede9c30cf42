// Post-call analysis, caller memory and call.completed, end to end: real conversations
// through the carrier simulators and the provider simulators (the model simulator
// answers the analysis requests from its structured script), and a real HTTPS receiver whose
// signatures are checked with `standardwebhooks`. Covered: a good analysis on the call
// record, in the list and its filters, with extraction fields; answers that are not
// JSON or have wrong types retried, then recorded failed with call.completed still sent
// (fields null); a retry that recovers; a call with no conversation; the caller's memory
// written after the analysis, shown by the callers API, and told to the model on the
// caller's next call.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextNumber } from './helpers/fixtures.ts';
import { expectError } from './helpers/server.ts';
import { callReaches, dial, metric, newCustomer, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import type { LlmSimRequest } from './sim/llm-sim.ts';
import { agentTrusting, makeTestCa, startWebhookReceiver, type ReceivedWebhook, type TestCa, type WebhookReceiver } from './sim/webhook-receiver.ts';

let ca: TestCa;
let receiver: WebhookReceiver;
let stack: ConversationStack;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  stack = await startConversationStack(
    { ALLOW_PRIVATE_NETWORK_TARGETS: 'true', ANALYSIS_RETRY_SCHEDULE_MS: '150,150', WEBHOOK_RETRY_SCHEDULE_MS: '150,150,150,150', WEBHOOK_TIMEOUT_MS: '3000' },
    {},
    { webhookAgent: agentTrusting(ca) },
  );
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
  ca?.dispose();
});

let pathSeq = 0;
const newPath = (name: string) => `/${name}/${++pathSeq}`;
const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const analysisRequests = (): LlmSimRequest[] => stack.llm.structuredRequests;
const conversationRequests = (): LlmSimRequest[] => stack.llm.requests;
/** What the model answers the next analysis requests, in order (then the simplest JSON that fits). */
const answerAnalysis = (...texts: string[]) => stack.llm.replyStructured(...texts.map((text) => ({ text })));

async function setWebhook(c: Customer, url: string): Promise<void> {
  const res = await stack.server.request('PUT', `/v1/integrations/webhook/number/${enc(c.number)}`, { key: c.key, body: { url } });
  expect(res.status, res.text).toBe(200);
}

/** One short conversation from `from`: greeting, one caller turn and the agent's answer; the caller hangs up. */
async function converse(c: Customer, from = nextNumber()): Promise<string> {
  const far = await ringAgent(stack, c, from);
  await agentSpeaks(far);
  const before = far.heardBytes();
  await far.say('book-table');
  await agentSpeaks(far, before);
  await far.hangup();
  return far.id;
}

const analysed = (c: Customer, id: string) => recordWhere(stack, c, id, (r) => r.analysis_status !== 'pending', 20_000, 'the analysis outcome');

/** api.md's payload whitelist for an inbound call's call.completed (voicemail_detected is outbound only). */
const CALL_COMPLETED_KEYS = ['event', 'call_id', 'agent_id', 'direction', 'channel', 'from', 'to', 'status', 'ended_reason', 'started_at', 'ended_at', 'duration_seconds', 'transcript', 'summary', 'sentiment', 'successful', 'extracted', 'bookings', 'recording_url', 'recording_duration_seconds', 'campaign_id', 'avg_latency_ms'];

/** The call.completed deliveries that reached `path`, parsed. */
const completedAt = (path: string): { raw: ReceivedWebhook; body: any }[] =>
  receiver
    .to(path)
    .map((raw) => ({ raw, body: JSON.parse(raw.body) }))
    .filter((d) => d.body.event === 'call.completed');

async function secretOf(key: string): Promise<string> {
  return (await stack.server.request('GET', '/v1/webhooks/secret', { key })).body.secret as string;
}

const ANALYSIS_FIELDS = ['summary', 'sentiment', 'successful', 'extracted'];

describe('a good analysis', () => {
  it('is stored on the call, listed and filtered, with the extraction fields, and sent in call.completed to every post-call URL once', async () => {
    const hook = newPath('completed');
    const automation = newPath('post-call');
    const c = await newCustomer(stack, 'twilio', {
      system_prompt: 'You are the booking assistant of Luigi’s trattoria.',
      webhook_url: receiver.url(hook),
      extraction_fields: [
        { name: 'party_size', type: 'integer', description: 'How many people the table is for' },
        { name: 'day', type: 'string', enum: ['today', 'tomorrow'], description: 'Which day the table is for' },
        { name: 'allergies', type: 'string', description: 'Any allergy mentioned' },
      ],
    });
    // The agent's webhook_url and the number's primary webhook are the same URL: one delivery.
    await setWebhook(c, receiver.url(hook));
    const auto = await stack.server.request('PUT', `/v1/integrations/automation/number/${enc(c.number)}`, { key: c.key, body: { post_call_url: receiver.url(automation) } });
    expect(auto.status, auto.text).toBe(200);
    const secret = await secretOf(c.key);

    const extracted = { party_size: 2, day: 'tomorrow', allergies: null };
    answerAnalysis(JSON.stringify({ summary: 'The caller booked a table for two tomorrow evening.', sentiment: 'happy', successful: true, open_item: null, extracted }));
    const asked = analysisRequests().length;
    const happyId = await converse(c);
    const happy = await analysed(c, happyId);
    expect(happy).toMatchObject({
      analysis_status: 'done',
      summary: 'The caller booked a table for two tomorrow evening.',
      sentiment: 'happy',
      successful: true,
      extracted,
      call_status: 'completed',
    });

    // One request, structured JSON, with the transcript and the fields to extract.
    expect(analysisRequests()).toHaveLength(asked + 1);
    const req = analysisRequests().at(-1)!.body as any;
    expect(req.stream).toBe(false);
    expect(req.temperature).toBe(0);
    expect(req.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } });
    expect(Object.keys(req.response_format.json_schema.schema.properties.extracted.properties)).toEqual(['party_size', 'day', 'allergies']);
    expect(req.messages[0].content).toContain('party_size (integer): How many people the table is for');
    expect(req.messages[1].content).toContain('Caller: Hi, I would like to book a table for two tomorrow evening.');
    expect(req.messages[1].content).toContain('You are the booking assistant of Luigi’s trattoria.');

    // call.completed: once per distinct URL, after the analysis, signed, with its fields.
    const [first] = await receiver.waitFor(automation, 1, 20_000);
    await eventuallyCompleted(hook, 1);
    await sleep(500);
    const atHook = completedAt(hook);
    expect(atHook).toHaveLength(1);
    expect(completedAt(automation)).toHaveLength(1);
    const { raw, body } = atHook[0]!;
    expect(() => new Webhook(secret).verify(raw.body, raw.headers)).not.toThrow();
    expect(() => new Webhook(secret).verify(first!.body, first!.headers)).not.toThrow();
    expect(first!.body).toBe(raw.body);
    expect(body).toMatchObject({
      event: 'call.completed',
      call_id: happyId,
      status: 'completed',
      summary: happy.summary,
      sentiment: 'happy',
      successful: true,
      extracted,
      transcript: happy.transcript,
      ended_at: happy.ended_at,
    });
    // The whitelist, field by field (an inbound call: no voicemail_detected), and nothing
    // of what the account keeps to itself: its system prompt, its ids.
    expect(Object.keys(body).sort()).toEqual(CALL_COMPLETED_KEYS.slice().sort());
    expect(typeof body.duration_seconds).toBe('number');
    expect(typeof body.avg_latency_ms).toBe('number');
    expect(body.bookings).toEqual([]);
    expect(body.campaign_id).toBeNull();
    expect(raw.body).not.toContain('booking assistant of Luigi');
    expect(raw.body).not.toContain(c.accountId);
    expect(raw.body).not.toMatch(/"(call|acct|key)_[A-Za-z0-9]{10,}"/);
    expect(raw.at).toBeGreaterThanOrEqual(Date.parse(happy.ended_at));

    // A second call, whose first answer is not JSON: retried, and the second answer stands.
    answerAnalysis('Sure! The caller seemed upset.', JSON.stringify({ summary: 'The caller could not get a table.', sentiment: 'frustrated', successful: false, open_item: 'Call back when a table frees up.', extracted: { party_size: 4, day: 'today', allergies: 'nuts' } }));
    const upsetId = await converse(c);
    const upset = await analysed(c, upsetId);
    expect(upset).toMatchObject({ analysis_status: 'done', sentiment: 'frustrated', successful: false, extracted: { party_size: 4, day: 'today', allergies: 'nuts' } });
    expect(analysisRequests()).toHaveLength(asked + 3);
    expect(await metric(stack.server, 'switchboard_analysis_backlog')).toBe(0);

    // The list shows the analysis, and its filters use it.
    const list = async (q: string) => {
      const res = await stack.server.request('GET', `/v1/calls${q}`, { key: c.key });
      expect(res.status, res.text).toBe(200);
      return res.body.calls as any[];
    };
    const all = await list('');
    expect(all.find((x) => x.call_id === happyId)).toMatchObject({ call_summary: happy.summary, caller_sentiment: 'happy', call_successful: true });
    expect((await list('?caller_sentiment=happy')).map((x) => x.call_id)).toEqual([happyId]);
    expect((await list('?caller_sentiment=frustrated')).map((x) => x.call_id)).toEqual([upsetId]);
    expect((await list('?caller_sentiment=neutral')).map((x) => x.call_id)).toEqual([]);
    expect((await list('?call_successful=true')).map((x) => x.call_id)).toEqual([happyId]);
    expect((await list('?call_successful=false')).map((x) => x.call_id)).toEqual([upsetId]);
  }, 90_000);
});

async function eventuallyCompleted(path: string, n: number): Promise<void> {
  const until = Date.now() + 20_000;
  while (completedAt(path).length < n) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${n} call.completed at ${path}`);
    await sleep(25);
  }
}

describe.each([
  ['not JSON', ['The caller wanted a table.', '```\nsummary: a table\n```', '{"summary": "cut off']],
  ['wrong types', [
    JSON.stringify({ summary: 'A table.', sentiment: 'ecstatic', successful: true, open_item: null }),
    JSON.stringify({ summary: 'A table.', sentiment: 'happy', successful: 'yes', open_item: null }),
    JSON.stringify({ summary: 42, sentiment: 'happy', successful: true, open_item: null }),
  ]],
])('an answer that is %s', (_what, answers) => {
  it('is retried, then recorded failed with the fields null, and call.completed still goes out', async () => {
    const hook = newPath('failed');
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, receiver.url(hook));
    const secret = await secretOf(c.key);
    const from = nextNumber();
    const asked = analysisRequests().length;
    answerAnalysis(...answers);

    const id = await converse(c, from);
    const record = await analysed(c, id);
    expect(record.analysis_status).toBe('failed');
    for (const k of ANALYSIS_FIELDS) expect(record[k], k).toBeNull();
    expect(analysisRequests()).toHaveLength(asked + 3);

    await eventuallyCompleted(hook, 1);
    const [{ raw, body }] = completedAt(hook) as [{ raw: ReceivedWebhook; body: any }];
    expect(() => new Webhook(secret).verify(raw.body, raw.headers)).not.toThrow();
    expect(body).toMatchObject({ event: 'call.completed', call_id: id, status: 'completed', transcript: record.transcript });
    for (const k of ANALYSIS_FIELDS) expect(body[k], k).toBeNull();

    // The caller is remembered as called, the outcome unknown.
    const caller = await stack.server.request('GET', `/v1/phone-numbers/${enc(c.number)}/callers/${enc(from)}`, { key: c.key });
    expect(caller.body.caller.context).toEqual({ last_call: { at: record.started_at, summary: null, outcome: 'unknown' } });
  }, 60_000);
});

describe('a call without a conversation', () => {
  it('is analysed as done with nothing to say, without asking the model, and call.completed goes out', async () => {
    const hook = newPath('busy');
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, receiver.url(hook));
    const to = nextNumber();
    stack.sims.twilio.scenario(to, 'busy');
    const asked = analysisRequests().length;
    const { call_id } = await dial(stack.server, c, to);
    await callReaches(stack.server, c.key, call_id, 'busy');
    const record = await analysed(c, call_id);
    expect(record.analysis_status).toBe('done');
    for (const k of ANALYSIS_FIELDS) expect(record[k], k).toBeNull();
    await eventuallyCompleted(hook, 1);
    expect(completedAt(hook)[0]!.body).toMatchObject({ event: 'call.completed', call_id, status: 'busy', summary: null, transcript: null });
    expect(analysisRequests()).toHaveLength(asked);
    // Nothing was said, so nothing is remembered of the person called.
    const caller = await stack.server.request('GET', `/v1/phone-numbers/${enc(c.number)}/callers/${enc(to)}`, { key: c.key });
    expectError(caller, 404, 'not_found', 'caller_not_found');
  }, 30_000);
});

describe('a call erased before its analysis ran', () => {
  it('is never analysed and sends no call.completed: its job goes with it', async () => {
    const hook = newPath('erased');
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, receiver.url(hook));
    const to = nextNumber();
    stack.sims.twilio.scenario(to, 'busy');
    const { call_id } = await dial(stack.server, c, to);
    await callReaches(stack.server, c.key, call_id, 'busy');
    const internalId = stack.server.storage.calls.getByPublicId(c.accountId, call_id)!.internal_id!;
    // Erased inside the half second the job waits for the call's last words.
    expect(stack.server.storage.analysis.get(internalId)).toBeDefined();
    expect((await stack.server.request('DELETE', `/v1/calls/${call_id}`, { key: c.key })).status).toBe(200);
    expect(stack.server.storage.analysis.get(internalId)).toBeUndefined();
    await sleep(1500);
    expect(completedAt(hook)).toHaveLength(0);
  }, 30_000);
});

describe('a call refused before an agent answers', () => {
  it('has nothing to analyse (done at once) and sends no call.completed', async () => {
    const hook = newPath('refused');
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, receiver.url(hook));
    expect((await stack.server.request('PATCH', `/v1/agents/${c.agentId}`, { key: c.key, body: { is_active: false } })).status).toBe(200);
    const call = await stack.sims.twilio.placeInboundCall({ from: nextNumber(), to: c.number });
    const record = await recordWhere(stack, c, call.callSid, (r) => r.ended_reason !== null, 10_000, 'the refused call');
    expect(record).toMatchObject({ call_status: 'failed', ended_reason: 'failed', analysis_status: 'done', summary: null });
    await sleep(1500);
    expect(receiver.to(hook)).toHaveLength(0);
  }, 30_000);
});

describe('caller memory', () => {
  it('is written after the analysis, never over the customer’s fields, and the next call’s model hears it', async () => {
    const c = await newCustomer(stack, 'telnyx', { system_prompt: 'You are the front desk of Luigi’s trattoria.' });
    const from = nextNumber();
    const callerPath = `/v1/phone-numbers/${enc(c.number)}/callers/${enc(from)}`;
    const put = await stack.server.request('PUT', callerPath, { key: c.key, body: { name: 'Ana Silva', preference: 'window table' } });
    expect(put.status, put.text).toBe(200);

    answerAnalysis(JSON.stringify({ summary: 'Ana asked for the spring menu by email.', sentiment: 'neutral', successful: false, open_item: 'Email the spring menu to Ana.' }));
    const firstId = await converse(c, from);
    const first = await analysed(c, firstId);
    expect(first.analysis_status).toBe('done');

    const afterFirst = await stack.server.request('GET', callerPath, { key: c.key });
    expect(afterFirst.body.caller.context).toEqual({
      name: 'Ana Silva',
      preference: 'window table',
      last_call: { at: first.started_at, summary: 'Ana asked for the spring menu by email.', outcome: 'unsuccessful' },
      open_item: 'Email the spring menu to Ana.',
    });
    // The engine's fields cannot be set; the customer's still can, and leave the engine's alone.
    expectError(await stack.server.request('PUT', callerPath, { key: c.key, body: { open_item: 'nothing' } }), 400, 'invalid_request', 'engine_only_field');
    expectError(await stack.server.request('PUT', callerPath, { key: c.key, body: { last_call: { summary: 'x' } } }), 400, 'invalid_request', 'engine_only_field');
    const renamed = await stack.server.request('PUT', callerPath, { key: c.key, body: { name: 'Ana Silva Costa' } });
    expect(renamed.body.caller.context).toMatchObject({ name: 'Ana Silva Costa', open_item: 'Email the spring menu to Ana.', last_call: { outcome: 'unsuccessful' } });

    // The caller rings again: the model is told what happened last time and what is open.
    const talked = conversationRequests().length;
    const asked = analysisRequests().length;
    answerAnalysis(JSON.stringify({ summary: 'Ana got the menu read out and booked.', sentiment: 'happy', successful: true, open_item: null }));
    const secondId = await converse(c, from);
    const second = await analysed(c, secondId);
    const system = conversationRequests()[talked]!.body.messages[0]!.content as string;
    expect(system).toContain('- Name: Ana Silva Costa');
    expect(system).toMatch(/- Last call: .*: Ana asked for the spring menu by email\. \(it did not achieve its purpose\)/);
    expect(system).toContain('- Still open from before: Email the spring menu to Ana.');
    expect(analysisRequests()[asked]!.body.messages[1]!.content).toContain('Still open for this caller before this call: Email the spring menu to Ana.');

    // Settled on the second call: the open item is gone, the last call is the second.
    const afterSecond = await stack.server.request('GET', callerPath, { key: c.key });
    expect(afterSecond.body.caller.context).toEqual({
      name: 'Ana Silva Costa',
      preference: 'window table',
      last_call: { at: second.started_at, summary: 'Ana got the menu read out and booked.', outcome: 'successful' },
    });
    expect(second.analysis_status).toBe('done');
  }, 90_000);
});
