// The media websockets on the real service (MEDIA_ENGINE=echo), reached by a `ws`
// client speaking each carrier's protocol (carriers.md §4, §6). Calls are handed out
// through the `mediaBindings` start option, so these tests exercise the media path
// without call setup: tokens, echo in each carrier's outbound format, the events the
// call hears, rejection with 1008, one-time tokens, metrics and shutdown.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CallEvent } from '../machines/call-events.ts';
import type { MediaBinding, MediaBindings, MediaProvider } from '../voice/media/bindings.ts';
import { startTestServer, type TestServer } from '../test/helpers/server.ts';

const NOW = 1_750_000_000_000;
let seq = 0;

/** Hands out one-time tokens the way the supervisor does, and records what each call hears. */
class TestBindings implements MediaBindings {
  private readonly pending = new Map<string, { provider: MediaProvider; binding: MediaBinding }>();
  readonly claims: { provider: MediaProvider; token: string; at: number }[] = [];
  readonly heard = new Map<string, CallEvent[]>();

  issue(provider: MediaProvider): { token: string; callId: string; events: CallEvent[] } {
    seq++;
    const token = `tok_${provider}_${seq}_${Math.random().toString(36).slice(2)}`;
    const callId = `call_${seq}`;
    const events: CallEvent[] = [];
    this.heard.set(callId, events);
    this.pending.set(token, {
      provider,
      binding: { callId, accountId: 'acct_1', direction: 'inbound', agentId: null, deliver: (e) => events.push(e) },
    });
    return { token, callId, events };
  }

  claim(provider: MediaProvider, token: string, at: number): MediaBinding | null {
    this.claims.push({ provider, token, at });
    const p = this.pending.get(token);
    if (!p || p.provider !== provider) return null;
    this.pending.delete(token);
    return p.binding;
  }

  /** What the upgrade of a carrier-B socket asks: a look, not a claim. */
  expects(provider: MediaProvider, token: string): boolean {
    return this.pending.get(token)?.provider === provider;
  }
}

interface Client {
  ws: WebSocket;
  messages: Record<string, any>[];
  closed: Promise<{ code: number; reason: string }>;
  send(msg: unknown): void;
  waitForMessages(n: number): Promise<void>;
}

async function connect(url: string, onSocket?: (ws: WebSocket) => void): Promise<Client> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  onSocket?.(ws);
  const messages: Record<string, any>[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (data) => {
    messages.push(JSON.parse(String(data)));
    for (const w of waiters.splice(0)) w();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    ws,
    messages,
    closed,
    send: (msg) => ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg)),
    async waitForMessages(n) {
      const deadline = Date.now() + 5000;
      while (messages.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} messages, got ${messages.length}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
    },
  };
}

interface Refusal {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Opens a media socket, or reports how the server refused the upgrade (HTTP status, headers, body). */
async function attempt(url: string): Promise<Client | Refusal> {
  let refused!: (r: Refusal) => void;
  const refusal = new Promise<Refusal>((resolve) => (refused = resolve));
  const opened = connect(url, (ws) =>
    ws.once('unexpected-response', (req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        refused({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() });
        req.destroy();
      });
    }),
  );
  return Promise.race([opened, refusal]);
}

const isRefusal = (r: Client | Refusal): r is Refusal => 'status' in r;

/** Rejects when `p` has not settled within `ms`: a socket the server keeps open fails the test instead of hanging it. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

const gaugeOf = (text: string, name: string): number => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** 160 bytes whose first bytes name the chunk, so an echo can be matched to its frame. */
function framePayload(chunk: number): string {
  const bytes = Buffer.alloc(160, 0xff);
  bytes.writeUInt16BE(chunk, 0);
  return bytes.toString('base64');
}

