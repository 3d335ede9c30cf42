// Webhooks out, end to end: the real server (in this process) with both carrier
// simulators and a real HTTPS receiver whose certificate is made by openssl here and
// trusted through an https agent. Every signature is checked with the
// `standardwebhooks` package, an independent verifier. Covered: call.started (its
// whitelisted payload field by field, its timing, one delivery for a URL configured
// twice), the Test button, the deliveries list, the faults of contract.md §9 (500s
// then 200, 410, a receiver that hangs, a redirect, Retry-After, retries running out)
// and the double signature after a secret rotation.
import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextNumber } from './helpers/fixtures.ts';
import { expectError } from './helpers/server.ts';
import { callReaches, dial, eventually, metric, newCustomer, type CallStack, type Customer } from './helpers/calls.ts';
import { startWebhookCallStack } from './helpers/webhooks.ts';
import type { ReceivedWebhook, WebhookReceiver } from './sim/webhook-receiver.ts';

const STARTED_DELAY_MS = 700;
const RETRY_MS = 150;
// Long enough for a first TLS handshake on a loaded CI machine (at 800 ms, a run beside the
// heaviest suites timed call.started's first attempts out and it arrived 9 s late).
const TIMEOUT_MS = 3000;

let receiver: WebhookReceiver;
let stack: CallStack;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ stack, receiver, close: stop } = await startWebhookCallStack({
    CALL_STARTED_DELAY_MS: String(STARTED_DELAY_MS),
    WEBHOOK_RETRY_SCHEDULE_MS: [RETRY_MS, RETRY_MS, RETRY_MS, RETRY_MS].join(','),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
  }));
}, 30_000);
afterAll(async () => {
  await stop?.();
});

let pathSeq = 0;
const newPath = (name: string) => `/${name}/${++pathSeq}`;
const enc = encodeURIComponent;

async function setWebhook(c: Pick<Customer, 'key' | 'number'>, kind: 'webhook' | 'webhook2', url: string): Promise<void> {
  const res = await stack.server.request('PUT', `/v1/integrations/${kind}/number/${enc(c.number)}`, { key: c.key, body: { url } });
  expect(res.status, res.text).toBe(200);
}

async function secretOf(key: string): Promise<string> {
  const res = await stack.server.request('GET', '/v1/webhooks/secret', { key });
  expect(res.status).toBe(200);
  return res.body.secret as string;
}

/** What standardwebhooks says of the request with this secret. */
function verifies(secret: string, r: ReceivedWebhook): boolean {
  try {
    new Webhook(secret).verify(r.body, r.headers);
    return true;
  } catch {
    return false;
  }
}

const sendTest = (c: Pick<Customer, 'key' | 'number'>) => stack.server.request('POST', `/v1/integrations/webhook/number/${enc(c.number)}/test`, { key: c.key });
const deliveries = (key: string, query = '') => stack.server.request('GET', `/v1/webhooks/deliveries${query}`, { key });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls the deliveries list until the delivery with this id satisfies `ok`. */
async function deliveryBecomes(key: string, id: string, ok: (d: any) => boolean, timeoutMs = 8000): Promise<any> {
  return eventually(async () => {
    const res = await deliveries(key, '?limit=100');
    const d = res.body.deliveries.find((x: any) => x.delivery_id === id);
    return d && ok(d) ? d : undefined;
  }, timeoutMs, `delivery ${id}`);
}

const POST_CALL_NULLS = ['ended_reason', 'ended_at', 'duration_seconds', 'transcript', 'summary', 'sentiment', 'successful', 'extracted', 'recording_url', 'recording_duration_seconds', 'avg_latency_ms'];
const EVENT_KEYS = ['event', 'call_id', 'agent_id', 'direction', 'channel', 'from', 'to', 'status', 'started_at', ...POST_CALL_NULLS, 'bookings', 'campaign_id'];

