// The carrier A simulator's messaging, from the service's side: sends over the REST API
// (form bodies, Basic auth), status callbacks and incoming texts at a small HTTP server
// standing in for the service (signatures checked with the service's own verifier), the
// refusals, the list's filters, and faults on sends.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { verifyTwilio } from '../../voice/carriers/twilio-signature.ts';
import { startTwilioSim, twilioSid, type TwilioSim } from './twilio-sim.ts';

const PUBLIC = 'https://switchboard.test';
const ACCOUNT = twilioSid('AC');
const TOKEN = 'e'.repeat(32);
const OTHER = twilioSid('AC');
const OTHER_TOKEN = 'f'.repeat(32);
const OURS = '+15550003000';
const THEIRS = '+15550003999';
const STATUS_URL = `${PUBLIC}/carrier/twilio/sms-status?tenant=a`;

interface Hook {
  path: string;
  url: string;
  form: URLSearchParams;
  signature: string | undefined;
}

const hooks: Hook[] = [];
/** What the stand-in service answers an incoming SMS with. */
let smsAnswer = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const signature = req.headers['x-twilio-signature'];
    const path = new URL(req.url ?? '/', PUBLIC).pathname;
    hooks.push({ path, url: PUBLIC + (req.url ?? '/'), form: new URLSearchParams(Buffer.concat(chunks).toString('utf8')), signature: typeof signature === 'string' ? signature : undefined });
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(path === '/carrier/twilio/sms' ? smsAnswer : '');
  });
});

let sim: TwilioSim;
let ourSid: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sim = await startTwilioSim({ messageStepMs: 5 });
  sim.route(PUBLIC, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  sim.addAccount(ACCOUNT, TOKEN);
  sim.addAccount(OTHER, OTHER_TOKEN);
  ourSid = sim.addNumber(ACCOUNT, OURS);
  sim.addNumber(OTHER, THEIRS);
});
afterAll(async () => {
  await sim.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  hooks.length = 0;
});

const auth = (account = ACCOUNT, token = TOKEN) => `Basic ${Buffer.from(`${account}:${token}`).toString('base64')}`;

