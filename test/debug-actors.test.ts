// The live machine view (issue 7) end to end, against the real server and the carrier
// simulators: `GET /v1/debug/actors`, the websocket `/v1/debug/actors/ws` and its
// authentication, per-account scoping, redaction, and the slow-viewer rule. The page
// itself is driven in headless Chromium by test/debug-page.test.ts.
import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { nextNumber } from './helpers/fixtures.ts';
import { callReaches, dial, eventually, metric, newCustomer, startCallStack, type CallStack, type Customer } from './helpers/calls.ts';
import type { TestServer } from './helpers/server.ts';

let stack: CallStack;
beforeAll(async () => {
  // Open viewers' keys are checked again every 200 ms here (a minute by default).
  stack = await startCallStack({}, undefined, { debug: { recheckMs: 200 } });
});
afterAll(async () => {
  await stack.close();
});
// A test that fails midway leaves no viewer open for the next one.
const viewers: Viewer[] = [];
afterEach(async () => {
  for (const v of viewers.splice(0)) {
    if (v.ws.readyState === WebSocket.CLOSED) continue;
    v.ws.terminate();
    await v.closed;
  }
});

interface Viewer {
  ws: WebSocket;
  /** Every text message, as received. */
  raw: string[];
  msgs: any[];
  opened: Promise<void>;
  closed: Promise<{ code: number; reason: string }>;
}

const wsUrl = (server: TestServer): string => `ws://127.0.0.1:${server.port}/v1/debug/actors/ws`;

function openViewer(server: TestServer, key: string, how: 'header' | 'protocol' = 'header'): Viewer {
  const [id, secret] = key.split(':') as [string, string];
  const ws =
    how === 'header' ? new WebSocket(wsUrl(server), { headers: { authorization: `Bearer ${key}` } }) : new WebSocket(wsUrl(server), [`bearer.${id}.${secret}`]);
  const raw: string[] = [];
  const msgs: any[] = [];
  ws.on('message', (data) => {
    const text = data.toString();
    raw.push(text);
    msgs.push(JSON.parse(text));
  });
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.on('error', reject);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const v = { ws, raw, msgs, opened, closed };
  viewers.push(v);
  return v;
}

/** A websocket upgrade by hand: the HTTP answer when refused, or 101 and the socket. */
function upgrade(server: TestServer, headers: Record<string, string>): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: '127.0.0.1',
      port: server.port,
      path: '/v1/debug/actors/ws',
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64'), ...headers },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode!, body: '', headers: res.headers });
    });
    req.on('error', reject);
    req.end();
  });
}

const topState = (value: unknown): string => (typeof value === 'string' ? value : Object.keys(value as object)[0]!);
const snapshotsOf = (v: Viewer, actorId: string): any[] => v.msgs.filter((m) => m.type === '@xstate.snapshot' && m.actorId === actorId);
/** The actor of the call whose dial the carrier accepted with this id (its dial effect's answer names it). */
function actorOfCall(v: Viewer, callId: string): string | undefined {
  const m = v.msgs.find((x) => x.type === '@xstate.event' && JSON.stringify(x.event).includes(callId));
  return m?.actorId;
}
/** Top-level states in the order they were entered (repeats folded). */
function trailOf(v: Viewer, actorId: string): string[] {
  const out: string[] = [];
  for (const m of snapshotsOf(v, actorId)) {
    const s = topState(m.snapshot.value);
    if (out.at(-1) !== s) out.push(s);
  }
  return out;
}
const isDone = (v: Viewer, actorId: string): true | undefined => (snapshotsOf(v, actorId).some((m) => m.snapshot.status === 'done') ? true : undefined);

/** Polls the record until final; returns the statuses seen in order. */
async function apiTrail(c: Customer, id: string): Promise<string[]> {
  const seen: string[] = [];
  await eventually(async () => {
    const res = await stack.server.request('GET', `/v1/calls/${encodeURIComponent(id)}`, { key: c.key });
    const s = res.body?.call_status as string | undefined;
    if (s && seen.at(-1) !== s) seen.push(s);
    return s && ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(s) ? true : undefined;
  }, 10_000, `call ${id} to end`);
  return seen;
}

