// `npm run admin -- add-number` through its real command line, against both carrier
// simulators over loopback, beside a running service: the number is imported with
// `source: "dashboard"` by the API's own import path (the carrier checks the credentials
// and that its account owns the number, and the number's webhooks are pointed at
// PUBLIC_BASE_URL), the running API shows it, and every refusal has its exit code and
// leaves nothing stored. Credentials never appear in the output or unsealed in the database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin, type AdminRun } from '../helpers/admin.ts';
import { createAgent, nextNumber, startCarrierSims, type CarrierSims } from '../helpers/fixtures.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { twilioSid } from '../sim/twilio-sim.ts';

const BASE = 'https://switchboard.test';

let sims: CarrierSims;
let server: TestServer;
beforeAll(async () => {
  sims = await startCarrierSims();
  server = await startTestServer(sims.env);
});
afterAll(async () => {
  await server.close();
  await sims.close();
});

/** The command with the service's carrier endpoints and PUBLIC_BASE_URL, as an operator's shell would have them. */
const admin = (args: string[], env: Record<string, string> = {}) => runAdmin(server.dataDir, args, { ...sims.env, ...env });

async function customer(): Promise<{ key: string; accountId: string; agentId: string }> {
  const { key, accountId } = await server.newAccount();
  return { key, accountId, agentId: await createAgent(server, key) };
}

function twilioAccount(): { sid: string; token: string } {
  const sid = twilioSid('AC');
  const token = twilioSid('').slice(0, 32);
  sims.twilio.addAccount(sid, token);
  return { sid, token };
}

const twilioFlags = (c: { sid: string; token: string }) => ['--provider', 'twilio', '--twilio-account-sid', c.sid, '--twilio-auth-token', c.token];

function expectNoSecret(run: AdminRun, ...secrets: string[]): void {
  for (const s of secrets) {
    expect(run.stdout).not.toContain(s);
    expect(run.stderr).not.toContain(s);
  }
}

const storedRow = (n: string) => server.storage.db.prepare('SELECT * FROM phone_numbers WHERE phone_number = ?').get(n) as Record<string, unknown> | undefined;

