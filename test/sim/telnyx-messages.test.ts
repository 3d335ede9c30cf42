// The carrier B simulator's messaging, from the service's side: sends over the REST API
// (JSON, Bearer keys), message events at the uWebSockets.js stand-in for the service
// (signatures checked with the service's own verifier), refusals, message detail records
// for reconciliation, incoming texts, and faults on sends.

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { verifyTelnyx } from '../../voice/carriers/telnyx-signature.ts';
import { startTelnyxReceiver, type ReceivedEvent, type TelnyxReceiver } from './telnyx-receiver.ts';
import { startTelnyxSim, type TelnyxSim } from './telnyx-sim.ts';

const PUBLIC = 'https://switchboard.test';
const KEY = 'KEY_messages_test';
const OTHER_KEY = 'KEY_messages_other';
const OURS = '+15550007000';
const NO_PROFILE = '+15550007001';
const THEIRS = '+15550007999';
const eventsUrl = (token: string) => `${PUBLIC}/carrier/telnyx/events/${token}`;

let receiver: TelnyxReceiver;
let sim: TelnyxSim;
let profileId: string;
let noProfileNumberId: string;

beforeAll(async () => {
  receiver = await startTelnyxReceiver();
  sim = await startTelnyxSim(undefined, { messageStepMs: 5 });
  sim.redirect(PUBLIC, receiver.baseUrl);
  sim.addApiKey(KEY);
  sim.addApiKey(OTHER_KEY);
  profileId = sim.addMessagingProfile(KEY);
  sim.addNumber(KEY, OURS, { messagingProfileId: profileId });
  noProfileNumberId = sim.addNumber(KEY, NO_PROFILE);
  sim.addNumber(OTHER_KEY, THEIRS, { messagingProfileId: sim.addMessagingProfile(OTHER_KEY) });
  // What the service's number import does: point the number's messaging profile at its events URL.
  const res = await api('PATCH', `/v2/messaging_profiles/${profileId}`, { webhook_url: eventsUrl('profile'), webhook_api_version: '2' });
  expect(res.status).toBe(200);
});
afterAll(async () => {
  await sim.close();
  receiver.close();
});
beforeEach(() => {
  receiver.events.length = 0;
});