const STREAM_SID = 'MZ18ad3ab5a668481ce02b83e7395059f0';
const twilioMsg = {
  connected: { event: 'connected', protocol: 'Call', version: '1.0.0' },
  start: (token: string) => ({
    event: 'start',
    sequenceNumber: '1',
    streamSid: STREAM_SID,
    start: {
      accountSid: 'AC00000000000000000000000000000001',
      streamSid: STREAM_SID,
      callSid: 'CA00000000000000000000000000000001',
      tracks: ['inbound'],
      customParameters: { token },
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    },
  }),
  media: (chunk: number) => ({
    event: 'media',
    sequenceNumber: String(chunk + 1),
    streamSid: STREAM_SID,
    media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload: framePayload(chunk) },
  }),
  dtmf: (digit: string) => ({ event: 'dtmf', sequenceNumber: '60', streamSid: STREAM_SID, dtmf: { track: 'inbound_track', digit } }),
  stop: { event: 'stop', sequenceNumber: '61', streamSid: STREAM_SID, stop: { accountSid: 'AC00000000000000000000000000000001', callSid: 'CA00000000000000000000000000000001' } },
};

const STREAM_ID = '32DE0DEA-53CB-4B21-89A4-9E1819C043BC';
const telnyxMsg = {
  connected: { event: 'connected', version: '1.0.0' },
  start: {
    event: 'start',
    sequence_number: '1',
    stream_id: STREAM_ID,
    start: {
      user_id: '3E6F995F-85F7-4705-9741-53B116D28237',
      call_control_id: 'v3:MdI91X4lWFEs7IgbBEOT9M4AigoY08M0WWZFISt1Yw2axZ_IiE4pqg',
      call_session_id: '4b8ef0d4-7a4b-11ef-8b52-02420a0d7e68',
      from: '+14155550100',
      to: '+14155550101',
      tags: [],
      client_state: 'Y2FsbF8x',
      media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
    },
  },
  media: (chunk: number) => ({
    event: 'media',
    sequence_number: String(chunk + 1),
    stream_id: STREAM_ID,
    media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload: framePayload(chunk) },
  }),
  dtmf: (digit: string) => ({ event: 'dtmf', sequence_number: '60', stream_id: STREAM_ID, occurred_at: '2025-01-01T00:00:00.000Z', dtmf: { digit } }),
  stop: { event: 'stop', sequence_number: '61', stream_id: STREAM_ID, stop: { user_id: '3E6F995F-85F7-4705-9741-53B116D28237', call_control_id: 'v3:x' } },
};