describe('add-number on carrier A (twilio)', () => {
  it('imports with source dashboard: the carrier’s webhooks point here and the running API shows the number', async () => {
    const c = await customer();
    const carrier = twilioAccount();
    const n = nextNumber();
    const pnSid = sims.twilio.addNumber(carrier.sid, n);
    const run = await admin(['add-number', c.accountId, c.agentId, n, ...twilioFlags(carrier)]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json()).toEqual({
      phone_number: n,
      account_id: c.accountId,
      agent_id: c.agentId,
      provider: 'twilio',
      source: 'dashboard',
      carrier_number_sid: pnSid,
      inbound_enabled: true,
      outbound_enabled: true,
      created: true,
    });
    expectNoSecret(run, carrier.token);
    const carrierSide = sims.twilio.numbers.get(pnSid)!;
    expect(carrierSide.voice_url).toBe(`${BASE}/carrier/twilio/voice`);
    expect(carrierSide.sms_url).toBe(`${BASE}/carrier/twilio/sms`);
    expect(carrierSide.status_callback).toBe(`${BASE}/carrier/twilio/status`);

    const got = await server.request('GET', `/v1/phone-numbers/${encodeURIComponent(n)}`, { key: c.key });
    expect(got.status).toBe(200);
    expect(got.body.phone_number).toMatchObject({ phone_number: n, agent_id: c.agentId, provider: 'twilio', source: 'dashboard', carrier_number_sid: pnSid });
    // Sealed with the service's key: the service opens them (it is what carrier webhooks are checked with).
    const row = storedRow(n)!;
    expect((row['credentials'] as Buffer).toString('latin1')).not.toContain(carrier.token);
    expect(server.storage.numbers.openCredentials(row as never)).toEqual({ provider: 'twilio', account_sid: carrier.sid, auth_token: carrier.token });

    // Again onto the same agent: the credentials are replaced, the number kept.
    const again = await admin(['add-number', c.accountId, c.agentId, n, ...twilioFlags(carrier)]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.json()).toMatchObject({ phone_number: n, source: 'dashboard', created: false });
  });

  it('refuses what the carrier refuses (exit 1) and stores nothing', async () => {
    const c = await customer();
    const carrier = twilioAccount();
    const n = nextNumber();
    sims.twilio.addNumber(carrier.sid, n);
    const wrongToken = await admin(['add-number', c.accountId, c.agentId, n, ...twilioFlags({ sid: carrier.sid, token: 'f'.repeat(32) })]);
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toMatch(/add-number: the carrier refused the import: twilio rejected the credentials \(HTTP 401\)/);
    const notOwned = await admin(['add-number', c.accountId, c.agentId, nextNumber(), ...twilioFlags(carrier)]);
    expect(notOwned.code).toBe(1);
    expect(notOwned.stderr).toMatch(/does not own the number/);
    expect(storedRow(n)).toBeUndefined();
  });

  it('refuses a missing account or agent, and a number another account holds (exit 1)', async () => {
    const c = await customer();
    const other = await customer();
    const carrier = twilioAccount();
    const n = nextNumber();
    sims.twilio.addNumber(carrier.sid, n);
    const noAccount = await admin(['add-number', 'acct_missing', c.agentId, n, ...twilioFlags(carrier)]);
    expect([noAccount.code, noAccount.stderr]).toEqual([1, expect.stringMatching(/no account acct_missing/)]);
    // Another account's agent is no agent of this account.
    const foreignAgent = await admin(['add-number', c.accountId, other.agentId, n, ...twilioFlags(carrier)]);
    expect([foreignAgent.code, foreignAgent.stderr]).toEqual([1, expect.stringMatching(new RegExp(`no agent ${other.agentId} on account ${c.accountId}`))]);
    expect((await admin(['add-number', other.accountId, other.agentId, n, ...twilioFlags(carrier)])).code).toBe(0);
    const taken = await admin(['add-number', c.accountId, c.agentId, n, ...twilioFlags(carrier)]);
    expect([taken.code, taken.stderr]).toEqual([1, expect.stringMatching(/already imported on another account/)]);
    expect(storedRow(n)).toMatchObject({ account_id: other.accountId });
  });

  it.each([
    [['--twilio-auth-token', 'x'], /--provider must be twilio or telnyx/],
    [['--provider', 'twilio', '--twilio-account-sid', `AC${'0'.repeat(32)}`], /--twilio-auth-token: twilio_auth_token is required/],
    [['--provider', 'twilio', '--twilio-account-sid', 'AC12', '--twilio-auth-token', 'x'], /--twilio-account-sid: twilio_account_sid is not AC followed by 32 hex/],
    [['--provider', 'twilio', '--telnyx-api-key', 'KEY1'], /--telnyx-api-key: telnyx_api_key belongs to provider 'telnyx'/],
  ])('a flag set %j is a usage error (exit 2)', async (flags, message) => {
    const c = await customer();
    const run = await admin(['add-number', c.accountId, c.agentId, nextNumber(), ...flags]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toMatch(/usage: npm run admin -- add-number <account_id> <agent_id> <phone_number>/);
  });

  it('a number that is not E.164 is a usage error (exit 2)', async () => {
    const c = await customer();
    const run = await admin(['add-number', c.accountId, c.agentId, '4155550123', ...twilioFlags(twilioAccount())]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/4155550123 is not E\.164/);
  });

  it('refuses to seal credentials with a key that is not the service’s (exit 1), and stores nothing', async () => {
    const c = await customer();
    const carrier = twilioAccount();
    const n = nextNumber();
    sims.twilio.addNumber(carrier.sid, n);
    // Something sealed with the service's key is stored already (the number above, or this one's).
    await admin(['add-number', c.accountId, c.agentId, nextNumber(), ...twilioFlags(carrier)]);
    const run = await admin(['add-number', c.accountId, c.agentId, n, ...twilioFlags(carrier)], { SECRETS_KEY: 'ab'.repeat(32) });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/the secrets key does not open the values this database holds/);
    expect(storedRow(n)).toBeUndefined();
  });
});

describe('add-number on carrier B (telnyx)', () => {
  it('imports with source dashboard: the application’s event URL carries the number’s token, and the number moves onto it', async () => {
    const c = await customer();
    const apiKey = `KEY${twilioSid('').slice(0, 32).toUpperCase()}`;
    sims.telnyx.addApiKey(apiKey);
    const connectionId = sims.telnyx.addConnection(apiKey);
    const publicKey = sims.telnyx.publicKeyOf(apiKey);
    const n = nextNumber();
    const numberId = sims.telnyx.addNumber(apiKey, n);
    const flags = ['--provider', 'telnyx', '--telnyx-api-key', apiKey, '--telnyx-connection-id', connectionId, '--telnyx-public-key', publicKey];
    const run = await admin(['add-number', c.accountId, c.agentId, n, ...flags]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json()).toMatchObject({ phone_number: n, provider: 'telnyx', source: 'dashboard', carrier_number_sid: null, created: true });
    expectNoSecret(run, apiKey);
    const token = storedRow(n)!['events_token'] as string;
    expect(token).toMatch(/^[0-9A-Za-z]{32}$/);
    expect(sims.telnyx.callControlApplications.get(connectionId)!.webhook_event_url).toBe(`${BASE}/carrier/telnyx/events/${token}`);
    expect(sims.telnyx.numbers.get(numberId)!.connection_id).toBe(connectionId);
    const got = await server.request('GET', `/v1/phone-numbers/${encodeURIComponent(n)}`, { key: c.key });
    expect(got.body.phone_number).toMatchObject({ provider: 'telnyx', source: 'dashboard' });

    const missingKey = await admin(['add-number', c.accountId, c.agentId, nextNumber(), '--provider', 'telnyx', '--telnyx-api-key', apiKey, '--telnyx-connection-id', connectionId]);
    expect(missingKey.code).toBe(2);
    expect(missingKey.stderr).toMatch(/--telnyx-public-key: telnyx_public_key is required/);
  });
});
