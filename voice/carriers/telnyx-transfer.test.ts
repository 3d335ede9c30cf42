// Carrier B transfers against the carrier B simulator over real loopback HTTP: where a
// transfer stands when every webhook of it was lost (they went to a service that was
// down). The carrier's log of the legs (`GET /v2/call_events`) says what happened; the
// call records say only alive or not.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closedPort } from '../../test/sim/sim-http.ts';
import { startTelnyxSim, type SimCall, type TelnyxSim } from '../../test/sim/telnyx-sim.ts';
import type { TransferPlan } from './call-transfer.ts';
import { createTelnyxRest } from './telnyx-rest.ts';
import { createTelnyxTransfer } from './telnyx-transfer.ts';

const KEY = 'KEY0123456789ABCDEF_transfer';
const NUMBER = '+15551234567';
const CALLER = '+15557770001';
const DESK = '+15557770188';
const CONNECTION = '1293384261075731499';
const PUBLIC = 'https://switchboard.test';

let sim: TelnyxSim;

beforeEach(async () => {
  sim = await startTelnyxSim();
  sim.addApiKey(KEY);
  sim.addNumber(KEY, NUMBER, { connectionId: CONNECTION });
  // The service is down: every webhook (and the media stream) meets a closed port.
  sim.redirect(PUBLIC, `http://127.0.0.1:${await closedPort()}`);
});
afterEach(() => sim.close());

const transfers = () => createTelnyxTransfer({ baseUrl: sim.baseUrl, apiKey: KEY, connectionId: CONNECTION });

/** An answered call of ours (the caller's leg), and the plan of its first transfer to DESK. */
async function answeredCall(mode: 'cold' | 'warm'): Promise<{ caller: SimCall; plan: TransferPlan }> {
  const { call_control_id } = await createTelnyxRest({ baseUrl: sim.baseUrl, apiKey: KEY }).dial({
    connection_id: CONNECTION,
    to: CALLER,
    from: NUMBER,
    webhook_url: `${PUBLIC}/carrier/telnyx/events/tok`,
    client_state: 'Y2FsbF90ZXN0',
    command_id: 'dial-call_test',
    time_limit_secs: 600,
    stream_url: 'wss://switchboard.test/carrier/telnyx/media',
    stream_track: 'inbound_track',
    stream_bidirectional_mode: 'rtp',
    stream_bidirectional_codec: 'PCMU',
  });
  const caller = await sim.calls.until(() => (sim.calls.calls.get(call_control_id)?.status === 'answered' ? sim.calls.calls.get(call_control_id) : undefined));
  const plan: TransferPlan = {
    callId: 'call_test',
    attempt: 1,
    carrierCallId: call_control_id,
    from: NUMBER,
    to: DESK,
    mode,
    whisper: mode === 'warm' ? 'Dana wants a refund.' : null,
    legId: null,
    requestedAt: Date.now(),
    publicBaseUrl: PUBLIC,
    eventsToken: 'tok',
  };
  return { caller, plan };
}

const logged = (call: SimCall, name: string) => call.log.find((e) => e.name === name && e.failed !== null);

describe('check: where a transfer stands when its webhooks were lost', () => {
  it('cold, the desk rings: ringing, its leg found by client_state', async () => {
    sim.calls.setRingMs(DESK, 60_000);
    const { caller, plan } = await answeredCall('cold');
    await transfers().place(plan);
    const check = await transfers().check(plan);
    expect(check.call.status).toBe('active');
    expect(check.leg).toEqual({ state: 'ringing', legId: caller.transferLeg });
  });

  it('cold, the desk answered and was bridged: connected, at the time the carrier logged the bridge', async () => {
    sim.calls.setRingMs(DESK, 50);
    const { caller, plan } = await answeredCall('cold');
    await transfers().place(plan);
    const bridged = await sim.calls.until(() => logged(caller, 'call.bridged'));
    // Nobody heard it: the webhook failed, the log kept it.
    expect(bridged.failed).toBe(true);
    expect(caller.webhooks.find((w) => w.eventType === 'call.bridged')?.status).toBeNull();
    const check = await transfers().check(plan);
    expect(check.leg).toEqual({ state: 'connected', at: Date.parse(bridged.occurredAt) });
    expect(Math.abs(Date.parse(bridged.occurredAt) - caller.bridgedAt!)).toBeLessThan(1_000);

    // Both legs over since: still the handoff (the caller's leg is ended, the log stays).
    await sim.hangup(caller.callControlId);
    const after = await transfers().check(plan);
    expect(after.call.status).toBe('unknown');
    expect(after.leg).toEqual({ state: 'connected', at: Date.parse(bridged.occurredAt) });
  });

  it('warm, the desk answered (not yet whispered to or bridged): answered, with its leg', async () => {
    sim.calls.setRingMs(DESK, 50);
    const { plan } = await answeredCall('warm');
    const { legId } = await transfers().place(plan);
    const desk = sim.calls.calls.get(legId!)!;
    await sim.calls.until(() => logged(desk, 'call.answered'));
    expect(await transfers().check({ ...plan, legId })).toMatchObject({ leg: { state: 'answered', legId } });
  });

  it('a log the carrier refuses to show: what the records say (alive inside the ring time: ringing)', async () => {
    sim.calls.setRingMs(DESK, 50);
    const { caller, plan } = await answeredCall('cold');
    await transfers().place(plan);
    await sim.calls.until(() => logged(caller, 'call.bridged'));
    sim.fail({ match: { method: 'GET', path: /^\/v2\/call_events$/ }, status: 403, times: 10 });
    expect((await transfers().check(plan)).leg).toEqual({ state: 'ringing', legId: caller.transferLeg });
  });
});