describe('carrier media websockets', () => {
  let server: TestServer;
  let wsBase: string;
  const bindings = new TestBindings();

  beforeAll(async () => {
    server = await startTestServer({ MEDIA_ENGINE: 'echo' }, { mediaBindings: bindings, clock: () => NOW });
    wsBase = `ws://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.close();
  });

  it('carrier A: streams 50 frames and gets each echoed with the streamSid; DTMF and stop reach the call', async () => {
    const call = bindings.issue('twilio');
    const c = await connect(`${wsBase}/carrier/twilio/media`);
    c.send(twilioMsg.connected);
    c.send(twilioMsg.start(call.token));
    for (let chunk = 1; chunk <= 50; chunk++) c.send(twilioMsg.media(chunk));
    await c.waitForMessages(50);
    expect(c.messages).toEqual(Array.from({ length: 50 }, (_, i) => ({ event: 'media', streamSid: STREAM_SID, media: { payload: framePayload(i + 1) } })));
    expect(call.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);

    c.send(twilioMsg.dtmf('5'));
    await until(() => call.events.length === 2, 'DTMF');
    expect(call.events[1]).toEqual({ type: 'DTMF', at: NOW, digit: '5' });

    c.send(twilioMsg.stop);
    await until(() => call.events.length === 3, 'MEDIA.STOPPED');
    expect(call.events[2]).toEqual({ type: 'MEDIA.STOPPED', at: NOW });
    c.ws.close(1000);
    await c.closed;
    await new Promise((r) => setTimeout(r, 50));
    expect(call.events).toHaveLength(3); // the close after stop adds nothing
    expect(c.messages).toHaveLength(50);
  });

  it('carrier B: the URL token claims the call; out-of-order frames are echoed in chunk order without stream_id', async () => {
    const call = bindings.issue('telnyx');
    const c = await connect(`${wsBase}/carrier/telnyx/media?token=${encodeURIComponent(call.token)}`);
    c.send(telnyxMsg.connected);
    c.send(telnyxMsg.start);
    // Chunks 1..50 with every pair after the first frame swapped: 1, 3, 2, 5, 4, …
    const order = [1];
    for (let i = 2; i < 50; i += 2) order.push(i + 1, i);
    order.push(50);
    for (const chunk of order) c.send(telnyxMsg.media(chunk));
    await c.waitForMessages(50);
    expect(c.messages).toEqual(Array.from({ length: 50 }, (_, i) => ({ event: 'media', media: { payload: framePayload(i + 1) } })));
    expect(bindings.claims.filter((x) => x.token === call.token)).toEqual([{ provider: 'telnyx', token: call.token, at: NOW }]);

    c.send(telnyxMsg.dtmf('#'));
    c.send(telnyxMsg.stop);
    await until(() => call.events.length === 3, 'DTMF and MEDIA.STOPPED');
    expect(call.events).toEqual([
      { type: 'MEDIA.STARTED', at: NOW },
      { type: 'DTMF', at: NOW, digit: '#' },
      { type: 'MEDIA.STOPPED', at: NOW },
    ]);
    c.ws.close(1000);
    await c.closed;
  });

  it('carrier A: an unknown token is closed with 1008 before any audio is handled, and no call hears anything', async () => {
    const before = [...bindings.heard.values()].map((e) => e.length);
    const c = await connect(`${wsBase}/carrier/twilio/media`);
    c.send(twilioMsg.connected);
    c.send(twilioMsg.start('tok_never_issued'));
    for (let chunk = 1; chunk <= 5; chunk++) c.send(twilioMsg.media(chunk));
    const closed = await c.closed;
    expect(closed).toEqual({ code: 1008, reason: 'unknown or used media token' });
    expect(c.messages).toEqual([]);
    expect([...bindings.heard.values()].map((e) => e.length)).toEqual(before);
    expect(bindings.claims.at(-1)).toEqual({ provider: 'twilio', token: 'tok_never_issued', at: NOW });
  });

  it('carrier B: an unknown URL token is refused at the upgrade with 403, before any socket exists', async () => {
    const refused = await attempt(`${wsBase}/carrier/telnyx/media?token=tok_never_issued`);
    if (!isRefusal(refused)) refused.ws.terminate();
    expect(refused).toMatchObject({ status: 403, body: 'unknown or used media token' });
    // Checked, not claimed: the look-up at the upgrade spends no token.
    expect(bindings.claims.filter((x) => x.token === 'tok_never_issued' && x.provider === 'telnyx')).toEqual([]);
  });

  it('carrier B: a missing URL token is closed with 1008 at start and echoes nothing', async () => {
    const c = await connect(`${wsBase}/carrier/telnyx/media`);
    c.send(telnyxMsg.connected);
    c.send(telnyxMsg.start);
    c.send(telnyxMsg.media(1));
    expect(await c.closed).toMatchObject({ code: 1008 });
    expect(c.messages).toEqual([]);
  });

  it('a token works once: a second stream with it is closed with 1008 while the first keeps streaming', async () => {
    const call = bindings.issue('twilio');
    const first = await connect(`${wsBase}/carrier/twilio/media`);
    first.send(twilioMsg.start(call.token));
    first.send(twilioMsg.media(1));
    await first.waitForMessages(1);

    const second = await connect(`${wsBase}/carrier/twilio/media`);
    second.send(twilioMsg.start(call.token));
    second.send(twilioMsg.media(1));
    expect(await second.closed).toMatchObject({ code: 1008 });
    expect(second.messages).toEqual([]);

    first.send(twilioMsg.media(2));
    await first.waitForMessages(2);
    expect(first.messages[1]).toEqual({ event: 'media', streamSid: STREAM_SID, media: { payload: framePayload(2) } });
    expect(call.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);
    first.ws.close(1000);
    await first.closed;
  });

  it('a carrier token presented on the other carrier\'s socket is refused', async () => {
    const call = bindings.issue('telnyx');
    const c = await connect(`${wsBase}/carrier/twilio/media`);
    c.send(twilioMsg.start(call.token));
    expect(await c.closed).toMatchObject({ code: 1008 });
    expect(call.events).toEqual([]);
  });

  it('a socket that drops without stop still ends the stream: the call hears MEDIA.STOPPED once', async () => {
    const call = bindings.issue('twilio');
    const c = await connect(`${wsBase}/carrier/twilio/media`);
    c.send(twilioMsg.start(call.token));
    c.send(twilioMsg.media(1));
    await c.waitForMessages(1);
    c.ws.terminate();
    await until(() => call.events.length === 2, 'MEDIA.STOPPED');
    expect(call.events).toEqual([
      { type: 'MEDIA.STARTED', at: NOW },
      { type: 'MEDIA.STOPPED', at: NOW },
    ]);
  });

  it('malformed messages on a started stream are ignored; the stream goes on', async () => {
    const call = bindings.issue('twilio');
    const c = await connect(`${wsBase}/carrier/twilio/media`);
    c.send(twilioMsg.start(call.token));
    c.send('not json');
    c.send({ event: 'media', sequenceNumber: '2', streamSid: STREAM_SID, media: { chunk: '1', timestamp: '20', payload: '***' } });
    c.send({ event: 'teleport' });
    c.send(twilioMsg.media(1));
    await c.waitForMessages(1);
    expect(c.messages).toEqual([{ event: 'media', streamSid: STREAM_SID, media: { payload: framePayload(1) } }]);
    expect(call.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);
    c.ws.close(1000);
    await c.closed;
  });

  it('/metrics reports live streams, frames in and out, drops and rejections', async () => {
    const call = bindings.issue('telnyx');
    const c = await connect(`${wsBase}/carrier/telnyx/media?token=${call.token}`);
    c.send(telnyxMsg.start);
    c.send(telnyxMsg.media(1));
    await c.waitForMessages(1);
    const res = await server.request('GET', '/metrics');
    expect(res.status).toBe(200);
    const gauge = (name: string): number => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(res.text)?.[1] ?? NaN);
    expect(gauge('switchboard_media_streams')).toBe(1);
    // Earlier tests in this file: 50 + 50 + 2 + 1 + 1 echoed frames before this one's.
    expect(gauge('switchboard_media_frames_in_total')).toBe(105);
    expect(gauge('switchboard_media_frames_out_total')).toBe(105);
    expect(gauge('switchboard_media_frames_dropped_total')).toBe(0);
    expect(gauge('switchboard_media_rejected_total')).toBe(5);
    c.ws.close(1000);
    await c.closed;
  });

  it('a plain GET on a media path is not a websocket: it falls through to the HTTP router', async () => {
    const res = await server.request('GET', '/carrier/twilio/media');
    expect(res.status).toBe(404);
  });
});

describe('media websockets at shutdown', () => {
  it('stopping the service closes open streams with 1001 and the call hears MEDIA.STOPPED first', async () => {
    const bindings = new TestBindings();
    const server = await startTestServer({ MEDIA_ENGINE: 'echo' }, { mediaBindings: bindings, clock: () => NOW });
    try {
      const call = bindings.issue('telnyx');
      const c = await connect(`ws://127.0.0.1:${server.port}/carrier/telnyx/media?token=${call.token}`);
      c.send(telnyxMsg.start);
      c.send(telnyxMsg.media(1));
      await c.waitForMessages(1);
      const waiting = await connect(`ws://127.0.0.1:${server.port}/carrier/twilio/media`);
      await server.stop();
      expect(call.events).toEqual([
        { type: 'MEDIA.STARTED', at: NOW },
        { type: 'MEDIA.STOPPED', at: NOW },
      ]);
      expect(await c.closed).toEqual({ code: 1001, reason: 'server shutting down' });
      expect(await waiting.closed).toEqual({ code: 1001, reason: 'server shutting down' });
    } finally {
      await server.close();
    }
  });

  it('without MEDIA_ENGINE and without providers, the default agent engine asks to end the call at once and sends nothing back', async () => {
    const bindings = new TestBindings();
    const server = await startTestServer({}, { mediaBindings: bindings });
    try {
      const call = bindings.issue('twilio');
      const c = await connect(`ws://127.0.0.1:${server.port}/carrier/twilio/media`);
      c.send(twilioMsg.start(call.token));
      for (let chunk = 1; chunk <= 10; chunk++) c.send(twilioMsg.media(chunk));
      c.send(twilioMsg.stop);
      await until(() => call.events.length === 3, 'MEDIA.STOPPED');
      expect(call.events.map((e) => e.type)).toEqual(['MEDIA.STARTED', 'HANGUP.REQUESTED', 'MEDIA.STOPPED']);
      expect(call.events[1]).toMatchObject({ reason: 'provider_not_configured' });
      const metrics = await server.request('GET', '/metrics');
      expect(metrics.text).toMatch(/^switchboard_media_frames_in_total 10$/m);
      expect(metrics.text).toMatch(/^switchboard_media_frames_out_total 0$/m);
      expect(c.messages).toEqual([]);
      c.ws.close(1000);
      await c.closed;
    } finally {
      await server.close();
    }
  });
});

