// The SMS agent (issue 21), end to end: a real server in this process with both carrier
// simulators (a text arrives as the carrier's signed webhook; the reply is judged by what
// the carrier was asked to send) and the model simulator (every request recorded). The
// server's clock is injected, and the simulators share it, so a campaign's reply window
// can run out. Checked: a text on a number with sms_reply_enabled is answered from that
// number; the model read the agent's prompt, the number's sms_prompt, the person's
// record and the conversation so far, in order; a person a campaign texted is answered
// with the campaign's context_prompt inside its reply_window_hours and without it after;
// a number without sms_reply_enabled is not answered; and a model that fails leaves the
// text stored and unanswered, asked once, with the server healthy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newCustomer, startCallStack, type CallStack, type Customer, type Provider } from './helpers/calls.ts';
import { startLlmSim, type ChatCompletionBody, type LlmSim, type LlmSimRequest } from './sim/llm-sim.ts';

const KEY = 'sk-sms-agent-test';
const HOUR = 3_600_000;
const AGENT_PROMPT = 'You are the front desk of Acme Dental.';
const SMS_PROMPT = 'By text, answer questions about opening hours and bookings only.';

let offset = 0;
/** The server's and the simulators' clock: a test moves it forward. */
const clock = () => Date.now() + offset;
let stack: CallStack;
let llm: LlmSim;

/** The model's answer to a reply request: the person's last text, echoed, so each reply is known. */
const answerOf = (body: ChatCompletionBody) => `Re: ${body.messages.at(-1)!.content}`;

beforeAll(async () => {
  llm = await startLlmSim({ apiKey: KEY, firstTokenMs: 5, tokenMs: 1, respond: (body) => ({ text: answerOf(body) }) });
  stack = await startCallStack({ LLM_BASE_URL: llm.baseUrl, LLM_API_KEY: KEY, SMS_SEND_INTERVAL_MS: '50' }, undefined, { clock }, { now: clock });
}, 30_000);
afterAll(async () => {
  await stack?.close();
  await llm?.close();
});

const enc = encodeURIComponent;
let people = 0;
/** A person's number that passes real numbering rules (campaign recipients are checked against them), unique to this run. */
const nextPerson = (): string => `+1628555${String(1000 + ((process.pid * 7 + ++people) % 9000)).padStart(4, '0')}`;
const carrierOf = (provider: Provider) => (provider === 'twilio' ? stack.sims.twilio.messages : stack.sims.telnyx.messages);

async function replyingCustomer(provider: Provider, smsPrompt: string | null = SMS_PROMPT): Promise<Customer> {
  const c = await newCustomer(stack, provider, { system_prompt: AGENT_PROMPT });
  const res = await stack.server.request('PATCH', `/v1/phone-numbers/${enc(c.number)}`, { key: c.key, body: { sms_reply_enabled: true, sms_prompt: smsPrompt } });
  expect(res.status, res.text).toBe(200);
  return c;
}

/** The model request that answered `text` (its last message). */
const requestFor = (text: string): LlmSimRequest | undefined => llm.requests.find((r) => r.body.messages.at(-1)?.content === text);

/** `person` texts `body` to the customer's number; resolves with the model's request once the reply reached the carrier. */
async function textAndReply(provider: Provider, c: Customer, person: string, body: string): Promise<ChatCompletionBody> {
  const before = carrierOf(provider).sent(person).length;
  const hook = await carrierOf(provider).receive({ from: person, to: c.number, body });
  expect(hook.status, hook.body).toBe(200);
  const sent = await eventually(() => carrierOf(provider).sent(person)[before], 8000, `the reply to "${body}"`);
  expect(sent).toMatchObject({ from: c.number, to: person, body: `Re: ${body}` });
  return requestFor(body)!.body;
}

describe.each<Provider>(['twilio', 'telnyx'])('replies on carrier %s', (provider) => {
  it('answers a text from the number, with the agent’s prompt, the sms_prompt, the person’s record and the thread', async () => {
    const c = await replyingCustomer(provider);
    const person = nextPerson();
    const record = await stack.server.request('PUT', `/v1/phone-numbers/${enc(c.number)}/callers/${enc(person)}`, { key: c.key, body: { name: 'Ada Lovelace', preference: 'mornings' } });
    expect(record.status, record.text).toBe(200);

    const first = await textAndReply(provider, c, person, 'When are you open?');
    expect(first.stream).not.toBe(true);
    const system = first.messages[0]!;
    expect(system.role).toBe('system');
    const prompt = system.content as string;
    const at = [AGENT_PROMPT, SMS_PROMPT, '- Name: Ada Lovelace', '- Preference: mornings', 'no markdown'].map((s) => prompt.indexOf(s));
    expect(at.every((i) => i >= 0), prompt).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(prompt).not.toContain('campaign');

    // The second text is read after the first and its reply.
    const second = await textAndReply(provider, c, person, 'And on Saturdays?');
    expect(second.messages.slice(1)).toEqual([
      { role: 'user', content: 'When are you open?' },
      { role: 'assistant', content: 'Re: When are you open?' },
      { role: 'user', content: 'And on Saturdays?' },
    ]);
    const stored = await stack.server.request('GET', `/v1/sms?phone_number=${enc(person)}`, { key: c.key });
    expect(stored.status, stored.text).toBe(200);
    expect(stored.body.messages.filter((m: { direction: string }) => m.direction === 'outbound')).toHaveLength(2);
  }, 30_000);
});

