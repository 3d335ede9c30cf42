// npm start's process: starts on its defaults with an empty data folder, and on
// SIGTERM stops accepting, finishes what it had, closes the database and exits 0.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startServiceProcess } from '../helpers/process.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the service process', () => {
  it('creates its data folder, serves, and shuts down cleanly on SIGTERM', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'switchboard-proc-'));
    dirs.push(parent);
    const dataDir = join(parent, 'data');
    const svc = await startServiceProcess({ DATA_DIR: dataDir });
    const created = await fetch(`${svc.url}/v1/keys`, { method: 'POST' });
    expect(created.status).toBe(201);
    const { key_id } = (await created.json()) as { key_id: string };

    svc.child.kill('SIGTERM');
    const { code } = await svc.exited;
    expect(code).toBe(0);
    expect(svc.lines.some((l) => l.includes('"shutting down"'))).toBe(true);
    // A clean close checkpoints the WAL into the main file and removes it.
    expect(existsSync(join(dataDir, 'switchboard.db-wal'))).toBe(false);
    const db = new Database(join(dataDir, 'switchboard.db'), { readonly: true });
    expect(db.prepare('SELECT id FROM api_keys WHERE id = ?').get(key_id)).toEqual({ id: key_id });
    db.close();
    await expect(fetch(`${svc.url}/healthz`)).rejects.toThrow();
  });

  it('finishes a request in flight when SIGTERM arrives, then exits', async () => {
    const { startCarrierSims, nextNumber } = await import('../helpers/fixtures.ts');
    const { twilioSid } = await import('../sim/twilio-sim.ts');
    const sims = await startCarrierSims();
    const parent = mkdtempSync(join(tmpdir(), 'switchboard-proc-'));
    dirs.push(parent);
    try {
      const svc = await startServiceProcess({ DATA_DIR: parent, ...sims.env });
      const keyRes = (await (await fetch(`${svc.url}/v1/keys`, { method: 'POST' })).json()) as { key_id: string; key_secret: string };
      const auth = { authorization: `Bearer ${keyRes.key_id}:${keyRes.key_secret}`, 'content-type': 'application/json' };
      const agent = (await (await fetch(`${svc.url}/v1/agents`, { method: 'POST', headers: auth, body: '{}' })).json()) as { agent_id: string };
      const accountSid = twilioSid('AC');
      const phone = nextNumber();
      sims.twilio.addAccount(accountSid, 'b'.repeat(32));
      sims.twilio.addNumber(accountSid, phone);
      sims.twilio.fail({ delayMs: 800 });
      const body = JSON.stringify({ phone_number: phone, agent_id: agent.agent_id, provider: 'twilio', twilio_account_sid: accountSid, twilio_auth_token: 'b'.repeat(32) });
      const inFlight = fetch(`${svc.url}/v1/phone-numbers`, { method: 'POST', headers: auth, body });
      await new Promise((r) => setTimeout(r, 200));
      svc.child.kill('SIGTERM');
      const res = await inFlight;
      expect(res.status).toBe(201);
      expect((await svc.exited).code).toBe(0);
      const db = new Database(join(parent, 'switchboard.db'), { readonly: true });
      expect(db.prepare('SELECT phone_number FROM phone_numbers').all()).toEqual([{ phone_number: phone }]);
      db.close();
    } finally {
      await sims.close();
    }
  });

  it('refuses to start on a bad configuration and says which variable is wrong', async () => {
    await expect(startServiceProcess({ PORT: 'eighty' })).rejects.toThrow(/PORT/);
  });
});
