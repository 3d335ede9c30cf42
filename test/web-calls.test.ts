// Web calls end to end (issue 22, acceptance 1): POST /v1/web-calls and its errors, the
// one-time access token (a second socket refused, an expired one refused and the call
// ended no-answer), the account's concurrency counted; then the browser protocol from a
// Node websocket client speaking real speech fixtures as 16 kHz PCM: the greeting heard,
// a turn answered with the number's web_prompt, barge-in sends `clear`, captions, the
// agent's end_call and the browser's hang-up end the call, and the record and the
// `call.completed` webhook follow with the transcript and `channel: "web"`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from './helpers/fixtures.ts';
import { eventually, importNumber } from './helpers/calls.ts';
import { recordWhere, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import { expectError } from './helpers/server.ts';
import { fixturePcm16, openWebCall, rmsOf, type WebCaller } from './helpers/web-call.ts';
import { agentTrusting, makeTestCa, startWebhookReceiver, type TestCa, type WebhookReceiver } from './sim/webhook-receiver.ts';
import { speechFixture } from './fixtures/speech/speech.ts';

let ca: TestCa;
let receiver: WebhookReceiver;
let stack: ConversationStack;
// The server's clock runs this far ahead of the wall clock: the expiry test moves it.
let skew = 0;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  stack = await startConversationStack({ ALLOW_PRIVATE_NETWORK_TARGETS: 'true' }, {}, { webhookAgent: agentTrusting(ca), clock: () => Date.now() + skew });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
  ca?.dispose();
});

interface Account {
  key: string;
  accountId: string;
  agentId: string;
}

async function account(agent: Record<string, unknown> = {}): Promise<Account> {
  const { key, accountId } = await stack.server.newAccount();
  const agentId = await createAgent(stack.server, key, { welcome_message: 'Hello, this is the web agent.', response_eagerness: 200, ...agent });
  return { key, accountId, agentId };
}

const webCall = (key: string, body: unknown) => stack.server.request('POST', '/v1/web-calls', { key, body });

/** The socket URL the answer names, pointed at the test server (PUBLIC_BASE_URL is not reachable). */
function socketUrl(answer: { websocket_url: string; access_token: string }): string {
  const path = new URL(answer.websocket_url).pathname;
  return `${stack.server.url.replace(/^http/, 'ws')}${path}?access_token=${encodeURIComponent(answer.access_token)}`;
}

async function connect(a: Account, body: Record<string, unknown>): Promise<{ id: string; caller: WebCaller; answer: any }> {
  const res = await webCall(a.key, body);
  expect(res.status, res.text).toBe(201);
  const caller = await openWebCall(socketUrl(res.body));
  return { id: res.body.call_id, caller, answer: res.body };
}

/** Waits until the agent has spoken after `since` bytes and fallen quiet for `quietMs`. */
async function agentSpeaks(caller: WebCaller, since = caller.heardBytes(), timeoutMs = 15_000, quietMs = 400): Promise<{ startedAt: number; audio: Uint8Array }> {
  const startedAt = await eventually(() => (caller.heardBytes() > since ? performance.now() : undefined), timeoutMs, 'the agent to speak');
  let last = caller.heardBytes();
  let lastChange = performance.now();
  await eventually(() => {
    const now = caller.heardBytes();
    if (now !== last) {
      last = now;
      lastChange = performance.now();
      return undefined;
    }
    return performance.now() - lastChange >= quietMs ? true : undefined;
  }, timeoutMs, 'the agent to finish speaking');
  const all = Buffer.concat(caller.audio);
  return { startedAt, audio: new Uint8Array(all.subarray(since)) };
}

/** The caller speaks a fixture: the speech recogniser simulator is told its words, the audio goes as 16 kHz PCM. */
function say(caller: WebCaller, slug: Parameters<typeof fixturePcm16>[0]): Promise<void> {
  stack.stt.say(speechFixture(slug).text);
  return caller.say(fixturePcm16(slug));
}

const endOf = (caller: WebCaller) => eventually(() => caller.messages.find((m) => m.type === 'end'), 15_000, 'the end message');

