// The carrier B voice adapter against the carrier B simulator: what it sends, and the
// signed webhooks each scenario produces, as they arrive at a stand-in for the service's
// endpoints (verified with the account's public key, then parsed).

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { telnyxCodec } from '../media/telnyx-codec.ts';
import { closedPort } from '../../test/sim/sim-http.ts';
import { startTelnyxReceiver, type TelnyxReceiver } from '../../test/sim/telnyx-receiver.ts';
import { startTelnyxSim, type TelnyxScenario, type TelnyxSim } from '../../test/sim/telnyx-sim.ts';
import { CarrierAuthError, CarrierRequestError, CarrierUnreachableError, DialOutcomeUnknown, DialRejected } from './errors.ts';
import { createTelnyxRest } from './telnyx-rest.ts';
import { verifyTelnyx } from './telnyx-signature.ts';
import {
  createTelnyxVoice,
  decodeClientState,
  encodeClientState,
  parseTelnyxWebhook,
  TELNYX_COMMAND_ID_WINDOW_MS,
  telnyxDialCommandId,
  telnyxEventsUrl,
  telnyxMediaUrl,
} from './telnyx-voice.ts';
import type { DialRequest } from './voice.ts';
import type { TelnyxWebhook } from './telnyx-transfer-state.ts';

let sim: TelnyxSim;
let receiver: TelnyxReceiver;
// The service's public URL as the carrier sees it; the sim delivers it to the receiver.
const PUBLIC = 'https://switchboard.test';

beforeAll(async () => {
  sim = await startTelnyxSim();
  receiver = await startTelnyxReceiver();
  sim.redirect(PUBLIC, receiver.baseUrl);
});
afterAll(async () => {
  await sim.close();
  receiver.close();
});

let seq = 0;
const e164 = () => `+1415555${String(1000 + ++seq).slice(-4)}`;
const token = () => randomBytes(12).toString('hex');
const callId = () => `call_${randomBytes(12).toString('hex')}`;

/** A fresh carrier account with a number on a Call Control application whose events go to a fresh token. */
async function account() {
  const apiKey = `KEY${randomBytes(8).toString('hex')}`;
  sim.addApiKey(apiKey);
  const connectionId = sim.addConnection(apiKey);
  const number = e164();
  sim.addNumber(apiKey, number, { connectionId });
  const eventsToken = token();
  await createTelnyxRest({ baseUrl: sim.baseUrl, apiKey }).setCallControlWebhook(connectionId, telnyxEventsUrl(PUBLIC, eventsToken));
  const voice = createTelnyxVoice({ baseUrl: sim.baseUrl, apiKey, connectionId });
  return { apiKey, connectionId, number, eventsToken, voice, publicKey: sim.publicKeyOf(apiKey) };
}

type Account = Awaited<ReturnType<typeof account>>;

function dialRequest(acct: Account, over: Partial<DialRequest> = {}): DialRequest {
  return {
    callId: callId(),
    from: acct.number,
    to: e164(),
    amdEnabled: false,
    timeLimitSec: 600,
    publicBaseUrl: PUBLIC,
    eventsToken: acct.eventsToken,
    mediaToken: token(),
    ...over,
  };
}

/** Every webhook that reached the token so far: each must verify, then is parsed. */
function parsed(acct: Account): TelnyxWebhook[] {
  const now = Math.floor(Date.now() / 1000);
  return receiver.events
    .filter((e) => e.token === acct.eventsToken)
    .map((e) => {
      expect(verifyTelnyx(acct.publicKey, e.rawBody, e.headers['telnyx-signature-ed25519'], e.headers['telnyx-timestamp'], now)).toBe(true);
      return parseTelnyxWebhook(e.rawBody, 1234);
    });
}

/** An ignored webhook whose reason starts with the event it was. */
const ignored = (eventType: string) => ({ kind: 'ignored', reason: expect.stringMatching(new RegExp(`^${eventType.replace('.', '\\.')}`)) });
const ev = (id: string, carrierCallId: string, event: Record<string, unknown>) => ({ kind: 'event', callId: id, carrierCallId, event: { at: 1234, ...event } });
/** The outgoing leg's call.initiated: carrier B's counterpart of ringing. */
const ringing = (id: string, carrierCallId: string) => ev(id, carrierCallId, { type: 'CARRIER.RINGING', carrierCallId });

