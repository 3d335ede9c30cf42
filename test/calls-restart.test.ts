// A crash in the middle of calls: the service runs as a child process (as in
// production) with the carrier simulators in this process; calls are queued behind a
// concurrency limit of 1 and others are on the line; the process is SIGKILLed and
// started again on the same data folder. Queued calls are then dialed exactly once, in
// order; calls that were up are reconciled with their carrier: still up there → we hang
// up and record media_lost; ended there meanwhile → the carrier's status.
import { remote } from './helpers/remote.ts';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServiceProcess, type ServiceProcess } from './helpers/process.ts';
import { nextNumber } from './helpers/fixtures.ts';
import type { TestServer } from './helpers/server.ts';
import { callReaches, dial, newCustomer, PUBLIC_BASE, startSims, type CallStack, type Customer } from './helpers/calls.ts';
import { closedPort } from './sim/sim-http.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
let sims: CallStack['sims'];
let dataDir: string;
let port: number;
let service: ServiceProcess | null = null;

async function start(): Promise<TestServer> {
  service = await startServiceProcess({ ...sims.env, DATA_DIR: dataDir, PORT: String(port), MEDIA_ENGINE: 'echo', KEY_CREATION_PER_HOUR_PER_IP: '10000' });
  return remote(service.url);
}

beforeAll(async () => {
  sims = await startSims(40);
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-restart-'));
  // The same port across restarts: the carriers keep delivering where they did.
  port = await closedPort();
  sims.twilio.route(PUBLIC_BASE, `http://127.0.0.1:${port}`);
  sims.telnyx.redirect(PUBLIC_BASE, `http://127.0.0.1:${port}`);
});
afterAll(async () => {
  if (service) {
    service.child.kill('SIGTERM');
    await service.exited;
  }
  await sims.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const twilioDials = (to: string) => sims.twilio.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/Calls.json') && r.body['To'] === to).length;

it('restores queued calls (dialed once, in order) and reconciles calls that were up', { timeout: 60_000 }, async () => {
  let server = await start();
  const stack = { sims, server } as CallStack;

  // Account A, carrier A, one slot: a call on the line and two queued behind it.
  const a: Customer = await newCustomer(stack, 'twilio');
  const admin = spawnSync(process.execPath, ['--import', 'tsx', 'admin.ts', 'set-plan', a.accountId, 'enterprise', '1'], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  expect(admin.status, admin.stderr).toBe(0);
  // The service re-reads a plan changed by another process within a second.
  await new Promise((r) => setTimeout(r, 1100));
  const a1 = await dial(server, a, nextNumber());
  await callReaches(server, a.key, a1.call_id, 'in-progress');
  const [toA2, toA3] = [nextNumber(), nextNumber()];
  const a2 = await dial(server, a, toA2);
  const a3 = await dial(server, a, toA3);
  expect([a2.status, a3.status]).toEqual(['queued', 'queued']);

  // Carrier B calls on the line: one the far end ends while we are down, one it keeps up.
  const b: Customer = await newCustomer(stack, 'telnyx');
  const endsWhileDown = await dial(server, b, nextNumber());
  const staysUp = await dial(server, b, nextNumber());
  for (const id of [endsWhileDown.call_id, staysUp.call_id]) await callReaches(server, b.key, id, 'in-progress');
  // A carrier A call still ringing, that nobody will answer.
  const d: Customer = await newCustomer(stack, 'twilio');
  const toD = nextNumber();
  sims.twilio.scenario(toD, { name: 'no-answer', ringMs: 1500 });
  const unanswered = await dial(server, d, toD);
  await callReaches(server, d.key, unanswered.call_id, 'ringing');

  service!.child.kill('SIGKILL');
  await service!.exited;
  service = null;
  expect(twilioDials(toA2) + twilioDials(toA3)).toBe(0);
  await sims.telnyx.hangup(endsWhileDown.call_id);
  // Carrier A ends a call whose stream died (<Connect><Stream> was its last verb); the other rings out.
  expect(await sims.twilio.calls.get(a1.call_id)!.ended).toBe('completed');
  expect(await sims.twilio.calls.get(unanswered.call_id)!.ended).toBe('no-answer');
  expect(sims.telnyx.calls.calls.get(staysUp.call_id)!.status).toBe('answered');

  server = await start();
  // Still up at the carrier: hung up by us, and honest about why.
  const lost = await callReaches(server, b.key, staysUp.call_id, 'completed');
  expect(lost.ended_reason).toBe('media_lost');
  const hungUp = await sims.telnyx.call(staysUp.call_id).waitFor('ended');
  expect(hungUp.commands.map((c) => c.action)).toContain('hangup');
  // Ended at carrier A meanwhile: the carrier's status.
  expect(await callReaches(server, a.key, a1.call_id, 'completed')).toMatchObject({ ended_reason: 'callee_hangup' });
  expect(await callReaches(server, d.key, unanswered.call_id, 'no-answer')).toMatchObject({ ended_reason: 'no-answer', started_at: null });
  // Carrier B's call record names no cause: a connected call that ended meanwhile is completed, media_lost.
  expect(await callReaches(server, b.key, endsWhileDown.call_id, 'completed')).toMatchObject({ ended_reason: 'media_lost' });

  // The slot freed: the oldest queued call is dialed, once; the other waits its turn.
  await callReaches(server, a.key, a2.call_id, 'in-progress');
  expect((await server.request('GET', `/v1/calls/${a3.call_id}`, { key: a.key })).body.call_status).toBe('queued');
  expect([twilioDials(toA2), twilioDials(toA3)]).toEqual([1, 0]);
  const a2Sid = [...sims.twilio.calls.values()].find((c) => c.to === toA2)!.sid;
  await sims.twilio.hangup(a2Sid);
  await callReaches(server, a.key, a2.call_id, 'completed');
  await callReaches(server, a.key, a3.call_id, 'in-progress');
  const a3Sid = [...sims.twilio.calls.values()].find((c) => c.to === toA3)!.sid;
  await sims.twilio.hangup(a3Sid);
  await callReaches(server, a.key, a3.call_id, 'completed');
  expect([twilioDials(toA2), twilioDials(toA3)]).toEqual([1, 1]);
  expect((await server.request('GET', '/readyz')).status).toBe(200);
});
