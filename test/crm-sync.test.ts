// The CRM sync and the automation post-call URL, end to end: a real server (in this
// process) with both carrier simulators, the model, speech and voice simulators, the
// CRM simulator (the HighLevel v2 shape, over real HTTP at CRM_BASE_URL) and an HTTPS
// receiver whose certificate openssl makes here. A caller rings the agent, hears the
// greeting, speaks, hears the reply and hangs up; the post-call analysis asks the model
// simulator (scripted here) and, with its outcome, commits what a completed call sends
// out. Checked from the outside: the contact and the one note at the CRM, the deliveries list, the CRM
// failing then recovering, a lost answer to the note not adding it twice, a removed
// integration giving up, no CRM delivery for a number without one, and the automation
// post-call URL receiving call.completed signed (verified with `standardwebhooks`).
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextNumber } from './helpers/fixtures.ts';
import { dial, eventually, newCustomer, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import { startCrmSim, type CrmSim } from './sim/crm-sim.ts';
import { defaultLlmReply, type ChatCompletionBody } from './sim/llm-sim.ts';
import { agentTrusting, makeTestCa, startWebhookReceiver, type ReceivedWebhook, type TestCa, type WebhookReceiver } from './sim/webhook-receiver.ts';

const RETRY_MS = 150;
const LOCATION = 'loc-switchboard';
const PIT = 'pit-switchboard-test';
/** Tokens the CRM simulator accepts; tests add theirs. */
const tokens: Record<string, string> = { [PIT]: LOCATION };

/** What the model simulator answers the post-call analysis of the next call (the conversation gets its usual replies). */
let nextSummary = 'A short call.';
const respond = (body: ChatCompletionBody) =>
  body.response_format !== undefined ? { text: JSON.stringify({ summary: nextSummary, sentiment: 'happy', successful: true, open_item: null }) } : defaultLlmReply(body);

let ca: TestCa;
let receiver: WebhookReceiver;
let crm: CrmSim;
let stack: ConversationStack;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  crm = await startCrmSim({ tokens });
  stack = await startConversationStack(
    {
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      CRM_BASE_URL: crm.baseUrl,
      WEBHOOK_RETRY_SCHEDULE_MS: Array.from({ length: 6 }, () => String(RETRY_MS)).join(','),
      WEBHOOK_TIMEOUT_MS: '3000',
      CALL_STARTED_DELAY_MS: '200',
    },
    {},
    { webhookAgent: agentTrusting(ca) },
    { llmRespond: respond },
  );
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await crm?.close();
  await receiver?.close();
  ca?.dispose();
});

const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function putCrm(c: Customer, pit = PIT, locationId = LOCATION): Promise<void> {
  const res = await stack.server.request('PUT', `/v1/integrations/crm/number/${enc(c.number)}`, { key: c.key, body: { pit, location_id: locationId } });
  expect(res.status, res.text).toBe(200);
}

/**
 * An inbound call from `from` on carrier A, through the conversation engine: the
 * greeting, one question and its answer, then the caller hangs up, and the analysis
 * (the model answering `summary`) is recorded. Resolves with the analysed call record.
 */
async function completedCall(c: Customer, from: string, summary: string): Promise<any> {
  nextSummary = summary;
  const far = await ringAgent(stack, c, from);
  await agentSpeaks(far);
  stack.llm.reply({ text: 'Of course. For what time tomorrow?' });
  const before = far.heardBytes();
  await far.say('book-table');
  await agentSpeaks(far, before);
  await far.hangup();
  const call = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed' && r.analysis_status !== 'pending', 20_000, 'the call to complete and be analysed');
  expect(call).toMatchObject({ analysis_status: 'done', summary });
  return call;
}

async function deliveriesOf(c: Customer, callId: string): Promise<any[]> {
  const res = await stack.server.request('GET', `/v1/webhooks/deliveries?call_id=${enc(callId)}&limit=100`, { key: c.key });
  expect(res.status, res.text).toBe(200);
  return res.body.deliveries;
}

/** Polls the call's CRM delivery until `ok` accepts it; a timeout says what the delivery and the CRM saw last. */
async function crmDeliveryWhere(c: Customer, callId: string, ok: (d: any) => boolean, what: string, timeoutMs = 8000): Promise<any> {
  const t0 = Date.now();
  let last: any;
  try {
    return await eventually(async () => {
      last = (await deliveriesOf(c, callId)).find((x) => x.event === 'crm.contact_note');
      return last && ok(last) ? last : undefined;
    }, timeoutMs, what);
  } catch (err) {
    const seen = crm.requests.slice(-8).map((r) => `${r.method} ${r.path}${r.fault ? ` (${r.fault})` : ''}`);
    throw new Error(`${(err as Error).message} (${Date.now() - t0} ms): delivery ${JSON.stringify(last)}; the CRM's last requests: ${seen.join(', ')}`);
  }
}

const notesOf = (phone: string) => {
  const contact = [...crm.contacts.values()].find((x) => x.phone === phone);
  return contact ? crm.notes.filter((n) => n.contactId === contact.id) : [];
};
const crmRequestsFor = (contactPath: RegExp) => crm.requests.filter((r) => contactPath.test(r.path));