describe('dial', () => {
  it('sends the Call Control dial of carriers.md §5 and returns the call_control_id', async () => {
    const acct = await account();
    const req = dialRequest(acct, { amdEnabled: true, timeLimitSec: 900 });
    const { carrierCallId } = await acct.voice.dial(req);
    const sent = sim.requests.find((r) => r.method === 'POST' && r.path === '/v2/calls' && (r.body as { to?: string }).to === req.to);
    expect(sent?.headers.authorization).toBe(`Bearer ${acct.apiKey}`);
    expect(sent?.body).toEqual({
      connection_id: acct.connectionId,
      to: req.to,
      from: acct.number,
      webhook_url: `${PUBLIC}/carrier/telnyx/events/${acct.eventsToken}`,
      client_state: Buffer.from(req.callId).toString('base64'),
      command_id: `dial-${req.callId}`,
      time_limit_secs: 900,
      stream_url: `wss://switchboard.test/carrier/telnyx/media?token=${req.mediaToken}`,
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
      answering_machine_detection: 'detect',
    });
    expect(carrierCallId).toBe(sim.calls.calls.get(carrierCallId)?.callControlId);
    await sim.hangup(carrierCallId);
  });

  it('asks for no answering-machine detection when AMD is off', async () => {
    const acct = await account();
    const req = dialRequest(acct);
    const { carrierCallId } = await acct.voice.dial(req);
    const sent = sim.requests.find((r) => r.path === '/v2/calls' && (r.body as { to?: string }).to === req.to);
    expect(sent?.body).not.toHaveProperty('answering_machine_detection');
    await sim.hangup(carrierCallId);
  });

  it('dialing the same call twice places one call (command_id de-duplication)', async () => {
    const acct = await account();
    const req = dialRequest(acct);
    const first = await acct.voice.dial(req);
    const second = await acct.voice.dial(req);
    expect(second.carrierCallId).toBe(first.carrierCallId);
    expect([...sim.calls.calls.values()].filter((c) => c.to === req.to)).toHaveLength(1);
    await sim.hangup(first.carrierCallId);
  });

  it('a carrier refusal is DialRejected (from the CarrierRequestError) and places no call', async () => {
    const acct = await account();
    const req = dialRequest(acct);
    sim.setScenario(req.to, 'reject');
    const err = await acct.voice.dial(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialRejected);
    expect(err).toMatchObject({ outcome: 'rejected', reason: 'refused', carrier: 'telnyx', status: 422, code: '10015', retryable: false });
    expect((err as DialRejected).cause).toBeInstanceOf(CarrierRequestError);
    expect((err as DialRejected).carrierError).toMatchObject({ errors: [{ code: '10015' }] });
    expect([...sim.calls.calls.values()].some((c) => c.to === req.to)).toBe(false);
    expect(parsed(acct)).toEqual([]);
  });

  it('bad credentials and a refused connection are rejected dials; other calls keep their CarrierErrors', async () => {
    const acct = await account();
    const wrong = createTelnyxVoice({ baseUrl: sim.baseUrl, apiKey: 'nope', connectionId: acct.connectionId });
    const auth = await wrong.dial(dialRequest(acct)).catch((e: unknown) => e);
    expect(auth).toMatchObject({ outcome: 'rejected', reason: 'refused', status: 401, code: '10009' });
    expect((auth as DialRejected).cause).toBeInstanceOf(CarrierAuthError);
    await expect(wrong.hangup('v3:x')).rejects.toBeInstanceOf(CarrierAuthError);
    const port = await closedPort();
    const gone = createTelnyxVoice({ baseUrl: `http://127.0.0.1:${port}`, apiKey: acct.apiKey, connectionId: acct.connectionId });
    // Connection refused: not a byte left, so the carrier certainly placed nothing.
    const refused = await gone.dial(dialRequest(acct)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DialRejected);
    expect(refused).toMatchObject({ reason: 'not-sent', status: null });
    expect((refused as DialRejected).cause).toBeInstanceOf(CarrierUnreachableError);
    await expect(gone.hangup('v3:x')).rejects.toBeInstanceOf(CarrierUnreachableError);
    await expect(gone.fetchStatus('v3:x')).rejects.toBeInstanceOf(CarrierUnreachableError);
  });

  it('a number without an events token cannot dial', async () => {
    const acct = await account();
    const req = dialRequest(acct, { eventsToken: null });
    await expect(acct.voice.dial(req)).rejects.toThrow(/events token/);
    expect(sim.dialRequests(req.to)).toEqual([]);
  });
});