async function api(method: string, path: string, body?: unknown, key = KEY): Promise<{ status: number; body: any }> {
  const res = await fetch(`${sim.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json() };
}

const send = (body: Record<string, unknown>, key?: string) => api('POST', '/v2/messages', body, key);
const json = (e: ReceivedEvent) => JSON.parse(e.rawBody) as { data: Record<string, any>; meta: Record<string, any> };
const eventsOf = (id: string) => receiver.events.filter((e) => json(e).data.payload.id === id);
const signed = (e: ReceivedEvent, key = KEY) =>
  verifyTelnyx(sim.publicKeyOf(key), e.rawBody, e.headers['telnyx-signature-ed25519'], e.headers['telnyx-timestamp'], Math.floor(Date.now() / 1000));

describe('sending', () => {
  it('accepts a send with the message record, then signed message.sent and message.finalized to the profile webhook', async () => {
    const to = '+15550008001';
    const res = await send({ from: OURS, to, text: 'Your table is booked.' });
    expect(res.status).toBe(200);
    const id = res.body.data.id as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.data).toMatchObject({
      record_type: 'message',
      direction: 'outbound',
      type: 'SMS',
      from: { phone_number: OURS, carrier: 'Telnyx', line_type: 'Wireless' },
      to: [{ phone_number: to, status: 'queued', carrier: expect.any(String), line_type: 'Wireless' }],
      text: 'Your table is booked.',
      parts: 1,
      cost: null,
      errors: [],
      messaging_profile_id: profileId,
      webhook_url: eventsUrl('profile'),
      sent_at: null,
      completed_at: null,
    });
    expect(Date.parse(res.body.data.received_at)).not.toBeNaN();
    expect(Date.parse(res.body.data.valid_until)).not.toBeNaN();

    expect(await sim.messages.messages.get(id)!.done).toBe('delivered');
    const events = eventsOf(id);
    expect(events.map((e) => [json(e).data.event_type, json(e).data.payload.to[0].status])).toEqual([
      ['message.sent', 'sent'],
      ['message.finalized', 'delivered'],
    ]);
    for (const e of events) {
      expect(e.token).toBe('profile');
      expect(signed(e)).toBe(true);
      const { data, meta } = json(e);
      expect(data).toMatchObject({ record_type: 'event', id: expect.stringMatching(/^[0-9a-f-]{36}$/), occurred_at: expect.any(String) });
      expect(meta).toEqual({ attempt: 1, delivered_to: eventsUrl('profile') });
    }
    expect(json(events[1]!).data.payload.completed_at).not.toBeNull();
    const fetched = await api('GET', `/v2/messages/${id}`);
    expect(fetched.body.data).toMatchObject({ id, to: [{ status: 'delivered' }] });
    expect((await api('GET', `/v2/messages/${id}`, undefined, OTHER_KEY)).status).toBe(404);
    expect(sim.messages.sent(to).map((m) => ({ sid: m.sid, from: m.from, to: m.to, body: m.body }))).toEqual([{ sid: id, from: OURS, to, body: 'Your table is booked.' }]);
    expect(sim.messages.sentTo(to)).toBe(1);
  });

  it("sends events to the send's own webhook_url when it has one; to a one-element array", async () => {
    const res = await send({ from: OURS, to: ['+15550008002'], text: 'hi', webhook_url: eventsUrl('own') });
    expect(res.body.data.webhook_url).toBe(eventsUrl('own'));
    await sim.messages.messages.get(res.body.data.id)!.done;
    expect(eventsOf(res.body.data.id).map((e) => e.token)).toEqual(['own', 'own']);
  });

  it('ends as the outcome says: delivery_failed after sent, sending_failed without it, with errors', async () => {
    sim.messages.outcome('+15550008003', 'delivery_failed');
    sim.messages.outcome('+15550008004', 'sending_failed');
    sim.messages.outcome('+15550008005', 'delivery_failed', '40006');
    sim.messages.outcome('+15550008006', 'delivery_unconfirmed');
    const ids: string[] = [];
    for (const to of ['+15550008003', '+15550008004', '+15550008005', '+15550008006']) ids.push((await send({ from: OURS, to, text: 'x' })).body.data.id);
    expect(await Promise.all(ids.map((id) => sim.messages.messages.get(id)!.done))).toEqual(['delivery_failed', 'sending_failed', 'delivery_failed', 'delivery_unconfirmed']);
    const seen = ids.map((id) => eventsOf(id).map((e) => `${json(e).data.event_type}:${json(e).data.payload.errors.map((x: any) => x.code).join(',')}`));
    expect(seen).toEqual([
      ['message.sent:', 'message.finalized:40008'],
      ['message.finalized:40002'],
      ['message.sent:', 'message.finalized:40006'],
      ['message.sent:', 'message.finalized:'],
    ]);
    expect(json(eventsOf(ids[0]!)[1]!).data.payload.errors[0]).toEqual({ code: '40008', title: 'Undeliverable', detail: expect.any(String) });
  });

  it('refuses with the carrier codes, records every request, and sends nothing', async () => {
    sim.messages.unregistered(OURS);
    const base = { from: OURS, to: '+15550008010', text: 'hi' };
    const cases: [Record<string, unknown>, string, string][] = [
      [{ from: OURS, text: 'hi' }, '40310', '/to'],
      [{ ...base, to: '5550008010' }, '40310', '/to'],
      [{ ...base, to: ['+15550008010', '+15550008011'] }, '40310', '/to'],
      [{ ...base, from: THEIRS }, '40305', '/from'],
      [{ ...base, from: NO_PROFILE }, '40305', '/from'],
      [{ to: base.to, text: 'hi' }, '40305', '/from'],
      [{ ...base, text: '' }, '40316', '/text'],
      [{ ...base, text: 'x'.repeat(1601) }, '40302', '/text'],
      [{ ...base, webhook_url: 'nope' }, '10003', '/webhook_url'],
      [base, '40010', '/from'],
    ];
    const before = sim.messages.requests().length;
    try {
      for (const [body, code, pointer] of cases) {
        const res = await send(body);
        expect(res.status, code).toBe(400);
        expect(res.body.errors).toEqual([{ code, title: expect.any(String), detail: expect.any(String), source: { pointer }, meta: expect.any(Object) }]);
      }
    } finally {
      sim.messages.unregistered(OURS, false);
    }
    expect(sim.messages.requests().length - before).toBe(cases.length);
    expect(sim.messages.sentTo('+15550008010')).toBe(0);
    expect((await send(base, 'KEY_unknown')).body.errors[0].code).toBe('10009');
    // With only a messaging profile, the profile's number sends.
    const pooled = await send({ messaging_profile_id: profileId, to: '+15550008012', text: 'pool' });
    expect(pooled.body.data.from.phone_number).toBe(OURS);
  });

  it('PATCH /v2/phone_numbers/{id}/messaging puts a number on a profile, and it can send', async () => {
    expect((await api('PATCH', `/v2/phone_numbers/${noProfileNumberId}/messaging`, { messaging_profile_id: 'missing' })).status).toBe(422);
    const res = await api('PATCH', `/v2/phone_numbers/${noProfileNumberId}/messaging`, { messaging_profile_id: profileId });
    expect(res.body.data).toMatchObject({ record_type: 'messaging_settings', phone_number: NO_PROFILE, messaging_profile_id: profileId });
    expect((await send({ from: NO_PROFILE, to: '+15550008013', text: 'now I can' })).status).toBe(200);
  });
});

describe('detail records', () => {
  it('lists the account\'s message records by cli, cld, created_at and direction, newest first, paged', async () => {
    const to = '+15550008020';
    const since = new Date().toISOString();
    const ids: string[] = [];
    for (const text of ['one', 'two', 'three']) ids.push((await send({ from: OURS, to, text })).body.data.id);
    await send({ from: THEIRS, to, text: 'another account' }, OTHER_KEY);
    const list = (q: string, key?: string) => api('GET', `/v2/detail_records?${q}`, undefined, key).then((r) => r.body);
    const base = `filter[record_type]=messaging&filter[cld]=${encodeURIComponent(to)}`;

    const all = await list(`${base}&filter[cli]=${encodeURIComponent(OURS)}&filter[created_at][gte]=${encodeURIComponent(since)}&filter[direction]=outbound&sort=-created_at`);
    expect(all.data.map((r: any) => r.uuid)).toEqual([...ids].reverse());
    expect(all.meta).toEqual({ page_number: 1, page_size: 20, total_pages: 1, total_results: 3 });
    expect(all.data[0]).toMatchObject({ record_type: 'message_detail_record', cli: OURS, cld: to, direction: 'outbound', message_type: 'SMS', profile_id: profileId });
    expect((await list(`${base}&filter[created_at][gte]=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).data).toEqual([]);
    expect((await list(`${base}&filter[direction]=inbound`)).data).toEqual([]);

    const page2 = await list(`${base}&page[number]=2&page[size]=2&sort=created_at`);
    expect(page2.data.map((r: any) => r.uuid)).toEqual([ids[2]]);
    expect(page2.meta).toEqual({ page_number: 2, page_size: 2, total_pages: 2, total_results: 3 });

    await Promise.all(ids.map((id) => sim.messages.messages.get(id)!.done));
    expect((await list(base)).data.map((r: any) => r.status)).toEqual(['delivered', 'delivered', 'delivered']);
    expect((await list(base, OTHER_KEY)).data.map((r: any) => r.cli)).toEqual([THEIRS]);
    expect((await api('GET', `/v2/detail_records?filter[cld]=${encodeURIComponent(to)}`)).status).toBe(422);
    expect((await list(`filter[record_type]=call-control&filter[cld]=${encodeURIComponent(to)}`)).data).toEqual([]);
  });
});

