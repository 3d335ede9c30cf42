// Webhook deliveries across a crash: the service runs as a child process (as in
// production) and trusts the receiver's openssl-made CA through NODE_EXTRA_CA_CERTS.
//   1. The receiver is down when a delivery is made and while the service is SIGKILLed;
//      after the restart it is delivered, exactly once, once the receiver is back.
//   2. A call connects and the service is SIGKILLed before call.started was due: the
//      intent was committed with the connect, so it is sent after the restart, once.
//   3. Started again without ALLOW_PRIVATE_NETWORK_TARGETS, a URL saved while it was on
//      (https://localhost:…) is refused where the connection is made: nothing reaches it.
import { Webhook } from 'standardwebhooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { remote } from './helpers/remote.ts';
import { startServiceProcess, type ServiceProcess } from './helpers/process.ts';
import { nextNumber } from './helpers/fixtures.ts';
import type { TestServer } from './helpers/server.ts';
import { callReaches, dial, eventually, importNumber, newCustomer, PUBLIC_BASE, startSims, type CallStack } from './helpers/calls.ts';
import { closedPort } from './sim/sim-http.ts';
import { makeTestCa, startWebhookReceiver, type ReceivedWebhook, type TestCa, type WebhookReceiver } from './sim/webhook-receiver.ts';

const STARTED_DELAY_MS = 2500;
let sims: CallStack['sims'];
let ca: TestCa;
let receiver: WebhookReceiver;
let dataDir: string;
let port: number;
let service: ServiceProcess | null = null;

async function start(env: Record<string, string> = {}): Promise<TestServer> {
  service = await startServiceProcess({
    ...sims.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    MEDIA_ENGINE: 'echo',
    KEY_CREATION_PER_HOUR_PER_IP: '10000',
    ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
    NODE_EXTRA_CA_CERTS: ca.caFile,
    CALL_STARTED_DELAY_MS: String(STARTED_DELAY_MS),
    // Retries every 300 ms, for longer than the receiver is away.
    WEBHOOK_RETRY_SCHEDULE_MS: Array.from({ length: 40 }, () => '300').join(','),
    ...env,
  });
  return remote(service.url);
}

async function kill(): Promise<void> {
  service!.child.kill('SIGKILL');
  await service!.exited;
  service = null;
}

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  sims = await startSims(40);
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-webhooks-restart-'));
  port = await closedPort();
  sims.twilio.route(PUBLIC_BASE, `http://127.0.0.1:${port}`);
  sims.telnyx.redirect(PUBLIC_BASE, `http://127.0.0.1:${port}`);
}, 30_000);
afterAll(async () => {
  if (service) {
    service.child.kill('SIGTERM');
    await service.exited;
  }
  await sims?.close();
  await receiver?.close();
  ca?.dispose();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const verifies = (secret: string, r: ReceivedWebhook): boolean => {
  try {
    new Webhook(secret).verify(r.body, r.headers);
    return true;
  } catch {
    return false;
  }
};
const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('deliveries and a pending call.started survive SIGKILL; a private address is refused at connect without the flag', { timeout: 90_000 }, async () => {
  let server = await start();
  const stack = { sims, server } as CallStack;
  const c = await newCustomer(stack, 'twilio');
  const outboxNumber = (await importNumber(stack, c.key, c.agentId, 'twilio')).number;
  const privateNumber = (await importNumber(stack, c.key, c.agentId, 'twilio')).number;
  const put = async (number: string, url: string) => {
    const res = await server.request('PUT', `/v1/integrations/webhook/number/${enc(number)}`, { key: c.key, body: { url } });
    expect(res.status, res.text).toBe(200);
  };
  await put(c.number, receiver.url('/started'));
  await put(outboxNumber, receiver.url('/outbox'));
  await put(privateNumber, receiver.url('/private', 'localhost'));
  const secret = (await server.request('GET', '/v1/webhooks/secret', { key: c.key })).body.secret as string;

  // The receiver is away: the test delivery's first attempt finds nobody, and it stays pending.
  await receiver.down();
  const test = await server.request('POST', `/v1/integrations/webhook/number/${enc(outboxNumber)}/test`, { key: c.key });
  expect(test.status, test.text).toBe(200);
  expect(test.body.deliveries[0]).toMatchObject({ status_code: null, ok: false });
  const testId = test.body.deliveries[0].delivery_id as string;

  // A call connects; the service dies before its call.started is due.
  const call = await dial(server, { key: c.key, agentId: c.agentId }, nextNumber(), { from_number: c.number });
  const live = await callReaches(server, c.key, call.call_id, 'in-progress');
  expect(Date.now() - Date.parse(live.started_at)).toBeLessThan(STARTED_DELAY_MS);
  await kill();
  expect(receiver.requests).toHaveLength(0);

  await receiver.up();
  server = await start();
  // The number's webhook also gets call.completed once the call has ended and been analysed.
  const callStarted = () => receiver.to('/started').filter((q) => JSON.parse(q.body).event === 'call.started');
  const [outboxed] = await receiver.waitFor('/outbox', 1, 15_000);
  await eventually(async () => (callStarted().length > 0 ? true : undefined), 15_000, 'call.started after the restart');
  const [started] = callStarted();
  // Whatever would repeat has had the time to.
  await sleep(1500);
  expect(receiver.to('/outbox')).toHaveLength(1);
  expect(callStarted()).toHaveLength(1);

  expect(outboxed!.headers['webhook-id']).toBe(testId);
  expect(verifies(secret, outboxed!)).toBe(true);
  expect(JSON.parse(outboxed!.body)).toMatchObject({ event: 'webhook.test', phone_number: outboxNumber });
  expect(verifies(secret, started!)).toBe(true);
  expect(JSON.parse(started!.body)).toMatchObject({ event: 'call.started', call_id: call.call_id, status: 'in-progress', started_at: live.started_at });
  expect(started!.at - Date.parse(live.started_at)).toBeGreaterThanOrEqual(STARTED_DELAY_MS - 50);

  const list = await eventually(async () => {
    const res = await server.request('GET', '/v1/webhooks/deliveries?status=delivered', { key: c.key });
    const ours = res.body.deliveries.filter((d: any) => d.event === 'webhook.test' || d.event === 'call.started');
    return ours.length === 2 ? ours : undefined;
  }, 5000, 'both delivered');
  expect(list.find((d: any) => d.delivery_id === testId).attempts).toBeGreaterThanOrEqual(2);
  expect(list.find((d: any) => d.event === 'call.started')).toMatchObject({ attempts: 1, last_status_code: 200 });

  // Without the flag, the localhost URL saved earlier is refused where the connection is made.
  service!.child.kill('SIGTERM');
  await service!.exited;
  server = await start({ ALLOW_PRIVATE_NETWORK_TARGETS: 'false' });
  const refused = await server.request('POST', `/v1/integrations/webhook/number/${enc(privateNumber)}/test`, { key: c.key });
  expect(refused.status, refused.text).toBe(200);
  expect(refused.body.deliveries[0]).toMatchObject({ url: receiver.url('/private', 'localhost'), status_code: null, ok: false, error: expect.stringContaining('loopback') });
  await sleep(500);
  expect(receiver.to('/private')).toHaveLength(0);
});