describe('dial outcomes and reconciliation', () => {
  it('an answer lost after the call was placed is unknown; findDialedCall finds it by client_state', async () => {
    const acct = await account();
    const req = dialRequest(acct);
    const since = Date.now();
    sim.fail({ drop: true, match: 'dial' });
    const err = await acct.voice.dial(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialOutcomeUnknown);
    expect(err).toMatchObject({ outcome: 'unknown', reason: 'connection-lost', carrier: 'telnyx', retryable: false });
    expect(sim.placedTo(req.to)).toBe(1);
    const placed = [...sim.calls.calls.values()].find((c) => c.to === req.to)!;
    // Another live call on the same connection is not it.
    const other = await acct.voice.dial(dialRequest(acct));

    const lookup = { callId: req.callId, to: req.to, from: req.from, since, commandId: telnyxDialCommandId(req.callId) };
    expect(await acct.voice.findDialedCall(lookup)).toEqual({ found: true, carrierCallId: placed.callControlId, status: 'active' });
    const ask = sim.requests.at(-1)!;
    expect(ask.path).toBe(`/v2/connections/${acct.connectionId}/active_calls`);
    expect(ask.query).toEqual({ 'page[limit]': '250' });

    // Once it ended it is no longer live: only its call.hangup webhook tells of it.
    await sim.hangup(placed.callControlId);
    expect(await acct.voice.findDialedCall(lookup)).toEqual({ found: false, searched: 'live-calls' });
    expect(parsed(acct).some((w) => w.kind === 'event' && w.callId === req.callId && w.event.type === 'CARRIER.ENDED')).toBe(true);
    await acct.voice.hangup(other.carrierCallId);
  });

  it('a reset dial is unknown and nothing was placed: findDialedCall finds nothing', async () => {
    const acct = await account();
    const req = dialRequest(acct);
    sim.fail({ reset: true, match: 'dial' });
    await expect(acct.voice.dial(req)).rejects.toMatchObject({ outcome: 'unknown', reason: 'connection-lost' });
    expect(sim.dialRequests(req.to).map((r) => r.fault)).toEqual(['reset']);
    expect(sim.placedTo(req.to)).toBe(0);
    expect(await acct.voice.findDialedCall({ callId: req.callId, to: req.to, from: req.from, since: Date.now() })).toEqual({ found: false, searched: 'live-calls' });
  });

  it('a 5xx or a timeout is unknown; a slow answer within the dial timeout is accepted', async () => {
    const acct = await account();
    sim.fail({ status: 502, body: '<html>Bad Gateway</html>', match: 'dial' });
    await expect(acct.voice.dial(dialRequest(acct))).rejects.toMatchObject({ outcome: 'unknown', reason: 'carrier-error', status: 502 });

    const quick = createTelnyxVoice({ baseUrl: sim.baseUrl, apiKey: acct.apiKey, connectionId: acct.connectionId, dialTimeoutMs: 400 });
    const late = dialRequest(acct);
    sim.fail({ delayMs: 1500, match: 'dial' });
    const err = await quick.dial(late).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialOutcomeUnknown);
    expect(err).toMatchObject({ reason: 'timeout' });
    // The call was placed at once; only the answer was late.
    const found = await quick.findDialedCall({ callId: late.callId, to: late.to, from: late.from, since: Date.now() });
    expect(found).toMatchObject({ found: true, status: 'active' });

    const slow = dialRequest(acct);
    sim.fail({ delayMs: 20, match: 'dial' });
    const ok = await quick.dial(slow);
    expect(sim.calls.calls.get(ok.carrierCallId)?.to).toBe(slow.to);
    for (const c of [found, { carrierCallId: ok.carrierCallId }]) await acct.voice.hangup((c as { carrierCallId: string }).carrierCallId);
  });

  it('repeating an unknown dial within 60 s places no second call; after 60 s the carrier has forgotten the command_id', async () => {
    const acct = await account();
    const req = dialRequest(acct);
    sim.fail({ drop: true, match: 'dial' });
    await expect(acct.voice.dial(req)).rejects.toBeInstanceOf(DialOutcomeUnknown);
    sim.advanceClock(TELNYX_COMMAND_ID_WINDOW_MS - 1_000);
    const again = await acct.voice.dial(req);
    expect(sim.placedTo(req.to)).toBe(1);
    sim.advanceClock(2_000);
    const third = await acct.voice.dial(req);
    expect(third.carrierCallId).not.toBe(again.carrierCallId);
    expect(sim.placedTo(req.to)).toBe(2);
    await acct.voice.hangup(again.carrierCallId);
    await acct.voice.hangup(third.carrierCallId);
  });

  it('findDialedCall throws when the carrier cannot be asked', async () => {
    const acct = await account();
    const req = dialRequest(acct);
    sim.fail({ status: 503, match: 'lookup' });
    await expect(acct.voice.findDialedCall({ callId: req.callId, to: req.to, from: req.from, since: Date.now() })).rejects.toBeInstanceOf(CarrierUnreachableError);
    const gone = createTelnyxVoice({ baseUrl: sim.baseUrl, apiKey: acct.apiKey, connectionId: '999' });
    await expect(gone.findDialedCall({ callId: req.callId, to: req.to, from: req.from, since: Date.now() })).rejects.toBeInstanceOf(CarrierRequestError);
  });
});