describe('CRM sync on call completion', () => {
  it('upserts the caller as a contact (name and email from their record) and adds one note with the summary', { timeout: 60_000 }, async () => {
    const c = await newCustomer(stack, 'twilio', { welcome_message: 'Hello, how can I help?' });
    await putCrm(c);
    const caller = nextNumber();
    const ctx = await stack.server.request('PUT', `/v1/phone-numbers/${enc(c.number)}/callers/${enc(caller)}`, {
      key: c.key,
      body: { name: 'Ada Lovelace', email: 'ada@example.com' },
    });
    expect(ctx.status, ctx.text).toBe(200);

    const summary = 'The caller wants a table for two tomorrow evening.';
    const call = await completedCall(c, caller, summary);

    const delivered = await crmDeliveryWhere(c, call.call_id, (d) => d.status === 'delivered', 'the CRM delivery');
    expect(delivered).toMatchObject({ url: `${crm.baseUrl}/contacts/upsert`, attempts: 1, last_status_code: 201, next_attempt_at: null });
    const contact = [...crm.contacts.values()].find((x) => x.phone === caller);
    expect(contact).toMatchObject({ locationId: LOCATION, phone: caller, name: 'Ada Lovelace', email: 'ada@example.com' });
    const notes = notesOf(caller);
    expect(notes).toHaveLength(1);
    expect(notes[0]!.body).toContain(`Summary: ${summary}`);
    expect(notes[0]!.body).toContain(`Inbound call ${caller} → ${c.number}`);
    expect(notes[0]!.body).toContain('Outcome: completed');
    expect(notes[0]!.body).toContain(call.started_at.slice(0, 16).replace('T', ' '));
    expect(notes[0]!.body).toContain(`ref ${delivered.delivery_id}`);

    // The CRM's wire rules: the token as Bearer, its Version header, the location in the upsert.
    const upsert = crm.requests.find((r) => r.path === '/contacts/upsert' && r.body?.['phone'] === caller)!;
    expect(upsert.headers['authorization']).toBe(`Bearer ${PIT}`);
    expect(upsert.headers['version']).toBe('2021-07-28');
    expect(upsert.body).toEqual({ locationId: LOCATION, phone: caller, name: 'Ada Lovelace', email: 'ada@example.com' });
    // Not a signed webhook: the CRM knows us by the token.
    expect(upsert.headers['webhook-signature']).toBeUndefined();
  });

  it('a failing CRM is retried on the schedule until it takes the note', { timeout: 60_000 }, async () => {
    const c = await newCustomer(stack, 'twilio');
    await putCrm(c);
    const caller = nextNumber();
    const isUpsert = (r: { path: string; body?: Record<string, unknown> | undefined }) => r.path === '/contacts/upsert' && r.body?.['phone'] === caller;
    crm.fail({ status: 500, body: { message: 'Internal server error' }, times: 2, match: isUpsert });
    crm.fail({ status: 503, body: { message: 'busy' }, match: (r) => r.method === 'POST' && /\/notes$/.test(r.path) && notesOf(caller).length === 0 && [...crm.contacts.values()].some((x) => x.phone === caller) });
    const call = await completedCall(c, caller, 'Asked about opening hours.');

    const d = await crmDeliveryWhere(c, call.call_id, (x) => x.status === 'delivered', 'the CRM delivery after the failures');
    // 500, 500 on the upsert, 503 on the note, then both steps through.
    expect(d.attempts).toBe(4);
    expect(d.last_status_code).toBe(201);
    expect(notesOf(caller)).toHaveLength(1);
    expect(notesOf(caller)[0]!.body).toContain('Summary: Asked about opening hours.');
  });

  it('a note whose answer was lost is found at the CRM on the next attempt, not added twice', { timeout: 60_000 }, async () => {
    const c = await newCustomer(stack, 'twilio');
    await putCrm(c);
    const caller = nextNumber();
    // The CRM stores the note, then the connection breaks before its answer.
    crm.fail({ drop: true, match: (r) => r.method === 'POST' && /\/notes$/.test(r.path) && [...crm.contacts.values()].some((x) => x.phone === caller) });
    const call = await completedCall(c, caller, 'Wants a callback on Monday.');

    const d = await crmDeliveryWhere(c, call.call_id, (x) => x.status === 'delivered', 'the CRM delivery after the lost answer');
    expect(d.attempts).toBe(2);
    expect(notesOf(caller)).toHaveLength(1);
    const contactId = [...crm.contacts.values()].find((x) => x.phone === caller)!.id;
    // The second attempt looked for the note and did not post another.
    expect(crmRequestsFor(new RegExp(`^/contacts/${contactId}/notes$`)).map((r) => r.method)).toEqual(['POST', 'GET']);
  });

  it('gives up at once when the number no longer has a CRM integration', { timeout: 60_000 }, async () => {
    const c = await newCustomer(stack, 'twilio');
    const pit = `pit-${c.accountId}`;
    tokens[pit] = 'loc-removed';
    await putCrm(c, pit, 'loc-removed');
    const caller = nextNumber();
    // The CRM refuses this token's requests until the integration is gone.
    crm.fail({ status: 503, times: 1000, match: (r) => r.headers['authorization'] === `Bearer ${pit}` });
    const call = await completedCall(c, caller, 'Cancelled the order.');
    await crmDeliveryWhere(c, call.call_id, (x) => x.attempts >= 1 && x.status === 'pending', 'the first failed attempt');
    const removed = await stack.server.request('DELETE', `/v1/integrations/crm/number/${enc(c.number)}`, { key: c.key });
    expect(removed.status, removed.text).toBeLessThan(300);

    const d = await crmDeliveryWhere(c, call.call_id, (x) => x.status === 'failed', 'the CRM delivery to fail');
    // Failed by the first attempt after the removal, long before the schedule ran out.
    expect(d.attempts).toBeLessThan(6);
    // The last attempt had nothing to send to, so no answer.
    expect(d.last_status_code).toBeNull();
    expect(notesOf(caller)).toHaveLength(0);
  });
});

