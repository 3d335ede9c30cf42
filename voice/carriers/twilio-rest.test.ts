// The carrier A client against the carrier A simulator over real loopback HTTP.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closedPort } from '../../test/sim/sim-http.ts';
import { startTwilioSim, twilioSid, type TwilioSim } from '../../test/sim/twilio-sim.ts';
import { CarrierAuthError, CarrierRequestError, CarrierUnreachableError } from './errors.ts';
import { createTwilioRest } from './twilio-rest.ts';

const ACCOUNT = twilioSid('AC');
const TOKEN = 'a'.repeat(32);
const NUMBER = '+15551234567';

let sim: TwilioSim;
let numberSid: string;

beforeEach(async () => {
  // Calls placed here stay queued at the carrier (no progress, no webhooks).
  sim = await startTwilioSim({ stepMs: 60_000 });
  sim.addAccount(ACCOUNT, TOKEN);
  numberSid = sim.addNumber(ACCOUNT, NUMBER);
});
afterEach(() => sim.close());

const client = (over: Partial<Parameters<typeof createTwilioRest>[0]> = {}) =>
  createTwilioRest({ baseUrl: sim.baseUrl, accountSid: ACCOUNT, authToken: TOKEN, ...over });

describe('findIncomingNumber', () => {
  it('returns the account number with that exact E.164 value', async () => {
    sim.addNumber(ACCOUNT, '+15551234568');
    const found = await client().findIncomingNumber(NUMBER);
    expect(found).toMatchObject({ sid: numberSid, phone_number: NUMBER, account_sid: ACCOUNT });
    expect(found?.sid).toMatch(/^PN[0-9a-f]{32}$/);

    const req = sim.requests.at(-1);
    expect(req?.method).toBe('GET');
    expect(req?.path).toBe(`/2010-04-01/Accounts/${ACCOUNT}/IncomingPhoneNumbers.json`);
    expect(req?.query).toEqual({ PhoneNumber: NUMBER });
    const basic = Buffer.from(`${ACCOUNT}:${TOKEN}`).toString('base64');
    expect(req?.headers.authorization).toBe(`Basic ${basic}`);
  });

  it('returns null for a number the account does not have', async () => {
    const other = twilioSid('AC');
    sim.addAccount(other, 'b'.repeat(32));
    sim.addNumber(other, '+15550000000');
    expect(await client().findIncomingNumber('+15559999999')).toBeNull();
    expect(await client().findIncomingNumber('+15550000000')).toBeNull();
  });

  it('answers the list with the carrier paging envelope', async () => {
    const res = await fetch(`${sim.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/IncomingPhoneNumbers.json?PageSize=1`, {
      headers: { authorization: 'Basic ' + Buffer.from(`${ACCOUNT}:${TOKEN}`).toString('base64') },
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ page: 0, page_size: 1, start: 0, end: 0, previous_page_uri: null, next_page_uri: null });
    expect(body.uri).toBe(`/2010-04-01/Accounts/${ACCOUNT}/IncomingPhoneNumbers.json?PageSize=1&Page=0`);
    expect(body.first_page_uri).toBe(body.uri);
    expect(body.incoming_phone_numbers).toHaveLength(1);
  });

  it('throws CarrierAuthError on a wrong token', async () => {
    const err = await client({ authToken: 'wrong' }).findIncomingNumber(NUMBER).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierAuthError);
    expect(err).toMatchObject({ carrier: 'twilio', status: 401, code: 20003, message: 'Authenticate' });
    expect((err as CarrierAuthError).carrierError).toMatchObject({ more_info: 'https://www.twilio.com/docs/errors/20003' });
  });

  it("throws CarrierAuthError for another account's path", async () => {
    const other = twilioSid('AC');
    sim.addAccount(other, 'b'.repeat(32));
    const err = await client({ accountSid: other, authToken: TOKEN }).findIncomingNumber(NUMBER).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierAuthError);
  });
});

describe('updateIncomingNumber', () => {
  it('posts the webhook URLs form-encoded and returns the updated resource', async () => {
    const updated = await client().updateIncomingNumber(numberSid, {
      voiceUrl: 'https://sb.example/carrier/twilio/voice',
      smsUrl: 'https://sb.example/carrier/twilio/sms',
      statusCallback: 'https://sb.example/carrier/twilio/status',
    });
    const req = sim.requests.at(-1);
    expect(req?.method).toBe('POST');
    expect(req?.path).toBe(`/2010-04-01/Accounts/${ACCOUNT}/IncomingPhoneNumbers/${numberSid}.json`);
    expect(req?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(req?.body).toEqual({
      VoiceUrl: 'https://sb.example/carrier/twilio/voice',
      VoiceMethod: 'POST',
      SmsUrl: 'https://sb.example/carrier/twilio/sms',
      SmsMethod: 'POST',
      StatusCallback: 'https://sb.example/carrier/twilio/status',
    });
    expect(sim.numbers.get(numberSid)).toMatchObject({
      voice_url: 'https://sb.example/carrier/twilio/voice',
      voice_method: 'POST',
      sms_url: 'https://sb.example/carrier/twilio/sms',
      status_callback: 'https://sb.example/carrier/twilio/status',
    });
    expect(updated.voice_url).toBe('https://sb.example/carrier/twilio/voice');
    expect(updated.date_updated).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} \+0000$/);
  });

  it('leaves StatusCallback out when not given', async () => {
    await client().updateIncomingNumber(numberSid, { voiceUrl: 'https://a.example/v', smsUrl: 'https://a.example/s' });
    expect(sim.requests.at(-1)?.body).not.toHaveProperty('StatusCallback');
  });

  it('throws CarrierRequestError with the carrier code for an unknown number', async () => {
    const err = await client()
      .updateIncomingNumber(twilioSid('PN'), { voiceUrl: 'https://a.example/v', smsUrl: 'https://a.example/s' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierRequestError);
    expect(err).toMatchObject({ carrier: 'twilio', status: 404, code: 20404 });
    expect((err as CarrierRequestError).carrierError).toMatchObject({ status: 404, code: 20404 });
  });
});

