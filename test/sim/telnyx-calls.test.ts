// The carrier B simulator's calls: the media stream client (what it sends, how it
// plays back what it receives) and the Call Control side (envelopes, stream failures,
// command errors), against a uWebSockets.js stand-in for the service.

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { telnyxCodec } from '../../voice/media/telnyx-codec.ts';
import { verifyTelnyx } from '../../voice/carriers/telnyx-signature.ts';
import { connectTelnyxMedia, FRAME_BYTES, generateMulawTone, type TelnyxMediaClient } from './telnyx-media-client.ts';
import { startTelnyxReceiver, type MediaConnection, type TelnyxReceiver } from './telnyx-receiver.ts';
import { startTelnyxSim, type TelnyxSim } from './telnyx-sim.ts';

let receiver: TelnyxReceiver;
let sim: TelnyxSim;

beforeAll(async () => {
  receiver = await startTelnyxReceiver();
  sim = await startTelnyxSim();
});
afterAll(async () => {
  await sim.close();
  receiver.close();
});

const token = () => randomBytes(8).toString('hex');

async function connect(opts: { audio?: Uint8Array; encoding?: 'PCMU' | 'audio/x-mulaw' } = {}): Promise<{ client: TelnyxMediaClient; conn: MediaConnection }> {
  const t = token();
  const client = connectTelnyxMedia({
    url: `${receiver.baseUrl.replace('http', 'ws')}/carrier/telnyx/media?token=${t}`,
    callControlId: 'v3:test-call',
    callSessionId: 'session-1',
    from: '+15550001111',
    to: '+15550002222',
    clientState: 'Y2FsbF8x',
    ...opts,
  });
  await client.opened;
  const conn = await receiver.until(() => receiver.media.find((m) => m.token === t));
  return { client, conn };
}

const json = (text: string) => JSON.parse(text) as Record<string, any>;
const sendAudio = (conn: MediaConnection, ms: number) =>
  conn.send(JSON.stringify({ event: 'media', media: { payload: Buffer.alloc(ms * 8, 0xff).toString('base64') } }));