describe('calls that make no contact', () => {
  it('a dial nobody answered (busy) is not synced: no contact is made of the person dialled', { timeout: 30_000 }, async () => {
    const c = await newCustomer(stack, 'twilio');
    await putCrm(c);
    const to = nextNumber();
    stack.sims.twilio.scenario(to, 'busy');
    const call = await dial(stack.server, c, to);
    const record = await recordWhere(stack, c, call.call_id, (r) => r.call_status === 'busy' && r.analysis_status !== 'pending', 15_000, 'the busy call analysed');
    expect(record.started_at).toBeNull();
    await sleep(300);
    expect((await deliveriesOf(c, call.call_id)).filter((d) => d.event === 'crm.contact_note')).toEqual([]);
    expect(crm.requests.some((r) => r.body?.['phone'] === to)).toBe(false);
  });
});

describe('the automation post-call URL', () => {
  it('gets call.completed, signed like every webhook and only that event; no CRM delivery for a number without a CRM', { timeout: 60_000 }, async () => {
    const postCallPath = `/post-call/${Date.now()}`;
    const hookPath = `/hook/${Date.now()}`;
    const postCallUrl = receiver.url(postCallPath);
    const hookUrl = receiver.url(hookPath);
    // The same URL as the number's webhook and the agent's webhook_url: one delivery per event.
    // Not recorded: the carrier's recording would add its own `recording.fetch` delivery to the list below.
    const c = await newCustomer(stack, 'twilio', { webhook_url: hookUrl, record_call: false });
    const auto = await stack.server.request('PUT', `/v1/integrations/automation/number/${enc(c.number)}`, { key: c.key, body: { post_call_url: postCallUrl } });
    expect(auto.status, auto.text).toBe(200);
    const hook = await stack.server.request('PUT', `/v1/integrations/webhook/number/${enc(c.number)}`, { key: c.key, body: { url: hookUrl } });
    expect(hook.status, hook.text).toBe(200);
    const secret = (await stack.server.request('GET', '/v1/webhooks/secret', { key: c.key })).body.secret as string;

    const caller = nextNumber();
    const call = await completedCall(c, caller, 'Asked for the menu.');
    const [completed] = await receiver.waitFor(postCallPath, 1, 10_000);
    await receiver.waitFor(hookPath, 2, 10_000);
    // Whatever else was going to arrive has had its chance.
    await sleep(500);
    expect(receiver.to(postCallPath)).toHaveLength(1);
    expect(receiver.to(hookPath).map((r) => JSON.parse(r.body).event)).toEqual(['call.started', 'call.completed']);

    // Verified by an independent implementation of Standard Webhooks.
    const verify = (r: ReceivedWebhook) => new Webhook(secret).verify(r.body, r.headers);
    expect(() => verify(completed!)).not.toThrow();
    const body = JSON.parse(completed!.body);
    expect(body).toMatchObject({ event: 'call.completed', call_id: call.call_id, direction: 'inbound', from: caller, to: c.number, status: 'completed', summary: 'Asked for the menu.', successful: true, sentiment: 'happy' });
    expect(body.transcript).toContain('Caller:');
    // The same bytes as the number's webhook got: the same payload.
    expect(completed!.body).toBe(receiver.to(hookPath)[1]!.body);

    const list = await deliveriesOf(c, call.call_id);
    expect(list.map((d) => `${d.event} ${d.url}`).sort()).toEqual([`call.completed ${hookUrl}`, `call.completed ${postCallUrl}`, `call.started ${hookUrl}`]);
    expect(list.find((d) => d.url === postCallUrl)).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(crm.requests.some((r) => r.body?.['phone'] === caller)).toBe(false);
  });
});

describe('the OpenAPI document', () => {
  it('names the crm.contact_note deliveries and where they go', async () => {
    const res = await stack.server.request('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    const list = res.body.paths['/v1/webhooks/deliveries'].get;
    const text = JSON.stringify(list);
    expect(text).toContain('crm.contact_note');
    expect(text).toContain('{CRM_BASE_URL}/contacts/upsert');
  });
});