describe('media sockets that present no token in time', () => {
  // Lowered from the 5 s default so the suite stays quick; the cap is lowered too.
  const REAP_MS = 500;
  const CAP = 20;
  const MEDIA_A = '/carrier/twilio/media';
  let server: TestServer;
  let wsBase: string;
  const bindings = new TestBindings();
  const metrics = async (): Promise<string> => (await server.request('GET', '/metrics')).text;

  beforeAll(async () => {
    server = await startTestServer({ MEDIA_ENGINE: 'echo' }, { mediaBindings: bindings, clock: () => NOW, media: { unclaimedTimeoutMs: REAP_MS, maxUnclaimed: CAP } });
    wsBase = `ws://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.close();
  });

  it('a socket that never claims a call is closed with 1008 within the bound, even one sending `connected` every 50 ms; a claimed one beside it streams on', async () => {
    const rejected = gaugeOf(await metrics(), 'switchboard_media_rejected_total');
    const t0 = performance.now();
    const silent = await connect(`${wsBase}${MEDIA_A}`);
    const chatty = await connect(`${wsBase}${MEDIA_A}`);
    const noToken = await connect(`${wsBase}/carrier/telnyx/media`);
    const call = bindings.issue('twilio');
    const claimed = await connect(`${wsBase}${MEDIA_A}`);
    claimed.send(twilioMsg.connected);
    claimed.send(twilioMsg.start(call.token));
    // Never idle (so no ping is needed) and never over the before-start message limit.
    const keepBusy = setInterval(() => chatty.send(twilioMsg.connected), 50);
    try {
      const closes = await within(
        Promise.all([silent, chatty, noToken].map((c) => c.closed.then((x) => ({ ...x, afterMs: performance.now() - t0 })))),
        REAP_MS + 3000,
        'unclaimed sockets closed',
      );
      for (const c of closes) {
        expect(c).toMatchObject({ code: 1008, reason: 'no media token within 500 ms' });
        expect(c.afterMs).toBeGreaterThanOrEqual(REAP_MS);
        expect(c.afterMs).toBeLessThan(REAP_MS + 1500);
      }
    } finally {
      clearInterval(keepBusy);
    }
    // The claimed stream is now past the bound and unaffected.
    await new Promise((r) => setTimeout(r, REAP_MS));
    claimed.send(twilioMsg.media(1));
    await claimed.waitForMessages(1);
    expect(claimed.messages).toEqual([{ event: 'media', streamSid: STREAM_SID, media: { payload: framePayload(1) } }]);
    expect(call.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);
    const text = await metrics();
    expect(gaugeOf(text, 'switchboard_media_rejected_total')).toBe(rejected + 3);
    expect(gaugeOf(text, 'switchboard_media_unclaimed')).toBe(0);
    expect(gaugeOf(text, 'switchboard_media_streams')).toBe(1);
    claimed.ws.close(1000);
    await claimed.closed;
  });

  it('streams that claim their call within the bound, right away or late, are never reaped', async () => {
    const a = bindings.issue('twilio');
    const b = bindings.issue('telnyx');
    const early = await connect(`${wsBase}${MEDIA_A}`);
    early.send(twilioMsg.start(a.token));
    const late = await connect(`${wsBase}/carrier/telnyx/media?token=${b.token}`);
    await new Promise((r) => setTimeout(r, REAP_MS / 5));
    late.send(telnyxMsg.start);
    await new Promise((r) => setTimeout(r, 2 * REAP_MS));
    early.send(twilioMsg.media(1));
    late.send(telnyxMsg.media(1));
    await early.waitForMessages(1);
    await late.waitForMessages(1);
    expect(early.ws.readyState).toBe(WebSocket.OPEN);
    expect(late.ws.readyState).toBe(WebSocket.OPEN);
    expect(a.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);
    expect(b.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);
    early.ws.close(1000);
    late.ws.close(1000);
    await Promise.all([early.closed, late.closed]);
  });

  it('at most the cap wait unclaimed: more upgrades get 503 with Retry-After until those are reaped; an expected carrier-B token is let in even then', async () => {
    const refusedBefore = gaugeOf(await metrics(), 'switchboard_media_refused_total');
    const waiting = await Promise.all(Array.from({ length: CAP }, () => connect(`${wsBase}${MEDIA_A}`)));
    const extra = await within(Promise.all(Array.from({ length: 5 }, () => attempt(`${wsBase}${MEDIA_A}`))), 3000, 'upgrades over the cap');
    for (const r of extra) {
      if (!isRefusal(r)) r.ws.terminate();
      expect(r).toMatchObject({ status: 503, headers: { 'retry-after': '1' }, body: 'too many media sockets waiting for a token, retry later' });
    }
    expect(gaugeOf(await metrics(), 'switchboard_media_unclaimed')).toBe(CAP);

    const call = bindings.issue('telnyx');
    const expected = await attempt(`${wsBase}/carrier/telnyx/media?token=${call.token}`);
    if (isRefusal(expected)) throw new Error(`expected carrier-B stream refused: ${expected.status}`);
    expected.send(telnyxMsg.start);
    expected.send(telnyxMsg.media(1));
    await expected.waitForMessages(1);
    expect(call.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);

    const closes = await within(Promise.all(waiting.map((c) => c.closed)), REAP_MS + 3000, 'waiting sockets reaped');
    expect(new Set(closes.map((c) => c.code))).toEqual(new Set([1008]));
    const again = await attempt(`${wsBase}${MEDIA_A}`);
    if (isRefusal(again)) throw new Error(`refused after the reap: ${again.status}`);
    const text = await metrics();
    expect(gaugeOf(text, 'switchboard_media_refused_total')).toBe(refusedBefore + 5);
    expect(gaugeOf(text, 'switchboard_media_unclaimed')).toBe(1);
    again.ws.close(1000);
    expected.ws.close(1000);
    await Promise.all([again.closed, expected.closed]);
  });
});

describe('media sockets against the call supervisor', () => {
  it('carrier B: a URL token that no call holds is refused at the upgrade with 403 and counted as rejected', async () => {
    const server = await startTestServer();
    try {
      const r = await attempt(`ws://127.0.0.1:${server.port}/carrier/telnyx/media?token=mt_${'x'.repeat(40)}`);
      if (!isRefusal(r)) r.ws.terminate();
      expect(r).toMatchObject({ status: 403, body: 'unknown or used media token' });
      const metrics = await server.request('GET', '/metrics');
      expect(gaugeOf(metrics.text, 'switchboard_media_rejected_total')).toBe(1);
    } finally {
      await server.close();
    }
  });
});