describe('call.started', () => {
  it('goes once to a URL set as primary, second and agent webhook, about CALL_STARTED_DELAY_MS after connect, whitelisted and signed', async () => {
    const path = newPath('started');
    const url = receiver.url(path);
    const prompt = 'SECRET-PROMPT-MARKER you are a test agent';
    const c = await newCustomer(stack, 'twilio', { webhook_url: url, system_prompt: prompt });
    await setWebhook(c, 'webhook', url);
    await setWebhook(c, 'webhook2', url);
    const secret = await secretOf(c.key);
    const to = nextNumber();

    const call = await dial(stack.server, c, to);
    const live = await callReaches(stack.server, c.key, call.call_id, 'in-progress');
    const [got] = await receiver.waitFor(path, 1, 10_000);
    // Whatever else was going to arrive has had its chance.
    await sleep(STARTED_DELAY_MS + 500);
    expect(receiver.to(path)).toHaveLength(1);

    const connectedAt = Date.parse(live.started_at);
    expect(got!.at - connectedAt).toBeGreaterThanOrEqual(STARTED_DELAY_MS - 50);
    expect(got!.at - connectedAt).toBeLessThan(STARTED_DELAY_MS + 1500);

    expect(verifies(secret, got!)).toBe(true);
    expect(got!.headers['content-type']).toBe('application/json');
    const body = JSON.parse(got!.body);
    expect(Object.keys(body).sort()).toEqual([...EVENT_KEYS, 'voicemail_detected'].sort());
    expect(body).toMatchObject({
      event: 'call.started',
      call_id: call.call_id,
      agent_id: c.agentId,
      direction: 'outbound',
      from: c.number,
      to,
      status: 'in-progress',
      started_at: live.started_at,
      bookings: [],
      campaign_id: null,
      voicemail_detected: null,
    });
    for (const k of POST_CALL_NULLS) expect(body[k], k).toBeNull();
    expect(got!.body).not.toContain('SECRET-PROMPT-MARKER');
    expect(got!.body).not.toContain(c.accountId);
    expect(got!.body).not.toMatch(/"call_[A-Za-z0-9]{10,}"/);

    // The delivery is listed under the call, its id the webhook-id the receiver saw.
    const list = await deliveries(c.key, `?call_id=${enc(call.call_id)}`);
    expect(list.body.count).toBe(1);
    expect(list.body.deliveries[0]).toMatchObject({ delivery_id: got!.headers['webhook-id'], event: 'call.started', url, status: 'delivered', attempts: 1, last_status_code: 200, next_attempt_at: null });
    expect(got!.headers['webhook-id']).toMatch(/^whd_/);
  });

  it('on an inbound call (carrier B): same fields without voicemail_detected, from the caller to our number', async () => {
    const path = newPath('started-in');
    const c = await newCustomer(stack, 'telnyx');
    await setWebhook(c, 'webhook2', receiver.url(path));
    const secret = await secretOf(c.key);
    const from = nextNumber();
    const handle = await stack.sims.telnyx.placeInboundCall({ from, to: c.number, apiKey: c.carrierAccount });
    const [got] = await receiver.waitFor(path, 1, 10_000);
    expect(verifies(secret, got!)).toBe(true);
    const body = JSON.parse(got!.body);
    expect(Object.keys(body).sort()).toEqual([...EVENT_KEYS].sort());
    expect(body).toMatchObject({ event: 'call.started', call_id: handle.id, agent_id: c.agentId, direction: 'inbound', from, to: c.number, status: 'in-progress', bookings: [], campaign_id: null });
    for (const k of POST_CALL_NULLS) expect(body[k], k).toBeNull();
    await handle.hangup();
  });

  it('is not sent when the number has no webhook (the agent webhook_url is for post-call data)', async () => {
    const path = newPath('agent-only');
    const c = await newCustomer(stack, 'twilio', { webhook_url: receiver.url(path) });
    const call = await dial(stack.server, c, nextNumber());
    await callReaches(stack.server, c.key, call.call_id, 'in-progress');
    await sleep(STARTED_DELAY_MS + 700);
    expect(receiver.to(path)).toHaveLength(0);
    expect((await deliveries(c.key)).body.count).toBe(0);
  });
});

