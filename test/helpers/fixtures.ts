// Setup steps many suites share, done through the public API the way a customer
// would: start the carrier simulators, create an agent, import a number.
import { startTwilioSim, twilioSid, type TwilioSim } from '../sim/twilio-sim.ts';
import { startTelnyxSim, type TelnyxSim } from '../sim/telnyx-sim.ts';
import type { TestServer } from './server.ts';

export interface CarrierSims {
  twilio: TwilioSim;
  telnyx: TelnyxSim;
  /** Environment for startTestServer that points the carrier clients at the simulators. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startCarrierSims(): Promise<CarrierSims> {
  const twilio = await startTwilioSim();
  const telnyx = await startTelnyxSim();
  return {
    twilio,
    telnyx,
    env: {
      TWILIO_API_BASE: twilio.baseUrl,
      TELNYX_API_BASE: telnyx.baseUrl,
      PUBLIC_BASE_URL: 'https://switchboard.test',
    },
    async close() {
      await Promise.all([twilio.close(), telnyx.close()]);
    },
  };
}

let numberSeq = 0;
/** A fresh valid US number per call, so suites never collide. */
export function nextNumber(): string {
  numberSeq++;
  return `+1415${String(process.pid % 1000).padStart(3, '0')}${String(numberSeq).padStart(4, '0')}`;
}

export async function createAgent(server: TestServer, key: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await server.request('POST', '/v1/agents', { key, body: { name: 'Test agent', ...body } });
  if (res.status !== 201) throw new Error(`agent creation failed: ${res.status} ${res.text}`);
  return res.body.agent_id as string;
}

/** Makes a carrier A account owning a new number in the simulator and imports it. */
export async function importTwilioNumber(
  server: TestServer,
  sims: CarrierSims,
  key: string,
  agentId: string,
  phoneNumber: string = nextNumber(),
): Promise<string> {
  const accountSid = twilioSid('AC');
  const authToken = twilioSid('').slice(0, 32);
  sims.twilio.addAccount(accountSid, authToken);
  sims.twilio.addNumber(accountSid, phoneNumber);
  const res = await server.request('POST', '/v1/phone-numbers', {
    key,
    body: { phone_number: phoneNumber, agent_id: agentId, provider: 'twilio', twilio_account_sid: accountSid, twilio_auth_token: authToken },
  });
  if (res.status !== 201) throw new Error(`number import failed: ${res.status} ${res.text}`);
  return phoneNumber;
}

/**
 * Makes a carrier B account (API key and Call Control application) owning a new number
 * in the simulator and imports it with the account's webhook public key; `messagingProfile`
 * gives the number an SMS profile too.
 */
export async function importTelnyxNumber(
  server: TestServer,
  sims: CarrierSims,
  key: string,
  agentId: string,
  phoneNumber: string = nextNumber(),
  opts: { messagingProfile?: boolean } = {},
): Promise<string> {
  const apiKey = `KEY${twilioSid('').slice(0, 32).toUpperCase()}`;
  sims.telnyx.addApiKey(apiKey);
  const connectionId = sims.telnyx.addConnection(apiKey);
  const messagingProfileId = opts.messagingProfile ? sims.telnyx.addMessagingProfile(apiKey) : undefined;
  sims.telnyx.addNumber(apiKey, phoneNumber, messagingProfileId ? { messagingProfileId } : {});
  const res = await server.request('POST', '/v1/phone-numbers', {
    key,
    body: {
      phone_number: phoneNumber,
      agent_id: agentId,
      provider: 'telnyx',
      telnyx_api_key: apiKey,
      telnyx_connection_id: connectionId,
      telnyx_public_key: sims.telnyx.publicKeyOf(apiKey),
    },
  });
  if (res.status !== 201) throw new Error(`number import failed: ${res.status} ${res.text}`);
  return phoneNumber;
}