describe('POST /v1/web-calls', () => {
  it('refuses what it cannot place, each with its code', async () => {
    const a = await account();
    expectError(await webCall(a.key, {}), 400, 'invalid_request', 'missing_field');
    const both = await webCall(a.key, { agent_id: a.agentId, phone_number: '+15550001111' });
    expectError(both, 400, 'invalid_request', 'invalid_request');
    expect(both.body.error.details).toMatchObject({ field: 'phone_number' });
    const agent = await webCall(a.key, { agent_id: 'agent_doesnotexist' });
    expectError(agent, 400, 'invalid_request', 'agent_not_found');
    expect(agent.body.error.details).toMatchObject({ field: 'agent_id' });
    const number = await webCall(a.key, { phone_number: '+15550001111' });
    expectError(number, 400, 'invalid_request', 'number_not_found');
    expect(number.body.error.details).toMatchObject({ field: 'phone_number' });
    // Another account's agent is not found either.
    const other = await account();
    expectError(await webCall(a.key, { agent_id: other.agentId }), 400, 'invalid_request', 'agent_not_found');
    expectError(await webCall(a.key, { agent_id: a.agentId, extra: 1 }), 400, 'invalid_request', 'invalid_request');
    // An inactive agent takes no web call.
    expect((await stack.server.request('PATCH', `/v1/agents/${a.agentId}`, { key: a.key, body: { is_active: false } })).status).toBe(200);
    expectError(await webCall(a.key, { agent_id: a.agentId }), 400, 'invalid_request', 'invalid_request');
    // Nothing was created by any of them.
    expect((await stack.server.request('GET', '/v1/calls', { key: a.key })).body.count).toBe(0);
    // No API key, no call.
    expect((await stack.server.request('POST', '/v1/web-calls', { body: { agent_id: a.agentId } })).status).toBe(401);
  });

  it('answers a call_ id and a one-time token; a second socket with it, or none, is refused; the call counts against the concurrency limit', async () => {
    const a = await account();
    stack.server.storage.accounts.setPlan(a.accountId, 'enterprise', 1);
    const res = await webCall(a.key, { agent_id: a.agentId });
    expect(res.status).toBe(201);
    expect(res.body.call_id).toMatch(/^call_[A-Za-z0-9]+$/);
    expect(res.body.websocket_url).toBe('wss://switchboard.test/v1/web-calls/media');
    expect(res.body.access_token).toMatch(/^wct_[A-Za-z0-9]{40}$/);
    const expires = Date.parse(res.body.expires_at) - (Date.now() + skew);
    expect(expires).toBeGreaterThan(50_000);
    expect(expires).toBeLessThanOrEqual(60_000);
    // Waiting for its browser, it holds the account's one slot: a second call is refused, not queued.
    const record = (await stack.server.request('GET', `/v1/calls/${res.body.call_id}`, { key: a.key })).body;
    expect(record).toMatchObject({ call_id: res.body.call_id, direction: 'inbound', channel: 'web', call_status: 'initiated', from_number: 'web', to_number: 'web', started_at: null });
    expectError(await webCall(a.key, { agent_id: a.agentId }), 429, 'rate_limit_error', 'concurrent_call_limit');

    // No token, a wrong one: refused at the upgrade.
    const noToken = `${stack.server.url.replace(/^http/, 'ws')}/v1/web-calls/media`;
    await expect(openWebCall(noToken)).rejects.toThrow('unexpected response 401');
    await expect(openWebCall(`${noToken}?access_token=wct_${'x'.repeat(40)}`)).rejects.toThrow('unexpected response 403');

    const caller = await openWebCall(socketUrl(res.body));
    await eventually(() => caller.messages.find((m) => m.type === 'start'), 5000, 'start');
    expect(caller.messages[0]).toEqual({ type: 'start', call_id: res.body.call_id, sample_rate: 16000, encoding: 'pcm_s16le', channels: 1 });
    // The token opened one socket: a second with it is refused, and the first goes on.
    await expect(openWebCall(socketUrl(res.body))).rejects.toThrow('unexpected response 403');
    await recordWhere(stack, a as any, res.body.call_id, (r) => r.call_status === 'in-progress' && r.started_at !== null, 5000, 'the call answered');

    // The browser closing its socket ends the call, and frees the slot.
    caller.close();
    const ended = await recordWhere(stack, a as any, res.body.call_id, (r) => r.call_status === 'completed', 10_000, 'the call ended');
    expect(ended.ended_reason).toBe('caller_hangup');
    const again = await webCall(a.key, { agent_id: a.agentId });
    expect(again.status).toBe(201);
    // Ended by the service before its browser came (the record erased): canceled, the slot freed.
    expect((await stack.server.request('DELETE', `/v1/calls/${again.body.call_id}`, { key: a.key })).status).toBe(200);
    await eventually(async () => ((await webCall(a.key, { agent_id: a.agentId })).status === 201 ? true : undefined), 5000, 'the slot freed');
  });
});

