// The carrier A simulator's calls and media client, seen from the service's side: a
// small HTTP + ws server in the test plays the service (answers TwiML, echoes the
// caller's audio back, sends marks and clears), and checks what the sim puts on the
// wire against carriers.md §2–§4 and what it records of the service's answers.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { connectStream, hangup, reject } from '../../voice/carriers/twiml.ts';
import { verifyTwilio } from '../../voice/carriers/twilio-signature.ts';
import { FRAME_BYTES, mulawTone } from './twilio-media-client.ts';
import { startTwilioSim, twilioSid, type TwilioSim } from './twilio-sim.ts';
import { readTwiml } from './twiml-reader.ts';

const PUBLIC = 'https://switchboard.test';
const MEDIA_URL = 'wss://switchboard.test/carrier/twilio/media';
const ACCOUNT = twilioSid('AC');
const TOKEN = 'd'.repeat(32);
const OURS = '+15550002000';
const TONE = mulawTone(440, 200);

interface Hook {
  path: string;
  url: string;
  form: URLSearchParams;
  signature: string | undefined;
}

interface Socket {
  ws: WebSocket;
  /** The handshake's signature header and the URL it was made to. */
  signature: string | undefined;
  path: string;
  messages: Record<string, unknown>[];
  closed: boolean;
}

/** What the stand-in service does on each new media socket (default: echo every media payload). */
let onSocket: (s: Socket) => void = echo;
/** What the stand-in service answers the voice webhook with. */
let voiceAnswer: () => string = () => connectStream(MEDIA_URL, { token: 'tok&"<en>', callId: 'abc' });

const hooks: Hook[] = [];
const sockets: Socket[] = [];

function echo(s: Socket): void {
  s.ws.on('message', (data) => {
    const msg = JSON.parse(data.toString()) as { event?: string; streamSid?: string; media?: { payload?: string } };
    if (msg.event === 'media') s.ws.send(JSON.stringify({ event: 'media', streamSid: msg.streamSid, media: { payload: msg.media?.payload } }));
  });
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const signature = req.headers['x-twilio-signature'];
    const path = new URL(req.url ?? '/', PUBLIC).pathname;
    hooks.push({
      path,
      url: PUBLIC + (req.url ?? '/'),
      form: new URLSearchParams(Buffer.concat(chunks).toString('utf8')),
      signature: typeof signature === 'string' ? signature : undefined,
    });
    if (path === '/carrier/twilio/voice') {
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(voiceAnswer());
    } else {
      res.writeHead(204);
      res.end();
    }
  });
});
const wss = new WebSocketServer({ server });
wss.on('connection', (ws, req) => {
  const signature = req.headers['x-twilio-signature'];
  const s: Socket = { ws, signature: typeof signature === 'string' ? signature : undefined, path: req.url ?? '', messages: [], closed: false };
  ws.on('message', (data) => s.messages.push(JSON.parse(data.toString()) as Record<string, unknown>));
  ws.on('close', () => (s.closed = true));
  sockets.push(s);
  onSocket(s);
});

