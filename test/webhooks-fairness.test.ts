// One account's slow endpoints never delay another account's work (issue 18, point 4).
// A tarpit on loopback accepts connections and never answers (a TLS handshake that never
// completes), the worst a customer's URL can do until the attempt's timeout. First end to
// end: account A's calls send call.started to the tarpit, and account B's call.started
// must still arrive on time. Then the outbox itself: an account's carrier recording
// fetches stuck against a tarpit must not hold up that same account's events, because
// recordings go in a lane of their own.
import { createServer, type Server, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextNumber } from './helpers/fixtures.ts';
import { callReaches, dial, newCustomer, startCallStack, type CallStack } from './helpers/calls.ts';
import { agentTrusting, makeTestCa, startWebhookReceiver, type TestCa, type WebhookReceiver } from './sim/webhook-receiver.ts';
import { openDatabase } from '../storage/db.ts';
import { createStorage } from '../storage/index.ts';
import { createSecretBox } from '../storage/secret-box.ts';
import { createWebhookOutbox } from '../actors/outbox/webhook-outbox.ts';

const STARTED_DELAY_MS = 300;
/** Long, so that a slot held by the tarpit stays held for the whole test. */
const TIMEOUT_MS = 25_000;

let ca: TestCa;
let receiver: WebhookReceiver;
let tarpit: Server;
let tarpitPort = 0;
const held = new Set<Socket>();
let tarpitConnections = 0;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  tarpit = createServer((socket) => {
    tarpitConnections++;
    held.add(socket);
    socket.on('close', () => held.delete(socket));
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => tarpit.listen(0, '127.0.0.1', r));
  tarpitPort = (tarpit.address() as { port: number }).port;
});
afterAll(async () => {
  for (const s of held) s.destroy();
  await new Promise((r) => tarpit?.close(r));
  await receiver?.close();
  ca?.dispose();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = async (what: string, ok: () => boolean, timeoutMs: number) => {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
};

describe('call.started of one account beside another account’s hanging endpoint', () => {
  let stack: CallStack;
  beforeAll(async () => {
    stack = await startCallStack(
      { ALLOW_PRIVATE_NETWORK_TARGETS: 'true', CALL_STARTED_DELAY_MS: String(STARTED_DELAY_MS), WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) },
      undefined,
      { webhookAgent: agentTrusting(ca) },
    );
  }, 30_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('arrives within a second of when it is due while ten deliveries of the other account hang', async () => {
    const a = await newCustomer(stack, 'twilio');
    const put = await stack.server.request('PUT', `/v1/integrations/webhook/number/${encodeURIComponent(a.number)}`, { key: a.key, body: { url: `https://127.0.0.1:${tarpitPort}/hook` } });
    expect(put.status, put.text).toBe(200);
    const before = tarpitConnections;
    // Ten calls of account A: each call.started goes to the tarpit and hangs there.
    const calls = await Promise.all(Array.from({ length: 10 }, () => dial(stack.server, a, nextNumber())));
    await Promise.all(calls.map((c) => callReaches(stack.server, a.key, c.call_id, 'in-progress')));
    // Account A's deliveries are out and stuck (as many as it is let have).
    await until('account A’s deliveries to reach the tarpit', () => tarpitConnections - before >= 4, 15_000);
    await sleep(500);

    const b = await newCustomer(stack, 'twilio');
    const path = '/fair/b';
    const putB = await stack.server.request('PUT', `/v1/integrations/webhook/number/${encodeURIComponent(b.number)}`, { key: b.key, body: { url: receiver.url(path) } });
    expect(putB.status, putB.text).toBe(200);
    const call = await dial(stack.server, b, nextNumber());
    const live = await callReaches(stack.server, b.key, call.call_id, 'in-progress');
    const [got] = await receiver.waitFor(path, 1, 20_000);
    const due = Date.parse(live.started_at) + STARTED_DELAY_MS;
    expect(got!.at - due).toBeLessThan(1000);
  }, 60_000);
});

describe('an account’s recording fetches beside its own events', () => {
  it('a webhook goes out at once while ten carrier recording downloads hang', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'outbox-lanes-'));
    const db = openDatabase(join(dir, 'switchboard.db'));
    const storage = createStorage(db, createSecretBox(Buffer.alloc(32, 3)));
    const now = Date.now();
    const accountId = 'acct_lanes';
    db.prepare('INSERT INTO accounts (id, plan, concurrency_limit, created_at) VALUES (?, ?, ?, ?)').run(accountId, 'payg', 10, now);
    const outbox = createWebhookOutbox({
      storage,
      clock: Date.now,
      log: pino({ level: 'silent' }),
      allowPrivate: true,
      timeoutMs: TIMEOUT_MS,
      schedule: [60_000],
      agent: agentTrusting(ca),
      publicBaseUrl: 'https://switchboard.test',
      recordingSources: { twilioApiBase: 'https://api.twilio.com', allowPrivate: true },
    });
    try {
      // Ten finished carrier B calls that asked their carrier to record; each link is the tarpit.
      for (let i = 0; i < 10; i++) {
        const internalId = `call_lanes${i}`;
        storage.calls.save({
          internalId, callId: internalId, accountId, agentId: null, direction: 'inbound', callStatus: 'completed',
          fromNumber: '+14155550100', toNumber: '+14155550101', phoneNumber: '+14155550101', provider: 'telnyx', carrierCallId: `v3:lanes${i}`,
          startedAt: now - 60_000, endedAt: now, durationMs: 60_000, endedReason: 'completed', chargedMinutes: 1, campaignId: null,
          voicemailDetected: false, transcript: null, avgLatencyMs: null, createdAt: now - 60_000, updatedAt: now,
        });
        storage.recordings.requested(accountId, internalId, now);
        storage.webhookDeliveries.enqueue({
          accountId, callId: internalId, event: 'recording.fetch', urls: [`https://127.0.0.1:${tarpitPort}/bucket/${i}.mp3`],
          payload: { internal_id: internalId, provider: 'telnyx', duration_seconds: 60 }, now, kind: 'recording',
        });
      }
      const before = tarpitConnections;
      outbox.start();
      await until('a recording download to reach the tarpit', () => tarpitConnections > before, 10_000);
      await sleep(500);

      const path = '/lanes/started';
      const enqueuedAt = Date.now();
      storage.webhookDeliveries.enqueue({ accountId, callId: 'call_lanes0', event: 'call.started', urls: [receiver.url(path)], payload: { event: 'call.started' }, now: enqueuedAt });
      const [got] = await receiver.waitFor(path, 1, 20_000);
      expect(got!.at - enqueuedAt).toBeLessThan(1000);
    } finally {
      await outbox.stop();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 40_000);
});