describe('scenarios: the signed webhooks, parsed', () => {
  const cases: { scenario: TelnyxScenario; amd: boolean; expected: (id: string, cc: string) => unknown[] }[] = [
    {
      scenario: 'busy',
      amd: false,
      expected: (id, cc) => [ringing(id, cc), ev(id, cc, { type: 'CARRIER.ENDED', status: 'busy', hangupSource: 'callee' })],
    },
    {
      scenario: 'no-answer',
      amd: false,
      expected: (id, cc) => [ringing(id, cc), ev(id, cc, { type: 'CARRIER.ENDED', status: 'no-answer', hangupSource: 'unknown' })],
    },
    {
      scenario: 'failed',
      amd: true,
      expected: (id, cc) => [ringing(id, cc), ev(id, cc, { type: 'CARRIER.ENDED', status: 'failed', hangupSource: 'unknown' })],
    },
  ];

  for (const { scenario, amd, expected } of cases) {
    it(`${scenario}: call.initiated (ringing), then call.hangup`, async () => {
      const acct = await account();
      const req = dialRequest(acct, { amdEnabled: amd });
      sim.setScenario(req.to, scenario);
      const { carrierCallId } = await acct.voice.dial(req);
      await sim.call(carrierCallId).waitFor('ended');
      expect(parsed(acct)).toEqual(expected(req.callId, carrierCallId));
    });
  }

  it('answer: answered, the stream opens, and our hangup ends it completed by the caller side', async () => {
    const acct = await account();
    const req = dialRequest(acct);
    const { carrierCallId } = await acct.voice.dial(req);
    const call = sim.call(carrierCallId);
    await call.media();
    const conn = await receiver.until(() => receiver.media.find((m) => m.token === req.mediaToken));
    await receiver.until(() => conn.messages.length >= 3);
    const [connected, start, media] = conn.messages.map((m) => telnyxCodec.decode(m));
    expect(connected).toEqual({ type: 'connected' });
    expect(start).toMatchObject({ type: 'start', carrierCallId, encoding: 'mulaw', sampleRate: 8000 });
    expect(media).toMatchObject({ type: 'audio', seq: 2, chunk: 1 });

    expect(await acct.voice.fetchStatus(carrierCallId)).toBe('active');
    await acct.voice.hangup(carrierCallId);
    await call.waitFor('ended');
    expect(parsed(acct)).toEqual([
      ringing(req.callId, carrierCallId),
      ev(req.callId, carrierCallId, { type: 'CARRIER.ANSWERED', carrierCallId }),
      ignored('streaming.started'),
      ignored('streaming.stopped'),
      ev(req.callId, carrierCallId, { type: 'CARRIER.ENDED', status: 'completed', hangupSource: 'caller' }),
    ]);
    expect(conn.closed || (await receiver.until(() => conn.closed))).toBe(true);
    expect(telnyxCodec.decode(conn.messages.at(-1)!)).toEqual({ type: 'stop' });
  });

  it('answer with AMD: a human is detected; the far end hangs up as the callee', async () => {
    const acct = await account();
    const req = dialRequest(acct, { amdEnabled: true });
    const { carrierCallId } = await acct.voice.dial(req);
    await sim.call(carrierCallId).webhook('call.machine.detection.ended');
    await sim.hangup(carrierCallId);
    const events = parsed(acct).filter((w) => w.kind === 'event');
    expect(events).toEqual([
      ringing(req.callId, carrierCallId),
      ev(req.callId, carrierCallId, { type: 'CARRIER.ANSWERED', carrierCallId }),
      ev(req.callId, carrierCallId, { type: 'CARRIER.AMD', result: 'human' }),
      ev(req.callId, carrierCallId, { type: 'CARRIER.ENDED', status: 'completed', hangupSource: 'callee' }),
    ]);
  });

  it('machine: answered, then AMD says machine', async () => {
    const acct = await account();
    const req = dialRequest(acct, { amdEnabled: true });
    sim.setScenario(req.to, 'machine');
    const { carrierCallId } = await acct.voice.dial(req);
    await sim.call(carrierCallId).webhook('call.machine.detection.ended');
    await acct.voice.hangup(carrierCallId);
    await sim.call(carrierCallId).waitFor('ended');
    const events = parsed(acct).filter((w) => w.kind === 'event');
    expect(events.map((w) => (w.kind === 'event' ? w.event : null))).toEqual([
      { type: 'CARRIER.RINGING', at: 1234, carrierCallId },
      { type: 'CARRIER.ANSWERED', at: 1234, carrierCallId },
      { type: 'CARRIER.AMD', at: 1234, result: 'machine' },
      { type: 'CARRIER.ENDED', at: 1234, status: 'completed', hangupSource: 'caller' },
    ]);
  });

  it('hanging up before the answer cancels the call', async () => {
    const acct = await account();
    const req = dialRequest(acct);
    sim.calls.stepMs = 300;
    try {
      const { carrierCallId } = await acct.voice.dial(req);
      expect(await acct.voice.fetchStatus(carrierCallId)).toBe('active');
      await acct.voice.hangup(carrierCallId);
      await sim.call(carrierCallId).waitFor('ended');
      expect(parsed(acct)).toEqual([ringing(req.callId, carrierCallId), ev(req.callId, carrierCallId, { type: 'CARRIER.ENDED', status: 'canceled', hangupSource: 'caller' })]);
    } finally {
      sim.calls.stepMs = 20;
    }
  });
});