describe('the browser protocol', () => {
  it('greets, answers a turn with the number’s web_prompt, is interrupted (clear), captions both sides, and the browser hangs up', async () => {
    const a = await account({
      system_prompt: 'You are the front desk of the Grand Hotel.',
      record_call: true,
      recording_source: 'platform',
      webhook_url: receiver.url('/web-completed'),
    });
    const { number } = await importNumber(stack, a.key, a.agentId, 'twilio');
    const patched = await stack.server.request('PATCH', `/v1/phone-numbers/${encodeURIComponent(number)}`, {
      key: a.key,
      body: { web_prompt: 'Visitors of the website are talking to you.', custom_prompt: 'Phone callers only: mention the phone special.' },
    });
    expect(patched.status).toBe(200);
    const llmBefore = stack.llm.requests.length;
    const { id, caller } = await connect(a, { phone_number: number });

    // The greeting, heard as 16 kHz audio that is not silence, and captioned.
    const greeting = await agentSpeaks(caller);
    expect(greeting.audio.length).toBeGreaterThan(32 * 800);
    expect(rmsOf(greeting.audio)).toBeGreaterThan(0.02);
    await eventually(() => caller.transcripts().find((t) => t.speaker === 'agent' && t.text === 'Hello, this is the web agent.'), 10_000, 'the greeting caption');

    // A turn: the model hears the caller's words (real speech, 16 kHz PCM) with the web prompt, and the agent answers.
    stack.llm.reply({ text: 'Of course, a table for two tomorrow evening.' });
    const before1 = caller.heardBytes();
    await say(caller, 'book-table');
    const reply = await agentSpeaks(caller, before1);
    expect(rmsOf(reply.audio)).toBeGreaterThan(0.02);
    const req = stack.llm.requests[llmBefore]!.body;
    expect(req.messages.at(-1)).toEqual({ role: 'user', content: speechFixture('book-table').text });
    expect(req.messages[0]!.content).toContain('You are the front desk of the Grand Hotel.');
    expect(req.messages[0]!.content).toContain('Visitors of the website are talking to you.');
    expect(req.messages[0]!.content).not.toContain('Phone callers only');
    // No carrier: no transfer or keypad tools, only end_call.
    expect(req.tools?.map((t) => t.function.name)).toEqual(['end_call']);
    await eventually(() => caller.transcripts().find((t) => t.speaker === 'caller' && t.text === speechFixture('book-table').text), 10_000, 'the caller caption');

    // Barge-in: the caller talks over a long reply; the browser is told to clear its playback.
    stack.llm.reply(
      { text: 'We are open from nine in the morning until ten at night on Saturdays, and the kitchen closes one hour earlier, so please arrive before nine.' },
      { text: 'Sure: nine until ten.' },
    );
    const before2 = caller.heardBytes();
    await say(caller, 'saturday-hours');
    await eventually(() => (caller.heardBytes() > before2 + 32 * 1500 ? true : undefined), 15_000, 'the long reply to play for a while');
    const clearsBefore = caller.clears();
    await say(caller, 'repeat-please');
    await eventually(() => (caller.clears() > clearsBefore ? true : undefined), 10_000, 'clear sent on barge-in');
    await agentSpeaks(caller, caller.heardBytes());

    // The browser hangs up: `end`, the socket closes, the call ends caller_hangup.
    caller.hangup();
    expect(await endOf(caller)).toEqual({ type: 'end', reason: 'caller_hangup' });
    expect(await caller.closed).toBe(1000);

    const done = await recordWhere(stack, a as any, id, (r) => r.call_status === 'completed' && r.analysis_status !== 'pending', 30_000, 'the call analysed');
    expect(done).toMatchObject({ call_id: id, direction: 'inbound', channel: 'web', from_number: 'web', to_number: number, ended_reason: 'caller_hangup' });
    expect(done.duration_ms).toBeGreaterThan(3000);
    expect(done.charged_minutes).toBeGreaterThan(0);
    const lines: string[] = done.transcript.split('\n');
    expect(lines[0]).toBe('Agent: Hello, this is the web agent.');
    expect(lines[1]).toBe(`Caller: ${speechFixture('book-table').text}`);
    expect(lines[2]).toBe('Agent: Of course, a table for two tomorrow evening.');
    expect(lines[3]).toBe(`Caller: ${speechFixture('saturday-hours').text}`);
    expect(lines[4]).toMatch(/^Agent: We are open/);
    expect(done.recording_url).toMatch(/^https:\/\/switchboard\.test\/recordings\/[A-Za-z0-9_-]{32}\.mp3$/);
    // Listed like any call, with its channel.
    const listed = (await stack.server.request('GET', '/v1/calls', { key: a.key })).body.calls;
    expect(listed.find((c: any) => c.call_id === id)).toMatchObject({ channel: 'web', direction: 'inbound' });

    // call.completed, to the agent's webhook_url, with the transcript and the channel.
    const [hook] = await receiver.waitFor('/web-completed', 1, 20_000);
    const payload = JSON.parse(hook!.body);
    expect(payload).toMatchObject({ event: 'call.completed', call_id: id, direction: 'inbound', channel: 'web', from: 'web', to: number, ended_reason: 'caller_hangup' });
    expect(payload.transcript).toBe(done.transcript);
  }, 90_000);

  it('the agent ends the call with its end-call tool: the browser hears the goodbye, then `end`', async () => {
    const a = await account();
    const { id, caller } = await connect(a, { agent_id: a.agentId });
    await agentSpeaks(caller);
    stack.llm.reply({ text: 'Goodbye, have a nice day!', toolCalls: [{ name: 'end_call', arguments: {} }] });
    const before = caller.heardBytes();
    await say(caller, 'thank-you-goodbye');
    expect(await endOf(caller)).toEqual({ type: 'end', reason: 'agent_hangup' });
    expect(caller.heardBytes() - before).toBeGreaterThan(32 * 500);
    expect(await caller.closed).toBe(1000);
    const done = await recordWhere(stack, a as any, id, (r) => r.call_status === 'completed', 10_000, 'the call ended');
    expect(done).toMatchObject({ channel: 'web', to_number: 'web', ended_reason: 'agent_hangup' });
    expect(done.transcript.split('\n').at(-1)).toBe('Agent: Goodbye, have a nice day!');
  }, 60_000);

  // Last: it moves the server's clock.
  it('a token not used before expires_at opens nothing, and the call ends no-answer, freeing its slot', async () => {
    const a = await account();
    stack.server.storage.accounts.setPlan(a.accountId, 'enterprise', 1);
    const res = await webCall(a.key, { agent_id: a.agentId });
    expect(res.status).toBe(201);
    skew += 61_000;
    await expect(openWebCall(socketUrl(res.body))).rejects.toThrow('unexpected response 403');
    const ended = await recordWhere(stack, a as any, res.body.call_id, (r) => r.call_status === 'no-answer', 10_000, 'the call ended unanswered');
    expect(ended).toMatchObject({ ended_reason: 'no-answer', started_at: null, duration_ms: 0, charged_minutes: 0 });
    expect((await webCall(a.key, { agent_id: a.agentId })).status).toBe(201);
  });
});
