// The carrier B client against the carrier B simulator over real loopback HTTP.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closedPort } from '../../test/sim/sim-http.ts';
import { startTelnyxSim, type TelnyxSim } from '../../test/sim/telnyx-sim.ts';
import { CarrierAuthError, CarrierRequestError, CarrierUnreachableError } from './errors.ts';
import { createTelnyxRest } from './telnyx-rest.ts';

const KEY = 'KEY0123456789ABCDEF_test';
const NUMBER = '+15551234567';
const CONNECTION = '1293384261075731499';
const PROFILE = '4001767e-ce0f-4cae-9d5f-0d5e636e7809';

let sim: TelnyxSim;
let numberId: string;

beforeEach(async () => {
  sim = await startTelnyxSim();
  sim.addApiKey(KEY);
  numberId = sim.addNumber(KEY, NUMBER, { connectionId: CONNECTION, messagingProfileId: PROFILE });
});
afterEach(() => sim.close());

const client = (over: Partial<Parameters<typeof createTelnyxRest>[0]> = {}) =>
  createTelnyxRest({ baseUrl: sim.baseUrl, apiKey: KEY, ...over });

describe('findNumber', () => {
  it('returns the account number with that exact E.164 value', async () => {
    sim.addNumber(KEY, '+445551234567');
    const found = await client().findNumber(NUMBER);
    expect(found).toMatchObject({
      id: numberId,
      phone_number: NUMBER,
      connection_id: CONNECTION,
      messaging_profile_id: PROFILE,
      status: 'active',
    });
    const req = sim.requests.at(-1);
    expect(req?.method).toBe('GET');
    expect(req?.path).toBe('/v2/phone_numbers');
    expect(req?.query['filter[phone_number]']).toBe('15551234567');
    expect(req?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('returns null for a number the account does not have', async () => {
    sim.addApiKey('other');
    sim.addNumber('other', '+15550000000');
    expect(await client().findNumber('+15559999999')).toBeNull();
    expect(await client().findNumber('+15550000000')).toBeNull();
  });

  it('accepts a base URL that already ends in /v2', async () => {
    const found = await client({ baseUrl: `${sim.baseUrl}/v2/` }).findNumber(NUMBER);
    expect(found?.id).toBe(numberId);
  });

  it('answers the list with the carrier envelope', async () => {
    const res = await fetch(`${sim.baseUrl}/v2/phone_numbers?page[size]=1`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(await res.json()).toMatchObject({
      data: [{ id: numberId, record_type: 'phone_number' }],
      meta: { page_number: 1, page_size: 1, total_pages: 1, total_results: 1 },
    });
  });

  it('throws CarrierAuthError on a wrong key', async () => {
    const err = await client({ apiKey: 'wrong' }).findNumber(NUMBER).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierAuthError);
    expect(err).toMatchObject({ carrier: 'telnyx', status: 401, code: '10009' });
    expect((err as CarrierAuthError).carrierError).toMatchObject({ errors: [{ code: '10009', title: 'Authentication failed' }] });
  });
});

describe('updates', () => {
  it('setNumberConnection patches connection_id', async () => {
    const other = sim.addConnection(KEY);
    const updated = await client().setNumberConnection(numberId, other);
    const req = sim.requests.at(-1);
    expect(req?.method).toBe('PATCH');
    expect(req?.path).toBe(`/v2/phone_numbers/${numberId}`);
    expect(req?.headers['content-type']).toBe('application/json');
    expect(req?.body).toEqual({ connection_id: other });
    expect(updated.connection_id).toBe(other);
    expect(sim.numbers.get(numberId)?.connection_id).toBe(other);
  });

  it('setNumberConnection to an unknown connection is a CarrierRequestError', async () => {
    const err = await client().setNumberConnection(numberId, '999').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierRequestError);
    expect(err).toMatchObject({ status: 422, code: '10017' });
  });

  it('setCallControlWebhook sets the event URL and the v2 envelope', async () => {
    const url = 'https://sb.example/carrier/telnyx/events/tok123';
    await client().setCallControlWebhook(CONNECTION, url);
    const patch = sim.requests.at(-1);
    expect(patch?.method).toBe('PATCH');
    expect(patch?.path).toBe(`/v2/call_control_applications/${CONNECTION}`);
    expect(patch?.body).toMatchObject({ webhook_event_url: url, webhook_api_version: '2' });
    expect(sim.callControlApplications.get(CONNECTION)).toMatchObject({ webhook_event_url: url, webhook_api_version: '2' });
  });

  it('setCallControlWebhook on an unknown application is a 404 CarrierRequestError', async () => {
    const err = await client().setCallControlWebhook('42', 'https://a.example/e').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierRequestError);
    expect(err).toMatchObject({ carrier: 'telnyx', status: 404, code: '10005' });
  });

  it('setMessagingWebhook patches the messaging profile', async () => {
    const url = 'https://sb.example/carrier/telnyx/events/tok123';
    await client().setMessagingWebhook(PROFILE, url);
    const req = sim.requests.at(-1);
    expect(req?.method).toBe('PATCH');
    expect(req?.path).toBe(`/v2/messaging_profiles/${PROFILE}`);
    expect(req?.body).toEqual({ webhook_url: url, webhook_api_version: '2' });
    expect(sim.messagingProfiles.get(PROFILE)?.webhook_url).toBe(url);
  });

  it("cannot touch another account's resources", async () => {
    sim.addApiKey('other');
    const foreign = sim.addNumber('other', '+15550000000');
    const err = await client().setNumberConnection(foreign, CONNECTION).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, code: '10005' });
  });
});