describe('POST /v1/integrations/webhook/number/{phone_number}/test', () => {
  it("sends a signed webhook.test to the number's primary and second webhook and answers each URL's status", async () => {
    const [a, b] = [newPath('test-a'), newPath('test-b')];
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, 'webhook', receiver.url(a));
    await setWebhook(c, 'webhook2', receiver.url(b));
    receiver.script(b, { status: 503 });
    const secret = await secretOf(c.key);

    const res = await sendTest(c);
    expect(res.status, res.text).toBe(200);
    expect(res.body.deliveries).toEqual([
      { delivery_id: expect.stringMatching(/^whd_/), url: receiver.url(a), status_code: 200, ok: true, error: null },
      { delivery_id: expect.stringMatching(/^whd_/), url: receiver.url(b), status_code: 503, ok: false, error: null },
    ]);
    const [got] = receiver.to(a);
    expect(verifies(secret, got!)).toBe(true);
    const body = JSON.parse(got!.body);
    expect(Object.keys(body).sort()).toEqual(['event', 'phone_number', 'sent_at']);
    expect(body).toMatchObject({ event: 'webhook.test', phone_number: c.number });
    expect(Number.isNaN(Date.parse(body.sent_at))).toBe(false);

    // Both are outbox rows: listed, and the failed one retried like any delivery.
    const [da, db] = res.body.deliveries;
    expect(await deliveryBecomes(c.key, da.delivery_id, (d) => d.status === 'delivered')).toMatchObject({ event: 'webhook.test', attempts: 1 });
    expect(await deliveryBecomes(c.key, db.delivery_id, (d) => d.status === 'delivered')).toMatchObject({ attempts: 2, last_status_code: 200 });
  });

  it('one delivery for a URL set as both primary and second', async () => {
    const path = newPath('twice');
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, 'webhook', receiver.url(path));
    await setWebhook(c, 'webhook2', receiver.url(path));
    const res = await sendTest(c);
    expect(res.body.deliveries).toHaveLength(1);
    await sleep(300);
    expect(receiver.to(path)).toHaveLength(1);
  });

  it('a number without a webhook is 400 webhook_not_configured; a foreign or unknown number is 404', async () => {
    const c = await newCustomer(stack, 'twilio');
    expectError(await sendTest(c), 400, 'invalid_request', 'webhook_not_configured');
    const other = await newCustomer(stack, 'twilio');
    await setWebhook(other, 'webhook', receiver.url(newPath('foreign')));
    expectError(await sendTest({ key: c.key, number: other.number }), 404, 'not_found', 'number_not_found');
    expectError(await sendTest({ key: c.key, number: nextNumber() }), 404, 'not_found', 'number_not_found');
    expect((await deliveries(c.key)).body.count).toBe(0);
  });
});

describe('GET /v1/webhooks/deliveries', () => {
  it('lists the account’s deliveries newest first, filters by status and call, pages, and shows nothing of other accounts', async () => {
    const [okPath, gonePath] = [newPath('list-ok'), newPath('list-gone')];
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, 'webhook', receiver.url(okPath));
    await setWebhook(c, 'webhook2', receiver.url(gonePath));
    receiver.script(gonePath, { status: 410 });
    const first = await sendTest(c);
    const second = await sendTest(c);
    expect(first.status).toBe(200);

    const all = await deliveries(c.key);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ count: 4, limit: 25, offset: 0 });
    // Newest first (rows of one request too: the later URL's row was made after the earlier one's).
    expect(all.body.deliveries.map((d: any) => d.delivery_id)).toEqual([...first.body.deliveries, ...second.body.deliveries].map((d: any) => d.delivery_id).reverse());
    for (const d of all.body.deliveries) expect(Object.keys(d).sort()).toEqual(['attempts', 'created_at', 'delivery_id', 'event', 'last_error', 'last_status_code', 'next_attempt_at', 'status', 'url']);

    const failed = await deliveries(c.key, '?status=failed');
    expect(failed.body.count).toBe(1);
    expect(failed.body.deliveries[0]).toMatchObject({ url: receiver.url(gonePath), status: 'failed', attempts: 1, last_status_code: 410, last_error: 'answered 410 Gone; not retried', next_attempt_at: null });
    expect((await deliveries(c.key, '?status=delivered')).body.count).toBe(3);
    expect((await deliveries(c.key, '?status=pending')).body.count).toBe(0);
    expect((await deliveries(c.key, '?call_id=CAnone')).body.count).toBe(0);

    const paged = await deliveries(c.key, '?limit=1&offset=1');
    expect(paged.body).toMatchObject({ count: 4, limit: 1, offset: 1 });
    expect(paged.body.deliveries[0].delivery_id).toBe(all.body.deliveries[1].delivery_id);

    expectError(await deliveries(c.key, '?status=sent'), 400, 'invalid_request', 'invalid_request');
    expectError(await deliveries(c.key, '?limit=0'), 400, 'invalid_request', 'invalid_request');

    const other = await stack.server.newAccount();
    const theirs = await deliveries(other.key);
    expect(theirs.body).toMatchObject({ deliveries: [], count: 0 });
    expect((await deliveries(other.key, `?status=failed`)).body.count).toBe(0);
    expect((await deliveries(other.key, `?call_id=${enc('x')}`)).body.count).toBe(0);
  });
});

