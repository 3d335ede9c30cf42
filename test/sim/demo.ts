// `npm run demo`: the whole service on one machine with nothing but `npm ci`. It starts
// the carrier and provider simulators of `npm run sim` (local-sims.ts), a webhook
// receiver (HTTPS on loopback, with a certificate made for this run) and the real
// service (startSwitchboard) in this one process, all on 127.0.0.1; then, through the
// public API, it creates a key, an agent and a number (imported on simulated carrier A),
// points the number's webhook at the receiver and places an outbound call. The
// simulated callee speaks two recorded sentences; the simulated model answers and ends
// the call. Printed, labelled as a simulation: the transcript, the post-call analysis and
// the signed `call.completed` as the receiver got it, its signature checked with the
// account's webhook secret. The service then stays up (Ctrl-C stops everything) with
// the key printed for the browser pages.
//
// Ports: DEMO_PORT (the service, 8080), DEMO_WEBHOOK_PORT (4017) and the simulators'
// SIM_*_PORT of `npm run sim` (4010 to 4016); each is checked before anything starts.
// DATA_DIR is a new temporary directory unless DEMO_DATA_DIR is set; the service's log
// goes to switchboard.log there. The service runs with ALLOW_PRIVATE_NETWORK_TARGETS=true
// so it may deliver webhooks to the receiver on loopback.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { Agent as HttpsAgent } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../config.ts';
import { REDACT_PATHS, startSwitchboard } from '../../server.ts';
import { LOCAL, localModelReply, localSimPorts, portNumbers, startLocalSims } from './local-sims.ts';
import type { ChatCompletionBody, LlmSimReply } from './llm-sim.ts';
import { makeTestCa, startWebhookReceiver, type ReceivedWebhook } from './webhook-receiver.ts';
import { speechFixture, type SpeechFixtureSlug } from '../fixtures/speech/speech.ts';

const env = process.env;
const NUMBER = LOCAL.twilio.numbers[0]!;
const CALLEE = '+14155550199';
const HOOK_PATH = '/switchboard-events';

function fail(message: string): never {
  console.error(`\nnpm run demo: ${message}`);
  process.exit(1);
}

// 1. Every port, checked before anything starts.
const sims = localSimPorts();
const wanted = [
  { what: 'the service', variable: 'DEMO_PORT', port: Number(env['DEMO_PORT'] ?? 8080) },
  { what: 'the webhook receiver', variable: 'DEMO_WEBHOOK_PORT', port: Number(env['DEMO_WEBHOOK_PORT'] ?? 4017) },
  ...Object.entries(sims).map(([name, s]) => ({ what: `the ${name} simulator`, ...s })),
];
for (const w of wanted) {
  if (!Number.isInteger(w.port) || w.port < 0 || w.port > 65535) fail(`${w.variable}=${env[w.variable]} is not a port number (0 to 65535; 0 picks a free one).`);
  const twin = wanted.find((o) => o !== w && o.port === w.port && w.port !== 0);
  if (twin) fail(`${w.variable} and ${twin.variable} are both port ${w.port}; give each its own.`);
}
function portProblem(port: number): Promise<string | null> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'EADDRINUSE' ? 'is already in use' : `cannot be used (${err.code ?? err.message})`));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => done(null)));
  });
}
for (const w of wanted) {
  if (w.port === 0) continue;
  const problem = await portProblem(w.port);
  if (problem) fail(`port ${w.port} (${w.what}, ${w.variable}) ${problem}. Stop what is using it, or run with another one: ${w.variable}=<port> npm run demo`);
}
if (wanted[0]!.port === 0) {
  // The service's URL must be known before it starts (PUBLIC_BASE_URL): take a free port now.
  wanted[0]!.port = await new Promise<number>((done) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });
}
const port = wanted[0]!.port;
const baseUrl = `http://127.0.0.1:${port}`;
const dataDir = env['DEMO_DATA_DIR'] ? resolve(env['DEMO_DATA_DIR']) : mkdtempSync(join(tmpdir(), 'switchboard-demo-'));
mkdirSync(dataDir, { recursive: true });