describe('unreachable carrier', () => {
  it('throws CarrierUnreachableError when nothing listens', async () => {
    const port = await closedPort();
    const err = await client({ baseUrl: `http://127.0.0.1:${port}` }).findNumber(NUMBER).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierUnreachableError);
    expect(err).toMatchObject({ carrier: 'telnyx', status: null, retryable: true });
  });

  it('throws CarrierUnreachableError on a 5xx', async () => {
    sim.fail({ status: 502, body: '<html>Bad Gateway</html>' });
    const err = await client().setMessagingWebhook(PROFILE, 'https://a.example/m').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierUnreachableError);
    expect(err).toMatchObject({ carrier: 'telnyx', status: 502 });
  });

  it('throws CarrierUnreachableError when the answer is too slow', async () => {
    sim.fail({ delayMs: 500 });
    const err = await client({ timeoutMs: 50 }).findNumber(NUMBER).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierUnreachableError);
  });
});

describe('listActiveCalls', () => {
  // Calls that stay ringing (no answer, no stream); their webhooks go nowhere on loopback.
  async function dialTo(to: string, clientState: string) {
    sim.calls.stepMs = 60_000;
    const nowhere = `127.0.0.1:${await closedPort()}`;
    return client().dial({
      connection_id: CONNECTION,
      to,
      from: NUMBER,
      webhook_url: `http://${nowhere}/events`,
      client_state: clientState,
      command_id: `dial-${to}-${clientState}`,
      time_limit_secs: 60,
      stream_url: `ws://${nowhere}/media`,
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
    });
  }

  it("lists the connection's live calls with their client_state, across cursor pages", async () => {
    const ids = [];
    for (const [i, state] of ['YQ==', 'Yg==', 'Yw=='].entries()) ids.push((await dialTo(`+1555888000${i}`, state)).call_control_id);
    const before = sim.requests.length;
    const calls = await client().listActiveCalls(CONNECTION, { pageSize: 2 });
    expect(calls.map((c) => c.call_control_id)).toEqual(ids);
    expect(calls.map((c) => c.client_state)).toEqual(['YQ==', 'Yg==', 'Yw==']);
    expect(calls[0]).toMatchObject({ record_type: 'call', call_leg_id: expect.any(String), call_session_id: expect.any(String), call_duration: expect.any(Number) });
    const asked = sim.requests.slice(before);
    expect(asked.map((r) => r.path)).toEqual([`/v2/connections/${CONNECTION}/active_calls`, `/v2/connections/${CONNECTION}/active_calls`]);
    expect(asked[0]!.query).toEqual({ 'page[limit]': '2' });
    expect(asked[1]!.query).toMatchObject({ 'page[limit]': '2', 'page[after]': expect.stringMatching(/^v1:/) });

    await expect(client().listActiveCalls(CONNECTION, { pageSize: 1, maxPages: 2 })).rejects.toThrow(/more than 2 pages/);
    // An ended call is not active.
    await sim.hangup(ids[1]!);
    expect((await client().listActiveCalls(CONNECTION)).map((c) => c.call_control_id)).toEqual([ids[0], ids[2]]);
  });

  it("another account's or an unknown connection is refused", async () => {
    sim.addApiKey('other');
    const foreign = sim.addConnection('other');
    await expect(client().listActiveCalls(foreign)).rejects.toMatchObject({ status: 404 });
    await expect(client().listActiveCalls('123')).rejects.toBeInstanceOf(CarrierRequestError);
  });
});

