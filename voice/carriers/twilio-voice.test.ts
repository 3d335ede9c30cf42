// The carrier A voice adapter against the carrier A simulator: each dial scenario's
// webhooks arrive at a small HTTP server standing in for the service at
// https://switchboard.test (mapped to loopback), carry signatures that verifyTwilio
// accepts over the public URL, and parse into the call events the actor expects.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { startTwilioSim, twilioSid, type TwilioSim } from '../../test/sim/twilio-sim.ts';
import type { CallEvent } from '../../machines/call-events.ts';
import { closedPort } from '../../test/sim/sim-http.ts';
import { CarrierAuthError, CarrierRequestError, CarrierUnreachableError, DialOutcomeUnknown, DialRejected } from './errors.ts';
import { connectStream, escapeXml, hangup, reject } from './twiml.ts';
import { verifyTwilio } from './twilio-signature.ts';
import { createTwilioVoice, parseTwilioWebhook, TwilioWebhookError, type TwilioWebhookKind } from './twilio-voice.ts';
import type { CarrierWebhook, DialRequest } from './voice.ts';

const PUBLIC = 'https://switchboard.test';
const ACCOUNT = twilioSid('AC');
const TOKEN = 'c'.repeat(32);
const FROM = '+15550001000';

interface Hook {
  kind: TwilioWebhookKind;
  /** The URL the carrier requested, as the service rebuilds it from PUBLIC_BASE_URL. */
  url: string;
  form: URLSearchParams;
  query: URLSearchParams;
  signature: string | undefined;
}

