// The operator's admin command changes an account's plan in the data folder of a
// running service; the API shows the new plan and limit within a second or so.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const admin = (dataDir: string, ...args: string[]) =>
  run(process.execPath, ['--import', 'tsx', 'admin.ts', ...args], { cwd: root, env: { ...process.env, DATA_DIR: dataDir } });

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('npm run admin', () => {
  it('sets a plan and the running service reports it', async () => {
    const a = await server.newAccount();
    await server.request('GET', '/v1/account', { key: a.key });
    const out = await admin(server.dataDir, 'set-plan', a.accountId, 'scale');
    expect(JSON.parse(out.stdout)).toEqual({ account_id: a.accountId, plan: 'scale', concurrency_limit: 100 });
    const deadline = Date.now() + 3000;
    let body: { plan?: string; concurrency_limit?: number } = {};
    while (Date.now() < deadline) {
      body = (await server.request('GET', '/v1/account', { key: a.key })).body;
      if (body.plan === 'scale') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(body).toMatchObject({ plan: 'scale', concurrency_limit: 100 });
  });

  it('takes an explicit limit for enterprise and refuses one without', async () => {
    const a = await server.newAccount();
    const out = await admin(server.dataDir, 'set-plan', a.accountId, 'enterprise', '250');
    expect(JSON.parse(out.stdout)).toMatchObject({ plan: 'enterprise', concurrency_limit: 250 });
    await expect(admin(server.dataDir, 'set-plan', a.accountId, 'enterprise')).rejects.toThrow(/concurrency limit/);
    await expect(admin(server.dataDir, 'set-plan', 'acct_missing', 'starter')).rejects.toThrow(/no account/);
    await expect(admin(server.dataDir, 'set-plan', a.accountId, 'gold')).rejects.toThrow(/usage/);
  });
});