describe('a call seen live by its owner, and by nobody else', () => {
  let owner: Customer;
  let stranger: Customer;
  let mine: Viewer;
  let theirs: Viewer;
  const to = nextNumber();
  const prompt = `Secret-prompt-${Date.now()}: confirm the root canal`;
  let callId = '';
  let actorId = '';
  let listWhileLive: any;
  let strangerListWhileLive: any;

  beforeAll(async () => {
    owner = await newCustomer(stack, 'twilio');
    stranger = await newCustomer(stack, 'twilio');
    mine = openViewer(stack.server, owner.key);
    theirs = openViewer(stack.server, stranger.key);
    await Promise.all([mine.opened, theirs.opened]);
    await eventually(() => (mine.msgs.length > 0 && theirs.msgs.length > 0 ? true : undefined), 3000, 'first messages');

    const created = await dial(stack.server, owner, to, { prompt });
    callId = created.call_id;
    const trail = apiTrail(owner, callId);
    await callReaches(stack.server, owner.key, callId, 'in-progress');
    actorId = await eventually(() => actorOfCall(mine, callId), 3000, 'the actor of the call');
    // Key presses on the far end reach the actor as DTMF events (whether the supervisor
    // shows events its machine ignores or not, their digits must not show).
    const sim = stack.sims.twilio.calls.get(callId)!;
    await eventually(() => (sim.stream ? true : undefined), 5000, 'media stream');
    for (const d of ['4', '2', '#']) sim.stream!.sendDtmf(d);
    await new Promise((r) => setTimeout(r, 200));
    listWhileLive = (await stack.server.request('GET', '/v1/debug/actors', { key: owner.key })).body;
    strangerListWhileLive = (await stack.server.request('GET', '/v1/debug/actors', { key: stranger.key })).body;
    await stack.sims.twilio.hangup(callId);
    const statuses = await trail;
    expect(statuses.at(-1)).toBe('completed');
    await eventually(() => isDone(mine, actorId), 5000, 'the final snapshot');
    // Anything still in flight for the stranger would have arrived by now.
    await new Promise((r) => setTimeout(r, 300));
  });
  afterAll(async () => {
    mine.ws.close();
    theirs.ws.close();
    await Promise.all([mine.closed, theirs.closed]);
  });

  it('streams the list first, then the call’s transitions in order, seq increasing', () => {
    expect(mine.msgs[0]).toEqual({ type: 'actors', actors: [] });
    const trail = trailOf(mine, actorId);
    // The carrier's ringing webhook may overtake the dial's answer: `initiated` can be skipped.
    expect(trail.filter((s) => s !== 'initiated')).toEqual(['dialing', 'ringing', 'in-progress', 'post-call', 'done']);
    const events = mine.msgs.filter((m) => m.actorId === actorId && m.type === '@xstate.event').map((m) => m.event.type);
    const order = ['CARRIER.RINGING', 'CARRIER.ANSWERED', 'CARRIER.ENDED'].map((t) => events.indexOf(t));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const seqs = mine.msgs.slice(1).map((m) => m.seq);
    expect(seqs.every((s, i) => i === 0 || s > seqs[i - 1])).toBe(true);
    // Every snapshot says which event led to it, and its tags and status.
    const ringing = snapshotsOf(mine, actorId).find((m) => topState(m.snapshot.value) === 'ringing');
    expect(ringing).toMatchObject({ kind: 'call', event: { type: 'CARRIER.RINGING' }, snapshot: { status: 'active', tags: expect.any(Array) } });
    expect(snapshotsOf(mine, actorId).at(-1).snapshot.status).toBe('done');
  });

  it('lists the live call for its owner over GET, with its state, tags and last event', () => {
    expect(listWhileLive.count).toBe(1);
    const [item] = listWhileLive.actors;
    expect(item).toMatchObject({ kind: 'call', id: actorId, status: 'active', last_event: { type: expect.any(String) } });
    expect(topState(item.value)).toBe('in-progress');
    expect(item.tags).toEqual(expect.any(Array));
    expect(new Date(item.updated_at).toISOString()).toBe(item.updated_at);
  });

  it('shows a second account nothing: no event on its websocket, an empty list', () => {
    expect(theirs.msgs).toEqual([{ type: 'actors', actors: [] }]);
    expect(strangerListWhileLive).toEqual({ actors: [], count: 0 });
    expect(JSON.stringify(theirs.msgs)).not.toContain(actorId);
  });

  it('redacts phone numbers, key presses and the prompt in every message and list entry', () => {
    const everything = [...mine.raw, JSON.stringify(listWhileLive)].join('\n');
    for (const n of [to, owner.number]) {
      expect(everything).not.toContain(n);
      expect(everything).not.toContain(n.slice(1)); // without the +
      expect(everything).not.toContain(n.slice(2)); // national digits
    }
    expect(everything).not.toContain('Secret-prompt');
    expect(everything).not.toContain('root canal');
    for (const m of mine.msgs.filter((x) => x.event?.type === 'DTMF')) expect(m.event.digit).toBe('[redacted]');
    expect(everything).not.toMatch(/"digit":"[0-9#*A-D]"/);
  });
});

