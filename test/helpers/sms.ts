// What the SMS suites (test/sms/) share: the server settings they run with, real US
// recipient numbers, the two carriers' messaging simulators behind one face, the SMS and
// SMS-campaign API calls, polling that checks the campaign's counts at every look, and
// the replay or forgery of a carrier's incoming-SMS webhook.
import { expect } from 'vitest';
import { eventually, type CallStack, type Customer, type Provider } from './calls.ts';
import { expectError, type TestResponse } from './server.ts';
import { TWILIO_ENDPOINTS } from '../sim/twilio-sim.ts';
import { TELNYX_ENDPOINTS } from '../sim/telnyx-sim.ts';
import type { SimFault } from '../sim/sim-http.ts';
import type { SimSentMessage } from '../sim/sms-common.ts';

/** Fast pacing, and rate limits out of the way (polling is not what these suites test). */
export const SMS_ENV = { SMS_SEND_INTERVAL_MS: '50', SMS_RESEND_AFTER_MS: '500', RATE_LIMIT_READS_PER_MIN: '1000000', RATE_LIMIT_WRITES_PER_MIN: '1000000' };

/** Generous: another suite may be running beside this one on two cores. */
export const SETTLE_MS = 20_000;
/** How often the helpers poll (the rate limits are raised in SMS_ENV). */
export const POLL_MS = 50;

export const enc = encodeURIComponent;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Real US numbers (San Francisco's 628 area, 555 exchange: valid by libphonenumber-js's
 * full metadata), unique within a file: `block` (0-9) keeps files apart.
 */
export function phoneSequence(block: number): () => string {
  let n = 0;
  return () => `+1628555${block}${String(++n).padStart(3, '0')}`;
}

/** A delivery fate a test picks for a recipient, in either carrier's words. */
export type Fate = 'delivered' | 'undelivered' | 'failed';

/** The carriers' messaging simulators behind one face. */
export interface SmsSim {
  provider: Provider;
  sent(to?: string): SimSentMessage[];
  sentTo(to: string): number;
  /** Send requests received for `to` (accepted, refused or met by a fault). */
  requests(to: string): unknown[];
  receive(opts: { from: string; to: string; body: string }): Promise<{ sid: string; status: number | null; body: string; error: string | null }>;
  outcome(to: string, fate: Fate): void;
  unregistered(from: string, on?: boolean): void;
  /** The next send to `to` meets `fault` (sim-http.ts): `{drop: true}`, `{reset: true}`, … */
  failSendTo(to: string, fault: Omit<SimFault, 'match'>): void;
  /** Milliseconds between a message's steps (accepted → sent → final). */
  stepMs: number;
  /** The carrier's error code (as the API shows it) for a fate. */
  errorCodeOf(fate: Exclude<Fate, 'delivered'>): string;
  /** The incoming-SMS webhook the sim sent for inbound `sid`, as a request to replay. */
  inboundWebhook(sid: string): { path: string; body: string; headers: Record<string, string> };
  /** The same, with its text changed after signing (a forgery). */
  forged(sid: string, body: string): { path: string; body: string; headers: Record<string, string> };
}

