// The media session against both carriers' wire messages (carriers.md §4, §6), with a
// recording transport, a recording engine and a fixed clock: which events reach the
// call, what reaches the engine, what goes back on the wire, and backpressure.
import { describe, expect, it } from 'vitest';
import type { CallEvent } from '../../machines/call-events.ts';
import type { ConversationEngine, EngineCall, EngineFactory, MediaOutput } from '../engine/engine.ts';
import type { MediaBinding, MediaBindings, MediaProvider } from './bindings.ts';
import { CLAIM_RETRY_MS, createMediaSession, DEFAULT_MAX_BUFFERED_BYTES, MAX_MESSAGES_BEFORE_START, type MediaCounters, type MediaSession } from './session.ts';

const NOW = 1_750_000_000_000;
const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
const frameBytes = (n: number): Uint8Array => new Uint8Array(160).fill(n & 0xff);

// Carrier A messages, exactly as carriers.md §4 shows them.
const twilio = {
  connected: () => JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }),
  start: (params: Record<string, string>, streamSid = 'MZ00000000000000000000000000000001') =>
    JSON.stringify({
      event: 'start',
      sequenceNumber: '1',
      streamSid,
      start: {
        accountSid: 'AC00000000000000000000000000000001',
        streamSid,
        callSid: 'CA00000000000000000000000000000001',
        tracks: ['inbound'],
        customParameters: params,
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    }),
  media: (chunk: number, payload: Uint8Array) =>
    JSON.stringify({
      event: 'media',
      sequenceNumber: String(chunk + 1),
      streamSid: 'MZ00000000000000000000000000000001',
      media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload: b64(payload) },
    }),
  dtmf: (digit: string) =>
    JSON.stringify({ event: 'dtmf', sequenceNumber: '5', streamSid: 'MZ00000000000000000000000000000001', dtmf: { track: 'inbound_track', digit } }),
  mark: (name: string) => JSON.stringify({ event: 'mark', sequenceNumber: '4', streamSid: 'MZ00000000000000000000000000000001', mark: { name } }),
  stop: () =>
    JSON.stringify({
      event: 'stop',
      sequenceNumber: '9',
      streamSid: 'MZ00000000000000000000000000000001',
      stop: { accountSid: 'AC00000000000000000000000000000001', callSid: 'CA00000000000000000000000000000001' },
    }),
};