describe('faults (contract.md §9)', () => {
  async function customerOn(path: string): Promise<Customer & { secret: string }> {
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, 'webhook', receiver.url(path));
    return { ...c, secret: await secretOf(c.key) };
  }

  it('500 three times, then 200: delivered on the 4th attempt, the same webhook-id on each, each signed', async () => {
    const path = newPath('flaky');
    const c = await customerOn(path);
    receiver.script(path, { status: 500 }, { status: 500 }, { status: 500 });
    const res = await sendTest(c);
    expect(res.body.deliveries[0]).toMatchObject({ status_code: 500, ok: false });
    const id = res.body.deliveries[0].delivery_id;
    const seen = await receiver.waitFor(path, 4);
    expect(seen.map((r) => r.answered)).toEqual([500, 500, 500, 200]);
    expect(new Set(seen.map((r) => r.headers['webhook-id']))).toEqual(new Set([id]));
    for (const r of seen) expect(verifies(c.secret, r)).toBe(true);
    expect(new Set(seen.map((r) => r.body)).size).toBe(1);
    expect(await deliveryBecomes(c.key, id, (d) => d.status === 'delivered')).toMatchObject({ attempts: 4, last_status_code: 200, next_attempt_at: null });
    await sleep(4 * RETRY_MS);
    expect(receiver.to(path)).toHaveLength(4);
  });

  it('410 stops at once: failed after one attempt', async () => {
    const path = newPath('gone');
    const c = await customerOn(path);
    receiver.script(path, { status: 410 });
    const res = await sendTest(c);
    expect(res.body.deliveries[0]).toMatchObject({ status_code: 410, ok: false });
    await sleep(5 * RETRY_MS);
    expect(receiver.to(path)).toHaveLength(1);
    expect(await deliveryBecomes(c.key, res.body.deliveries[0].delivery_id, (d) => d.status === 'failed')).toMatchObject({ attempts: 1, last_status_code: 410 });
  });

  it('retries run out: failed after the schedule’s last retry', async () => {
    const path = newPath('down-for-good');
    const c = await customerOn(path);
    receiver.script(path, ...Array.from({ length: 10 }, () => ({ status: 502 })));
    const res = await sendTest(c);
    const id = res.body.deliveries[0].delivery_id;
    // 1 attempt + 4 retries (WEBHOOK_RETRY_SCHEDULE_MS has four waits).
    expect(await deliveryBecomes(c.key, id, (d) => d.status === 'failed')).toMatchObject({ attempts: 5, last_status_code: 502, next_attempt_at: null });
    await sleep(3 * RETRY_MS);
    expect(receiver.to(path)).toHaveLength(5);
  });

  it('a receiver that hangs 20 s is timed out (WEBHOOK_TIMEOUT_MS) and the delivery retried', async () => {
    const path = newPath('hangs');
    const c = await customerOn(path);
    receiver.script(path, { status: 200, delayMs: 20_000 });
    const t0 = Date.now();
    const res = await sendTest(c);
    expect(Date.now() - t0).toBeLessThan(TIMEOUT_MS + 2000);
    expect(res.body.deliveries[0]).toMatchObject({ status_code: null, ok: false, error: expect.stringContaining(`${TIMEOUT_MS} ms`) });
    const seen = await receiver.waitFor(path, 2);
    expect(seen[1]!.headers['webhook-id']).toBe(seen[0]!.headers['webhook-id']);
    expect(await deliveryBecomes(c.key, res.body.deliveries[0].delivery_id, (d) => d.status === 'delivered')).toMatchObject({ attempts: 2 });
  });

  it('a connection failure is told as its category, never with the address and port (no port scanning)', async () => {
    const c = await newCustomer(stack, 'twilio');
    // A closed port, and a port that answers plain HTTP where TLS was expected.
    const closed = await new Promise<number>((resolve) => {
      const s = createNetServer();
      s.listen(0, '127.0.0.1', () => {
        const port = (s.address() as { port: number }).port;
        s.close(() => resolve(port));
      });
    });
    const plain = createHttpServer((_req, res) => res.end('plain'));
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    const plainPort = (plain.address() as { port: number }).port;
    try {
      for (const [port, category] of [[closed, 'connection_failed'], [plainPort, 'tls_error']] as const) {
        await setWebhook(c, 'webhook', `https://127.0.0.1:${port}/hook`);
        const res = await sendTest(c);
        const [d] = res.body.deliveries;
        expect(d).toMatchObject({ status_code: null, ok: false });
        expect(d.error).toMatch(new RegExp(`^${category}: `));
        expect(d.error).not.toContain(String(port));
        expect(d.error).not.toContain('127.0.0.1');
        const listed = await deliveryBecomes(c.key, d.delivery_id, (x) => x.attempts >= 1);
        expect(listed.last_error).toBe(d.error);
      }
    } finally {
      await new Promise((r) => plain.close(r));
    }
  });

  it('a 3xx is not followed: a failed attempt, retried at the same URL', async () => {
    const [path, elsewhere] = [newPath('moved'), newPath('elsewhere')];
    const c = await customerOn(path);
    receiver.script(path, { status: 302, headers: { location: receiver.url(elsewhere) } });
    const res = await sendTest(c);
    expect(res.body.deliveries[0]).toMatchObject({ status_code: 302, ok: false });
    await receiver.waitFor(path, 2);
    expect(receiver.to(elsewhere)).toHaveLength(0);
    expect(await deliveryBecomes(c.key, res.body.deliveries[0].delivery_id, (d) => d.status === 'delivered')).toMatchObject({ attempts: 2 });
  });

  it('Retry-After on a 429 is honoured over the (much shorter) schedule', async () => {
    const path = newPath('slow-down');
    const c = await customerOn(path);
    receiver.script(path, { status: 429, headers: { 'retry-after': '2' } });
    await sendTest(c);
    const seen = await receiver.waitFor(path, 2, 6000);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(1900);
  });

  it('/metrics shows the backlog of pending deliveries', async () => {
    const path = newPath('backlog');
    const c = await customerOn(path);
    const before = await metric(stack.server, 'switchboard_webhook_backlog');
    expect(before).toBeGreaterThanOrEqual(0);
    receiver.script(path, { status: 503, headers: { 'retry-after': '3600' } });
    await sendTest(c);
    expect(await metric(stack.server, 'switchboard_webhook_backlog')).toBe(before + 1);
  });
});

