// Batch campaigns end to end (issue 20): the real server over HTTP with both carriers'
// simulators. A campaign's recipients become calls placed by the calls kind, each exactly
// once, never more than max_concurrent at a time (the simulator's record is the judge),
// counted as they end; a cancel stops new dials and lets placed calls finish.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, metric, newCustomer, startCallStack, type CallStack, type Customer, type Provider } from './helpers/calls.ts';
import { campaignLegs, peakConcurrent } from './helpers/campaigns.ts';

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack();
}, 30_000);
afterAll(async () => {
  await stack?.close();
});

let seq = 0;
/** A number libphonenumber-js takes for real (the 555 exchange of San Francisco), unique in this process. */
const recipientNumber = (): string => `+1415555${String(1000 + (++seq % 9000)).padStart(4, '0')}`;

async function createBatch(c: Customer, body: Record<string, unknown>) {
  return stack.server.request('POST', '/v1/calls/batch', { key: c.key, body: { agent_id: c.agentId, from_number: c.number, prompt: 'Remind them of tomorrow’s appointment.', ...body } });
}
const getBatch = (c: Customer, id: string) => stack.server.request('GET', `/v1/calls/batch/${id}`, { key: c.key });

describe.each<Provider>(['twilio', 'telnyx'])('a campaign on carrier %s', (provider) => {
  it('calls every recipient exactly once, at most max_concurrent at a time, and completes with counts that add up', async () => {
    const c = await newCustomer(stack, provider);
    const numbers = Array.from({ length: 6 }, recipientNumber);
    // Every far end is busy: each call ends at once as failed, so the campaign moves quickly.
    for (const n of numbers) (provider === 'twilio' ? stack.sims.twilio.scenario(n, 'busy') : stack.sims.telnyx.setScenario(n, 'busy'));
    const res = await createBatch(c, { recipients: numbers.map((phone) => ({ phone, variables: { first_name: 'Dana' } })), max_concurrent: 2 });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ status: 'running', valid_count: 6, invalid_count: 0, invalid: [] });
    const id = res.body.campaign_id as string;
    expect(id).toMatch(/^batch_/);

    const done = await eventually(async () => {
      const r = await getBatch(c, id);
      return r.body.status === 'completed' ? r.body : undefined;
    }, 30_000, 'the campaign to complete');
    expect(done).toMatchObject({ valid_count: 6, pending_count: 0, in_progress_count: 0, failed_count: 6, completed_count: 0, cancelled_count: 0 });
    expect(done.started_at).not.toBeNull();
    expect(done.completed_at).not.toBeNull();

    // /metrics counts it among the finished campaigns, and its calls among those placed and ended.
    expect(await metric(stack.server, 'switchboard_campaigns_finished_total{status="completed"}')).toBeGreaterThanOrEqual(provider === 'twilio' ? 1 : 2);
    expect(await metric(stack.server, 'switchboard_campaign_calls_placed_total')).toBeGreaterThanOrEqual(provider === 'twilio' ? 6 : 12);
    expect(await metric(stack.server, 'switchboard_campaign_calls_ended_total')).toBeGreaterThanOrEqual(provider === 'twilio' ? 6 : 12);

    const calls = campaignLegs(stack, provider, numbers);
    expect(calls.map((x) => x.to).sort()).toEqual([...numbers].sort());
    expect(peakConcurrent(calls)).toBeLessThanOrEqual(2);
    const listed = await stack.server.request('GET', `/v1/calls?campaign_id=${id}&limit=100`, { key: c.key });
    expect(listed.body.count).toBe(6);
    for (const call of listed.body.calls) {
      const record = await stack.server.request('GET', `/v1/calls/${encodeURIComponent(call.call_id)}`, { key: c.key });
      expect(record.body.campaign_id).toBe(id);
    }
  }, 60_000);
});

describe('a campaign in the live machine view', () => {
  it('is listed beside calls with its state and counters, never a recipient’s number', async () => {
    const c = await newCustomer(stack, 'twilio');
    const numbers = Array.from({ length: 3 }, recipientNumber);
    // Scheduled far ahead: it stays live, waiting, with nothing placed.
    const res = await createBatch(c, { recipients: numbers.map((phone) => ({ phone })), schedule_type: 'schedule', scheduled_date: '2099-01-01', max_concurrent: 2 });
    expect(res.status, res.text).toBe(201);
    const id = res.body.campaign_id as string;
    const list = await stack.server.request('GET', '/v1/debug/actors', { key: c.key });
    expect(list.status).toBe(200);
    const entry = list.body.actors.find((a: { id: string }) => a.id === id);
    expect(entry).toMatchObject({ kind: 'campaign', value: 'scheduled', status: 'active', counters: { total: 3, waiting: 3, placing: 0, placed: 0, ended: 0, in_use: 0, max_concurrent: 2 } });
    for (const n of numbers) expect(list.text).not.toContain(n.slice(2));
    // Cancelled, it leaves the list (the view holds live actors).
    expect((await stack.server.request('DELETE', `/v1/calls/batch/${id}`, { key: c.key })).status).toBe(200);
    const after = await stack.server.request('GET', '/v1/debug/actors', { key: c.key });
    expect(after.body.actors.find((a: { id: string }) => a.id === id)).toBeUndefined();
  }, 30_000);
});