export function smsSim(stack: CallStack, provider: Provider): SmsSim {
  if (provider === 'twilio') {
    const sim = stack.sims.twilio;
    const m = sim.messages;
    const hookOf = (sid: string) => {
      const hook = m.messages.get(sid)?.webhooks.find((w) => w.kind === 'sms');
      if (!hook) throw new Error(`no incoming-SMS webhook for ${sid}`);
      return hook;
    };
    const request = (params: Record<string, string>, signature: string, url: string) => ({
      path: new URL(url).pathname,
      body: new URLSearchParams(params).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
    });
    return {
      provider,
      sent: (to) => m.sent(to),
      sentTo: (to) => m.sentTo(to),
      requests: (to) => m.requests(to),
      receive: (o) => m.receive(o),
      outcome: (to, fate) => m.outcome(to, fate),
      unregistered: (from, on = true) => m.unregistered(from, on),
      failSendTo: (to, fault) => sim.fail({ ...fault, match: (r) => TWILIO_ENDPOINTS.message(r) && r.body.To === to }),
      get stepMs() {
        return m.stepMs;
      },
      set stepMs(ms: number) {
        m.stepMs = ms;
      },
      errorCodeOf: (fate) => (fate === 'undelivered' ? 'carrier:30003' : 'carrier:30008'),
      inboundWebhook(sid) {
        const h = hookOf(sid);
        return request(h.params, h.signature, h.url);
      },
      forged(sid, body) {
        const h = hookOf(sid);
        return request({ ...h.params, Body: body }, h.signature, h.url);
      },
    };
  }
  const sim = stack.sims.telnyx;
  const m = sim.messages;
  const hookOf = (sid: string) => {
    const hook = m.messages.get(sid)?.webhooks.find((w) => w.eventType === 'message.received');
    if (!hook) throw new Error(`no message.received for ${sid}`);
    return hook;
  };
  return {
    provider,
    sent: (to) => m.sent(to),
    sentTo: (to) => m.sentTo(to),
    requests: (to) => m.requests(to),
    receive: (o) => m.receive(o),
    outcome: (to, fate) => m.outcome(to, fate === 'delivered' ? 'delivered' : fate === 'undelivered' ? 'delivery_failed' : 'sending_failed'),
    unregistered: (from, on = true) => m.unregistered(from, on),
    failSendTo: (to, fault) => sim.fail({ ...fault, match: (r) => TELNYX_ENDPOINTS.message(r) && (r.body as { to?: unknown } | undefined)?.to === to }),
    get stepMs() {
      return m.stepMs;
    },
    set stepMs(ms: number) {
      m.stepMs = ms;
    },
    errorCodeOf: (fate) => (fate === 'undelivered' ? 'carrier:40008' : 'carrier:40002'),
    inboundWebhook(sid) {
      const h = hookOf(sid);
      return { path: new URL(h.url).pathname, body: h.body, headers: h.headers };
    },
    forged(sid, body) {
      const h = hookOf(sid);
      const envelope = JSON.parse(h.body) as { data: { payload: { text: string } } };
      envelope.data.payload.text = body;
      return { path: new URL(h.url).pathname, body: JSON.stringify(envelope), headers: h.headers };
    },
  };
}

/** POSTs a carrier webhook (as built by `inboundWebhook` / `forged`) to the server. */
export function postWebhook(stack: CallStack, hook: { path: string; body: string; headers: Record<string, string> }): Promise<TestResponse> {
  return stack.server.request('POST', hook.path, { rawBody: hook.body, headers: hook.headers });
}

/** Asserts api.md's error envelope with this status, type and code; returns the error object. */
export function expectApiError(res: TestResponse, status: number, type: string, code: string): any {
  expectError(res, status, type, code);
  return res.body.error;
}

// ---- Single messages ----------------------------------------------------------------

