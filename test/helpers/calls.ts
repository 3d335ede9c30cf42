// What the call suites share: the carrier simulators wired to a real server (webhooks
// and media streams reach it over loopback), a customer with an agent and a number on
// either carrier (carrier B with its signing key), and polling for a call's state.
import { expect } from 'vitest';
import { createAgent, nextNumber, type CarrierSims } from './fixtures.ts';
import { startTestServer, type TestResponse, type TestServer } from './server.ts';
import type { StartOptions } from '../../server.ts';
import { startTwilioSim, twilioSid } from '../sim/twilio-sim.ts';
import { startTelnyxSim } from '../sim/telnyx-sim.ts';

export const PUBLIC_BASE = 'https://switchboard.test';
export type Provider = 'twilio' | 'telnyx';

export interface CallStack {
  sims: CarrierSims;
  server: TestServer;
  close(): Promise<void>;
}

/** How the simulators are set up beyond their timing. */
export interface SimOptions {
  /** Carrier B serves recordings over https with this certificate (the service must trust its CA and allow private targets). */
  telnyxRecordingTls?: { cert: string; key: string };
  /** The simulators' clock (the times of their record), when the test moves the server's clock too. */
  now?: () => number;
}

/** Both simulators; `stepMs` is the pause between the steps of a call (ringing, answer, …). */
export async function startSims(stepMs = 60, opts: SimOptions = {}): Promise<CarrierSims> {
  const now = opts.now ? { now: opts.now } : {};
  const twilio = await startTwilioSim({ stepMs, ...now });
  const telnyx = await startTelnyxSim(undefined, { stepMs, ...now, ...(opts.telnyxRecordingTls ? { recordingTls: opts.telnyxRecordingTls } : {}) });
  return {
    twilio,
    telnyx,
    env: { TWILIO_API_BASE: twilio.baseUrl, TELNYX_API_BASE: telnyx.baseUrl, PUBLIC_BASE_URL: PUBLIC_BASE },
    async close() {
      await Promise.all([twilio.close(), telnyx.close()]);
    },
  };
}

/** Simulators, then a server pointed at them, then the simulators pointed back at the server. */
export async function startCallStack(env: Record<string, string> = {}, stepMs?: number, opts: StartOptions = {}, simOpts: SimOptions = {}): Promise<CallStack> {
  const sims = await startSims(stepMs, simOpts);
  const server = await startTestServer({ ...sims.env, MEDIA_ENGINE: 'echo', ...env }, opts);
  sims.twilio.route(PUBLIC_BASE, server.url);
  sims.telnyx.redirect(PUBLIC_BASE, server.url);
  return {
    sims,
    server,
    async close() {
      await sims.close();
      await server.close();
    },
  };
}

export interface Customer {
  key: string;
  accountId: string;
  agentId: string;
  number: string;
  provider: Provider;
  /** Carrier A account sid, or carrier B API key: what the simulator knows the account by. */
  carrierAccount: string;
  /** Carrier A auth token, or carrier B public key. */
  carrierSecret: string;
}

/** Imports a fresh number on `agentId` for the customer's account; returns its carrier account. */
export async function importNumber(
  stack: CallStack,
  key: string,
  agentId: string,
  provider: Provider,
  extra: Record<string, unknown> = {},
): Promise<{ number: string; carrierAccount: string; carrierSecret: string }> {
  const { sims, server } = stack;
  const number = nextNumber();
  let body: Record<string, unknown>;
  let carrierAccount: string;
  let carrierSecret: string;
  if (provider === 'twilio') {
    carrierAccount = twilioSid('AC');
    carrierSecret = twilioSid('').slice(0, 32);
    sims.twilio.addAccount(carrierAccount, carrierSecret);
    sims.twilio.addNumber(carrierAccount, number);
    body = { provider, twilio_account_sid: carrierAccount, twilio_auth_token: carrierSecret };
  } else {
    carrierAccount = `KEY${twilioSid('').slice(0, 32).toUpperCase()}`;
    sims.telnyx.addApiKey(carrierAccount);
    const connectionId = sims.telnyx.addConnection(carrierAccount);
    // With a messaging profile, as a number that texts needs (the import points its webhook here too).
    sims.telnyx.addNumber(carrierAccount, number, { messagingProfileId: `profile-${number.slice(1)}` });
    carrierSecret = sims.telnyx.publicKeyOf(carrierAccount);
    body = { provider, telnyx_api_key: carrierAccount, telnyx_connection_id: connectionId, telnyx_public_key: carrierSecret };
  }
  const res = await server.request('POST', '/v1/phone-numbers', { key, body: { phone_number: number, agent_id: agentId, ...body, ...extra } });
  if (res.status !== 201) throw new Error(`number import failed: ${res.status} ${res.text}`);
  return { number, carrierAccount, carrierSecret };
}

export async function newCustomer(stack: CallStack, provider: Provider, agent: Record<string, unknown> = {}): Promise<Customer> {
  const { key, accountId } = await stack.server.newAccount();
  const agentId = await createAgent(stack.server, key, agent);
  const n = await importNumber(stack, key, agentId, provider);
  return { key, accountId, agentId, provider, ...n };
}

/** Retries `probe` until it returns something other than undefined. */
export async function eventually<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 8000, what = 'condition', intervalMs = 25): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * How often the helpers below poll the API: under the default read limit (600 a minute
 * per key), so a long wait is not itself throttled. Polling every 25 ms, a minute-long
 * wait spent most of its second half answered 429 and saw the change up to 40 s late.
 */
export const API_POLL_MS = 150;

export const getCall = (server: TestServer, key: string, id: string): Promise<TestResponse> =>
  server.request('GET', `/v1/calls/${encodeURIComponent(id)}`, { key });

/** Polls GET /v1/calls/{id} until call_status is `status`; returns the record. */
export async function callReaches(server: TestServer, key: string, id: string, status: string | ((s: string) => boolean), timeoutMs = 8000): Promise<any> {
  const want = typeof status === 'string' ? (s: string) => s === status : status;
  let last = '';
  try {
    return await eventually(async () => {
      const res = await getCall(server, key, id);
      last = res.text;
      return res.status === 200 && want(res.body.call_status) ? res.body : undefined;
    }, timeoutMs, `call ${id}`, API_POLL_MS);
  } catch (err) {
    throw new Error(`${(err as Error).message}; last answer: ${last}`);
  }
}

export const FINAL = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
export const isFinal = (s: string): boolean => FINAL.includes(s);

/** Places an outbound call and expects 201. */
export async function dial(server: TestServer, c: Pick<Customer, 'key' | 'agentId'>, to: string, extra: Record<string, unknown> = {}): Promise<any> {
  const res = await server.request('POST', '/v1/calls/outbound', { key: c.key, body: { agent_id: c.agentId, to_number: to, prompt: 'Confirm the appointment.', ...extra } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** Counts rows of every table of the service's database. */
export function rowCounts(server: TestServer): Record<string, number> {
  const db = server.storage.db;
  const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all();
  const out: Record<string, number> = {};
  for (const { name } of tables) out[name] = (db.prepare(`SELECT COUNT(*) AS n FROM "${name}"`).get() as { n: number }).n;
  return out;
}

/** Reads one gauge or counter line of GET /metrics. */
export async function metric(server: TestServer, name: string): Promise<number> {
  const res = await server.request('GET', '/metrics');
  const line = res.text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.slice(name.length + 1));
}