async function api(method: string, path: string, form?: Record<string, string>, account = ACCOUNT, token = TOKEN): Promise<{ status: number; body: any }> {
  const res = await fetch(`${sim.baseUrl}/2010-04-01/Accounts/${account}${path}`, {
    method,
    headers: { authorization: auth(account, token), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    ...(form ? { body: new URLSearchParams(form).toString() } : {}),
  });
  return { status: res.status, body: await res.json() };
}

const send = (form: Record<string, string>, account?: string, token?: string) => api('POST', '/Messages.json', form, account, token);
const statusHooks = (sid: string) => hooks.filter((h) => h.path === '/carrier/twilio/sms-status' && h.form.get('MessageSid') === sid);
async function until<T>(probe: () => T | undefined | false, timeoutMs = 3000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('sending', () => {
  it('accepts a send with the Message resource, then signed status callbacks sent → delivered', async () => {
    const to = '+15550004001';
    const res = await send({ To: to, From: OURS, Body: 'Your table is booked.', StatusCallback: STATUS_URL });
    expect(res.status).toBe(201);
    const sid = res.body.sid as string;
    expect(sid).toMatch(/^SM[0-9a-f]{32}$/);
    expect(res.body).toMatchObject({
      account_sid: ACCOUNT,
      to,
      from: OURS,
      body: 'Your table is booked.',
      status: 'queued',
      direction: 'outbound-api',
      num_segments: '1',
      num_media: '0',
      error_code: null,
      error_message: null,
      price: null,
      price_unit: 'USD',
      date_sent: null,
      messaging_service_sid: null,
      api_version: '2010-04-01',
      uri: `/2010-04-01/Accounts/${ACCOUNT}/Messages/${sid}.json`,
    });
    expect(res.body.date_created).toMatch(/^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$/);

    expect(await sim.messages.messages.get(sid)!.done).toBe('delivered');
    const got = statusHooks(sid);
    expect(got.map((h) => h.form.get('MessageStatus'))).toEqual(['sent', 'delivered']);
    for (const h of got) {
      expect(h.url).toBe(STATUS_URL);
      expect(verifyTwilio(TOKEN, h.url, h.form, h.signature)).toBe(true);
      expect(Object.fromEntries(h.form)).toEqual({
        MessageSid: sid,
        SmsSid: sid,
        MessageStatus: h.form.get('MessageStatus'),
        SmsStatus: h.form.get('MessageStatus'),
        AccountSid: ACCOUNT,
        From: OURS,
        To: to,
        ApiVersion: '2010-04-01',
      });
    }
    const fetched = await api('GET', `/Messages/${sid}.json`);
    expect(fetched.body).toMatchObject({ sid, status: 'delivered' });
    expect(fetched.body.date_sent).not.toBeNull();
    expect(sim.messages.sent(to).map((m) => ({ sid: m.sid, from: m.from, to: m.to, body: m.body }))).toEqual([{ sid, from: OURS, to, body: 'Your table is booked.' }]);
    expect(sim.messages.sentTo(to)).toBe(1);
  });

  it('ends as the recipient\'s outcome says: undelivered after sent, failed without it, with error codes', async () => {
    sim.messages.outcome('+15550004002', 'undelivered');
    sim.messages.outcome('+15550004003', 'failed');
    sim.messages.outcome('+15550004004', 'undelivered', 30006);
    const sids: string[] = [];
    for (const to of ['+15550004002', '+15550004003', '+15550004004']) sids.push((await send({ To: to, From: OURS, Body: 'hi', StatusCallback: STATUS_URL })).body.sid);
    const finals = await Promise.all(sids.map((s) => sim.messages.messages.get(s)!.done));
    expect(finals).toEqual(['undelivered', 'failed', 'undelivered']);
    const seen = sids.map((s) => statusHooks(s).map((h) => `${h.form.get('MessageStatus')}:${h.form.get('ErrorCode') ?? '-'}`));
    expect(seen).toEqual([['sent:-', 'undelivered:30003'], ['failed:30008'], ['sent:-', 'undelivered:30006']]);
    const failed = await api('GET', `/Messages/${sids[1]}.json`);
    expect(failed.body).toMatchObject({ status: 'failed', error_code: 30008, date_sent: null });
  });

  it('sends no callback without a StatusCallback, and the resource still moves on', async () => {
    const res = await send({ To: '+15550004005', From: OURS, Body: 'x'.repeat(161) });
    expect(res.body.num_segments).toBe('2');
    expect(await sim.messages.messages.get(res.body.sid)!.done).toBe('delivered');
    expect(hooks).toEqual([]);
  });

  it('refuses with the carrier codes, records every request, and sends nothing', async () => {
    sim.messages.unregistered('+15550003001');
    sim.addNumber(ACCOUNT, '+15550003001');
    const base = { To: '+15550004010', From: OURS, Body: 'hi' };
    const cases: [Record<string, string>, number][] = [
      [{ From: OURS, Body: 'hi' }, 21604],
      [{ To: '+15550004010', Body: 'hi' }, 21603],
      [{ To: '+15550004010', From: OURS }, 21602],
      [{ ...base, To: '5550004010' }, 21211],
      [{ ...base, From: THEIRS }, 21606],
      [{ ...base, From: '+15559999999' }, 21606],
      [{ ...base, Body: 'x'.repeat(1601) }, 21617],
      [{ ...base, StatusCallback: 'not a url' }, 21609],
      [{ ...base, From: '+15550003001' }, 30034],
    ];
    const before = sim.messages.requests().length;
    for (const [form, code] of cases) {
      const res = await send(form);
      expect(res.status, `code ${code}`).toBe(400);
      expect(res.body).toEqual({ code, message: expect.any(String), more_info: `https://www.twilio.com/docs/errors/${code}`, status: 400 });
    }
    expect(sim.messages.requests().length - before).toBe(cases.length);
    expect((await send(cases[4]![0])).body.message).toBe(`The From phone number ${THEIRS} is not a valid, SMS-capable inbound phone number or short code for your account.`);
    expect(sim.messages.sentTo('+15550004010')).toBe(0);
    expect((await send(base, ACCOUNT, 'wrong')).body.code).toBe(20003);
  });
});

describe('listing', () => {
  it('filters by To, From and DateSent, newest first, paged; fetches one; 404 for another account', async () => {
    const to = '+15550004020';
    const sids: string[] = [];
    for (const body of ['one', 'two', 'three']) sids.push((await send({ To: to, From: OURS, Body: body })).body.sid);
    const today = new Date().toISOString().slice(0, 10);
    const list = (q: string) => api('GET', `/Messages.json?${q}`).then((r) => r.body);

    // Just created (date_sent still null): listed on the creation date.
    const all = await list(`To=${encodeURIComponent(to)}&${encodeURIComponent('DateSent>')}=${today}`);
    expect(all.messages.map((m: any) => m.sid)).toEqual([...sids].reverse());
    expect(all).toMatchObject({ page: 0, page_size: 50, start: 0, end: 2, next_page_uri: null });
    expect((await list(`To=${encodeURIComponent(to)}&DateSent<=2000-01-01`)).messages).toEqual([]);
    const instant = new Date(Date.now() - 60_000).toISOString();
    expect((await list(`To=${encodeURIComponent(to)}&DateSent>=${encodeURIComponent(instant)}`)).messages).toHaveLength(3);
    expect((await list(`From=${encodeURIComponent('+15550000000')}`)).messages).toEqual([]);

    const second = await list(`To=${encodeURIComponent(to)}&PageSize=1&Page=1`);
    expect(second.messages.map((m: any) => m.sid)).toEqual([sids[1]]);
    expect(second.next_page_uri).toContain('Page=2');
    expect(second.previous_page_uri).toContain('Page=0');
    expect((await api('GET', '/Messages.json?DateSent>=yesterday')).body.code).toBe(20001);

    expect((await api('GET', `/Messages/${sids[0]}.json`)).body.body).toBe('one');
    const foreign = await api('GET', `/Messages/${sids[0]}.json`, undefined, OTHER, OTHER_TOKEN);
    expect(foreign).toMatchObject({ status: 404, body: { code: 20404 } });
    expect((await api('GET', `/Messages.json?To=${encodeURIComponent(to)}`, undefined, OTHER, OTHER_TOKEN)).body.messages).toEqual([]);
  });
});

describe('incoming texts', () => {
  it('posts the signed incoming-SMS webhook to the sms_url the service set, and records it', async () => {
    await expect(sim.messages.receive({ from: '+15550005000', to: OURS, body: 'hi' })).rejects.toThrow(/no sms_url/);
    expect((await api('POST', `/IncomingPhoneNumbers/${ourSid}.json`, { SmsUrl: `${PUBLIC}/carrier/twilio/sms` })).status).toBe(200);

    const got = await sim.messages.receive({ from: '+15550005000', to: OURS, body: 'Can I move my booking?' });
    expect(got).toMatchObject({ status: 200, error: null });
    expect(got.sid).toMatch(/^SM[0-9a-f]{32}$/);
    const hook = hooks.find((h) => h.path === '/carrier/twilio/sms')!;
    expect(verifyTwilio(TOKEN, hook.url, hook.form, hook.signature)).toBe(true);
    expect(Object.fromEntries(hook.form)).toEqual({
      MessageSid: got.sid,
      SmsSid: got.sid,
      SmsMessageSid: got.sid,
      AccountSid: ACCOUNT,
      MessagingServiceSid: '',
      From: '+15550005000',
      To: OURS,
      Body: 'Can I move my booking?',
      NumMedia: '0',
      NumSegments: '1',
      SmsStatus: 'received',
      ApiVersion: '2010-04-01',
    });
    const listed = await api('GET', `/Messages/${got.sid}.json`);
    expect(listed.body).toMatchObject({ direction: 'inbound', status: 'received', from: '+15550005000', to: OURS });
    expect(sim.messages.sent('+15550005000')).toEqual([]);
  });

  it('sends the <Message> of the TwiML answer as a reply', async () => {
    smsAnswer = '<Response><Message>Sure &amp; done.</Message></Response>';
    try {
      await sim.messages.receive({ from: '+15550005001', to: OURS, body: 'hello' });
    } finally {
      smsAnswer = '<Response></Response>';
    }
    const [reply] = sim.messages.sent('+15550005001');
    expect(reply).toMatchObject({ from: OURS, to: '+15550005001', body: 'Sure & done.', direction: 'outbound-reply' });
  });
});

describe('faults on sends', () => {
  it('drop: the message is sent and its callbacks go, but the answer is lost', async () => {
    const to = '+15550004030';
    sim.fail({ match: 'message', drop: true });
    await expect(send({ To: to, From: OURS, Body: 'lost answer', StatusCallback: STATUS_URL })).rejects.toThrow();
    expect(sim.messages.sentTo(to)).toBe(1);
    expect(sim.messages.requests(to).map((r) => r.fault)).toEqual(['drop']);
    const sid = sim.messages.sent(to)[0]!.sid;
    await until(() => statusHooks(sid).length === 2);
    // The client can find it again by listing.
    expect((await api('GET', `/Messages.json?To=${encodeURIComponent(to)}`)).body.messages.map((m: any) => m.sid)).toEqual([sid]);
  });

  it('reset and 500: nothing is sent', async () => {
    const to = '+15550004031';
    sim.fail({ match: 'message', reset: true });
    sim.fail({ match: 'message', status: 500, body: { code: 20500, message: 'Internal Server Error', more_info: '', status: 500 } });
    await expect(send({ To: to, From: OURS, Body: 'a' })).rejects.toThrow();
    expect((await send({ To: to, From: OURS, Body: 'b' })).status).toBe(500);
    expect(sim.messages.sentTo(to)).toBe(0);
    expect((await send({ To: to, From: OURS, Body: 'c' })).status).toBe(201);
    expect(sim.messages.requests(to).map((r) => r.fault ?? 'none')).toEqual(['reset', 'status', 'none']);
    expect(sim.messages.sent(to).map((m) => m.body)).toEqual(['c']);
  });

  it('chaos on messages is keyed by To: the same seed gives each recipient the same faults', async () => {
    const run = async () => {
      const x = await startTwilioSim({ messageStepMs: 1 });
      try {
        x.addAccount(ACCOUNT, TOKEN);
        x.addNumber(ACCOUNT, OURS);
        x.chaos({ seed: 7, match: 'message', dropRate: 0.5 });
        const tos = ['+15550006001', '+15550006002', '+15550006003', '+15550006004'];
        await Promise.all(
          [...tos].reverse().map((to) =>
            fetch(`${x.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/Messages.json`, {
              method: 'POST',
              headers: { authorization: auth(), 'content-type': 'application/x-www-form-urlencoded' },
              body: new URLSearchParams({ To: to, From: OURS, Body: 'c' }).toString(),
            }).then((r) => r.status, () => 'lost'),
          ),
        );
        return tos.map((to) => `${to}:${x.messages.requests(to)[0]!.fault ?? 'ok'}:${x.messages.sentTo(to)}`);
      } finally {
        await x.close();
      }
    };
    const first = await run();
    expect(await run()).toEqual(first);
    expect(first.some((s) => s.includes(':drop:'))).toBe(true);
    expect(first.every((s) => s.endsWith(':1'))).toBe(true); // a drop still sends
  });
});