describe('listCallEvents', () => {
  // A call whose receiver is down: each webhook fails, and the carrier logs it anyway.
  async function deadCall(to: string) {
    const nowhere = `127.0.0.1:${await closedPort()}`;
    const ids = await client().dial({
      connection_id: CONNECTION,
      to,
      from: NUMBER,
      webhook_url: `http://${nowhere}/events`,
      client_state: 'YQ==',
      command_id: `dial-${to}`,
      time_limit_secs: 60,
      stream_url: `ws://${nowhere}/media`,
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
    });
    await sim.call(ids.call_control_id).webhook('call.answered');
    await sim.hangup(ids.call_control_id);
    return ids;
  }

  it("reads one leg's log, undelivered webhooks included, oldest first, across pages", async () => {
    const ids = await deadCall('+15558880001');
    await deadCall('+15558880002');
    const before = sim.requests.length;
    const events = await client().listCallEvents(ids.call_leg_id, { pageSize: 2 });
    const names = events.map((e) => e.name);
    expect(names.slice(0, 2)).toEqual(['call.initiated', 'call.answered']);
    expect(names.at(-1)).toBe('call.hangup');
    expect(events.every((e) => e.call_leg_id === ids.call_leg_id && e.type === 'webhook' && e.record_type === 'call_event')).toBe(true);
    expect(events.map((e) => Date.parse(e.event_timestamp))).toEqual(events.map((e) => Date.parse(e.event_timestamp)).sort((a, b) => a - b));
    const asked = sim.requests.slice(before);
    expect(asked.length).toBe(Math.ceil(events.length / 2));
    expect(asked[0]!.path).toBe('/v2/call_events');
    expect(asked[0]!.query).toEqual({ 'filter[leg_id]': ids.call_leg_id, 'page[number]': '1', 'page[size]': '2' });

    const answered = await client().listCallEvents(ids.call_leg_id, { name: 'call.answered' });
    expect(answered.map((e) => e.name)).toEqual(['call.answered']);
    expect(sim.requests.at(-1)!.query).toMatchObject({ 'filter[name]': 'call.answered' });
    expect(await client().listCallEvents('00000000-0000-4000-8000-000000000000')).toEqual([]);
    await expect(client().listCallEvents(ids.call_leg_id, { pageSize: 1, maxPages: 2 })).rejects.toThrow(/more than 2 pages/);
  });

  it("another account's legs are not in its log", async () => {
    const ids = await deadCall('+15558880003');
    sim.addApiKey('other');
    const other = createTelnyxRest({ baseUrl: sim.baseUrl, apiKey: 'other' });
    expect(await other.listCallEvents(ids.call_leg_id)).toEqual([]);
  });
});
