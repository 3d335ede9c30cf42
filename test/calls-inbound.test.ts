// Calls to our numbers, end to end with both carrier simulators: answered with a media
// stream whose audio flows both ways (MEDIA_ENGINE=echo plays the caller back), keypad
// digits reaching the call, the caller hanging up; calls refused and recorded when the
// number has no agent, the agent is inactive or inbound is off; and the concurrency
// limit: inbound over it refused busy, outbound over it queued and dialed in order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextNumber } from './helpers/fixtures.ts';
import { callReaches, dial, eventually, getCall, metric, newCustomer, startCallStack, type CallStack, type Customer, type Provider } from './helpers/calls.ts';

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack();
});
afterAll(async () => {
  await stack.close();
});

/** A call from `from` to the customer's number, seen from the far end. */
interface Ringing {
  id: string;
  /** What the service answered: the TwiML (carrier A) or the commands it sent (carrier B). */
  answer: string;
  audioBack(): number;
  sendDtmf(digit: string): void;
  hangup(): Promise<unknown>;
  ended(): Promise<string>;
}

async function ring(c: Customer, from = nextNumber()): Promise<Ringing> {
  if (c.provider === 'twilio') {
    const call = await stack.sims.twilio.placeInboundCall({ from, to: c.number });
    return {
      id: call.callSid,
      answer: call.twiml ?? '',
      audioBack: () => call.receivedAudio().length,
      sendDtmf: (d) => call.sendDtmf(d),
      hangup: () => call.hangup(),
      ended: () => call.ended,
    };
  }
  const handle = await stack.sims.telnyx.placeInboundCall({ from, to: c.number, apiKey: c.carrierAccount });
  // The service's commands answer the call.initiated webhook; they are in once it was delivered.
  const commands = () => handle.call.commands.map((cmd) => `${cmd.action}${cmd.body['cause'] ? `:${cmd.body['cause']}` : ''}`).join(',');
  return {
    id: handle.id,
    get answer() {
      return commands();
    },
    audioBack: () => handle.call.media?.audio.length ?? 0,
    sendDtmf: (d) => handle.call.media?.sendDtmf(d),
    hangup: () => handle.hangup(),
    ended: async () => (await handle.waitFor('ended')).hangupCause ?? '',
  };
}

const recordOf = (c: Customer, id: string) => eventually(async () => {
  const res = await getCall(stack.server, c.key, id);
  return res.status === 200 ? res.body : undefined;
}, 5000, `record of ${id}`);