describe('incoming texts', () => {
  it('posts a signed message.received to the messaging profile webhook of the number', async () => {
    await expect(sim.messages.receive({ from: '+15550009000', to: NO_PROFILE.replace('1', '9'), body: 'x' })).rejects.toThrow(/no number/);
    const got = await sim.messages.receive({ from: '+15550009000', to: OURS, body: 'Can I move my booking?' });
    expect(got).toMatchObject({ status: 200, error: null });
    const [event] = receiver.events;
    expect(event!.token).toBe('profile');
    expect(signed(event!)).toBe(true);
    const { data } = json(event!);
    expect(data.event_type).toBe('message.received');
    expect(data.payload).toMatchObject({
      id: got.sid,
      record_type: 'message',
      direction: 'inbound',
      type: 'SMS',
      from: { phone_number: '+15550009000', carrier: expect.any(String), line_type: expect.any(String) },
      to: [{ phone_number: OURS, status: 'webhook_delivered', carrier: 'Telnyx', line_type: expect.any(String) }],
      text: 'Can I move my booking?',
      media: [],
      messaging_profile_id: profileId,
      parts: 1,
      cost: null,
      errors: [],
    });
    expect(Date.parse(data.payload.received_at)).not.toBeNaN();
    expect((await api('GET', `/v2/messages/${got.sid}`)).body.data.direction).toBe('inbound');
    expect(sim.messages.sent('+15550009000')).toEqual([]);
  });

  it('refuses to deliver to a number whose profile has no webhook_url', async () => {
    sim.addNumber(KEY, '+15550007002', { messagingProfileId: sim.addMessagingProfile(KEY) });
    await expect(sim.messages.receive({ from: '+15550009000', to: '+15550007002', body: 'x' })).rejects.toThrow(/webhook_url/);
  });
});