describe('redaction of carrier errors', () => {
  it('never shows the carrier’s refusal text, nor the numbers in it', async () => {
    const c = await newCustomer(stack, 'twilio');
    const viewer = openViewer(stack.server, c.key);
    await viewer.opened;
    const to = nextNumber();
    const marker = `Carrier-says-${Date.now()}`;
    stack.sims.twilio.scenario(to, { name: 'reject', status: 400, code: 21211, message: `${marker}: the number ${to} is unreachable` });
    const res = await stack.server.request('POST', '/v1/calls/outbound', { key: c.key, body: { agent_id: c.agentId, to_number: to, prompt: 'Hello there.' } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    // The refusal reached the actor as an event with the carrier's error, and its text did not reach the viewer.
    await eventually(() => (viewer.msgs.some((m) => m.type === '@xstate.snapshot' && m.event && 'carrierError' in m.event) ? true : undefined), 5000, 'the refusal');
    // The API's own answer does carry it (this test would prove nothing otherwise).
    expect(res.text).toContain(marker);
    const everything = viewer.raw.join('\n');
    expect(everything).toMatch(/"carrierError":"\[redacted\]"/);
    expect(everything).not.toContain(marker);
    expect(everything).not.toContain('unreachable');
    expect(everything).not.toContain(to.slice(2));
    viewer.ws.close();
    await viewer.closed;
  });
});

describe('redaction of whatever a publisher hands the hub', () => {
  it('lets only structural values out (an allowlist), in the stream and in the list', async () => {
    const c = await newCustomer(stack, 'twilio');
    const viewer = openViewer(stack.server, c.key);
    await viewer.opened;
    const event = {
      type: 'SOMETHING.NEW',
      at: 1,
      digit: '7',
      digits: '4242',
      from: '+14155550111',
      to_number: '+14155550112',
      phoneNumber: '+14155550113',
      customPrompt: 'Offer the Prompt-Marker discount',
      carrier_error: { message: 'Carrier-Marker failure' },
      carrierError: { code: 21211 },
      note: 'call back on +1 (415) 555-0114 or sip:+14155550115@example.com',
      nested: { list: ['14155550116', { caller: 'Dana' }] },
      error: new Error('Carrier-Marker in an Error'),
      // Fields nobody listed: redacted by default, whatever their value.
      attendee_name: 'Dana Reyes',
      service: 'Cleaning for Dana Reyes',
      custom: { 'Dana-Marker’s dog': 'Rex' },
      amount: 4242,
      // Listed keys holding something else than their kind of value.
      name: 'Dana',
      reason: 'Dana said she moved',
      latencyMs: '4242',
      // Listed keys with their kind of value show.
      carrierCallId: 'CA0123456789abcdef0123456789abcdef',
      reason_unlisted: 'agent_hangup',
      status: 'completed',
      durationSec: 12,
      answered: true,
      whisper: null,
    };
    stack.server.inspection.publish(c.accountId, { type: '@xstate.event', kind: 'call', actorId: 'call_synthetic', seq: 1, at: 1, event });
    stack.server.inspection.publish(c.accountId, {
      type: '@xstate.snapshot',
      kind: 'call',
      actorId: 'call_synthetic',
      seq: 2,
      at: 1,
      event,
      snapshot: { value: { 'in-progress': 'Dana Reyes' }, tags: ['holdsSlot', 'dana@example.com'], status: 'active', counters: { placed: 2, 'Dana Reyes': 3, phone: '+14155550100' as never } },
    });
    stack.server.inspection.track(c.accountId, {
      kind: 'call',
      id: 'call_synthetic',
      value: { 'in-progress': 'listening' },
      tags: ['holdsSlot'],
      status: 'active',
      lastEvent: event,
      counters: { ended: 1, 'dana@example.com': 4 },
      updatedAt: 1,
    });
    await eventually(() => (viewer.msgs.length >= 3 ? true : undefined), 3000, 'the events');
    const list = await stack.server.request('GET', '/v1/debug/actors', { key: c.key });
    stack.server.inspection.drop(c.accountId, 'call_synthetic');
    for (const shown of [viewer.msgs[1].event, viewer.msgs[2].event, list.body.actors[0].last_event]) {
      expect(shown).toEqual({
        type: 'SOMETHING.NEW',
        at: 1,
        digit: '[redacted]',
        digits: '[redacted]',
        from: '[redacted]',
        to_number: '[redacted]',
        phoneNumber: '[redacted]',
        customPrompt: '[redacted]',
        carrier_error: '[redacted]',
        carrierError: '[redacted]',
        note: '[redacted]',
        nested: '[redacted]',
        error: '[redacted]',
        attendee_name: '[redacted]',
        service: '[redacted]',
        custom: '[redacted]',
        amount: '[redacted]',
        name: '[redacted]',
        reason: '[redacted]',
        latencyMs: '[redacted]',
        carrierCallId: 'CA0123456789abcdef0123456789abcdef',
        reason_unlisted: '[redacted]',
        status: 'completed',
        durationSec: 12,
        answered: true,
        whisper: null,
      });
    }
    // A state value or tag that is not a name does not show either, nor a count under a name that is not one, nor a count that is not a number.
    expect(viewer.msgs[2].snapshot).toEqual({ value: '[redacted]', tags: ['holdsSlot', '[redacted]'], status: 'active', counters: { placed: 2 } });
    expect(list.body.actors[0]).toMatchObject({ value: { 'in-progress': 'listening' }, tags: ['holdsSlot'], counters: { ended: 1 } });
    expect(Object.keys(list.body.actors[0].counters)).toEqual(['ended']);
    const everything = viewer.raw.join('\n') + list.text;
    for (const n of ['55501', 'Marker', 'Dana', '4242', 'Rex', 'Cleaning', 'dana@']) expect(everything).not.toContain(n);
    viewer.ws.close();
    await viewer.closed;
  });
});

describe('authentication of the websocket', () => {
  let c: Customer;
  beforeAll(async () => {
    c = await newCustomer(stack, 'twilio');
  });

  it('refuses an upgrade without a working key with 401 and the error envelope, before any socket exists', async () => {
    const [keyId] = c.key.split(':') as [string];
    const wrongSecret = `sk_${'A'.repeat(61)}`;
    const cases: [Record<string, string>, string][] = [
      [{}, 'invalid_api_key'],
      [{ authorization: `Bearer ${keyId}:${wrongSecret}` }, 'invalid_api_key'],
      [{ authorization: `Bearer ${keyId}` }, 'key_secret_required'],
      [{ authorization: 'Basic Zm9vOmJhcg==' }, 'invalid_api_key'],
      [{ 'sec-websocket-protocol': `bearer.${keyId}.${wrongSecret}` }, 'invalid_api_key'],
      [{ 'sec-websocket-protocol': `bearer.${keyId}:${wrongSecret}` }, 'invalid_api_key'],
      [{ 'sec-websocket-protocol': 'chat, superchat' }, 'invalid_api_key'],
    ];
    for (const [headers, code] of cases) {
      const res = await upgrade(stack.server, headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(JSON.parse(res.body).error.code).toBe(code);
    }
    expect(await metric(stack.server, 'switchboard_debug_viewers')).toBe(0);
    // The ws client sees the refusal too, and never opens.
    const refused = new WebSocket(wsUrl(stack.server), { headers: { authorization: `Bearer ${keyId}:${wrongSecret}` } });
    let opened = false;
    refused.on('open', () => (opened = true));
    const status = await new Promise<number>((resolve) =>
      refused.on('unexpected-response', (req, r) => {
        req.destroy();
        resolve(r.statusCode!);
      }),
    );
    refused.on('error', () => {});
    expect(status).toBe(401);
    expect(opened).toBe(false);
  });

  it('accepts the key as a header, or as the subprotocol bearer.KEY_ID.KEY_SECRET (or with a colon), echoing it', async () => {
    const [keyId, secret] = c.key.split(':') as [string, string];
    expect((await upgrade(stack.server, { authorization: `Bearer ${c.key}` })).status).toBe(101);
    for (const protocol of [`bearer.${keyId}.${secret}`, `bearer.${keyId}:${secret}`]) {
      const res = await upgrade(stack.server, { 'sec-websocket-protocol': `other, ${protocol}` });
      expect(res.status).toBe(101);
      expect(res.headers['sec-websocket-protocol']).toBe(protocol);
    }
    const v = openViewer(stack.server, c.key, 'protocol');
    await v.opened;
    expect(v.ws.protocol).toBe(`bearer.${keyId}.${secret}`);
    await eventually(() => (v.msgs.length ? true : undefined), 3000, 'the list');
    expect(v.msgs[0]).toEqual({ type: 'actors', actors: [] });
    v.ws.close();
    await v.closed;
  });

  it('ends open viewers of a key once it is revoked', async () => {
    const second = await stack.server.request('POST', '/v1/keys', { key: c.key, body: { name: 'viewer' } });
    expect(second.status).toBe(201);
    const key = `${second.body.key_id}:${second.body.key_secret}`;
    const v = openViewer(stack.server, key);
    await v.opened;
    expect((await stack.server.request('DELETE', `/v1/keys/${second.body.key_id}`, { key: c.key })).status).toBeLessThan(300);
    expect(await v.closed).toEqual({ code: 1008, reason: 'API key no longer valid' });
    expect((await upgrade(stack.server, { authorization: `Bearer ${key}` })).status).toBe(401);
  });

  it('lets an account hold at most 10 viewers at once (429 beyond)', async () => {
    const many = Array.from({ length: 10 }, () => openViewer(stack.server, c.key));
    await Promise.all(many.map((v) => v.opened));
    const res = await upgrade(stack.server, { authorization: `Bearer ${c.key}` });
    expect(res.status).toBe(429);
    expect(JSON.parse(res.body).error.code).toBe('rate_limit_exceeded');
    many[0]!.ws.close();
    await many[0]!.closed;
    expect((await upgrade(stack.server, { authorization: `Bearer ${c.key}` })).status).toBe(101);
  });

  it('answers GET /v1/debug/actors only with a key', async () => {
    expect((await stack.server.request('GET', '/v1/debug/actors')).status).toBe(401);
    expect((await stack.server.request('GET', '/v1/debug/actors', { key: c.key })).body).toEqual({ actors: [], count: 0 });
  });
});

describe('a viewer that stops reading', () => {
  it('is disconnected with 1013 once its backlog passes the bound, other viewers and calls keeping their pace', async () => {
    const c = await newCustomer(stack, 'twilio');
    /** Dial → in-progress → completed of a fresh call, as the API shows it, in ms. */
    async function timedCall(): Promise<number> {
      const t0 = performance.now();
      const { call_id } = await dial(stack.server, c, nextNumber());
      await callReaches(stack.server, c.key, call_id, 'in-progress');
      await stack.sims.twilio.hangup(call_id);
      await callReaches(stack.server, c.key, call_id, 'completed');
      return performance.now() - t0;
    }
    const normal = await timedCall();

    const stuck = openViewer(stack.server, c.key);
    const healthy = openViewer(stack.server, c.key);
    await Promise.all([stuck.opened, healthy.opened]);
    await eventually(() => (stuck.msgs.length && healthy.msgs.length ? true : undefined), 3000, 'the lists');
    // From here on the stuck client reads nothing: the kernel's buffers fill (a few MiB on
    // loopback), then the server's backlog for it grows to the bound.
    (stuck.ws as any)._socket.pause();
    const droppedBefore = await metric(stack.server, 'switchboard_debug_viewers_dropped_total');

    // Calls' own events are few (a dozen per call): a burst of inspection events for the
    // account, as a busy account's actors would publish them, fills the backlog in about a second.
    let published = 0;
    let floodDone = false;
    const flood = (async () => {
      const t0 = performance.now();
      while ((await metric(stack.server, 'switchboard_debug_viewers_dropped_total')) === droppedBefore) {
        if (published >= 200_000) throw new Error('the stuck viewer was never disconnected');
        for (let i = 0; i < 500; i++) {
          published++;
          stack.server.inspection.publish(c.accountId, {
            type: '@xstate.event',
            kind: 'call',
            actorId: 'call_burst',
            seq: 1e9 + published,
            at: Date.now(),
            event: { type: 'DTMF', at: Date.now(), digit: '5' },
          });
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      floodDone = true;
      console.log(`stuck viewer dropped after ${published} events, ${(performance.now() - t0).toFixed(0)} ms`);
    })();
    // A real call meanwhile takes as long as one without the stuck viewer.
    const whileStuck = await timedCall();
    const overlapped = !floodDone;
    await flood;
    console.log(`call dial → completed: ${normal.toFixed(0)} ms before, ${whileStuck.toFixed(0)} ms with a stuck viewer (overlapping the burst: ${overlapped})`);
    expect(whileStuck).toBeLessThan(normal * 3 + 1500);
    expect(await metric(stack.server, 'switchboard_debug_viewers_dropped_total')).toBe(droppedBefore + 1);

    // The viewer that reads got every event; it is still open.
    await eventually(() => (healthy.msgs.filter((m) => m.actorId === 'call_burst').length === published ? true : undefined), 10_000, 'the healthy viewer to catch up');
    expect(await metric(stack.server, 'switchboard_debug_viewers')).toBe(1);
    // Once it reads again, the stuck viewer learns why it was closed.
    (stuck.ws as any)._socket.resume();
    const closed = await stuck.closed;
    expect(closed.code).toBe(1013);
    expect(closed.reason).toMatch(/viewer too slow/);
    healthy.ws.close();
    await healthy.closed;
  }, 60_000);
});
