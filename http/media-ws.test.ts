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
}

interface Client {
  ws: WebSocket;
  messages: Record<string, any>[];
  closed: Promise<{ code: number; reason: string }>;
  send(msg: unknown): void;
  waitForMessages(n: number): Promise<void>;
}

async function connect(url: string): Promise<Client> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
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

  it('carrier B: an unknown or missing URL token is closed with 1008 and echoes nothing', async () => {
    for (const url of [`${wsBase}/carrier/telnyx/media?token=tok_never_issued`, `${wsBase}/carrier/telnyx/media`]) {
      const c = await connect(url);
      c.send(telnyxMsg.connected);
      c.send(telnyxMsg.start);
      c.send(telnyxMsg.media(1));
      expect(await c.closed).toMatchObject({ code: 1008 });
      expect(c.messages).toEqual([]);
    }
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
      await server.stop();
      expect(call.events).toEqual([
        { type: 'MEDIA.STARTED', at: NOW },
        { type: 'MEDIA.STOPPED', at: NOW },
      ]);
      expect(await c.closed).toEqual({ code: 1001, reason: 'server shutting down' });
    } finally {
      await server.close();
    }
  });

  it('without MEDIA_ENGINE the default engine listens and sends nothing back', async () => {
    const bindings = new TestBindings();
    const server = await startTestServer({}, { mediaBindings: bindings });
    try {
      const call = bindings.issue('twilio');
      const c = await connect(`ws://127.0.0.1:${server.port}/carrier/twilio/media`);
      c.send(twilioMsg.start(call.token));
      for (let chunk = 1; chunk <= 10; chunk++) c.send(twilioMsg.media(chunk));
      c.send(twilioMsg.stop);
      await until(() => call.events.length === 2, 'MEDIA.STOPPED');
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