describe('faults on sends', () => {
  it('drop: the message is sent and its events go, but the answer is lost; reset and 500 send nothing', async () => {
    const to = '+15550008030';
    sim.fail({ match: 'message', drop: true });
    await expect(send({ from: OURS, to, text: 'lost answer' })).rejects.toThrow();
    expect(sim.messages.sentTo(to)).toBe(1);
    const id = sim.messages.sent(to)[0]!.sid;
    await receiver.until(() => eventsOf(id).length === 2);
    const mdr = await api('GET', `/v2/detail_records?filter[record_type]=messaging&filter[cld]=${encodeURIComponent(to)}`);
    expect(mdr.body.data.map((r: any) => r.uuid)).toEqual([id]);

    sim.fail({ match: 'message', reset: true });
    sim.fail({ match: 'message', status: 500, body: { errors: [{ code: '10007', title: 'Unexpected error' }] } });
    await expect(send({ from: OURS, to, text: 'a' })).rejects.toThrow();
    expect((await send({ from: OURS, to, text: 'b' })).status).toBe(500);
    expect(sim.messages.sentTo(to)).toBe(1);
    expect(sim.messages.requests(to).map((r) => r.fault)).toEqual(['drop', 'reset', 'status']);
  });

  it('chaos on messages is keyed by to: the same seed gives each recipient the same faults', async () => {
    const run = async () => {
      const x = await startTelnyxSim(undefined, { messageStepMs: 1 });
      try {
        x.addApiKey(KEY);
        x.addNumber(KEY, OURS, { messagingProfileId: x.addMessagingProfile(KEY) });
        x.chaos({ seed: 3, match: 'message', dropRate: 0.5 });
        const tos = ['+15550006001', '+15550006002', '+15550006003', '+15550006004'];
        await Promise.all(
          [...tos].reverse().map((to) =>
            fetch(`${x.baseUrl}/v2/messages`, {
              method: 'POST',
              headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
              body: JSON.stringify({ from: OURS, to, text: 'c' }),
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
    expect(first.every((s) => s.endsWith(':1'))).toBe(true);
  });
});