// 2. The simulated model: the shared one, with a booking answer and an analysis that
// reads the booking back out of the transcript by rules (no model anywhere).
const WORD_NUMBERS: Record<string, number> = { one: 1, two: 2, three: 3, four: 4, five: 5, six: 6 };
function demoModel(body: ChatCompletionBody): LlmSimReply {
  const reply = localModelReply(body);
  const format = body.response_format as { json_schema?: { name?: string } } | undefined;
  if (format?.json_schema?.name === 'call_analysis') {
    const analysis = JSON.parse(reply.text!) as Record<string, unknown>;
    const transcript = body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
    const booking = /table for (\w+) (\w+(?: evening| morning| afternoon)?)/i.exec(transcript);
    if (booking) {
      analysis['summary'] = `The caller booked a table for ${booking[1]} ${booking[2]}; the agent confirmed it and the caller said goodbye.`;
      analysis['extracted'] = { party_size: WORD_NUMBERS[booking[1]!.toLowerCase()] ?? null, when: booking[2] };
    }
    return { text: JSON.stringify(analysis) };
  }
  if (!format && body.stream) {
    const last = [...body.messages].reverse().find((m) => m.role === 'user');
    const words = typeof last?.content === 'string' ? last.content : '';
    if (/book a table/i.test(words)) return { text: 'Of course. A table for two, tomorrow evening: it is booked. Anything else?' };
    if (/saturday/i.test(words)) return { text: 'On Saturdays we open at noon.' };
  }
  return reply;
}

// 3. The simulators, the receiver and the service.
// A browser's speech (the playground) is heard as these, in turn: the recogniser is simulated too.
const HEARD_AS = (['book-table', 'saturday-hours', 'thank-you-goodbye'] as const).map((slug) => speechFixture(slug).text);
const local = await startLocalSims(portNumbers(sims), { respond: demoModel, heardAs: HEARD_AS });
let ca: ReturnType<typeof makeTestCa>;
try {
  ca = makeTestCa();
} catch (err) {
  fail(`could not make the webhook receiver's certificate with openssl (is it installed?): ${err instanceof Error ? err.message : String(err)}`);
}
const receiver = await startWebhookReceiver(ca, wanted[1]!.port);
const logFile = join(dataDir, 'switchboard.log');
const log = pino({ level: env['LOG_LEVEL'] ?? 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { service: 'switchboard' } }, pino.destination({ dest: logFile, sync: false }));
const config = loadConfig({
  PORT: String(port),
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  PUBLIC_BASE_URL: baseUrl,
  ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
  LOG_LEVEL: env['LOG_LEVEL'],
  ...local.serviceEnv,
});
const sb = await startSwitchboard(config, { log, webhookAgent: new HttpsAgent({ ca: ca.caPem, keepAlive: true }) });
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  console.log('\nStopping the service and the simulators…');
  void sb
    .stop()
    .then(() => Promise.all([receiver.close(), local.close()]))
    .finally(() => {
      ca.dispose();
      process.exit(0);
    });
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