describe('secret rotation', () => {
  it('for 24 h after a rotation every delivery carries both signatures, and each secret verifies', async () => {
    const path = newPath('rotated');
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, 'webhook', receiver.url(path));
    const old = await secretOf(c.key);

    await sendTest(c);
    const [before] = receiver.to(path);
    expect(before!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verifies(old, before!)).toBe(true);

    const rotated = await stack.server.request('POST', '/v1/webhooks/secret/rotate', { key: c.key });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.secret as string;
    await sendTest(c);
    const after = receiver.to(path)[1]!;
    const signatures = after.headers['webhook-signature']!.split(' ');
    expect(signatures).toHaveLength(2);
    for (const s of signatures) expect(s).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(verifies(fresh, after)).toBe(true);
    expect(verifies(old, after)).toBe(true);
    // Each secret alone: the new one signs first, the old one second.
    expect(verifies(fresh, { ...after, headers: { ...after.headers, 'webhook-signature': signatures[0]! } })).toBe(true);
    expect(verifies(old, { ...after, headers: { ...after.headers, 'webhook-signature': signatures[1]! } })).toBe(true);
    const stranger = (await stack.server.newAccount()).key;
    expect(verifies(await secretOf(stranger), after)).toBe(false);

    // A second rotation drops the oldest secret: the two latest sign.
    const again = (await stack.server.request('POST', '/v1/webhooks/secret/rotate', { key: c.key })).body.secret as string;
    await sendTest(c);
    const third = receiver.to(path)[2]!;
    expect(verifies(again, third)).toBe(true);
    expect(verifies(fresh, third)).toBe(true);
    expect(verifies(old, third)).toBe(false);
  });
});
