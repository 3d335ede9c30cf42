// The per-call prompt of a queued call survives a restart, sealed at rest, and is erased
// when the call ends (issue 7: "the per-call prompt survives a restart while the call is
// queued or live … erased when the call ends").
import { afterAll, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { callReaches, dial, newCustomer, PUBLIC_BASE, startSims, type CallStack } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { closedPort } from '../sim/sim-http.ts';

let sims: Awaited<ReturnType<typeof startSims>> | null = null;
let server: TestServer | null = null;
afterAll(async () => {
  await server?.close();
  await sims?.close();
});

const PROMPT = 'Remind Dana about the dentist on Friday at nine; her code word is bluebird.';

it('a queued call keeps its prompt across a restart, sealed, and loses it when it ends', async () => {
  sims = await startSims();
  // One port for both lives of the service: the simulated carrier calls back where it was told.
  const port = await closedPort();
  sims.twilio.route(PUBLIC_BASE, `http://127.0.0.1:${port}`);
  const boot = (dataDir?: string) =>
    startTestServer({ ...sims!.env, MEDIA_ENGINE: 'echo', PORT: String(port), ...(dataDir ? { DATA_DIR: dataDir } : {}) });
  server = await boot();
  const c = await newCustomer({ sims, server } as CallStack, 'twilio');
  // No free slot: the call waits in the queue with its prompt.
  server.storage.db.prepare('UPDATE accounts SET concurrency_limit = 0 WHERE id = ?').run(c.accountId);
  const to = nextNumber();
  sims.twilio.scenario(to, 'busy');
  const queued = await dial(server, c, to, { prompt: PROMPT });
  expect(queued.status).toBe('queued');

  const dataDir = server.dataDir;
  await server.stop();
  const file = new Database(join(dataDir, 'switchboard.db'), { readonly: true });
  const sealed = file.prepare('SELECT sealed FROM call_prompts WHERE internal_id = ?').get(queued.call_id) as { sealed: Buffer } | undefined;
  expect(sealed).toBeDefined();
  // Sealed: neither the prompt nor any of its words is stored in clear.
  expect(sealed!.sealed.includes(Buffer.from('bluebird'))).toBe(false);
  file.close();

  server = await boot(dataDir);
  const after = new Database(join(dataDir, 'switchboard.db'), { readonly: true });
  expect(after.prepare('SELECT COUNT(*) AS n FROM call_prompts WHERE internal_id = ?').get(queued.call_id)).toEqual({ n: 1 });
  // A slot frees: the call is dialed (busy at the far end) and ends; its prompt goes with it.
  server.storage.db.prepare('UPDATE accounts SET concurrency_limit = 5 WHERE id = ?').run(c.accountId);
  await callReaches(server, c.key, queued.call_id, 'busy', 10_000);
  expect(after.prepare('SELECT COUNT(*) AS n FROM call_prompts WHERE internal_id = ?').get(queued.call_id)).toEqual({ n: 0 });
  after.close();
});