export function sendSms(stack: CallStack, c: Pick<Customer, 'key' | 'number'>, to: string, body = 'Hello from Switchboard', extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<TestResponse> {
  return stack.server.request('POST', '/v1/sms', { key: c.key, body: { from_number: c.number, to, body, ...extra }, headers });
}

export const getSms = (stack: CallStack, key: string, id: string) => stack.server.request('GET', `/v1/sms/${enc(id)}`, { key });
export const listSms = (stack: CallStack, key: string, query = '') => stack.server.request('GET', `/v1/sms${query}`, { key });

/** Polls GET /v1/sms/{id} until its status is one of `statuses`; returns the message. */
export async function smsReaches(stack: CallStack, key: string, id: string, statuses: string | string[], timeoutMs = SETTLE_MS): Promise<any> {
  const want = Array.isArray(statuses) ? statuses : [statuses];
  let last = '';
  try {
    return await eventually(
      async () => {
        const res = await getSms(stack, key, id);
        last = res.text;
        return res.status === 200 && want.includes(res.body.message.status) ? res.body.message : undefined;
      },
      timeoutMs,
      `message ${id} ${want.join('/')}`,
      POLL_MS,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last answer: ${last}`);
  }
}

/** Waits until the simulator recorded a message to `to` with this body; returns it. */
export function simSent(sim: SmsSim, to: string, body?: string, timeoutMs = SETTLE_MS): Promise<SimSentMessage> {
  return eventually(() => sim.sent(to).find((m) => body === undefined || m.body === body), timeoutMs, `the carrier to take a message to ${to}${body ? `: ${body.slice(0, 40)}` : ''}`, POLL_MS);
}

/** Sends one message and waits for `delivered`; returns the message. */
export async function sendDelivered(stack: CallStack, c: Pick<Customer, 'key' | 'number'>, to: string, body?: string): Promise<any> {
  const res = await sendSms(stack, c, to, body);
  expect(res.status, res.text).toBe(201);
  return smsReaches(stack, c.key, res.body.message.message_id, 'delivered');
}

// ---- Campaigns ----------------------------------------------------------------------

export function createCampaign(stack: CallStack, c: Pick<Customer, 'key' | 'number' | 'agentId'>, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<TestResponse> {
  return stack.server.request('POST', '/v1/sms/campaigns', {
    key: c.key,
    body: { agent_id: c.agentId, from_number: c.number, name: 'Spring offer', message_template: 'Hi {{name}}, our spring offer is on.', schedule_type: 'now', ...body },
    headers,
  });
}
/** POST /v1/sms/campaigns with exactly this body. */
export const createCampaignRaw = (stack: CallStack, key: string, body: Record<string, unknown>) => stack.server.request('POST', '/v1/sms/campaigns', { key, body });
export const getCampaign = (stack: CallStack, key: string, id: string) => stack.server.request('GET', `/v1/sms/campaigns/${enc(id)}`, { key });
export const launchCampaign = (stack: CallStack, key: string, id: string) => stack.server.request('POST', `/v1/sms/campaigns/${enc(id)}/launch`, { key });
export const cancelCampaign = (stack: CallStack, key: string, id: string) => stack.server.request('DELETE', `/v1/sms/campaigns/${enc(id)}`, { key });
export const patchCampaign = (stack: CallStack, key: string, id: string, body: Record<string, unknown>) => stack.server.request('PATCH', `/v1/sms/campaigns/${enc(id)}`, { key, body });
export const listCampaigns = (stack: CallStack, key: string, query = '') => stack.server.request('GET', `/v1/sms/campaigns${query}`, { key });

/** contract.md 11: delivered + failed + pending = total, whenever the campaign is read. */
export function expectCountsAddUp(camp: any): void {
  expect(camp.delivered_count + camp.failed_count + camp.pending_count, JSON.stringify(camp)).toBe(camp.total_count);
  for (const k of ['delivered_count', 'failed_count', 'pending_count', 'total_count']) expect(camp[k], k).toBeGreaterThanOrEqual(0);
}

/**
 * Polls GET /v1/sms/campaigns/{id} until `ok` holds, checking at every look that the
 * counts add up; returns the record. `seen` collects every record read.
 */
export async function campaignWhere(stack: CallStack, key: string, id: string, ok: (c: any) => boolean, what: string, timeoutMs = SETTLE_MS, seen: any[] = []): Promise<any> {
  let last = '';
  try {
    return await eventually(
      async () => {
        const res = await getCampaign(stack, key, id);
        last = res.text;
        expect(res.status, res.text).toBe(200);
        expectCountsAddUp(res.body);
        seen.push(res.body);
        return ok(res.body) ? res.body : undefined;
      },
      timeoutMs,
      `campaign ${id} ${what}`,
      POLL_MS,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last answer: ${last}`);
  }
}

/** Polls until the campaign is `done`. */
export const campaignDone = (stack: CallStack, key: string, id: string, timeoutMs = SETTLE_MS) => campaignWhere(stack, key, id, (c) => c.status === 'done', 'done', timeoutMs);

/** The account's messages of one campaign (GET /v1/sms, every page). */
export async function campaignMessages(stack: CallStack, key: string, campaignId: string): Promise<any[]> {
  const out: any[] = [];
  for (let offset = 0; ; offset += 100) {
    const res = await listSms(stack, key, `?limit=100&offset=${offset}`);
    expect(res.status, res.text).toBe(200);
    out.push(...res.body.messages.filter((m: any) => m.campaign_id === campaignId));
    if (offset + 100 >= res.body.count) return out;
  }
}