describe('media client: what the carrier sends', () => {
  it('connected, start, then 20 ms μ-law frames of the fixture, numbered as the carrier does', async () => {
    const audio = generateMulawTone(300, 100); // 800 bytes: the loop wraps within 6 frames
    const { client, conn } = await connect({ audio });
    await receiver.until(() => conn.messages.length >= 8);
    await client.stop();

    const [connected, start, ...rest] = conn.messages.map(json);
    expect(connected).toEqual({ event: 'connected', version: '1.0.0' });
    expect(start).toEqual({
      event: 'start',
      sequence_number: '1',
      stream_id: client.streamId,
      start: {
        user_id: expect.any(String),
        call_control_id: 'v3:test-call',
        call_session_id: 'session-1',
        from: '+15550001111',
        to: '+15550002222',
        tags: [],
        client_state: 'Y2FsbF8x',
        media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
      },
    });
    const media = rest.filter((m) => m.event === 'media');
    expect(media.length).toBeGreaterThanOrEqual(6);
    media.forEach((m, i) => {
      expect(m.sequence_number).toBe(String(i + 2));
      expect(m.media.chunk).toBe(String(i + 1));
      expect(m.media.track).toBe('inbound');
      expect(m.stream_id).toBe(client.streamId);
    });
    const stamps = media.map((m) => Number(m.media.timestamp));
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    // The payloads are the fixture, looped, 160 bytes each.
    const bytes = Buffer.concat(media.map((m) => Buffer.from(m.media.payload, 'base64')));
    expect(bytes.length).toBe(media.length * FRAME_BYTES);
    for (let i = 0; i < bytes.length; i++) if (bytes[i] !== audio[i % audio.length]) throw new Error(`byte ${i} differs`);
    // The service's codec reads every message.
    expect(conn.messages.map((m) => telnyxCodec.decode(m).type).filter((t) => t === 'invalid')).toEqual([]);
    expect(json(conn.messages.at(-1)!)).toEqual({ event: 'stop', sequence_number: String(media.length + 2), stream_id: client.streamId, stop: { user_id: start!.start.user_id, call_control_id: 'v3:test-call' } });
    expect(client.framesSent).toBe(media.length);
  });

  it('sends DTMF in sequence with the audio, and nothing while paused', async () => {
    const { client, conn } = await connect();
    await receiver.until(() => conn.messages.length >= 3);
    client.pauseAudio();
    const before = client.framesSent;
    client.sendDtmf('5');
    await new Promise((r) => setTimeout(r, 80));
    expect(client.framesSent).toBe(before);
    client.resumeAudio();
    await receiver.until(() => client.framesSent > before);
    await client.stop();
    const decoded = conn.messages.map((m) => telnyxCodec.decode(m));
    expect(decoded.filter((f) => f.type === 'dtmf')).toEqual([{ type: 'dtmf', digit: '5' }]);
    const seqs = conn.messages.slice(1).map((m) => Number(json(m).sequence_number));
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it('accepts the older audio/x-mulaw encoding name', async () => {
    const { client, conn } = await connect({ encoding: 'audio/x-mulaw' });
    await receiver.until(() => conn.messages.length >= 2);
    await client.stop();
    expect(telnyxCodec.decode(conn.messages[1]!)).toMatchObject({ type: 'start', encoding: 'mulaw' });
  });
});

describe('media client: playback of what the service sends', () => {
  it('records audio, returns a mark once the audio before it has played', async () => {
    const { client, conn } = await connect();
    sendAudio(conn, 200);
    conn.send('{"event":"mark","mark":{"name":"after-200ms"}}');
    await receiver.until(() => client.marks.length === 1);
    const markedAt = performance.now();
    expect(client.returnedMarks).toEqual([]);
    await receiver.until(() => conn.messages.some((m) => json(m).event === 'mark'), 2000);
    expect(performance.now() - markedAt).toBeGreaterThanOrEqual(120);
    expect(client.audio.map((a) => a.length)).toEqual([1600]);
    const mark = conn.messages.map(json).find((m) => m.event === 'mark')!;
    expect(mark).toMatchObject({ event: 'mark', stream_id: client.streamId, mark: { name: 'after-200ms' } });
    expect(telnyxCodec.decode(JSON.stringify(mark))).toEqual({ type: 'mark', name: 'after-200ms' });
    await client.stop();
  });

  it('a mark with nothing queued comes back at once', async () => {
    const { client, conn } = await connect();
    conn.send('{"event":"mark","mark":{"name":"now"}}');
    await receiver.until(() => client.returnedMarks.length === 1, 200);
    expect(client.returnedMarks).toEqual(['now']);
    await client.stop();
  });

  it('clear drops the queue and returns every pending mark at once, in order', async () => {
    const { client, conn } = await connect();
    sendAudio(conn, 2000);
    conn.send('{"event":"mark","mark":{"name":"a"}}');
    sendAudio(conn, 2000);
    conn.send('{"event":"mark","mark":{"name":"b"}}');
    conn.send('{"event":"clear"}');
    await receiver.until(() => client.returnedMarks.length === 2, 500);
    expect(client.returnedMarks).toEqual(['a', 'b']);
    expect(client.clears).toBe(1);
    // After the clear the queue is empty: a new mark returns at once.
    conn.send('{"event":"mark","mark":{"name":"c"}}');
    await receiver.until(() => client.returnedMarks.length === 3, 200);
    await client.stop();
  });

  it('records what it cannot read', async () => {
    const { client, conn } = await connect();
    conn.send('not json');
    conn.send('{"event":"dance"}');
    conn.send('{"event":"media","media":{}}');
    await receiver.until(() => client.invalid.length === 3);
    expect(client.invalid).toEqual(['not json', '{"event":"dance"}', '{"event":"media","media":{}}']);
    await client.stop();
  });

  it('reports who closed the socket', async () => {
    const ours = await connect();
    expect(await ours.client.stop()).toMatchObject({ byServer: false });
    const theirs = await connect();
    theirs.conn.close();
    expect(await theirs.client.closed).toMatchObject({ byServer: true, code: 1000 });
  });

  it('a refused upgrade rejects `opened`', async () => {
    const t = token();
    receiver.refuseTokens.add(t);
    const client = connectTelnyxMedia({
      url: `${receiver.baseUrl.replace('http', 'ws')}/carrier/telnyx/media?token=${t}`,
      callControlId: 'v3:x',
      callSessionId: 's',
      from: '+15550001111',
      to: '+15550002222',
      clientState: null,
    });
    await expect(client.opened).rejects.toThrow(/401/);
  });
});

describe('Call Control in the simulator', () => {
  async function account() {
    const apiKey = `KEY${token()}`;
    sim.addApiKey(apiKey);
    const connectionId = sim.addConnection(apiKey);
    const from = `+1415${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
    sim.addNumber(apiKey, from, { connectionId });
    const events = token();
    const post = (path: string, body: unknown) =>
      fetch(`${sim.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const dialBody = (over: Record<string, unknown> = {}) => ({
      connection_id: connectionId,
      to: '+15557654321',
      from,
      webhook_url: `${receiver.baseUrl}/carrier/telnyx/events/${events}`,
      client_state: Buffer.from('call_abc').toString('base64'),
      ...over,
    });
    return { apiKey, connectionId, from, events, post, dialBody };
  }

  it('delivers v2 envelopes signed with the account key, to the original URL, in order', async () => {
    const acct = await account();
    const res = await acct.post('/v2/calls', acct.dialBody({ stream_url: `${receiver.baseUrl.replace('http', 'ws')}/carrier/telnyx/media?token=t1` }));
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: Record<string, unknown> };
    expect(data).toMatchObject({ record_type: 'call', is_alive: false, call_control_id: expect.stringMatching(/^v3:/) });
    const id = data.call_control_id as string;
    await sim.call(id).media();
    await sim.hangup(id);
    const got = receiver.events.filter((e) => e.token === acct.events);
    const now = Math.floor(Date.now() / 1000);
    for (const e of got) {
      expect(verifyTelnyx(sim.publicKeyOf(acct.apiKey), e.rawBody, e.headers['telnyx-signature-ed25519'], e.headers['telnyx-timestamp'], now)).toBe(true);
    }
    const bodies = got.map((e) => json(e.rawBody));
    expect(bodies.map((b) => b.data.event_type)).toEqual(['call.initiated', 'call.answered', 'streaming.started', 'streaming.stopped', 'call.hangup']);
    for (const b of bodies) {
      expect(b).toMatchObject({
        data: { record_type: 'event', id: expect.stringMatching(/^[0-9a-f-]{36}$/), occurred_at: expect.stringMatching(/Z$/), payload: { call_control_id: id, client_state: acct.dialBody().client_state } },
        meta: { attempt: 1, delivered_to: acct.dialBody().webhook_url },
      });
    }
    expect(bodies[0]!.data.payload).toMatchObject({ direction: 'outgoing', state: 'bridging', from: acct.from, to: '+15557654321' });
    expect(bodies[4]!.data.payload).toMatchObject({ hangup_cause: 'normal_clearing', hangup_source: 'callee', sip_hangup_cause: '200' });
  });

  it('a stream the service refuses is reported as streaming.failed; the call stays up', async () => {
    const acct = await account();
    receiver.refuseTokens.add('refused');
    const res = await acct.post('/v2/calls', acct.dialBody({ stream_url: `${receiver.baseUrl.replace('http', 'ws')}/carrier/telnyx/media?token=refused` }));
    const id = ((await res.json()) as { data: { call_control_id: string } }).data.call_control_id;
    const failed = await sim.call(id).webhook('streaming.failed');
    expect(failed.payload).toMatchObject({ failure_reason: expect.stringMatching(/401/), stream_params: { track: 'inbound_track' } });
    expect(sim.calls.calls.get(id)?.status).toBe('answered');
    await sim.hangup(id);
    expect(sim.calls.calls.get(id)?.webhooks.map((w) => w.eventType)).toEqual(['call.initiated', 'call.answered', 'streaming.started', 'streaming.failed', 'call.hangup']);
  });

  it('the service closing the stream is reported as streaming.stopped while the call goes on', async () => {
    const acct = await account();
    const t = token();
    const res = await acct.post('/v2/calls', acct.dialBody({ stream_url: `${receiver.baseUrl.replace('http', 'ws')}/carrier/telnyx/media?token=${t}` }));
    const id = ((await res.json()) as { data: { call_control_id: string } }).data.call_control_id;
    await sim.call(id).media();
    (await receiver.until(() => receiver.media.find((m) => m.token === t))).close();
    await sim.call(id).webhook('streaming.stopped');
    const status = await fetch(`${sim.baseUrl}/v2/calls/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${acct.apiKey}` } });
    expect(((await status.json()) as { data: { is_alive: boolean } }).data.is_alive).toBe(true);
    await sim.hangup(id);
    expect(sim.calls.calls.get(id)?.webhooks.map((w) => w.eventType).filter((e) => e === 'streaming.stopped')).toHaveLength(1);
  });

  it('refuses malformed dials with the carrier error shape and places nothing', async () => {
    const acct = await account();
    sim.addApiKey('someone-else');
    const foreignConnection = sim.addConnection('someone-else');
    const cases: [Record<string, unknown>, number, string, string][] = [
      [{ to: undefined }, 422, '10004', '/to'],
      [{ connection_id: foreignConnection }, 422, '10017', '/connection_id'],
      [{ to: '5551234' }, 422, '10015', '/to'],
      [{ from: '+15550000000' }, 422, '10015', '/from'],
      [{ client_state: 'not base64!' }, 422, '10015', '/client_state'],
      [{ stream_url: 'https://x.example/media' }, 422, '10015', '/stream_url'],
      [{ stream_bidirectional_mode: 'pcm' }, 422, '10015', '/stream_bidirectional_mode'],
      [{ answering_machine_detection: 'maybe' }, 422, '10015', '/answering_machine_detection'],
      [{ time_limit_secs: 10 }, 422, '10015', '/time_limit_secs'],
    ];
    const before = sim.calls.calls.size;
    for (const [over, status, code, pointer] of cases) {
      const res = await acct.post('/v2/calls', acct.dialBody(over));
      expect(res.status).toBe(status);
      expect(await res.json()).toMatchObject({ errors: [{ code, source: { pointer } }] });
    }
    expect(sim.calls.calls.size).toBe(before);
  });

  it('commands: unknown or foreign calls are 404, ended calls 422 90018, a repeated command_id is a no-op', async () => {
    const acct = await account();
    const other = await account();
    const res = await acct.post('/v2/calls', acct.dialBody());
    const id = ((await res.json()) as { data: { call_control_id: string } }).data.call_control_id;
    await sim.call(id).waitFor('answered');
    expect((await acct.post('/v2/calls/v3:nope/actions/hangup', {})).status).toBe(404);
    expect((await other.post(`/v2/calls/${id}/actions/hangup`, {})).status).toBe(404);
    expect((await acct.post(`/v2/calls/${id}/actions/reject`, { cause: 'USER_BUSY' })).status).toBe(422);
    expect((await acct.post(`/v2/calls/${id}/actions/hangup`, { command_id: 'h1' })).status).toBe(200);
    expect((await acct.post(`/v2/calls/${id}/actions/hangup`, { command_id: 'h1' })).status).toBe(200);
    const again = await acct.post(`/v2/calls/${id}/actions/hangup`, { command_id: 'h2' });
    expect(again.status).toBe(422);
    expect(await again.json()).toMatchObject({ errors: [{ code: '90018' }] });
    await sim.call(id).waitFor('ended');
    expect(sim.calls.calls.get(id)?.webhooks.filter((w) => w.eventType === 'call.hangup')).toHaveLength(1);
  });

  it('inbound: reject with CALL_REJECTED ends the call rejected; a bad cause is refused', async () => {
    const acct = await account();
    await fetch(`${sim.baseUrl}/v2/call_control_applications/${acct.connectionId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${acct.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ application_name: 'app', webhook_event_url: `${receiver.baseUrl}/carrier/telnyx/events/${acct.events}`, webhook_api_version: '2' }),
    });
    const handle = await sim.placeInboundCall({ from: '+15551112222', to: acct.from, apiKey: acct.apiKey });
    expect(handle.call.webhooks[0]?.payload).toMatchObject({ direction: 'incoming', state: 'parked', client_state: null });
    const bad = await acct.post(`/v2/calls/${handle.id}/actions/reject`, { cause: 'NOPE' });
    expect(await bad.json()).toMatchObject({ errors: [{ code: '10015', source: { pointer: '/cause' } }] });
    expect((await acct.post(`/v2/calls/${handle.id}/actions/reject`, { cause: 'CALL_REJECTED' })).status).toBe(200);
    await handle.waitFor('ended');
    expect(handle.call.webhooks.at(-1)?.payload).toMatchObject({ hangup_cause: 'call_rejected', hangup_source: 'callee', sip_hangup_cause: '603' });
  });

  it('inbound calls need the number on an application that takes v2 events', async () => {
    const acct = await account();
    await expect(sim.placeInboundCall({ from: '+15551112222', to: acct.from, apiKey: acct.apiKey })).rejects.toThrow(/webhook_api_version 2/);
    await expect(sim.placeInboundCall({ from: '+15551112222', to: '+15559990000', apiKey: acct.apiKey })).rejects.toThrow(/not a number/);
  });
});

describe("the carrier's memory: command_id window, active calls, record retention", () => {
  // Each test its own simulator, so moving its clock touches nothing else.
  async function setup() {
    const x = await startTelnyxSim();
    const apiKey = `KEY${token()}`;
    x.addApiKey(apiKey);
    const connectionId = x.addConnection(apiKey);
    const from = '+14155550123';
    x.addNumber(apiKey, from, { connectionId });
    const events = token();
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${x.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const dial = async (over: Record<string, unknown> = {}) => {
      const res = await call('POST', '/v2/calls', {
        connection_id: connectionId,
        to: '+15557650000',
        from,
        webhook_url: `${receiver.baseUrl}/carrier/telnyx/events/${events}`,
        client_state: Buffer.from('call_mem').toString('base64'),
        ...over,
      });
      return { status: res.status, id: ((await res.json()) as { data?: { call_control_id: string } }).data?.call_control_id };
    };
    return { x, apiKey, connectionId, call, dial };
  }

  it('a dial repeated with its command_id within 60 s is the same call; after 60 s it places a new one', async () => {
    const { x, dial } = await setup();
    try {
      const first = await dial({ command_id: 'dial-1', to: '+15557650001' });
      x.advanceClock(59_000);
      expect((await dial({ command_id: 'dial-1', to: '+15557650001' })).id).toBe(first.id);
      expect(x.placedTo('+15557650001')).toBe(1);
      x.advanceClock(1_000);
      const third = await dial({ command_id: 'dial-1', to: '+15557650001' });
      expect(third.id).not.toBe(first.id);
      expect(x.placedTo('+15557650001')).toBe(2);
      // The window restarts with the call it placed.
      x.advanceClock(30_000);
      expect((await dial({ command_id: 'dial-1', to: '+15557650001' })).id).toBe(third.id);
      expect(x.dialRequests('+15557650001')).toHaveLength(4);
      expect(x.placedCounts()).toEqual(new Map([['+15557650001', 2]]));
    } finally {
      await x.close();
    }
  });

  it('a repeated call command is a no-op within 60 s only', async () => {
    const { x, call, dial } = await setup();
    try {
      x.calls.stepMs = 60_000; // stays ringing
      const { id } = await dial();
      const hangup = (cid: string) => call('POST', `/v2/calls/${id}/actions/hangup`, { command_id: cid });
      expect((await hangup('h')).status).toBe(200);
      expect((await hangup('h')).status).toBe(200);
      x.advanceClock(60_000);
      // Forgotten: carried out again, on a call that is over.
      const late = await hangup('h');
      expect(late.status).toBe(422);
      expect(await late.json()).toMatchObject({ errors: [{ code: '90018' }] });
      expect(x.calls.calls.get(id!)!.commands.map((c) => c.deduplicated)).toEqual([false, true, false]);
    } finally {
      await x.close();
    }
  });

  it('GET /v2/connections/{id}/active_calls lists live calls with their client_state, cursor-paged', async () => {
    const { x, connectionId, call, dial } = await setup();
    try {
      x.calls.stepMs = 60_000;
      const ids: string[] = [];
      for (const n of ['a', 'b', 'c']) ids.push((await dial({ client_state: Buffer.from(`call_${n}`).toString('base64'), to: `+1555765100${ids.length}` })).id!);
      x.advanceClock(5_000);
      const page = async (q: string) => (await (await call('GET', `/v2/connections/${connectionId}/active_calls${q}`)).json()) as {
        data: Record<string, unknown>[];
        meta: { cursors: { after: string | null; before: string | null }; total_items: number; next?: string; previous?: string };
      };
      const all = await page('');
      expect(all.data.map((c) => c.call_control_id)).toEqual(ids);
      expect(all.data[0]).toEqual({
        call_control_id: ids[0],
        call_leg_id: expect.any(String),
        call_session_id: expect.any(String),
        client_state: Buffer.from('call_a').toString('base64'),
        call_duration: 5,
        record_type: 'call',
      });
      expect(all.meta).toMatchObject({ total_items: 3 });
      expect(all.meta.next).toBeUndefined();

      const p1 = await page('?page[limit]=2');
      expect(p1.data.map((c) => c.call_control_id)).toEqual(ids.slice(0, 2));
      expect(p1.meta.next).toBe(`/v2/connections/${connectionId}/active_calls?page[after]=${p1.meta.cursors.after}&page[limit]=2`);
      const p2 = await page(`?page[limit]=2&page[after]=${encodeURIComponent(p1.meta.cursors.after!)}`);
      expect(p2.data.map((c) => c.call_control_id)).toEqual(ids.slice(2));
      expect(p2.meta.next).toBeUndefined();
      expect(p2.meta.previous).toBeDefined();
      expect((await call('GET', `/v2/connections/${connectionId}/active_calls?page[limit]=0`)).status).toBe(422);

      // Ended calls leave the list; other accounts and unknown connections see nothing.
      await x.hangup(ids[1]!);
      expect((await page('')).data.map((c) => c.call_control_id)).toEqual([ids[0], ids[2]]);
      x.addApiKey('intruder');
      const foreign = await fetch(`${x.baseUrl}/v2/connections/${connectionId}/active_calls`, { headers: { authorization: 'Bearer intruder' } });
      expect(foreign.status).toBe(404);
      expect((await call('GET', '/v2/connections/42/active_calls')).status).toBe(404);
    } finally {
      await x.close();
    }
  });

  it("an ended call's record answers with its end_time for 10 minutes, then 404", async () => {
    const { x, call, dial } = await setup();
    try {
      const { id } = await dial();
      await x.call(id!).waitFor('answered');
      x.advanceClock(12_000);
      await x.hangup(id!);
      const sc = x.calls.calls.get(id!)!;
      const body = (await (await call('GET', `/v2/calls/${encodeURIComponent(id!)}`)).json()) as { data: Record<string, unknown> };
      expect(body.data).toMatchObject({ is_alive: false, end_time: new Date(sc.endedAt!).toISOString(), start_time: new Date(sc.startedAt).toISOString() });
      expect(body.data.call_duration).toBeGreaterThanOrEqual(12);
      x.advanceClock(10 * 60_000 - 1_000);
      expect((await call('GET', `/v2/calls/${encodeURIComponent(id!)}`)).status).toBe(200);
      x.advanceClock(1_000);
      expect((await call('GET', `/v2/calls/${encodeURIComponent(id!)}`)).status).toBe(404);
    } finally {
      await x.close();
    }
  });

  it('faults limited to the dial: drop places the call, reset places nothing, look-ups stay healthy; chaos defaults to the dial', async () => {
    const { x, connectionId, call, dial } = await setup();
    try {
      x.calls.stepMs = 60_000;
      x.fail({ drop: true, match: 'dial' });
      x.fail({ reset: true, match: 'dial' });
      await expect(dial({ to: '+15557652000' })).rejects.toThrow(/fetch failed/);
      await expect(dial({ to: '+15557652001' })).rejects.toThrow(/fetch failed/);
      expect([x.placedTo('+15557652000'), x.placedTo('+15557652001')]).toEqual([1, 0]);
      expect(x.dialRequests().map((r) => r.fault)).toEqual(['drop', 'reset']);
      x.chaos({ seed: 1, resetRate: 1 });
      expect((await call('GET', `/v2/connections/${connectionId}/active_calls`)).status).toBe(200);
      await expect(dial({ to: '+15557652002' })).rejects.toThrow(/fetch failed/);
      x.chaos(null);
      expect((await dial({ to: '+15557652003' })).status).toBe(200);
      x.fail({ status: 500, match: 'lookup' });
      expect((await call('GET', `/v2/connections/${connectionId}/active_calls`)).status).toBe(500);
    } finally {
      await x.close();
    }
  });
});