const step = (text: string) => console.log(`  · ${text}`);
let key = '';
async function api(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(baseUrl + path, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return text === '' ? null : JSON.parse(text);
}
async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what} after ${timeoutMs / 1000} s (the service's log: ${logFile})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function demo(): Promise<void> {
  console.log(`Switchboard demo: the service and simulated carriers and providers, all on 127.0.0.1 (data in ${dataDir})`);
  const created = await api('POST', '/v1/keys', { name: 'demo' });
  key = `${created.key_id}:${created.key_secret}`;
  step(`key ${created.key_id} for account ${created.account_id}`);
  const { secret } = await api('GET', '/v1/webhooks/secret');
  const agent = await api('POST', '/v1/agents', {
    name: "Luigi's front desk",
    system_prompt: "You take table bookings for Luigi's, a small restaurant.",
    welcome_message: "Hi, this is Luigi's returning your call. How can I help?",
    extraction_fields: [
      { name: 'party_size', type: 'integer', description: 'How many people the table is for.' },
      { name: 'when', type: 'string', description: 'The day and time of the booking.' },
    ],
  });
  step(`agent ${agent.agent_id} ("${agent.name}")`);
  await api('POST', '/v1/phone-numbers', {
    phone_number: NUMBER,
    agent_id: agent.agent_id,
    provider: 'twilio',
    twilio_account_sid: LOCAL.twilio.accountSid,
    twilio_auth_token: LOCAL.twilio.authToken,
  });
  step(`number ${NUMBER} imported on simulated carrier A`);
  await api('PUT', `/v1/integrations/webhook/number/${encodeURIComponent(NUMBER)}`, { url: receiver.url(HOOK_PATH) });
  step(`webhook ${receiver.url(HOOK_PATH)} (a receiver in this process)`);

  local.callee(CALLEE);
  const call = await api('POST', '/v1/calls/outbound', { agent_id: agent.agent_id, to_number: CALLEE, prompt: 'Call back the person who asked about a table and help them book it.' });
  step(`calling ${CALLEE}: call ${call.call_id}`);
  const heard = () => local.twilio.calls.get(call.call_id)?.stream?.receivedAudio().length ?? 0;
  // The agent speaks (audio arrives at the callee) and falls quiet for 700 ms.
  const agentSpeaks = async (what: string) => {
    const before = heard();
    await until(what, () => (heard() > before ? true : undefined));
    let last = -1;
    let quietSince = Date.now();
    await until(`${what} to end`, () => {
      if (heard() !== last) {
        last = heard();
        quietSince = Date.now();
      }
      return Date.now() - quietSince >= 700 ? true : undefined;
    });
  };
  const say = (phrase: SpeechFixtureSlug) => {
    if (!local.say(call.call_id, phrase)) throw new Error(`the callee of ${call.call_id} cannot speak`);
  };
  await agentSpeaks('the greeting');
  step('the agent greeted; the callee speaks');
  say('book-table');
  await agentSpeaks("the agent's answer");
  say('thank-you-goodbye');
  const done = await until('the call to end and its analysis', async () => {
    const r = await api('GET', `/v1/calls/${call.call_id}`);
    return r.call_status === 'completed' && r.analysis_status !== 'pending' ? r : undefined;
  });
  const isCompleted = (w: ReceivedWebhook) => (JSON.parse(w.body) as { event?: string }).event === 'call.completed';
  const hook = await until('call.completed at the receiver', () => receiver.to(HOOK_PATH).find(isCompleted));
  let verified: string;
  try {
    new Webhook(secret).verify(hook.body, hook.headers);
    verified = `verifies with the account's webhook secret ${secret.slice(0, 12)}… (Standard Webhooks, the standardwebhooks package)`;
  } catch (err) {
    verified = `DOES NOT VERIFY: ${err instanceof Error ? err.message : String(err)}`;
  }

  const rule = '='.repeat(78);
  console.log(`\n${rule}\n  SIMULATION: simulated carrier, callee, speech recognition, voice and model.\n  No real phone call was made and no provider was asked.\n${rule}`);
  console.log(`\nCall ${done.call_id}  ${done.direction} ${done.from_number} -> ${done.to_number}  ${done.call_status}, ${done.ended_reason}, ${done.duration_seconds} s`);
  console.log(`\nTranscript:\n${String(done.transcript).replace(/^/gm, '  ')}`);
  console.log('\nAnalysis (GET /v1/calls/{id}):');
  for (const k of ['analysis_status', 'summary', 'sentiment', 'successful', 'extracted'] as const) console.log(`  ${k}: ${JSON.stringify(done[k])}`);
  console.log(`\nWebhook call.completed, as the receiver at ${receiver.url(HOOK_PATH)} got it:`);
  for (const h of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) console.log(`  ${h}: ${hook.headers[h]}`);
  console.log(`  signature: ${verified}`);
  console.log(`  body: ${JSON.stringify(JSON.parse(hook.body), null, 2).replace(/\n/g, '\n  ')}`);
  console.log(`${rule}\n`);

  const pages: string[] = [];
  for (const page of ['/playground', '/dashboard']) {
    const res = await fetch(baseUrl + page).catch(() => null);
    if (res?.status === 200) pages.push(`  ${baseUrl}${page}`);
  }
  console.log(`The service is still running at ${baseUrl} (PUBLIC_BASE_URL ${config.publicBaseUrl}), with the simulators:`);
  if (pages.length > 0) {
    console.log(`open in a browser and paste the key:\n${pages.join('\n')}`);
    console.log(`  (the simulated speech recogniser hears each thing you say as the next of: ${HEARD_AS.map((t) => `"${t}"`).join(', ')})`);
  }
  console.log(`  key  ${key}`);
  console.log(`  try  curl -s ${baseUrl}/v1/calls -H "Authorization: Bearer ${key}"`);
  console.log(`  ring ${NUMBER}: curl -s -X POST "${local.controlUrl}/inbound/twilio?to=${encodeURIComponent(NUMBER)}"  (README: "Try it without a carrier account")`);
  console.log(`  log  ${logFile}`);
  console.log('Ctrl-C stops it.');
}

demo().catch((err: unknown) => {
  console.error(`\nnpm run demo failed: ${err instanceof Error ? err.message : String(err)}`);
  stopping = true;
  void sb.stop().finally(() => process.exit(1));
});