describe.each<Provider>(['twilio', 'telnyx'])('inbound on carrier %s', (provider) => {
  it('is answered with a media stream: audio flows both ways, digits reach the call, the caller hangs up', async () => {
    const c = await newCustomer(stack, provider);
    const from = nextNumber();
    const dtmfBefore = await metric(stack.server, 'switchboard_call_dtmf_total');
    const call = await ring(c, from);
    if (provider === 'twilio') expect(call.answer).toMatch(/<Connect><Stream url="wss:\/\/switchboard\.test\/carrier\/twilio\/media"><Parameter name="token" value="mt_[0-9A-Za-z]+"\/><\/Stream><\/Connect>/);
    else await eventually(() => (call.answer === 'answer' ? true : undefined), 5000, 'answer command');
    const live = await callReaches(stack.server, c.key, call.id, 'in-progress');
    expect(live).toMatchObject({ call_id: call.id, direction: 'inbound', from_number: from, to_number: c.number, agent_id: c.agentId, ended_at: null });
    // The echo engine sends the caller's own audio back over the stream.
    await eventually(() => (call.audioBack() > 5 ? true : undefined), 5000, 'echoed audio');
    call.sendDtmf('7');
    call.sendDtmf('#');
    await eventually(async () => ((await metric(stack.server, 'switchboard_call_dtmf_total')) === dtmfBefore + 2 ? true : undefined), 5000, 'DTMF delivered');
    await call.hangup();
    const done = await callReaches(stack.server, c.key, call.id, 'completed');
    expect(done).toMatchObject({ ended_reason: 'caller_hangup', voicemail_detected: false });
    expect(done.duration_ms).toBe(Date.parse(done.ended_at) - Date.parse(done.started_at));
  });

  async function expectRefused(c: Customer): Promise<void> {
    const call = await ring(c);
    if (provider === 'twilio') {
      expect(call.answer).toContain('<Reject reason="rejected"/>');
      expect(await call.ended()).toBe('no-answer');
    } else {
      await eventually(() => (call.answer === 'hangup' ? true : undefined), 5000, 'refusal');
      expect(await call.ended()).toBe('call_rejected');
    }
    const record = await recordOf(c, call.id);
    expect(record).toMatchObject({ direction: 'inbound', call_status: 'failed', ended_reason: 'failed', started_at: null, duration_ms: 0, to_number: c.number });
  }

  it('is refused and recorded failed when the number has no agent (the agent was deleted)', async () => {
    const c = await newCustomer(stack, provider);
    expect((await stack.server.request('DELETE', `/v1/agents/${c.agentId}`, { key: c.key })).status).toBe(200);
    await expectRefused(c);
  });

  it('is refused and recorded failed when the agent is inactive', async () => {
    const c = await newCustomer(stack, provider);
    expect((await stack.server.request('PATCH', `/v1/agents/${c.agentId}`, { key: c.key, body: { is_active: false } })).status).toBe(200);
    await expectRefused(c);
  });

  it('is refused and recorded failed when the number has inbound switched off', async () => {
    const c = await newCustomer(stack, provider);
    const res = await stack.server.request('PATCH', `/v1/phone-numbers/${encodeURIComponent(c.number)}`, { key: c.key, body: { inbound_enabled: false } });
    expect(res.status).toBe(200);
    await expectRefused(c);
  });

  it('at the concurrency limit: inbound is refused busy (concurrency_limit), outbound queues and is dialed in order as slots free', async () => {
    const c = await newCustomer(stack, provider);
    stack.server.storage.accounts.setPlan(c.accountId, 'enterprise', 1);
    const first = await ring(c);
    await callReaches(stack.server, c.key, first.id, 'in-progress');

    const second = await ring(c);
    if (provider === 'twilio') {
      expect(second.answer).toContain('<Reject reason="busy"/>');
      expect(await second.ended()).toBe('busy');
    } else {
      await eventually(() => (second.answer === 'reject:USER_BUSY' ? true : undefined), 5000, 'busy refusal');
      expect(await second.ended()).toBe('user_busy');
    }
    expect(await recordOf(c, second.id)).toMatchObject({ direction: 'inbound', call_status: 'busy', ended_reason: 'concurrency_limit' });

    const dialsTo = (to: string) =>
      provider === 'twilio'
        ? stack.sims.twilio.requests.filter((r) => r.path.endsWith('/Calls.json') && r.method === 'POST' && r.body['To'] === to).length
        : stack.sims.telnyx.requests.filter((r) => r.path === '/v2/calls' && r.method === 'POST' && (r.body as { to?: string }).to === to).length;
    const [toA, toB] = [nextNumber(), nextNumber()];
    const a = await dial(stack.server, c, toA);
    const b = await dial(stack.server, c, toB);
    for (const q of [a, b]) expect(q).toMatchObject({ call_id: expect.stringMatching(/^call_[0-9A-Za-z]{24}$/), status: 'queued', from: c.number });
    expect((await getCall(stack.server, c.key, a.call_id)).body).toMatchObject({ call_status: 'queued', direction: 'outbound', to_number: toA });
    expect(await metric(stack.server, 'switchboard_queued_calls')).toBeGreaterThanOrEqual(2);
    expect(dialsTo(toA) + dialsTo(toB)).toBe(0);

    // The inbound caller hangs up: the oldest queued call gets the slot, the other still waits.
    await first.hangup();
    await callReaches(stack.server, c.key, a.call_id, 'in-progress');
    expect((await getCall(stack.server, c.key, b.call_id)).body.call_status).toBe('queued');
    expect([dialsTo(toA), dialsTo(toB)]).toEqual([1, 0]);

    const carrierIdOf = (to: string) =>
      provider === 'twilio'
        ? [...stack.sims.twilio.calls.values()].find((k) => k.to === to)!.sid
        : [...stack.sims.telnyx.calls.calls.values()].find((k) => k.to === to)!.callControlId;
    // A queued call keeps its call_… id; its carrier id finds the same record.
    const viaCarrierId = await getCall(stack.server, c.key, carrierIdOf(toA));
    expect(viaCarrierId.body.call_id).toBe(a.call_id);

    await (provider === 'twilio' ? stack.sims.twilio.hangup(carrierIdOf(toA)) : stack.sims.telnyx.hangup(carrierIdOf(toA)));
    await callReaches(stack.server, c.key, a.call_id, 'completed');
    await callReaches(stack.server, c.key, b.call_id, 'in-progress');
    expect([dialsTo(toA), dialsTo(toB)]).toEqual([1, 1]);
    await (provider === 'twilio' ? stack.sims.twilio.hangup(carrierIdOf(toB)) : stack.sims.telnyx.hangup(carrierIdOf(toB)));
    expect(await callReaches(stack.server, c.key, b.call_id, 'completed')).toMatchObject({ call_id: b.call_id, ended_reason: 'callee_hangup' });
  });
});