/** The service's stand-in: records every webhook, answers the voice one with a media stream. */
interface Receiver {
  base: string;
  hooks: Hook[];
  /** Messages received on each media socket, by socket. */
  sockets: { ws: WebSocket; messages: Record<string, unknown>[] }[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const hooks: Hook[] = [];
  const sockets: Receiver['sockets'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', PUBLIC);
      const kind = url.pathname.split('/').pop() as TwilioWebhookKind;
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const signature = req.headers['x-twilio-signature'];
      hooks.push({ kind, url: PUBLIC + (req.url ?? '/'), form, query: url.searchParams, signature: typeof signature === 'string' ? signature : undefined });
      if (kind === 'voice') {
        res.writeHead(200, { 'content-type': 'text/xml' });
        res.end(connectStream(`wss://switchboard.test/carrier/twilio/media`, { token: `mt_${url.searchParams.get('cid')}` }));
      } else {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('');
      }
    });
  });
  const wss = new WebSocketServer({ server, path: '/carrier/twilio/media' });
  wss.on('connection', (ws) => {
    const entry = { ws, messages: [] as Record<string, unknown>[] };
    sockets.push(entry);
    ws.on('message', (data) => entry.messages.push(JSON.parse(data.toString()) as Record<string, unknown>));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    hooks,
    sockets,
    async close() {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let sim: TwilioSim;
let receiver: Receiver;

beforeAll(async () => {
  sim = await startTwilioSim({ stepMs: 10 });
  receiver = await startReceiver();
  sim.route(PUBLIC, receiver.base);
  sim.addAccount(ACCOUNT, TOKEN);
  sim.addNumber(ACCOUNT, FROM);
});
afterAll(async () => {
  // Every webhook was delivered and every stream opened.
  expect(sim.errors).toEqual([]);
  await sim.close();
  await receiver.close();
});

const voice = (authToken = TOKEN, over: { dialTimeoutMs?: number; baseUrl?: string } = {}) =>
  createTwilioVoice({ baseUrl: sim.baseUrl, accountSid: ACCOUNT, authToken, ...over });

let seq = 0;
function dialRequest(over: Partial<DialRequest> = {}): DialRequest {
  seq++;
  return {
    callId: `call_twiliovoicetest${String(seq).padStart(5, '0')}`,
    from: FROM,
    to: `+1555700${String(seq).padStart(4, '0')}`,
    amdEnabled: false,
    timeLimitSec: 600,
    publicBaseUrl: PUBLIC,
    eventsToken: null,
    mediaToken: `mt_${seq}`,
    ...over,
  };
}

const hooksOf = (callId: string) => receiver.hooks.filter((h) => h.query.get('cid') === callId);

/** The webhooks of a call, parsed; each must carry a valid signature over the public URL. */
function parsedOf(callId: string): CarrierWebhook[] {
  return hooksOf(callId).map((h) => {
    expect(verifyTwilio(TOKEN, h.url, h.form, h.signature), `signature of ${h.url}`).toBe(true);
    return parseTwilioWebhook(h.kind, h.form, h.query, 1000);
  });
}

const eventsOf = (callId: string): CallEvent[] =>
  parsedOf(callId).flatMap((w) => (w.kind === 'event' ? [w.event] : []));

async function waitForEvent(callId: string, type: CallEvent['type']): Promise<void> {
  await vi.waitFor(() => expect(eventsOf(callId).map((e) => e.type)).toContain(type), { timeout: 3000, interval: 10 });
}

describe('dial', () => {
  it('creates the call with the documented parameters and webhook URLs', async () => {
    const req = dialRequest();
    const { carrierCallId } = await voice().dial(req);
    expect(carrierCallId).toMatch(/^CA[0-9a-f]{32}$/);
    const create = sim.requests.find((r) => r.method === 'POST' && r.path.endsWith('/Calls.json') && r.body.To === req.to);
    expect(create?.path).toBe(`/2010-04-01/Accounts/${ACCOUNT}/Calls.json`);
    expect(create?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(create?.body).toEqual({
      To: req.to,
      From: FROM,
      Url: `${PUBLIC}/carrier/twilio/voice?cid=${req.callId}`,
      StatusCallback: `${PUBLIC}/carrier/twilio/status?cid=${req.callId}`,
      StatusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
      TimeLimit: '600',
    });
    await voice().hangup(carrierCallId);
  });

  it('answer: ringing, answered, the TwiML fetch and the media stream; our hang-up ends it completed', async () => {
    const req = dialRequest();
    const { carrierCallId } = await voice().dial(req);
    await waitForEvent(req.callId, 'CARRIER.ANSWERED');
    await vi.waitFor(() => expect(hooksOf(req.callId).some((h) => h.kind === 'voice')).toBe(true), { timeout: 3000 });

    const parsed = parsedOf(req.callId);
    expect(parsed[0]).toEqual({ kind: 'ignored', reason: 'call status initiated' });
    expect(parsed.slice(1)).toEqual([
      { kind: 'event', callId: req.callId, carrierCallId, event: { type: 'CARRIER.RINGING', at: 1000, carrierCallId } },
      { kind: 'event', callId: req.callId, carrierCallId, event: { type: 'CARRIER.ANSWERED', at: 1000, carrierCallId } },
      { kind: 'event', callId: req.callId, carrierCallId, event: { type: 'CARRIER.ANSWERED', at: 1000, carrierCallId } },
    ]);
    expect(hooksOf(req.callId).map((h) => h.form.get('SequenceNumber'))).toEqual(['0', '1', '2', null]);

    // The stream carries the Parameter of the TwiML.
    const socket = await vi.waitFor(
      () => {
        const s = receiver.sockets.find((x) => (x.messages[1]?.start as { callSid?: string } | undefined)?.callSid === carrierCallId);
        expect(s).toBeDefined();
        return s!;
      },
      { timeout: 3000 },
    );
    expect(socket.messages[1]).toMatchObject({ event: 'start', start: { customParameters: { token: `mt_${req.callId}` } } });
    expect(await voice().fetchStatus(carrierCallId)).toBe('active');

    await voice().hangup(carrierCallId);
    await waitForEvent(req.callId, 'CARRIER.ENDED');
    expect(eventsOf(req.callId).at(-1)).toEqual({ type: 'CARRIER.ENDED', at: 1000, status: 'completed', durationSec: 0 });
    expect(socket.messages.at(-1)).toMatchObject({ event: 'stop', stop: { callSid: carrierCallId, accountSid: ACCOUNT } });
    expect(await voice().fetchStatus(carrierCallId)).toBe('completed');
  });

  it.each([
    ['busy', ['CARRIER.ENDED'], 'busy'],
    ['no-answer', ['CARRIER.RINGING', 'CARRIER.ENDED'], 'no-answer'],
    ['failed', ['CARRIER.ENDED'], 'failed'],
  ] as const)('%s: the final callback ends the call with that status and no stream', async (scenario, types, status) => {
    const req = dialRequest();
    sim.scenario(req.to, scenario);
    const { carrierCallId } = await voice().dial(req);
    await waitForEvent(req.callId, 'CARRIER.ENDED');
    const events = eventsOf(req.callId);
    expect(events.map((e) => e.type)).toEqual(types);
    expect(events.at(-1)).toEqual({ type: 'CARRIER.ENDED', at: 1000, status, durationSec: 0 });
    expect(hooksOf(req.callId).some((h) => h.kind === 'voice')).toBe(false);
    expect(await voice().fetchStatus(carrierCallId)).toBe(status);
  });

  it('machine with AMD: asks for async detection and reports machine through the AMD webhook', async () => {
    const req = dialRequest({ amdEnabled: true });
    sim.scenario(req.to, 'machine');
    const { carrierCallId } = await voice().dial(req);
    const create = sim.requests.find((r) => r.method === 'POST' && r.body.To === req.to);
    expect(create?.body).toMatchObject({
      MachineDetection: 'Enable',
      AsyncAmd: 'true',
      AsyncAmdStatusCallback: `${PUBLIC}/carrier/twilio/amd?cid=${req.callId}`,
    });
    await waitForEvent(req.callId, 'CARRIER.AMD');
    expect(eventsOf(req.callId).find((e) => e.type === 'CARRIER.AMD')).toEqual({ type: 'CARRIER.AMD', at: 1000, result: 'machine' });
    const amd = hooksOf(req.callId).find((h) => h.kind === 'amd');
    expect(amd?.form.get('AnsweredBy')).toBe('machine_start');
    expect(sim.calls.get(carrierCallId)?.answeredBy).toBe('machine_start');
    await voice().hangup(carrierCallId);
    await waitForEvent(req.callId, 'CARRIER.ENDED');
  });

  it('answer with AMD: a person answers, the AMD webhook says human', async () => {
    const req = dialRequest({ amdEnabled: true });
    const { carrierCallId } = await voice().dial(req);
    await waitForEvent(req.callId, 'CARRIER.AMD');
    expect(eventsOf(req.callId).find((e) => e.type === 'CARRIER.AMD')).toEqual({ type: 'CARRIER.AMD', at: 1000, result: 'human' });
    await voice().hangup(carrierCallId);
  });

  it('reject: the carrier refuses the create with its code (DialRejected); no call, no webhook', async () => {
    const req = dialRequest();
    sim.scenario(req.to, 'reject');
    const callsBefore = sim.calls.size;
    const err = await voice().dial(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialRejected);
    expect(err).toMatchObject({ outcome: 'rejected', reason: 'refused', carrier: 'twilio', status: 400, code: 21211, retryable: false });
    expect((err as DialRejected).carrierError).toMatchObject({ code: 21211, status: 400 });
    expect((err as DialRejected).cause).toBeInstanceOf(CarrierRequestError);
    expect((err as DialRejected).message).toContain(req.to);

    const other = dialRequest();
    sim.scenario(other.to, { name: 'reject', status: 400, code: 21215, message: 'Geo permission configuration is not permitting call' });
    const err2 = await voice().dial(other).catch((e: unknown) => e);
    expect(err2).toMatchObject({ status: 400, code: 21215, message: 'Geo permission configuration is not permitting call' });

    await new Promise((r) => setTimeout(r, 50));
    expect(sim.calls.size).toBe(callsBefore);
    expect(hooksOf(req.callId)).toEqual([]);
  });

  it("refuses a From the account does not own (21210) and wrong credentials (auth error)", async () => {
    const err = await voice().dial(dialRequest({ from: '+15550009999' })).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, code: 21210 });
    const auth = await voice('wrong').dial(dialRequest()).catch((e: unknown) => e);
    // 401 is a refusal too: the carrier does nothing for a request it cannot authenticate.
    expect(auth).toBeInstanceOf(DialRejected);
    expect(auth).toMatchObject({ outcome: 'rejected', reason: 'refused', status: 401, code: 20003 });
    expect((auth as DialRejected).cause).toBeInstanceOf(CarrierAuthError);
  });
});

describe('dial outcomes: accepted, rejected, unknown', () => {
  // Every fault below is limited to the dial, so the look-ups that follow stay healthy.
  const since = () => sim.clock.now();

  it('an answer lost after the carrier placed the call is unknown; findDialedCall finds the call', async () => {
    const req = dialRequest();
    const at = since();
    sim.fail({ drop: true, match: 'dial' });
    const err = await voice().dial(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialOutcomeUnknown);
    expect(err).toMatchObject({ outcome: 'unknown', reason: 'connection-lost', carrier: 'twilio', status: null, retryable: false });
    expect(sim.dialRequests(req.to).map((r) => r.fault)).toEqual(['drop']);
    expect(sim.placedTo(req.to)).toBe(1);
    const placed = [...sim.calls.values()].find((c) => c.to === req.to)!;

    const found = await voice().findDialedCall({ callId: req.callId, to: req.to, from: req.from, since: at });
    expect(found).toEqual({ found: true, carrierCallId: placed.sid, status: 'active' });
    // Both look-ups went out: the day filter, and the carrier's queue (no start_time yet).
    const lookups = sim.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/Calls.json') && r.query.To === req.to);
    expect(lookups).toHaveLength(2);
    expect(lookups.map((r) => r.query)).toEqual(
      expect.arrayContaining([
        { To: req.to, From: FROM, 'StartTime>': new Date(at - 5000).toISOString().slice(0, 10), PageSize: '1000' },
        { To: req.to, From: FROM, Status: 'queued', PageSize: '1000' },
      ]),
    );
    await voice().hangup(placed.sid);
    await placed.ended;
  });

  it('a reset before the carrier read the request is unknown too (the client cannot tell); findDialedCall finds nothing', async () => {
    const req = dialRequest();
    const at = since();
    sim.fail({ reset: true, match: 'dial' });
    const err = await voice().dial(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialOutcomeUnknown);
    expect(err).toMatchObject({ outcome: 'unknown', reason: 'connection-lost' });
    expect(sim.dialRequests(req.to).map((r) => r.fault)).toEqual(['reset']);
    expect(sim.placedTo(req.to)).toBe(0);
    expect(await voice().findDialedCall({ callId: req.callId, to: req.to, from: req.from, since: at })).toEqual({ found: false, searched: 'all-calls' });
  });

  it('a slow answer past the dial timeout is unknown; the call was placed and is found', async () => {
    const req = dialRequest();
    const at = since();
    sim.fail({ delayMs: 400, match: 'dial' });
    const err = await voice(TOKEN, { dialTimeoutMs: 100 }).dial(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialOutcomeUnknown);
    expect(err).toMatchObject({ reason: 'timeout' });
    expect((err as Error).message).toMatch(/no answer within 100 ms/);
    const found = await voice().findDialedCall({ callId: req.callId, to: req.to, from: req.from, since: at });
    expect(found).toMatchObject({ found: true, status: 'active' });
    const placed = sim.calls.get((found as { carrierCallId: string }).carrierCallId)!;
    expect(placed.to).toBe(req.to);
    await voice().hangup(placed.sid);
    await placed.ended;
  });

  it('a 5xx is unknown (the carrier may have created the call before failing); a 4xx is rejected', async () => {
    const req = dialRequest();
    sim.fail({ status: 503, body: { code: 20503, message: 'Service Unavailable', more_info: '', status: 503 }, match: 'dial' });
    const err = await voice().dial(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialOutcomeUnknown);
    expect(err).toMatchObject({ outcome: 'unknown', reason: 'carrier-error', status: 503, carrier: 'twilio' });
    expect((err as DialOutcomeUnknown).cause).toBeInstanceOf(CarrierUnreachableError);

    sim.fail({ status: 429, body: { code: 20429, message: 'Too Many Requests', more_info: '', status: 429 }, match: 'dial' });
    const limited = await voice().dial(dialRequest()).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(DialRejected);
    expect(limited).toMatchObject({ outcome: 'rejected', reason: 'refused', status: 429, code: 20429 });
  });

  it('a 201 that is not a call resource is unknown (bad-answer)', async () => {
    sim.fail({ status: 201, body: 'created, probably', match: 'dial' });
    const err = await voice().dial(dialRequest()).catch((e: unknown) => e);
    expect(err).toMatchObject({ outcome: 'unknown', reason: 'bad-answer', status: 201 });
  });

  it('a refused connection is rejected as not sent: nothing left this host', async () => {
    const port = await closedPort();
    const err = await voice(TOKEN, { baseUrl: `http://127.0.0.1:${port}` }).dial(dialRequest()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialRejected);
    expect(err).toMatchObject({ outcome: 'rejected', reason: 'not-sent', status: null, code: null, carrierError: null });
    expect((err as Error).message).toMatch(/ECONNREFUSED/);
  });

  it('the shape the API layer shows (enumerable fields) is the same for both errors', async () => {
    const req = dialRequest();
    sim.scenario(req.to, 'reject');
    const rejected = (await voice().dial(req).catch((e: unknown) => e)) as DialRejected;
    sim.fail({ status: 500, match: 'dial' });
    const unknown = (await voice().dial(dialRequest()).catch((e: unknown) => e)) as DialOutcomeUnknown;
    for (const e of [rejected, unknown]) {
      expect(Object.keys(e)).toEqual(expect.arrayContaining(['carrier', 'status', 'code', 'carrierError', 'outcome', 'reason', 'retryable']));
      // The cause stays out of JSON snapshots.
      expect(Object.keys(e)).not.toContain('cause');
      expect(JSON.parse(JSON.stringify(e))).not.toHaveProperty('cause');
    }
  });
});

describe('findDialedCall', () => {
  it('picks the dial among the calls to the same number: not an earlier one, not another route, not an excluded one', async () => {
    const to = dialRequest().to;
    const base = () => dialRequest({ to });
    // An earlier call to the same number from the same number, a minute before.
    const earlier = await voice().dial(base());
    sim.advanceClock(60_000);
    // Same To from another number of ours does not count either.
    const OTHER = '+15550001001';
    sim.addNumber(ACCOUNT, OTHER);
    const other = await voice().dial(dialRequest({ to, from: OTHER }));
    const at = sim.clock.now();
    sim.fail({ drop: true, match: 'dial' });
    const req = base();
    await expect(voice().dial(req)).rejects.toBeInstanceOf(DialOutcomeUnknown);
    // Most likely in the same (whole) second as ours: the list's newest-first order tells them apart.
    sim.advanceClock(1);
    const later = await voice().dial(base());
    const ours = [...sim.calls.values()].find((c) => c.to === to && c.from === FROM && ![earlier.carrierCallId, later.carrierCallId].includes(c.sid))!;

    const lookup = { callId: req.callId, to, from: FROM, since: at };
    expect(await voice().findDialedCall(lookup)).toMatchObject({ found: true, carrierCallId: ours.sid });
    // A call the caller already knows belongs elsewhere is skipped: the next one is the answer.
    expect(await voice().findDialedCall({ ...lookup, exclude: [ours.sid] })).toMatchObject({ found: true, carrierCallId: later.carrierCallId });
    expect(await voice().findDialedCall({ ...lookup, exclude: [ours.sid, later.carrierCallId] })).toEqual({ found: false, searched: 'all-calls' });
    for (const sid of [earlier.carrierCallId, other.carrierCallId, ours.sid, later.carrierCallId]) await voice().hangup(sid);
  });

  it('reports an ended call with the carrier’s end time and connected seconds; fetchCall says the same', async () => {
    const req = dialRequest();
    const at = sim.clock.now();
    sim.fail({ drop: true, match: 'dial' });
    await expect(voice().dial(req)).rejects.toBeInstanceOf(DialOutcomeUnknown);
    const call = [...sim.calls.values()].find((c) => c.to === req.to)!;
    await waitForEvent(req.callId, 'CARRIER.ANSWERED');
    sim.advanceClock(42_000);
    await sim.hangup(call.sid);
    const endedAt = Math.floor(call.endedAt! / 1000) * 1000; // RFC 2822 has whole seconds
    const expected = { status: 'completed', endedAt, durationSec: Math.round((call.endedAt! - call.answeredAt!) / 1000) };
    expect(expected.durationSec).toBeGreaterThanOrEqual(42);
    expect(await voice().findDialedCall({ callId: req.callId, to: req.to, from: req.from, since: at })).toEqual({ found: true, carrierCallId: call.sid, ...expected });
    expect(await voice().fetchCall(call.sid)).toEqual(expected);
    expect(await voice().fetchStatus(call.sid)).toBe('completed');
  });

  it('a never-answered call ends without a duration to bill; a live one has no end yet', async () => {
    const req = dialRequest();
    sim.scenario(req.to, 'busy');
    const { carrierCallId } = await voice().dial(req);
    expect(await voice().fetchCall(carrierCallId)).toEqual({ status: 'active' });
    await sim.calls.get(carrierCallId)!.ended;
    const info = await voice().fetchCall(carrierCallId);
    expect(info).toMatchObject({ status: 'busy', durationSec: 0 });
    expect(info.endedAt).toBe(Math.floor(sim.calls.get(carrierCallId)!.endedAt! / 1000) * 1000);
  });

  it('throws when the carrier cannot be asked (the dial stays unknown)', async () => {
    sim.fail({ status: 500, match: 'lookup' });
    const req = dialRequest();
    await expect(voice().findDialedCall({ callId: req.callId, to: req.to, from: req.from, since: Date.now() })).rejects.toBeInstanceOf(CarrierUnreachableError);
  });
});

describe('hangup', () => {
  it('cancels a call that is still ringing: the final callback says canceled', async () => {
    const req = dialRequest();
    sim.scenario(req.to, { name: 'answer', ringMs: 10_000 });
    const { carrierCallId } = await voice().dial(req);
    await waitForEvent(req.callId, 'CARRIER.RINGING');
    expect(await voice().fetchStatus(carrierCallId)).toBe('active');
    await voice().hangup(carrierCallId);
    await waitForEvent(req.callId, 'CARRIER.ENDED');
    expect(eventsOf(req.callId).at(-1)).toEqual({ type: 'CARRIER.ENDED', at: 1000, status: 'canceled', durationSec: 0 });
    expect(hooksOf(req.callId).some((h) => h.kind === 'voice')).toBe(false);
  });

  it('counts a call that is already over, or unknown to the carrier, as hung up', async () => {
    const req = dialRequest();
    sim.scenario(req.to, 'busy');
    const { carrierCallId } = await voice().dial(req);
    await waitForEvent(req.callId, 'CARRIER.ENDED');
    await expect(voice().hangup(carrierCallId)).resolves.toBeUndefined();
    await expect(voice().hangup(carrierCallId)).resolves.toBeUndefined();
    await expect(voice().hangup(twilioSid('CA'))).resolves.toBeUndefined();
    // The carrier did answer 404 20404: the adapter, not the sim, made it a success.
    const last = sim.requests.at(-1);
    expect(last?.method).toBe('POST');
    expect(last?.body).toEqual({ Status: 'completed' });
  });

  it('still fails on other errors (wrong credentials)', async () => {
    await expect(voice('wrong').hangup(twilioSid('CA'))).rejects.toBeInstanceOf(CarrierAuthError);
  });
});

describe('the far end', () => {
  it('hanging up ends the call completed with its duration', async () => {
    const req = dialRequest();
    const { carrierCallId } = await voice().dial(req);
    await waitForEvent(req.callId, 'CARRIER.ANSWERED');
    await sim.hangup(carrierCallId);
    await waitForEvent(req.callId, 'CARRIER.ENDED');
    const ended = eventsOf(req.callId).at(-1);
    expect(ended).toMatchObject({ type: 'CARRIER.ENDED', status: 'completed' });
    expect(ended).toHaveProperty('durationSec');
    expect(await voice().fetchStatus(carrierCallId)).toBe('completed');
  });
});

describe('fetchStatus', () => {
  it("answers unknown for a call the carrier does not have", async () => {
    expect(await voice().fetchStatus(twilioSid('CA'))).toBe('unknown');
    expect(await voice().fetchCall(twilioSid('CA'))).toEqual({ status: 'unknown' });
  });
});

describe('parseTwilioWebhook', () => {
  const SID = 'CA' + '0'.repeat(32);
  const base = { CallSid: SID, AccountSid: ACCOUNT, From: '+15551230000', To: FROM, ApiVersion: '2010-04-01' };

  it('an inbound voice webhook without cid is an incoming call', () => {
    const form = new URLSearchParams({ ...base, CallStatus: 'ringing', Direction: 'inbound' });
    expect(parseTwilioWebhook('voice', form, new URLSearchParams(), 5)).toEqual({
      kind: 'incoming',
      carrierCallId: SID,
      from: '+15551230000',
      to: FROM,
    });
  });

  it('a voice webhook of an outbound call is its answer; without cid it is ignored', () => {
    const form = { ...base, CallStatus: 'in-progress', Direction: 'outbound-api' };
    expect(parseTwilioWebhook('voice', form, { cid: 'call_x' }, 5)).toEqual({
      kind: 'event',
      callId: 'call_x',
      carrierCallId: SID,
      event: { type: 'CARRIER.ANSWERED', at: 5, carrierCallId: SID },
    });
    expect(parseTwilioWebhook('voice', form, {}, 5)).toMatchObject({ kind: 'ignored' });
  });

  it.each([
    ['queued', null],
    ['initiated', null],
    ['ringing', { type: 'CARRIER.RINGING', at: 7, carrierCallId: SID }],
    ['in-progress', { type: 'CARRIER.ANSWERED', at: 7, carrierCallId: SID }],
    ['answered', { type: 'CARRIER.ANSWERED', at: 7, carrierCallId: SID }],
    ['completed', { type: 'CARRIER.ENDED', at: 7, status: 'completed', durationSec: 42 }],
    ['busy', { type: 'CARRIER.ENDED', at: 7, status: 'busy', durationSec: 42 }],
    ['no-answer', { type: 'CARRIER.ENDED', at: 7, status: 'no-answer', durationSec: 42 }],
    ['failed', { type: 'CARRIER.ENDED', at: 7, status: 'failed', durationSec: 42 }],
    ['canceled', { type: 'CARRIER.ENDED', at: 7, status: 'canceled', durationSec: 42 }],
    ['something-new', null],
  ])('status %s', (status, event) => {
    const parsed = parseTwilioWebhook('status', { ...base, CallStatus: status, CallDuration: '42' }, { cid: 'call_y' }, 7);
    if (event === null) expect(parsed).toEqual({ kind: 'ignored', reason: `call status ${status}` });
    else expect(parsed).toEqual({ kind: 'event', callId: 'call_y', carrierCallId: SID, event });
  });

  it("an inbound call's status callback (the number's, no cid) names the call by its sid; a bad duration is left out", () => {
    expect(parseTwilioWebhook('status', { ...base, CallStatus: 'completed', CallDuration: 'n/a' }, {}, 7)).toEqual({
      kind: 'event',
      callId: null,
      carrierCallId: SID,
      event: { type: 'CARRIER.ENDED', at: 7, status: 'completed' },
    });
  });

  it.each([
    ['human', 'human'],
    ['machine_start', 'machine'],
    ['machine_end_beep', 'machine'],
    ['machine_end_silence', 'machine'],
    ['machine_end_other', 'machine'],
    ['fax', 'fax'],
    ['unknown', 'unknown'],
    ['robot', 'unknown'],
  ])('AMD %s → %s', (answeredBy, result) => {
    expect(parseTwilioWebhook('amd', { CallSid: SID, AccountSid: ACCOUNT, AnsweredBy: answeredBy }, { cid: 'call_z' }, 9)).toEqual({
      kind: 'event',
      callId: 'call_z',
      carrierCallId: SID,
      event: { type: 'CARRIER.AMD', at: 9, result },
    });
  });

  it('throws TwilioWebhookError naming the field a signed body lacks', () => {
    const missing = (kind: TwilioWebhookKind, form: Record<string, string>) => {
      try {
        parseTwilioWebhook(kind, form, { cid: 'call_q' }, 1);
      } catch (err) {
        expect(err).toBeInstanceOf(TwilioWebhookError);
        return (err as TwilioWebhookError).field;
      }
      throw new Error('expected a TwilioWebhookError');
    };
    expect(missing('status', { CallStatus: 'ringing' })).toBe('CallSid');
    expect(missing('status', { CallSid: SID })).toBe('CallStatus');
    expect(missing('amd', { CallSid: SID })).toBe('AnsweredBy');
    expect(missing('voice', { CallSid: SID, From: '+1', To: '+2' })).toBe('Direction');
  });
});

describe('twiml', () => {
  it('writes the three documents the voice webhook answers with, escaping every value', () => {
    expect(connectStream('wss://switchboard.test/carrier/twilio/media', { token: 'a&b', say: `"hi" <you>` })).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://switchboard.test/carrier/twilio/media">' +
        '<Parameter name="token" value="a&amp;b"/><Parameter name="say" value="&quot;hi&quot; &lt;you&gt;"/></Stream></Connect></Response>',
    );
    expect(connectStream('wss://x.test/m')).toBe('<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://x.test/m"></Stream></Connect></Response>');
    expect(reject('busy')).toBe('<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="busy"/></Response>');
    expect(reject()).toBe('<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="rejected"/></Response>');
    expect(hangup()).toBe('<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>');
    expect(escapeXml(`'&'`)).toBe('&apos;&amp;&apos;');
  });
});