describe('unreachable carrier', () => {
  it('throws CarrierUnreachableError when nothing listens', async () => {
    const port = await closedPort();
    const err = await client({ baseUrl: `http://127.0.0.1:${port}` }).findIncomingNumber(NUMBER).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierUnreachableError);
    expect(err).toMatchObject({ carrier: 'twilio', status: null, retryable: true });
  });

  it('throws CarrierUnreachableError on a 5xx', async () => {
    sim.fail({ status: 503, body: { code: 20500, message: 'Internal Server Error', more_info: '', status: 503 } });
    const err = await client().findIncomingNumber(NUMBER).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierUnreachableError);
    expect(err).toMatchObject({ carrier: 'twilio', status: 503 });
  });

  it('throws CarrierUnreachableError when the answer is too slow', async () => {
    sim.fail({ delayMs: 500 });
    const err = await client({ timeoutMs: 50 }).findIncomingNumber(NUMBER).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierUnreachableError);
    expect((err as Error).message).toMatch(/no answer within 50 ms/);
  });
});

describe('listCalls', () => {
  // The calls stay queued (stepMs 60 s); their only callback (completed) never comes.
  async function place(rest: ReturnType<typeof client>, to: string, from = NUMBER) {
    const hooks = `http://127.0.0.1:${await closedPort()}`;
    return rest.createCall({ To: to, From: from, Url: `${hooks}/voice`, StatusCallback: `${hooks}/status`, StatusCallbackEvent: [], TimeLimit: 60 });
  }

  it('filters by To and From on the wire and answers newest first', async () => {
    const rest = client();
    const a = await place(rest, '+15557770001');
    sim.advanceClock(1_000);
    const b = await place(rest, '+15557770001');
    await place(rest, '+15557770002');
    const calls = await rest.listCalls({ To: '+15557770001', From: NUMBER });
    expect(calls.map((c) => c.sid)).toEqual([b.sid, a.sid]);
    expect(calls[0]).toMatchObject({ to: '+15557770001', from: NUMBER, direction: 'outbound-api', date_created: expect.stringMatching(/ \+0000$/) });
    const req = sim.requests.at(-1)!;
    expect(req.method).toBe('GET');
    expect(req.path).toBe(`/2010-04-01/Accounts/${ACCOUNT}/Calls.json`);
    expect(req.query).toEqual({ To: '+15557770001', From: NUMBER, PageSize: '1000' });
  });

  it('sends the day filter as StartTime>=YYYY-MM-DD and the status filter as Status', async () => {
    const rest = client();
    await place(rest, '+15557770003');
    await rest.listCalls({ To: '+15557770003', StartedOnOrAfter: '2030-01-02' });
    // The wire form is `StartTime%3E=2030-01-02`: the parameter name carries the `>`.
    expect(sim.requests.at(-1)!.query).toEqual({ To: '+15557770003', 'StartTime>': '2030-01-02', PageSize: '1000' });
    const queued = await rest.listCalls({ To: '+15557770003', Status: 'queued' });
    expect(queued.map((c) => c.status)).toEqual(['queued']);
  });

  it('follows next_page_uri to the end, and refuses to answer partially past maxPages', async () => {
    const rest = client();
    const placed = [];
    for (let i = 0; i < 3; i++) placed.push((await place(rest, '+15557770004')).sid);
    const before = sim.requests.length;
    const calls = await rest.listCalls({ To: '+15557770004' }, { pageSize: 1 });
    expect(calls.map((c) => c.sid).sort()).toEqual([...placed].sort());
    expect(sim.requests.slice(before).map((r) => r.query.Page ?? '0')).toEqual(['0', '1', '2']);
    const err = await rest.listCalls({ To: '+15557770004' }, { pageSize: 1, maxPages: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierUnreachableError);
    expect((err as Error).message).toMatch(/more than 2 pages/);
  });

  it('a list without a calls array is a CarrierUnreachableError', async () => {
    sim.fail({ status: 200, body: { page: 0 }, match: 'lookup' });
    await expect(client().listCalls({ To: '+15557770005' })).rejects.toBeInstanceOf(CarrierUnreachableError);
  });
});