let sim: TwilioSim;
let numberSid: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sim = await startTwilioSim({ stepMs: 5 });
  sim.route(PUBLIC, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  sim.addAccount(ACCOUNT, TOKEN);
  numberSid = sim.addNumber(ACCOUNT, OURS);
  const n = sim.numbers.get(numberSid)!;
  n.voice_url = `${PUBLIC}/carrier/twilio/voice`;
  n.status_callback = `${PUBLIC}/carrier/twilio/status`;
});
afterEach(() => {
  onSocket = echo;
  voiceAnswer = () => connectStream(MEDIA_URL, { token: 'tok&"<en>', callId: 'abc' });
});
afterAll(async () => {
  expect(sim.errors).toEqual([]);
  await sim.close();
  for (const c of wss.clients) c.terminate();
  await new Promise<void>((resolve) => wss.close(() => resolve()));
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const auth = 'Basic ' + Buffer.from(`${ACCOUNT}:${TOKEN}`).toString('base64');
let seq = 0;

/** Places an outbound call through the REST API; returns its sid. */
async function dial(extra: Record<string, string> = {}): Promise<string> {
  seq++;
  const cid = `call_sim${seq}`;
  const res = await fetch(`${sim.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/Calls.json`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      To: `+1555800${String(seq).padStart(4, '0')}`,
      From: OURS,
      Url: `${PUBLIC}/carrier/twilio/voice?cid=${cid}`,
      StatusCallback: `${PUBLIC}/carrier/twilio/status?cid=${cid}`,
      ...extra,
    }).toString(),
  });
  expect(res.status).toBe(201);
  const body = (await res.json()) as { sid: string; status: string };
  expect(body.status).toBe('queued');
  return body.sid;
}

