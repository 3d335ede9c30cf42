// A campaign whose sealed prompt and recipients cannot be opened any more: created under
// one SECRETS_KEY, launched after the service was restarted with another. Retrying cannot
// help, so the campaign must not sit `running` for ever retrying its first placing: it
// ends `failed` with `campaign_launch_failed` saying why, and nobody is dialed.
import { afterAll, expect, it } from 'vitest';
import { eventually, newCustomer, startSims, type CallStack } from '../helpers/calls.ts';
import type { CarrierSims } from '../helpers/fixtures.ts';
import { serviceRig, type ServiceRig } from './support.ts';

const KEY_A = 'a'.repeat(64);
const KEY_B = 'b'.repeat(64);

let sims: CarrierSims | undefined;
let rig: ServiceRig | undefined;
afterAll(async () => {
  await rig?.close();
  await sims?.close();
});

it('a campaign sealed under another SECRETS_KEY fails at launch with campaign_launch_failed, dialing nobody', { timeout: 90_000 }, async () => {
  sims = await startSims(20);
  rig = await serviceRig(sims);
  let server = await rig.start({ SECRETS_KEY: KEY_A });
  const c = await newCustomer({ sims, server } as CallStack, 'twilio');
  const to = '+14155550142';
  const created = await server.request('POST', '/v1/calls/batch', {
    key: c.key,
    body: { agent_id: c.agentId, from_number: c.number, prompt: 'Remind them of the appointment.', recipients: [{ phone: to }], schedule_type: 'schedule', scheduled_date: '2099-01-01' },
  });
  expect(created.status, created.text).toBe(201);
  expect(created.body.status).toBe('scheduled');
  const id = created.body.campaign_id as string;

  await rig.kill();
  server = await rig.start({ SECRETS_KEY: KEY_B });
  const launched = await server.request('POST', `/v1/calls/batch/${id}/launch`, { key: c.key });
  expect(launched.status, launched.text).toBe(200);

  const record = await eventually(
    async () => {
      const r = await server.request('GET', `/v1/calls/batch/${id}`, { key: c.key });
      return r.status !== 200 || r.body.status === 'running' ? undefined : r.body;
    },
    30_000,
    'the campaign to stop running',
    250,
  );
  expect(record.status).toBe('failed');
  expect(record.failure_reason).toMatch(/^campaign_launch_failed: campaign_unreadable: .*SECRETS_KEY/);
  expect(record.pending_count + record.cancelled_count + record.failed_count).toBe(1);
  expect(sims.twilio.dialRequests(to)).toHaveLength(0);
});