describe('hangup and fetchStatus of a call that is over', () => {
  it('a second hangup succeeds (422 90018), and so does one the carrier has forgotten (404)', async () => {
    const acct = await account();
    const { carrierCallId } = await acct.voice.dial(dialRequest(acct));
    await sim.call(carrierCallId).waitFor('answered');
    await acct.voice.hangup(carrierCallId);
    await expect(acct.voice.hangup(carrierCallId)).resolves.toBeUndefined();
    const repeat = sim.calls.calls.get(carrierCallId)!.commands.filter((c) => c.action === 'hangup');
    expect(repeat.map((c) => c.body)).toEqual([{ command_id: 'hangup' }, { command_id: 'hangup' }]);
    sim.calls.expire(carrierCallId);
    await expect(acct.voice.hangup(carrierCallId)).resolves.toBeUndefined();
  });

  it('fetchStatus: unknown once ended (the record has no cause) and once the carrier forgot the call', async () => {
    const acct = await account();
    const { carrierCallId } = await acct.voice.dial(dialRequest(acct));
    await sim.call(carrierCallId).waitFor('answered');
    expect(await acct.voice.fetchStatus(carrierCallId)).toBe('active');
    await sim.hangup(carrierCallId);
    expect(await acct.voice.fetchStatus(carrierCallId)).toBe('unknown');
    sim.calls.expire(carrierCallId);
    expect(await acct.voice.fetchStatus(carrierCallId)).toBe('unknown');
  });

  it('fetchCall: the carrier’s end time while the record is kept (10 minutes), nothing after', async () => {
    const acct = await account();
    const { carrierCallId } = await acct.voice.dial(dialRequest(acct));
    await sim.call(carrierCallId).waitFor('answered');
    expect(await acct.voice.fetchCall(carrierCallId)).toEqual({ status: 'active' });
    await sim.hangup(carrierCallId);
    const endedAt = sim.calls.calls.get(carrierCallId)!.endedAt!;
    // No durationSec: the record's call_duration counts from the start, ringing included.
    expect(await acct.voice.fetchCall(carrierCallId)).toEqual({ status: 'unknown', endedAt });
    sim.advanceClock(10 * 60_000);
    expect(await acct.voice.fetchCall(carrierCallId)).toEqual({ status: 'unknown' });
  });

  it("another account's call is unknown to this one", async () => {
    const a = await account();
    const b = await account();
    const { carrierCallId } = await a.voice.dial(dialRequest(a));
    expect(await b.voice.fetchStatus(carrierCallId)).toBe('unknown');
    await sim.call(carrierCallId).waitFor('answered');
    expect(await a.voice.fetchStatus(carrierCallId)).toBe('active');
    await a.voice.hangup(carrierCallId);
  });
});