describe('the probe of issue 11: 2,000 silent media sockets', () => {
  it('each is refused with 503 or closed with 1008 within the bound + slack of its open; no more than the cap are open at once', async () => {
    const N = 2000;
    const CAP = 500; // the default
    const REAP_MS = 2000;
    // How late past its bound a socket may close. The server sweeps every 400 ms (a fifth
    // of the bound) and then closes up to the cap's 500 sockets at once, in this process
    // (the server runs in the test's process), while the client side here reads their
    // close frames. That is socket work of the kind this test times itself: the slowest
    // batch of 200 upgrades to be answered below. Closing 500 is 2.5 batches' worth; five
    // batches' worth (twice that) plus the sweep period is the slack, and never less than
    // 1.5 s, the slack an idle machine needs (batches there take well under 100 ms; on a
    // loaded 2-core machine a batch was seen to take 700 ms, and a whole suite beside
    // another one made the slowest socket live 6.3 s).
    const SWEEP_MS = 400;
    const MIN_SLACK_MS = 1500;
    const server = await startTestServer({}, { mediaBindings: new TestBindings(), media: { unclaimedTimeoutMs: REAP_MS } });
    const url = `ws://127.0.0.1:${server.port}/carrier/twilio/media`;
    let open = 0;
    let peak = 0;
    // How many the server holds unclaimed, sampled from its gauge while the probe runs. The
    // client's own count (`peak`) is not the server's: on a loaded machine this process can
    // read the upgrades the server admitted after a sweep before the close frames of the
    // sockets that sweep closed, and once counted 700 open here against the server's 500.
    let serverPeak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const res = await server.request('GET', '/metrics');
        serverPeak = Math.max(serverPeak, gaugeOf(res.text, 'switchboard_media_unclaimed'));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const stopSampling = async (): Promise<void> => {
      sampling = false;
      await sampler;
    };
    type Outcome = { refused: number } | { openedAt: number; closedAt: number; code: number };
    /** When each upgrade was answered (opened or refused), for the batches' handshake times. */
    const answered: Promise<number>[] = [];
    const probe = (): Promise<Outcome> => {
      let answer: (at: number) => void = () => {};
      answered.push(new Promise<number>((r) => (answer = r)));
      return new Promise((resolve, reject) => {
        const ws = new WebSocket(url, { perMessageDeflate: false });
        let openedAt = 0;
        ws.once('unexpected-response', (req, res) => {
          answer(performance.now());
          req.destroy();
          resolve({ refused: res.statusCode ?? 0 });
        });
        ws.once('open', () => {
          openedAt = performance.now();
          answer(openedAt);
          peak = Math.max(peak, ++open);
        });
        ws.once('close', (code) => {
          open--;
          answer(performance.now()); // no-op after an answer; ends the wait for one that never came
          resolve({ openedAt, closedAt: performance.now(), code });
        });
        ws.once('error', (e) => {
          answer(performance.now());
          reject(e);
        });
      });
    };
    try {
      const t0 = performance.now();
      const outcomes: Promise<Outcome>[] = [];
      const batchMs: Promise<number>[] = [];
      // 200 handshakes in flight at a time: the listen backlog, not the server, would refuse more.
      for (let i = 0; i < N; i += 200) {
        const start = performance.now();
        const batch = Array.from({ length: 200 }, probe);
        outcomes.push(...batch);
        batchMs.push(Promise.all(answered.slice(-200)).then((at) => Math.max(...at) - start));
        await Promise.race([Promise.all(batch), new Promise((r) => setTimeout(r, 100))]);
      }
      const all = await within(Promise.all(outcomes), 30_000, '2,000 probes settled');
      const tEnd = performance.now();
      await stopSampling();
      const handshakes = await Promise.all(batchMs);
      const refused = all.filter((o): o is { refused: number } => 'refused' in o);
      const reaped = all.filter((o): o is { openedAt: number; closedAt: number; code: number } => 'code' in o);
      const life = reaped.map((o) => o.closedAt - o.openedAt).sort((x, y) => x - y);
      const slackMs = Math.max(MIN_SLACK_MS, SWEEP_MS + 5 * Math.max(...handshakes));
      console.log(
        `2,000 silent media sockets (reap bound ${REAP_MS} ms, cap ${CAP}): ${reaped.length} admitted and closed with 1008, ${refused.length} refused; ` +
          `open→close min ${life[0]?.toFixed(0)} ms, max ${life.at(-1)?.toFixed(0)} ms (allowed: under ${(REAP_MS + slackMs).toFixed(0)} ms); peak unclaimed at the server ${serverPeak} (seen open at once here ${peak}); ` +
          `all closed ${(tEnd - t0).toFixed(0)} ms after the first upgrade; batches of 200 upgrades answered in ${handshakes.map((h) => h.toFixed(0)).join(', ')} ms`,
      );
      expect(refused.length + reaped.length).toBe(N);
      expect(new Set(refused.map((o) => o.refused))).toEqual(new Set([503]));
      expect(new Set(reaped.map((o) => o.code))).toEqual(new Set([1008]));
      expect(reaped.length).toBeGreaterThanOrEqual(CAP);
      expect(life.at(-1)!).toBeLessThan(REAP_MS + slackMs);
      expect(serverPeak).toBeLessThanOrEqual(CAP);
    } finally {
      await stopSampling().catch(() => {});
      await server.close();
    }
  }, 60_000);
});