async function update(sid: string, form: Record<string, string>): Promise<Response> {
  return fetch(`${sim.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/Calls/${sid}.json`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
}

async function socketOf(callSid: string): Promise<Socket> {
  return vi.waitFor(
    () => {
      const s = sockets.find((x) => (x.messages[1]?.start as { callSid?: string } | undefined)?.callSid === callSid);
      expect(s).toBeDefined();
      return s!;
    },
    { timeout: 3000, interval: 5 },
  );
}

const statusHooksOf = (callSid: string) => hooks.filter((h) => h.path === '/carrier/twilio/status' && h.form.get('CallSid') === callSid);

describe('media stream of an answered call', () => {
  it('speaks the protocol: connected, start with the parameters, numbered 20 ms frames; the handshake is signed', async () => {
    const sid = await dial();
    const s = await socketOf(sid);
    await vi.waitFor(() => expect(s.messages.length).toBeGreaterThan(6), { timeout: 3000 });

    expect(s.path).toBe('/carrier/twilio/media');
    expect(verifyTwilio(TOKEN, MEDIA_URL, {}, s.signature)).toBe(true);
    expect(s.messages[0]).toEqual({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    const start = s.messages[1] as { streamSid: string; sequenceNumber: string; start: Record<string, unknown> };
    expect(start.streamSid).toMatch(/^MZ[0-9a-f]{32}$/);
    expect(start).toMatchObject({
      event: 'start',
      sequenceNumber: '1',
      start: {
        accountSid: ACCOUNT,
        callSid: sid,
        streamSid: start.streamSid,
        tracks: ['inbound'],
        customParameters: { token: 'tok&"<en>', callId: 'abc' },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    });
    const media = s.messages.slice(2, 6) as { sequenceNumber: string; streamSid: string; media: Record<string, string> }[];
    media.forEach((m, i) => {
      expect(m).toMatchObject({ event: 'media', sequenceNumber: String(i + 2), streamSid: start.streamSid });
      expect(m.media).toMatchObject({ track: 'inbound', chunk: String(i + 1), timestamp: String((i + 1) * 20) });
      expect(Buffer.from(m.media.payload!, 'base64')).toHaveLength(FRAME_BYTES);
      expect(m.media.payload).toHaveLength(216);
    });
    await update(sid, { Status: 'completed' });
  });

  it('records what the service sends back (the echo of its own audio) and flags messages without streamSid', async () => {
    const sid = await dial();
    const s = await socketOf(sid);
    const call = sim.calls.get(sid)!;
    await vi.waitFor(() => expect(call.stream!.audio.length).toBeGreaterThanOrEqual(3), { timeout: 3000 });
    const sent = s.messages.filter((m) => m.event === 'media').map((m) => (m.media as { payload: string }).payload);
    const echoed = call.stream!.audio.map((a) => Buffer.from(a).toString('base64'));
    expect(echoed).toEqual(sent.slice(0, echoed.length));
    // The default voice is a 440 Hz tone: the first frame is its first 160 bytes.
    expect(call.stream!.receivedAudio().subarray(0, FRAME_BYTES)).toEqual(mulawTone(440, 1000).subarray(0, FRAME_BYTES));

    s.ws.send(JSON.stringify({ event: 'clear' }));
    await vi.waitFor(() => expect(call.stream!.invalid).toContain('{"event":"clear"}'), { timeout: 3000 });
    expect(call.stream!.clears).toBe(0);
    await update(sid, { Status: 'completed' });
  });

  it('returns a mark once the audio before it has played, and at once on clear', async () => {
    onSocket = () => {};
    const sid = await dial();
    const s = await socketOf(sid);
    const streamSid = (s.messages[1] as { streamSid: string }).streamSid;
    const call = sim.calls.get(sid)!;

    // 200 ms of audio, then a mark: it comes back when that audio has played.
    const sentAt = performance.now();
    s.ws.send(JSON.stringify({ event: 'media', streamSid, media: { payload: Buffer.from(TONE).toString('base64') } }));
    s.ws.send(JSON.stringify({ event: 'mark', streamSid, mark: { name: 'utt-1' } }));
    await vi.waitFor(() => expect(s.messages.some((m) => m.event === 'mark')).toBe(true), { timeout: 3000, interval: 5 });
    expect(performance.now() - sentAt).toBeGreaterThanOrEqual(180);
    expect(s.messages.find((m) => m.event === 'mark')).toMatchObject({ streamSid, mark: { name: 'utt-1' } });

    // 10 s of audio and a mark, then clear: the mark returns at once.
    const long = new Uint8Array(80_000).fill(0xff);
    s.ws.send(JSON.stringify({ event: 'media', streamSid, media: { payload: Buffer.from(long).toString('base64') } }));
    s.ws.send(JSON.stringify({ event: 'mark', streamSid, mark: { name: 'utt-2' } }));
    await new Promise((r) => setTimeout(r, 50));
    expect(call.stream!.returnedMarks).toEqual(['utt-1']);
    s.ws.send(JSON.stringify({ event: 'clear', streamSid }));
    await vi.waitFor(() => expect(call.stream!.returnedMarks).toEqual(['utt-1', 'utt-2']), { timeout: 1000, interval: 5 });
    expect(call.stream!.clears).toBe(1);
    expect(call.stream!.marks).toEqual(['utt-1', 'utt-2']);
    await update(sid, { Status: 'completed' });
  });

  it('sends DTMF events for key presses on the far end', async () => {
    const sid = await dial();
    const s = await socketOf(sid);
    sim.calls.get(sid)!.stream!.sendDtmf('7');
    await vi.waitFor(() => expect(s.messages.find((m) => m.event === 'dtmf')).toMatchObject({ dtmf: { track: 'inbound_track', digit: '7' } }), {
      timeout: 3000,
    });
    await update(sid, { Status: 'completed' });
  });

  it('our hang-up (Status=completed) stops the stream before the final callback', async () => {
    const sid = await dial({ StatusCallbackEvent: 'answered' });
    const s = await socketOf(sid);
    const res = await update(sid, { Status: 'completed' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe('completed');
    expect(await sim.calls.get(sid)!.ended).toBe('completed');
    expect(s.messages.at(-1)).toMatchObject({ event: 'stop', stop: { accountSid: ACCOUNT, callSid: sid } });
    await vi.waitFor(() => expect(s.closed).toBe(true), { timeout: 1000 });
    const status = statusHooksOf(sid);
    expect(status.map((h) => h.form.get('CallStatus'))).toEqual(['in-progress', 'completed']);
    const final = status.at(-1)!;
    expect(verifyTwilio(TOKEN, final.url, final.form, final.signature)).toBe(true);
    expect(final.form.get('CallbackSource')).toBe('call-progress-events');
    expect(final.form.get('CallDuration')).toMatch(/^\d+$/);
    expect(final.form.get('Timestamp')).toMatch(/^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$/);
    // Gone for further updates.
    expect((await update(sid, { Status: 'completed' })).status).toBe(404);
  });

  it('the far end hanging up stops the stream too; the service closing the socket ends the call', async () => {
    const a = await dial();
    const sa = await socketOf(a);
    expect(await sim.hangup(a)).toBe('completed');
    expect(sa.messages.at(-1)).toMatchObject({ event: 'stop' });

    const b = await dial();
    const sb = await socketOf(b);
    sb.ws.close(1000, 'done');
    expect(await sim.calls.get(b)!.ended).toBe('completed');
    expect(sim.calls.get(b)!.stream!.invalid).toEqual([]);
    expect(statusHooksOf(b).at(-1)?.form.get('CallStatus')).toBe('completed');
  });

  it('new TwiML replaces the stream: the old one stops, the new one starts', async () => {
    const sid = await dial();
    const first = await socketOf(sid);
    const res = await update(sid, { Twiml: connectStream(MEDIA_URL, { leg: 'two' }) });
    expect(res.status).toBe(200);
    await vi.waitFor(() => expect(sim.calls.get(sid)!.streams).toHaveLength(2), { timeout: 3000 });
    expect(first.messages.at(-1)).toMatchObject({ event: 'stop' });
    const second = sim.calls.get(sid)!.streams[1]!;
    await second.opened;
    expect(second.customParameters).toEqual({ leg: 'two' });
    expect(sim.calls.get(sid)!.status).toBe('in-progress');
    await update(sid, { Status: 'completed' });
    expect(await sim.calls.get(sid)!.ended).toBe('completed');
  });
});

describe('inbound calls', () => {
  it('posts the signed incoming-call webhook, follows the stream TwiML and reports the end to the number', async () => {
    const call = await sim.placeInboundCall({ from: '+15551110000', to: OURS });
    const voice = hooks.find((h) => h.path === '/carrier/twilio/voice' && h.form.get('CallSid') === call.callSid)!;
    expect(verifyTwilio(TOKEN, voice.url, voice.form, voice.signature)).toBe(true);
    expect(Object.fromEntries(voice.form)).toMatchObject({
      AccountSid: ACCOUNT,
      CallSid: call.callSid,
      From: '+15551110000',
      To: OURS,
      CallStatus: 'ringing',
      Direction: 'inbound',
      ApiVersion: '2010-04-01',
    });
    expect(call.httpStatus).toBe(200);
    expect(call.twiml).toContain('<Connect><Stream');
    expect(call.call.status).toBe('in-progress');

    await vi.waitFor(() => expect(call.receivedAudio().length).toBeGreaterThanOrEqual(FRAME_BYTES * 2), { timeout: 3000 });
    const s = await socketOf(call.callSid);
    call.sendDtmf('#');
    await vi.waitFor(() => expect(s.messages.some((m) => m.event === 'dtmf')).toBe(true), { timeout: 3000 });

    expect(await call.hangup()).toBe('completed');
    expect(s.messages.at(-1)).toMatchObject({ event: 'stop' });
    const status = statusHooksOf(call.callSid);
    expect(status).toHaveLength(1);
    expect(status[0]!.url).toBe(`${PUBLIC}/carrier/twilio/status`);
    expect(Object.fromEntries(status[0]!.form)).toMatchObject({ CallStatus: 'completed', Direction: 'inbound', SequenceNumber: '0' });
    expect(verifyTwilio(TOKEN, status[0]!.url, status[0]!.form, status[0]!.signature)).toBe(true);
  });

  it.each([
    ['<Reject reason="busy"/>', 'busy', () => reject('busy')],
    ['<Reject/>', 'no-answer', () => reject()],
    ['<Hangup/>', 'completed', () => hangup()],
  ] as const)('follows %s: the call ends %s without a stream', async (_verb, status, twiml) => {
    voiceAnswer = twiml;
    const before = sockets.length;
    const call = await sim.placeInboundCall({ from: '+15551110001', to: OURS, accountSid: ACCOUNT });
    expect(await call.ended).toBe(status);
    expect(call.stream).toBeNull();
    expect(sockets.length).toBe(before);
    expect(call.call.answeredAt === null).toBe(status !== 'completed');
    expect(statusHooksOf(call.callSid).map((h) => h.form.get('CallStatus'))).toEqual([status]);
  });

  it('refuses to ring a number it does not have', async () => {
    await expect(sim.placeInboundCall({ from: '+15551110002', to: '+15559999999' })).rejects.toThrow(/no number/);
  });
});

describe('the Calls list, the Call resource times and the carrier clock', () => {
  const own: TwilioSim[] = [];
  afterEach(async () => {
    await Promise.all(own.splice(0).map((x) => x.close()));
  });
  // The carrier's clock is injected at noon UTC of today, so no test runs across a midnight.
  async function ownSim(stepMs: number): Promise<TwilioSim> {
    const noon = new Date();
    noon.setUTCHours(12, 0, 0, 0);
    const shift = noon.getTime() - Date.now();
    const x = await startTwilioSim({ stepMs, now: () => Date.now() + shift });
    own.push(x);
    x.route(PUBLIC, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    x.addAccount(ACCOUNT, TOKEN);
    x.addNumber(ACCOUNT, OURS);
    return x;
  }
  const get = async (x: TwilioSim, query: string) => {
    const res = await fetch(`${x.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/Calls.json?${query}`, { headers: { authorization: auth } });
    return { status: res.status, body: (await res.json()) as { calls: Record<string, unknown>[]; code?: number } };
  };
  const create = async (x: TwilioSim, to: string) => {
    const res = await fetch(`${x.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/Calls.json`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ To: to, From: OURS, Url: `${PUBLIC}/carrier/twilio/voice`, StatusCallback: `${PUBLIC}/carrier/twilio/status` }).toString(),
    });
    return ((await res.json()) as { sid: string }).sid;
  };
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

  it('start_time is null while the call waits in the carrier queue; StartTime filters skip it, Status=queued finds it', async () => {
    const x = await ownSim(60_000);
    const sid = await create(x, '+15558100001');
    const res = await fetch(`${x.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/Calls/${sid}.json`, { headers: { authorization: auth } });
    expect(await res.json()).toMatchObject({ status: 'queued', start_time: null, end_time: null, duration: null });
    expect((await get(x, `To=%2B15558100001&StartTime%3E=${day(x.clock.now())}`)).body.calls).toEqual([]);
    expect((await get(x, 'To=%2B15558100001&Status=queued')).body.calls.map((c) => c.sid)).toEqual([sid]);
    expect((await get(x, 'To=%2B15558100001&Status=ringing')).body.calls).toEqual([]);
  });

  it('StartTime=, StartTime>= and StartTime<= are UTC days on the carrier clock; newest first; a bad date is 400', async () => {
    const x = await ownSim(2);
    const today = x.clock.now();
    const a = await create(x, '+15558100002');
    await vi.waitFor(() => expect(x.calls.get(a)?.startedAt).not.toBeNull(), { timeout: 2000, interval: 5 });
    x.advanceClock(86_400_000);
    const b = await create(x, '+15558100002');
    await vi.waitFor(() => expect(x.calls.get(b)?.startedAt).not.toBeNull(), { timeout: 2000, interval: 5 });
    const sids = async (q: string) => (await get(x, `To=%2B15558100002&From=%2B15550002000&${q}`)).body.calls.map((c) => c.sid);
    expect(await sids(`StartTime%3E=${day(today)}`)).toEqual([b, a]);
    expect(await sids(`StartTime%3E=${day(today + 86_400_000)}`)).toEqual([b]);
    expect(await sids(`StartTime%3C=${day(today)}`)).toEqual([a]);
    expect(await sids(`StartTime=${day(today + 86_400_000)}`)).toEqual([b]);
    expect(await sids('')).toEqual([b, a]);
    const first = (await get(x, 'To=%2B15558100002')).body.calls[0]!;
    expect(first.start_time).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} \+0000$/);
    const bad = await get(x, 'StartTime%3E=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe(20001);
  });

  it('an ended call carries end_time and duration (connected seconds) on the carrier clock', async () => {
    const x = await ownSim(2);
    const sid = await create(x, '+15558100003');
    await vi.waitFor(() => expect(x.calls.get(sid)?.status).toBe('in-progress'), { timeout: 3000, interval: 5 });
    x.advanceClock(30_000);
    await x.hangup(sid);
    const call = x.calls.get(sid)!;
    const res = await fetch(`${x.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/Calls/${sid}.json`, { headers: { authorization: auth } });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'completed', end_time: new Date(call.endedAt!).toUTCString().replace('GMT', '+0000') });
    expect(Number(body.duration)).toBeGreaterThanOrEqual(30);
    expect(Date.parse(String(body.end_time)) - Date.parse(String(body.start_time))).toBeGreaterThanOrEqual(30_000);
  });
});

describe('faults: lost, reset and slow answers, limited to the dial', () => {
  const to = () => {
    seq++;
    return `+1555810${String(seq).padStart(4, '0')}`;
  };
  const post = (number: string) =>
    fetch(`${sim.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/Calls.json`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ To: number, From: OURS, Url: `${PUBLIC}/carrier/twilio/voice`, StatusCallback: `${PUBLIC}/carrier/twilio/status` }).toString(),
    });
  const list = () => fetch(`${sim.baseUrl}/2010-04-01/Accounts/${ACCOUNT}/Calls.json?PageSize=1`, { headers: { authorization: auth } });
  afterEach(() => sim.chaos(null));

  it('drop: the call is placed, the answer never comes', async () => {
    const n = to();
    sim.scenario(n, 'busy');
    sim.fail({ drop: true, match: 'dial' });
    await expect(post(n)).rejects.toThrow(/fetch failed/);
    expect(sim.placedTo(n)).toBe(1);
    expect(sim.dialRequests(n).map((r) => r.fault)).toEqual(['drop']);
    await [...sim.calls.values()].find((c) => c.to === n)!.ended;
  });

  it('reset: the connection is cut before the carrier acts: nothing is placed', async () => {
    const n = to();
    sim.fail({ reset: true, match: 'dial' });
    await expect(post(n)).rejects.toThrow(/fetch failed/);
    expect(sim.placedTo(n)).toBe(0);
    expect(sim.dialRequests(n).map((r) => r.fault)).toEqual(['reset']);
  });

  it('slow: the call is placed at once, the answer comes late', async () => {
    const n = to();
    sim.scenario(n, 'busy');
    sim.fail({ delayMs: 600, match: 'dial' });
    const started = Date.now();
    let answered = false;
    const pending = post(n).then((res) => ((answered = true), res));
    await vi.waitFor(() => expect(sim.placedTo(n)).toBe(1), { timeout: 500, interval: 2 });
    expect(answered).toBe(false);
    expect((await pending).status).toBe(201);
    expect(Date.now() - started).toBeGreaterThanOrEqual(590);
    await [...sim.calls.values()].find((c) => c.to === n)!.ended;
  });

  it('a fault limited to the dial leaves look-ups and hang-ups alone, and waits for the next dial', async () => {
    sim.fail({ status: 500, match: 'dial' });
    sim.fail({ status: 503, match: { method: 'GET', path: /\/Calls\.json$/ } });
    expect((await list()).status).toBe(503);
    expect((await list()).status).toBe(200);
    expect((await update(twilioSid('CA'), { Status: 'completed' })).status).toBe(404);
    const n = to();
    expect((await post(n)).status).toBe(500);
    expect(sim.placedTo(n)).toBe(0);
    expect(sim.dialRequests(n)[0]!.fault).toBe('status');
  });

  it('chaos on dials, keyed by To: the same seed gives each number the same faults in any arrival order; look-ups stay healthy', async () => {
    const rates = { dropRate: 0.3, resetRate: 0.3, slowRate: 0.2, slowMs: [5, 20] as const };
    const numbers = Array.from({ length: 30 }, () => to());
    for (const n of numbers) sim.scenario(n, 'busy');
    const faultOf = (n: string, i: number) => sim.dialRequests(n)[i]?.fault ?? 'none';

    sim.chaos({ seed: 7, ...rates });
    for (const n of numbers) {
      const res = await post(n).catch(() => null);
      const fault = faultOf(n, 0);
      // Placed unless reset; answered unless reset or dropped.
      expect(sim.placedTo(n)).toBe(fault === 'reset' ? 0 : 1);
      expect(res === null).toBe(fault === 'reset' || fault === 'drop');
      expect((await list()).status).toBe(200);
    }
    const first = numbers.map((n) => faultOf(n, 0));
    expect(new Set(first)).toEqual(new Set(['drop', 'reset', 'slow', 'none']));

    // Again with the same seed, all at once and in reverse: each number meets the same fault.
    sim.chaos({ seed: 7, ...rates });
    await Promise.all([...numbers].reverse().map((n) => post(n).catch(() => null)));
    expect(numbers.map((n) => faultOf(n, 1))).toEqual(first);
    // Another seed, other faults.
    sim.chaos({ seed: 8, ...rates });
    await Promise.all(numbers.map((n) => post(n).catch(() => null)));
    expect(numbers.map((n) => faultOf(n, 2))).not.toEqual(first);
    sim.chaos(null);
    for (const n of numbers) expect(sim.placedTo(n)).toBe([0, 1, 2].filter((i) => faultOf(n, i) !== 'reset').length);
    await Promise.all([...sim.calls.values()].map((c) => c.ended));
  });

  it('chaos with an explicit match draws in arrival order: the same seed, the same sequence', async () => {
    const run = async () => {
      sim.chaos({ seed: 11, resetRate: 0.5, match: 'dial' });
      const faults = [];
      for (let i = 0; i < 8; i++) {
        const n = to();
        sim.scenario(n, 'busy');
        await post(n).catch(() => null);
        faults.push(sim.dialRequests(n)[0]?.fault ?? 'none');
      }
      sim.chaos(null);
      return faults;
    };
    const a = await run();
    expect(await run()).toEqual(a);
    expect(new Set(a)).toEqual(new Set(['reset', 'none']));
    await Promise.all([...sim.calls.values()].map((c) => c.ended));
  });
});

describe('readTwiml', () => {
  it('reads back what the TwiML builders write, unescaping values', () => {
    const verbs = readTwiml(connectStream('wss://x.test/m?a=1&b=2', { 'na"me': `<v'&>` }));
    expect(verbs).toEqual([
      {
        name: 'Connect',
        attrs: {},
        text: '',
        children: [
          {
            name: 'Stream',
            attrs: { url: 'wss://x.test/m?a=1&b=2' },
            text: '',
            children: [{ name: 'Parameter', attrs: { name: 'na"me', value: `<v'&>` }, children: [], text: '' }],
          },
        ],
      },
    ]);
    expect(readTwiml(reject('busy'))).toEqual([{ name: 'Reject', attrs: { reason: 'busy' }, children: [], text: '' }]);
  });

  it('refuses what is not TwiML', () => {
    expect(readTwiml('')).toBeNull();
    expect(readTwiml('OK')).toBeNull();
    expect(readTwiml('<Response><Hangup></Response>')).toBeNull();
    expect(readTwiml('<Other/>')).toBeNull();
    expect(readTwiml('{"twiml":true}')).toBeNull();
  });
});