// Carrier B messages, exactly as carriers.md §6 shows them.
const telnyx = {
  connected: () => JSON.stringify({ event: 'connected', version: '1.0.0' }),
  start: () =>
    JSON.stringify({
      event: 'start',
      sequence_number: '1',
      stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
      start: {
        user_id: 'u1',
        call_control_id: 'v3:abc',
        call_session_id: 's1',
        from: '+14155550100',
        to: '+14155550101',
        tags: [],
        client_state: 'Y2FsbF8x',
        media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
      },
    }),
  media: (chunk: number, payload: Uint8Array) =>
    JSON.stringify({
      event: 'media',
      sequence_number: String(chunk + 1),
      stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
      media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload: b64(payload) },
    }),
  dtmf: (digit: string) =>
    JSON.stringify({ event: 'dtmf', sequence_number: '5', stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC', occurred_at: '2025-01-01T00:00:00Z', dtmf: { digit } }),
  error: () =>
    JSON.stringify({ event: 'error', stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC', payload: { code: 100003, title: 'malformed_frame', detail: 'bad' } }),
  stop: () =>
    JSON.stringify({ event: 'stop', sequence_number: '9', stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC', stop: { user_id: 'u1', call_control_id: 'v3:abc' } }),
};

interface RecordingEngine {
  call: EngineCall;
  output: MediaOutput;
  audio: { bytes: number[]; timestampMs: number }[];
  dtmf: string[];
  marks: string[];
  closed: number;
}

function harness(provider: MediaProvider, opts: { token?: string; failEngine?: boolean } = {}) {
  const now = NOW;
  const sent: string[] = [];
  const transport = {
    buffered: 0,
    accept: true,
    closes: [] as { code: number; reason: string }[],
    send(text: string) {
      if (!transport.accept) return false;
      sent.push(text);
      return true;
    },
    bufferedAmount: () => transport.buffered,
    close(code: number, reason: string) {
      transport.closes.push({ code, reason });
      session.close(); // what the socket's close handler does
    },
  };
  const events: CallEvent[] = [];
  const claims: { provider: MediaProvider; token: string; at: number }[] = [];
  const tokens = new Map<string, MediaBinding>([
    ['tok-1', { callId: 'call_1', accountId: 'acct_1', direction: 'inbound', agentId: 'agent_1', deliver: (e) => events.push(e) }],
  ]);
  const bindings: MediaBindings = {
    claim(p, token, at) {
      claims.push({ provider: p, token, at });
      const b = p === provider ? tokens.get(token) : undefined;
      tokens.delete(token);
      return b ?? null;
    },
  };
  const engines: RecordingEngine[] = [];
  const engine: EngineFactory = (output, call): ConversationEngine => {
    if (opts.failEngine) throw new Error('engine failed to start');
    const rec: RecordingEngine = { call, output, audio: [], dtmf: [], marks: [], closed: 0 };
    engines.push(rec);
    return {
      onAudio: (mulaw, timestampMs) => rec.audio.push({ bytes: [...mulaw], timestampMs }),
      onDtmf: (d) => rec.dtmf.push(d),
      onMark: (m) => rec.marks.push(m),
      close: () => rec.closed++,
    };
  };
  const totals: MediaCounters = { framesIn: 0, framesOut: 0, dropped: 0 };
  const session: MediaSession = createMediaSession({ provider, transport, bindings, engine, clock: () => now, totals, token: opts.token });
  return { session, sent, transport, events, claims, engines, totals };
}

describe('carrier A (twilio) media session', () => {
  it('start claims the call and reports MEDIA.STARTED; audio reaches the engine; dtmf reports DTMF; stop reports MEDIA.STOPPED', () => {
    const h = harness('twilio');
    h.session.handle(twilio.connected());
    expect(h.events).toEqual([]);
    h.session.handle(twilio.start({ token: 'tok-1', other: 'x' }));
    expect(h.claims).toEqual([{ provider: 'twilio', token: 'tok-1', at: NOW }]);
    expect(h.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);
    expect(h.engines).toHaveLength(1);
    expect(h.engines[0]!.call).toMatchObject({ callId: 'call_1', accountId: 'acct_1', direction: 'inbound', agentId: 'agent_1' });
    expect(h.session.state).toBe('streaming');

    for (let chunk = 1; chunk <= 3; chunk++) h.session.handle(twilio.media(chunk, frameBytes(chunk)));
    const eng = h.engines[0]!;
    expect(eng.audio.map((a) => a.timestampMs)).toEqual([20, 40, 60]);
    expect(eng.audio.map((a) => a.bytes)).toEqual([1, 2, 3].map((n) => [...frameBytes(n)]));

    h.session.handle(twilio.dtmf('7'));
    expect(h.events.at(-1)).toEqual({ type: 'DTMF', at: NOW, digit: '7' });
    expect(eng.dtmf).toEqual(['7']);

    h.session.handle(twilio.mark('utt-1'));
    expect(eng.marks).toEqual(['utt-1']);

    h.session.handle(twilio.stop());
    expect(h.events.at(-1)).toEqual({ type: 'MEDIA.STOPPED', at: NOW });
    expect(eng.closed).toBe(1);
    expect(h.session.state).toBe('stopped');

    // After stop: no more audio to the engine, the output is dead, and the close that follows reports nothing new.
    h.session.handle(twilio.media(4, frameBytes(4)));
    eng.output.play(frameBytes(9));
    eng.output.mark('late');
    h.session.close();
    expect(eng.audio).toHaveLength(3);
    expect(h.sent).toEqual([]);
    expect(h.events.map((e) => e.type)).toEqual(['MEDIA.STARTED', 'DTMF', 'MEDIA.STOPPED']);
    expect(eng.closed).toBe(1);
    expect(h.session.stats()).toMatchObject({ framesIn: 3, framesOut: 0, dropped: 0 });
    expect(h.totals.framesIn).toBe(3);
  });

  it("sends audio, marks and clears in carrier A's outbound format, with the streamSid", () => {
    const h = harness('twilio');
    h.session.handle(twilio.start({ token: 'tok-1' }, 'MZ0000000000000000000000000000beef'));
    const out = h.engines[0]!.output;
    out.play(frameBytes(5));
    out.mark('utt-7');
    out.clear();
    expect(h.sent.map((t) => JSON.parse(t))).toEqual([
      { event: 'media', streamSid: 'MZ0000000000000000000000000000beef', media: { payload: b64(frameBytes(5)) } },
      { event: 'mark', streamSid: 'MZ0000000000000000000000000000beef', mark: { name: 'utt-7' } },
      { event: 'clear', streamSid: 'MZ0000000000000000000000000000beef' },
    ]);
    expect(h.session.stats().framesOut).toBe(1);
    expect(h.totals.framesOut).toBe(1);
  });

  it('a socket closing without stop reports MEDIA.STOPPED once and closes the engine once', () => {
    const h = harness('twilio');
    h.session.handle(twilio.start({ token: 'tok-1' }));
    h.session.close();
    h.session.close();
    expect(h.events).toEqual([
      { type: 'MEDIA.STARTED', at: NOW },
      { type: 'MEDIA.STOPPED', at: NOW },
    ]);
    expect(h.engines[0]!.closed).toBe(1);
    expect(h.session.state).toBe('closed');
  });

  it('closes an unknown token with 1008 before any audio is handled, and reports nothing', () => {
    const h = harness('twilio');
    h.session.handle(twilio.connected());
    h.session.handle(twilio.start({ token: 'nope' }));
    expect(h.transport.closes).toEqual([{ code: 1008, reason: 'unknown or used media token' }]);
    h.session.handle(twilio.media(1, frameBytes(1)));
    expect(h.engines).toEqual([]);
    expect(h.events).toEqual([]);
    expect(h.session.state).toBe('closed');
    expect(h.session.binding).toBeNull();
  });

  it('closes a start without a token parameter with 1008, without asking for a claim', () => {
    const h = harness('twilio');
    h.session.handle(twilio.start({ callId: 'abc' }));
    expect(h.claims).toEqual([]);
    expect(h.transport.closes.map((c) => c.code)).toEqual([1008]);
    expect(h.events).toEqual([]);
  });

  it('audio, dtmf and junk before start are ignored; past the limit the socket is closed with 1008', () => {
    const h = harness('twilio');
    h.session.handle(twilio.media(1, frameBytes(1)));
    h.session.handle(twilio.dtmf('1'));
    h.session.handle('not json');
    expect(h.transport.closes).toEqual([]);
    for (let i = 0; i < MAX_MESSAGES_BEFORE_START; i++) h.session.handle(twilio.media(i + 2, frameBytes(i)));
    expect(h.transport.closes).toEqual([{ code: 1008, reason: 'start expected' }]);
    expect(h.claims).toEqual([]);
    expect(h.events).toEqual([]);
    expect(h.totals.framesIn).toBe(0);
  });

  it('counts malformed messages and a second start without acting on them', () => {
    const h = harness('twilio');
    h.session.handle(twilio.start({ token: 'tok-1' }));
    h.session.handle('{"event":"media","sequenceNumber":"3","media":{"chunk":"1","timestamp":"20","payload":"%%%"}}');
    h.session.handle('[1,2]');
    h.session.handle(twilio.start({ token: 'tok-1' }));
    expect(h.session.stats().invalid).toBe(3);
    expect(h.engines[0]!.audio).toEqual([]);
    expect(h.claims).toHaveLength(1);
    expect(h.session.state).toBe('streaming');
  });

  it('an engine that fails to start still leaves the call with MEDIA.STARTED then MEDIA.STOPPED', () => {
    const h = harness('twilio', { failEngine: true });
    expect(() => h.session.handle(twilio.start({ token: 'tok-1' }))).toThrow('engine failed to start');
    h.session.handle(twilio.media(1, frameBytes(1)));
    h.session.close();
    expect(h.events.map((e) => e.type)).toEqual(['MEDIA.STARTED', 'MEDIA.STOPPED']);
  });
});

describe('backpressure', () => {
  it('drops outbound audio while the socket is backed up, never marks or clears, and counts the drops', () => {
    const h = harness('twilio');
    h.session.handle(twilio.start({ token: 'tok-1' }));
    const out = h.engines[0]!.output;
    out.play(frameBytes(1));
    h.transport.buffered = DEFAULT_MAX_BUFFERED_BYTES + 1;
    out.play(frameBytes(2));
    out.play(frameBytes(3));
    out.mark('m1');
    out.clear();
    h.transport.buffered = DEFAULT_MAX_BUFFERED_BYTES; // at the threshold: sent
    out.play(frameBytes(4));
    const events = h.sent.map((t) => JSON.parse(t) as { event: string; media?: { payload: string } });
    expect(events.map((e) => e.event)).toEqual(['media', 'mark', 'clear', 'media']);
    expect(events.filter((e) => e.event === 'media').map((e) => e.media!.payload)).toEqual([b64(frameBytes(1)), b64(frameBytes(4))]);
    expect(h.session.stats()).toMatchObject({ framesOut: 2, dropped: 2 });
    expect(h.totals).toMatchObject({ framesOut: 2, dropped: 2 });
    expect(h.transport.closes).toEqual([]);
  });

  it('audio the socket refuses is counted as dropped; a mark it refuses ends the stream (1011) and the call hears MEDIA.STOPPED', () => {
    const h = harness('twilio');
    h.session.handle(twilio.start({ token: 'tok-1' }));
    const out = h.engines[0]!.output;
    h.transport.accept = false;
    out.play(frameBytes(1));
    expect(h.session.stats().dropped).toBe(1);
    expect(h.transport.closes).toEqual([]);
    out.mark('m1');
    expect(h.transport.closes).toEqual([{ code: 1011, reason: 'media socket backed up' }]);
    expect(h.events.map((e) => e.type)).toEqual(['MEDIA.STARTED', 'MEDIA.STOPPED']);
  });
});

describe('carrier B (telnyx) media session', () => {
  it('claims with the URL token, reorders audio by chunk, and speaks the outbound format without stream_id', () => {
    const h = harness('telnyx', { token: 'tok-1' });
    h.session.handle(telnyx.connected());
    h.session.handle(telnyx.start());
    expect(h.claims).toEqual([{ provider: 'telnyx', token: 'tok-1', at: NOW }]);
    expect(h.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);
    for (const chunk of [1, 3, 2, 4, 6, 5, 2]) h.session.handle(telnyx.media(chunk, frameBytes(chunk)));
    const eng = h.engines[0]!;
    expect(eng.audio.map((a) => a.bytes[0])).toEqual([1, 2, 3, 4, 5, 6]);
    expect(eng.audio.map((a) => a.timestampMs)).toEqual([20, 40, 60, 80, 100, 120]);
    expect(h.session.stats()).toMatchObject({ framesIn: 7, late: 1 });

    eng.output.play(frameBytes(8));
    eng.output.mark('m1');
    eng.output.clear();
    expect(h.sent.map((t) => JSON.parse(t))).toEqual([{ event: 'media', media: { payload: b64(frameBytes(8)) } }, { event: 'mark', mark: { name: 'm1' } }, { event: 'clear' }]);

    h.session.handle(telnyx.dtmf('#'));
    expect(h.events.at(-1)).toEqual({ type: 'DTMF', at: NOW, digit: '#' });
  });

  it('stop hands the audio still waiting in the reorder buffer to the engine before it closes', () => {
    const h = harness('telnyx', { token: 'tok-1' });
    h.session.handle(telnyx.start());
    h.session.handle(telnyx.media(1, frameBytes(1)));
    h.session.handle(telnyx.media(3, frameBytes(3))); // 2 never arrives
    const eng = h.engines[0]!;
    expect(eng.audio.map((a) => a.bytes[0])).toEqual([1]);
    h.session.handle(telnyx.stop());
    expect(eng.audio.map((a) => a.bytes[0])).toEqual([1, 3]);
    expect(eng.closed).toBe(1);
    expect(h.events.map((e) => e.type)).toEqual(['MEDIA.STARTED', 'MEDIA.STOPPED']);
  });

  it('without a URL token, falls back to a `token` custom parameter (how carrier B echoes them is unconfirmed), else closes with 1008', () => {
    const none = harness('telnyx');
    none.session.handle(telnyx.start());
    expect(none.claims).toEqual([]);
    expect(none.transport.closes.map((c) => c.code)).toEqual([1008]);

    const param = harness('telnyx');
    const start = JSON.parse(telnyx.start());
    start.start.custom_parameters = [{ name: 'token', value: 'tok-1' }];
    param.session.handle(JSON.stringify(start));
    expect(param.claims).toEqual([{ provider: 'telnyx', token: 'tok-1', at: NOW }]);
    expect(param.events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);
  });

  it('passes carrier error messages to the owner without ending the stream', () => {
    const errors: unknown[] = [];
    const events: CallEvent[] = [];
    const session = createMediaSession({
      provider: 'telnyx',
      token: 't',
      bindings: { claim: () => ({ callId: 'call_2', accountId: 'a', direction: 'outbound', agentId: null, deliver: (e) => events.push(e) }) },
      engine: () => ({ onAudio() {}, onDtmf() {}, close() {} }),
      clock: () => NOW,
      transport: { send: () => true, bufferedAmount: () => 0, close: () => session.close() },
      onCarrierError: (f) => errors.push(f),
    });
    session.handle(telnyx.start());
    session.handle(telnyx.error());
    expect(errors).toEqual([{ type: 'error', code: 100003, title: 'malformed_frame', detail: 'bad' }]);
    expect(session.state).toBe('streaming');
    expect(events).toEqual([{ type: 'MEDIA.STARTED', at: NOW }]);
  });
});

describe('a claim the database could not record (issue 7, found by the crash test)', () => {
  function flaky(failures: number) {
    let now = NOW;
    const events: CallEvent[] = [];
    let attempts = 0;
    const bindings: MediaBindings = {
      claim() {
        attempts++;
        if (attempts <= failures) throw new Error('SQLITE_BUSY: database is locked');
        return { callId: 'call_1', accountId: 'acct_1', direction: 'inbound', agentId: 'agent_1', deliver: (e) => events.push(e) };
      },
    };
    const closes: number[] = [];
    const session = createMediaSession({
      provider: 'twilio',
      transport: { send: () => true, bufferedAmount: () => 0, close: (code) => closes.push(code) },
      bindings,
      engine: () => ({ onAudio() {}, onDtmf() {}, close() {} }),
      clock: () => now,
    });
    return { session, events, closes, attempts: () => attempts, advance: (ms: number) => (now += ms) };
  }

  it('is tried again on the carrier’s next messages, and the stream goes on', () => {
    const f = flaky(3);
    f.session.handle(twilio.connected());
    f.session.handle(twilio.start({ token: 'tok-1' }));
    for (let i = 0; i < 5; i++) {
      f.advance(20);
      f.session.handle(twilio.media(i, frameBytes(i)));
    }
    expect(f.attempts()).toBe(4);
    expect(f.session.state).toBe('streaming');
    expect(f.events.map((e) => e.type)).toEqual(['MEDIA.STARTED']);
    expect(f.closes).toEqual([]);
  });

  it('gives the stream up (an error for the socket’s owner) once it kept failing past the retry window', () => {
    const f = flaky(Number.POSITIVE_INFINITY);
    f.session.handle(twilio.start({ token: 'tok-1' }));
    f.advance(CLAIM_RETRY_MS + 1);
    expect(() => f.session.handle(twilio.media(0, frameBytes(0)))).toThrow(/SQLITE_BUSY/);
  });
});
