// What the benches set up alike on the bench server (server.ts, forked): the port it
// reports once it listens, and the customer the outbound and batch benches call as: an
// API key, a plan whose concurrency limit is the bench's (raised with the admin command,
// as an operator would: no API sets it), an agent and one carrier A number.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createAgent, importTwilioNumber, type CarrierSims } from '../test/helpers/fixtures.ts';
import type { TestServer } from '../test/helpers/server.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The port the bench server reports over IPC once it listens; rejects if it exits first. */
export function benchServerPort(child: ChildProcess): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code} before listening`)));
  });
}

export interface BenchCustomer {
  key: string;
  accountId: string;
  agentId: string;
  /** Its carrier A number, on the agent. */
  fromNumber: string;
}

/** A new account on the `enterprise` plan with `limit` concurrent calls (checked through the API once the service has re-read it), an agent and a number. */
export async function benchCustomer(server: TestServer, sims: CarrierSims, dataDir: string, limit: number): Promise<BenchCustomer> {
  const created = await server.request('POST', '/v1/keys');
  if (created.status !== 201) throw new Error(`key creation failed: ${created.status} ${created.text}`);
  const key = `${created.body.key_id}:${created.body.key_secret}`;
  const accountId = created.body.account_id as string;
  const admin = spawnSync(process.execPath, ['--import', 'tsx', 'admin.ts', 'set-plan', accountId, 'enterprise', String(limit)], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  if (admin.status !== 0) throw new Error(`admin set-plan failed: ${admin.stderr}`);
  const agentId = await createAgent(server, key, { name: 'Bench agent' });
  const fromNumber = await importTwilioNumber(server, sims, key, agentId);
  // The service re-reads a plan changed by another process within a second.
  await new Promise((r) => setTimeout(r, 1100));
  const account = await server.request('GET', '/v1/account', { key });
  if (account.body?.concurrency_limit !== limit) throw new Error(`the account's limit is ${account.body?.concurrency_limit}, not ${limit}`);
  return { key, accountId, agentId, fromNumber };
}