describe('inbound', () => {
  it('incoming call → answerWithStream: answered with our call id, media on our token', async () => {
    const acct = await account();
    const caller = e164();
    const handle = await sim.placeInboundCall({ from: caller, to: acct.number, apiKey: acct.apiKey });
    const [incoming] = parsed(acct);
    expect(incoming).toEqual({ kind: 'incoming', carrierCallId: handle.id, from: caller, to: acct.number });

    const id = callId();
    const mediaToken = token();
    await acct.voice.answerWithStream(handle.id, { publicBaseUrl: PUBLIC, mediaToken, callId: id });
    const answer = handle.call.commands.find((c) => c.action === 'answer');
    expect(answer?.body).toEqual({
      stream_url: `wss://switchboard.test/carrier/telnyx/media?token=${mediaToken}`,
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
      client_state: encodeClientState(id),
      command_id: `answer-${id}`,
    });
    await handle.media();
    const conn = await receiver.until(() => receiver.media.find((m) => m.token === mediaToken));
    await receiver.until(() => conn.messages.length >= 2);
    expect(telnyxCodec.decode(conn.messages[1]!)).toMatchObject({ type: 'start', carrierCallId: handle.id });

    await handle.hangup();
    const events = parsed(acct).filter((w) => w.kind === 'event');
    expect(events).toEqual([
      ev(id, handle.id, { type: 'CARRIER.ANSWERED', carrierCallId: handle.id }),
      ev(id, handle.id, { type: 'CARRIER.ENDED', status: 'completed', hangupSource: 'caller' }),
    ]);
  });

  it('rejectBusy: the call ends busy, refused by the callee side; a repeat is harmless', async () => {
    const acct = await account();
    const handle = await sim.placeInboundCall({ from: e164(), to: acct.number, apiKey: acct.apiKey });
    await acct.voice.rejectBusy(handle.id);
    await handle.waitFor('ended');
    expect(handle.call.commands.map((c) => c.body)).toEqual([{ cause: 'USER_BUSY' }]);
    await expect(acct.voice.rejectBusy(handle.id)).resolves.toBeUndefined();
    await expect(acct.voice.answerWithStream(handle.id, { publicBaseUrl: PUBLIC, mediaToken: token(), callId: callId() })).resolves.toBeUndefined();
    expect(parsed(acct)).toEqual([
      { kind: 'incoming', carrierCallId: handle.id, from: handle.call.from, to: acct.number },
      { kind: 'event', callId: null, carrierCallId: handle.id, event: { type: 'CARRIER.ENDED', at: 1234, status: 'busy', hangupSource: 'callee' } },
    ]);
  });

  it('answering a call that is not ours to answer is a CarrierRequestError', async () => {
    const acct = await account();
    const { carrierCallId } = await acct.voice.dial(dialRequest(acct));
    const err = await acct.voice.answerWithStream(carrierCallId, { publicBaseUrl: PUBLIC, mediaToken: token(), callId: callId() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CarrierRequestError);
    await acct.voice.hangup(carrierCallId);
  });
});

describe('parseTelnyxWebhook', () => {
  const envelope = (eventType: string, payload: Record<string, unknown>) =>
    JSON.stringify({
      data: { record_type: 'event', event_type: eventType, id: 'e1', occurred_at: '2026-01-01T00:00:00.000Z', payload },
      meta: { attempt: 1, delivered_to: 'https://x' },
    });
  const id = 'call_0123456789abcdefABCDEF12';
  const base = { call_control_id: 'v3:cc', call_leg_id: 'l', call_session_id: 's', client_state: encodeClientState(id), from: '+15550001111', to: '+15550002222' };
  const ended = (cause: unknown, source: unknown = 'callee') => parseTelnyxWebhook(envelope('call.hangup', { ...base, hangup_cause: cause, hangup_source: source }), 7);

  it('maps every hangup cause to the status the carrier meant', () => {
    const table: [string, string][] = [
      ['normal_clearing', 'completed'],
      ['time_limit', 'completed'],
      ['user_busy', 'busy'],
      ['no_answer', 'no-answer'],
      ['timeout', 'no-answer'],
      ['call_rejected', 'failed'],
      ['unspecified', 'failed'],
      ['not_found', 'failed'],
      ['originator_cancel', 'canceled'],
      ['something_new', 'failed'],
    ];
    for (const [cause, status] of table) {
      expect(ended(cause)).toEqual({ kind: 'event', callId: id, carrierCallId: 'v3:cc', event: { type: 'CARRIER.ENDED', at: 7, status, hangupSource: 'callee' } });
    }
    expect(ended(null)).toMatchObject({ event: { status: 'failed' } });
  });

  it('reports hangup_source caller / callee, anything else as unknown', () => {
    expect(ended('normal_clearing', 'caller')).toMatchObject({ event: { hangupSource: 'caller' } });
    expect(ended('normal_clearing', 'unknown')).toMatchObject({ event: { hangupSource: 'unknown' } });
    expect(ended('normal_clearing', 'bob')).toMatchObject({ event: { hangupSource: 'unknown' } });
    expect(ended('normal_clearing', 5)).toMatchObject({ event: { hangupSource: 'unknown' } });
  });

  it('maps answering-machine results, standard and premium', () => {
    const amd = (type: string, result: unknown) => parseTelnyxWebhook(envelope(type, { ...base, result }), 7);
    const table: [string, unknown, string][] = [
      ['call.machine.detection.ended', 'human', 'human'],
      ['call.machine.detection.ended', 'machine', 'machine'],
      ['call.machine.detection.ended', 'not_sure', 'unknown'],
      ['call.machine.detection.ended', undefined, 'unknown'],
      ['call.machine.premium.detection.ended', 'human_residence', 'human'],
      ['call.machine.premium.detection.ended', 'fax_detected', 'fax'],
      ['call.machine.premium.detection.ended', 'silence', 'unknown'],
    ];
    for (const [type, result, expected] of table) {
      expect(amd(type, result)).toEqual({ kind: 'event', callId: id, carrierCallId: 'v3:cc', event: { type: 'CARRIER.AMD', at: 7, result: expected } });
    }
  });

  it('an incoming call.initiated is a call to route; our own outgoing one is ringing', () => {
    expect(parseTelnyxWebhook(envelope('call.initiated', { ...base, client_state: null, direction: 'incoming', state: 'parked' }), 7)).toEqual({
      kind: 'incoming',
      carrierCallId: 'v3:cc',
      from: '+15550001111',
      to: '+15550002222',
    });
    expect(parseTelnyxWebhook(envelope('call.initiated', { ...base, direction: 'outgoing' }), 7)).toMatchObject({
      kind: 'event',
      carrierCallId: 'v3:cc',
      event: { type: 'CARRIER.RINGING', at: 7, carrierCallId: 'v3:cc' },
    });
    expect(parseTelnyxWebhook(envelope('call.initiated', { ...base, direction: 'sideways' }), 7)).toMatchObject({ kind: 'ignored' });
  });

  it('takes the internal call id from client_state only when it is one', () => {
    const answered = (clientState: unknown) => parseTelnyxWebhook(envelope('call.answered', { ...base, client_state: clientState }), 7);
    expect(answered(encodeClientState(id))).toMatchObject({ kind: 'event', callId: id });
    expect(answered(null)).toMatchObject({ kind: 'event', callId: null, carrierCallId: 'v3:cc' });
    expect(answered(undefined)).toMatchObject({ kind: 'event', callId: null });
    expect(answered(encodeClientState('hello'))).toMatchObject({ kind: 'event', callId: null });
    expect(answered('%%%')).toMatchObject({ kind: 'event', callId: null });
    expect(decodeClientState(encodeClientState(id))).toBe(id);
  });

  it('turns call.dtmf.received into the call\'s DTMF event (keys only)', () => {
    const dtmf = (digit: unknown) => parseTelnyxWebhook(envelope('call.dtmf.received', { ...base, client_state: encodeClientState(id), digit }), 7);
    expect(dtmf('5')).toEqual({ kind: 'event', callId: id, carrierCallId: 'v3:cc', event: { type: 'DTMF', at: 7, digit: '5' } });
    expect(dtmf('#')).toMatchObject({ event: { digit: '#' } });
    expect(dtmf('a')).toMatchObject({ event: { digit: 'A' } });
    for (const bad of ['E', '12', '', null, 3]) expect(dtmf(bad)).toMatchObject({ kind: 'ignored' });
  });

  it('ignores streaming events, other events, and anything malformed, without throwing', () => {
    // (call.bridged is a transfer's handoff: transfer-webhooks.test.ts.)
    for (const type of ['streaming.started', 'streaming.stopped', 'streaming.failed', 'call.speak.started', 'message.received']) {
      expect(parseTelnyxWebhook(envelope(type, base), 7)).toMatchObject({ kind: 'ignored' });
    }
    const malformed = [
      'not json',
      '[]',
      'null',
      '{"data":{}}',
      '{"data":{"event_type":"call.answered","payload":"x"}}',
      envelope('call.answered', { client_state: null }),
      envelope('call.hangup', { ...base, call_control_id: 5 }),
      envelope('call.initiated', { call_control_id: 'v3:cc', direction: 'incoming' }),
    ];
    for (const body of malformed) {
      const out = parseTelnyxWebhook(body, 7);
      expect(out.kind).toBe('ignored');
      expect(out.kind === 'ignored' && out.reason).toMatch(/^malformed/);
    }
  });
});

describe('URLs', () => {
  it('derives ws/wss from the public base URL and encodes the tokens', () => {
    expect(telnyxMediaUrl('https://sb.example.com/', 'a b')).toBe('wss://sb.example.com/carrier/telnyx/media?token=a%20b');
    expect(telnyxMediaUrl('http://127.0.0.1:8080', 't')).toBe('ws://127.0.0.1:8080/carrier/telnyx/media?token=t');
    expect(telnyxMediaUrl('HTTPS://sb.example.com/base', 't')).toBe('wss://sb.example.com/base/carrier/telnyx/media?token=t');
    expect(telnyxEventsUrl('https://sb.example.com/', 'tok')).toBe('https://sb.example.com/carrier/telnyx/events/tok');
  });
});
