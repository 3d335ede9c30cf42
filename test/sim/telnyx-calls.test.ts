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
