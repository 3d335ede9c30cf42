// The CRM sync across crashes: the service runs as a child process (as in production)
// and is killed with SIGKILL.
//   1. The CRM fails while the delivery is pending; the service dies; after the restart,
//      with the CRM healthy again, the contact gets its note exactly once.
//   2. The service dies in the one window a retry could duplicate: the CRM has stored the
//      note but its answer has not arrived. After the restart the delivery finds the note
//      at the CRM (GET /contacts/{id}/notes) and does not add a second one.
// The calls are answered by the echo engine, so there is no conversation: the post-call
// analysis records `done` without asking a model, and commits the CRM delivery with it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { remote } from './helpers/remote.ts';
import { startServiceProcess, type ServiceProcess } from './helpers/process.ts';
import { nextNumber } from './helpers/fixtures.ts';
import type { TestServer } from './helpers/server.ts';
import { callReaches, eventually, newCustomer, PUBLIC_BASE, startSims, type CallStack, type Customer } from './helpers/calls.ts';
import { closedPort } from './sim/sim-http.ts';
import { startCrmSim, type CrmSim } from './sim/crm-sim.ts';
import { makeTestCa, type TestCa } from './sim/webhook-receiver.ts';

const LOCATION = 'loc-restart';
const PIT = 'pit-restart-test';
let sims: CallStack['sims'];
let crm: CrmSim;
let ca: TestCa;
let dataDir: string;
let port: number;
let service: ServiceProcess | null = null;

/** Stops the running service, if any: the tests share one port and one data directory. */
async function stop(): Promise<void> {
  if (!service) return;
  service.child.kill('SIGTERM');
  await service.exited;
  service = null;
}

async function start(): Promise<TestServer> {
  // A test's last service is still running when the next test starts: two services on one
  // port and one database would share the callbacks and the outbox.
  await stop();
  service = await startServiceProcess({
    ...sims.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    MEDIA_ENGINE: 'echo',
    KEY_CREATION_PER_HOUR_PER_IP: '10000',
    CRM_BASE_URL: crm.baseUrl,
    // The CRM speaks HTTPS with a throwaway CA's certificate, trusted as an operator would.
    NODE_EXTRA_CA_CERTS: ca.caFile,
    // Retries every 300 ms, for longer than the CRM is failing.
    WEBHOOK_RETRY_SCHEDULE_MS: Array.from({ length: 40 }, () => '300').join(','),
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
  crm = await startCrmSim({ tokens: { [PIT]: LOCATION }, tls: { cert: ca.certPem, key: ca.keyPem } });
  sims = await startSims(40);
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-crm-restart-'));
  port = await closedPort();
  sims.twilio.route(PUBLIC_BASE, `http://127.0.0.1:${port}`);
  sims.telnyx.redirect(PUBLIC_BASE, `http://127.0.0.1:${port}`);
}, 30_000);
afterAll(async () => {
  await stop();
  await sims?.close();
  await crm?.close();
  ca?.dispose();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A customer on carrier A whose number has the CRM integration. */
async function crmCustomer(server: TestServer): Promise<Customer> {
  const c = await newCustomer({ sims, server } as CallStack, 'twilio');
  const res = await server.request('PUT', `/v1/integrations/crm/number/${enc(c.number)}`, { key: c.key, body: { pit: PIT, location_id: LOCATION } });
  expect(res.status, res.text).toBe(200);
  return c;
}

/** An inbound call from `from` that the caller hangs up; the completed record. */
async function completedCall(server: TestServer, c: Customer, from: string): Promise<any> {
  const call = await sims.twilio.placeInboundCall({ from, to: c.number });
  await callReaches(server, c.key, call.callSid, 'in-progress');
  await call.hangup();
  return callReaches(server, c.key, call.callSid, 'completed');
}

const contactOf = (phone: string) => [...crm.contacts.values()].find((x) => x.phone === phone);
const notesOf = (phone: string) => crm.notes.filter((n) => n.contactId === contactOf(phone)?.id);

async function crmDelivery(server: TestServer, c: Customer, callId: string): Promise<any> {
  const res = await server.request('GET', `/v1/webhooks/deliveries?call_id=${enc(callId)}`, { key: c.key });
  expect(res.status, res.text).toBe(200);
  return res.body.deliveries.find((d: any) => d.event === 'crm.contact_note');
}

it('a CRM delivery pending while the CRM fails survives SIGKILL and adds its note once', { timeout: 90_000 }, async () => {
  let server = await start();
  const c = await crmCustomer(server);
  const caller = nextNumber();
  // The CRM fails every request about this caller until told otherwise.
  let failing = true;
  crm.fail({ status: 500, times: 10_000, match: (r) => failing && r.body?.['phone'] === caller });
  const call = await completedCall(server, c, caller);

  await eventually(async () => ((await crmDelivery(server, c, call.call_id))?.attempts >= 2 ? true : undefined), 10_000, 'failed attempts');
  expect((await crmDelivery(server, c, call.call_id)).status).toBe('pending');
  await kill();

  failing = false;
  server = await start();
  await eventually(async () => ((await crmDelivery(server, c, call.call_id))?.status === 'delivered' ? true : undefined), 10_000, 'the delivery');
  // Whatever would repeat has had the time to.
  await sleep(1500);
  expect(notesOf(caller)).toHaveLength(1);
  expect(notesOf(caller)[0]!.body).toContain(`Inbound call ${caller} → ${c.number}`);
  expect(crm.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/notes') && r.path.includes(contactOf(caller)!.id))).toHaveLength(1);
});

it('a SIGKILL between the CRM storing the note and its answer does not add it twice', { timeout: 90_000 }, async () => {
  let server = await start();
  const c = await crmCustomer(server);
  const caller = nextNumber();
  // The note is stored at once; its answer would come 20 s later.
  crm.fail({ delayMs: 20_000, match: (r) => r.method === 'POST' && r.path.endsWith('/notes') && r.path.includes(contactOf(caller)?.id ?? '-') });
  const call = await completedCall(server, c, caller);
  await eventually(() => (notesOf(caller).length === 1 ? true : undefined), 10_000, 'the note at the CRM');
  await kill();

  server = await start();
  const d = await eventually(async () => {
    const x = await crmDelivery(server, c, call.call_id);
    return x?.status === 'delivered' ? x : undefined;
  }, 10_000, 'the delivery');
  await sleep(1500);
  expect(notesOf(caller)).toHaveLength(1);
  expect(d.attempts).toBe(2);
  const notePath = `/contacts/${contactOf(caller)!.id}/notes`;
  // One note posted before the crash; after it, a look that found it.
  expect(crm.requests.filter((r) => r.path === notePath).map((r) => r.method)).toEqual(['POST', 'GET']);
});