describe('the SMS agent', () => {
  it('answers a person a campaign texted with its context_prompt inside the reply window, and without it after', async () => {
    const c = await replyingCustomer('twilio');
    const person = nextPerson();
    const CONTEXT = 'We invited them to book a spring check-up; offer Tuesday or Thursday mornings.';
    const created = await stack.server.request('POST', '/v1/sms/campaigns', {
      key: c.key,
      body: {
        agent_id: c.agentId,
        from_number: c.number,
        name: 'Spring check-ups',
        message_template: 'Time for your spring check-up at Acme Dental! Reply to book.',
        recipients: [{ phone: person }],
        schedule_type: 'now',
        context_prompt: CONTEXT,
        reply_window_hours: 1,
      },
    });
    expect(created.status, created.text).toBe(201);
    await eventually(async () => {
      const r = await stack.server.request('GET', `/v1/sms/campaigns/${created.body.campaign_id}`, { key: c.key });
      return r.body.status === 'done' && r.body.delivered_count === 1 ? true : undefined;
    }, 8000, 'the campaign to be sent');

    // Inside the hour: the campaign's context, and its text as what we said.
    const inside = await textAndReply('twilio', c, person, 'Yes please, Tuesday works.');
    const prompt = inside.messages[0]!.content as string;
    expect(prompt).toContain(CONTEXT);
    expect(prompt).toContain('replying to a text message our campaign sent them');
    expect(prompt.indexOf(SMS_PROMPT)).toBeLessThan(prompt.indexOf(CONTEXT));
    expect(inside.messages.slice(1)).toEqual([
      { role: 'assistant', content: 'Time for your spring check-up at Acme Dental! Reply to book.' },
      { role: 'user', content: 'Yes please, Tuesday works.' },
    ]);

    // Past its reply_window_hours the campaign is no longer what the person replies to.
    offset += HOUR + 60_000;
    const after = await textAndReply('twilio', c, person, 'Are you still there?');
    const later = after.messages[0]!.content as string;
    expect(later).not.toContain(CONTEXT);
    expect(later).not.toContain('campaign');
    expect(later).toContain(SMS_PROMPT);
  }, 30_000);

  it('does not answer texts on a number without sms_reply_enabled', async () => {
    const c = await newCustomer(stack, 'twilio', { system_prompt: AGENT_PROMPT });
    const person = nextPerson();
    const requests = llm.requests.length;
    const hook = await stack.sims.twilio.messages.receive({ from: person, to: c.number, body: 'Hello?' });
    expect(hook.status).toBe(200);
    await eventually(async () => {
      const r = await stack.server.request('GET', `/v1/sms?phone_number=${enc(person)}`, { key: c.key });
      return r.body.messages?.length === 1 ? true : undefined;
    }, 8000, 'the text to be stored');
    await new Promise((r) => setTimeout(r, 300));
    expect(llm.requests.length).toBe(requests);
    expect(stack.sims.twilio.messages.sent(person)).toEqual([]);
  }, 30_000);

  it('a model that fails leaves the text stored and unanswered, asked once; the server stays healthy and answers the next text', async () => {
    const c = await replyingCustomer('twilio');
    const person = nextPerson();
    const requests = llm.requests.length;
    llm.fail({ kind: 'status', status: 500, message: 'The server had an error while processing your request.' });
    const hook = await stack.sims.twilio.messages.receive({ from: person, to: c.number, body: 'Is anyone there?' });
    expect(hook.status).toBe(200);
    const inbound = await eventually(() => {
      const row = stack.server.storage.db.prepare(`SELECT * FROM sms_messages WHERE from_number = ? AND direction = 'inbound'`).get(person) as { reply_state: string; message_id: string } | undefined;
      return row?.reply_state === 'failed' ? row : undefined;
    }, 8000, 'the text to be marked unanswered');
    // Give a retry storm the time to show itself: there is none.
    await new Promise((r) => setTimeout(r, 500));
    expect(llm.requests.slice(requests).map((r) => r.fault)).toEqual(['status']);
    expect(stack.sims.twilio.messages.sent(person)).toEqual([]);
    const listed = await stack.server.request('GET', `/v1/sms?phone_number=${enc(person)}`, { key: c.key });
    expect(listed.body.messages.map((m: { message_id: string; direction: string; body: string }) => [m.message_id, m.direction, m.body])).toEqual([
      [inbound.message_id, 'inbound', 'Is anyone there?'],
    ]);
    expect((await stack.server.request('GET', '/healthz')).status).toBe(200);

    // The model is back: the next text is answered, with the unanswered one before it in the thread.
    const next = await textAndReply('twilio', c, person, 'Hello again?');
    expect(next.messages.slice(1)).toEqual([
      { role: 'user', content: 'Is anyone there?' },
      { role: 'user', content: 'Hello again?' },
    ]);
  }, 30_000);
});
