// `npm run sim`: both carrier simulators as a local carrier, and the three provider
// simulators (model, speech to text, text to speech), so a newcomer can import numbers,
// place calls, ring the agent and hold a conversation with it on one machine, without
// carrier or provider accounts. The simulated caller speaks real recorded speech (the
// espeak-ng fixtures) when told to (`POST /say/…`); the model simulator answers what it
// heard and ends the call with its end_call tool when the caller says goodbye.
// The same wire-accurate simulators the tests use: signed webhooks, media streams
// (a tone as the far end's voice), call scenarios. A small control server rings the
// service's numbers and hangs calls up; answered outbound calls end after SIM_CALL_SECONDS.
// It can also make a carrier's dials misbehave at random (seeded): answers lost, reset
// or slow (sim-http.ts), to watch the service reconcile dials whose outcome is unknown.
// Texts: `POST /sms/{carrier}?to=&from=&text=` sends one to a number, `GET /messages`
// shows what the service sent (carrier B's numbers have a messaging profile for this).
import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTwilioSim } from './twilio-sim.ts';
import { startTelnyxSim } from './telnyx-sim.ts';
import { startLlmSim, defaultLlmReply } from './llm-sim.ts';
import { startDeepgramSim } from './deepgram-sim.ts';
import { startOpenAiTtsSim } from './openai-tts-sim.ts';
import { startCartesiaSim } from './cartesia-sim.ts';
import { FarEndVoice } from './far-end-playback.ts';
import { loadSpeechFixture, speechFixture, SPEECH_FIXTURE_SLUGS, type SpeechFixtureSlug } from '../fixtures/speech/speech.ts';
import type { TelnyxKeyPair } from '../../voice/carriers/telnyx-signature.ts';

const env = process.env;
const twilioPort = Number(env['SIM_TWILIO_PORT'] ?? 4010);
const telnyxPort = Number(env['SIM_TELNYX_PORT'] ?? 4011);
const controlPort = Number(env['SIM_CONTROL_PORT'] ?? 4012);
const callSeconds = Number(env['SIM_CALL_SECONDS'] ?? 60);
const llmPort = Number(env['SIM_LLM_PORT'] ?? 4013);
const deepgramPort = Number(env['SIM_DEEPGRAM_PORT'] ?? 4014);
const ttsPort = Number(env['SIM_TTS_PORT'] ?? 4015);
const cartesiaPort = Number(env['SIM_CARTESIA_PORT'] ?? 4016);

// Carrier B's webhook signing key, fixed too (an Ed25519 key from a public seed) so the
// public key a number is imported with is the same on every run. Not a secret.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const seed = createHash('sha256').update('switchboard npm run sim: carrier B webhook signing key').digest();
const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
const telnyxKeys: TelnyxKeyPair = {
  privateKey,
  // Base64 of the 32 raw bytes after the 12-byte SPKI header, as the carrier portal shows it.
  publicKey: createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(12).toString('base64'),
};

// Fixed, obviously fake credentials so the README's commands work as printed.
export const LOCAL = {
  twilio: { accountSid: 'AC' + 'deadbeef'.repeat(4), authToken: 'local-sim-auth-token-0123456789ab', numbers: ['+14155550100', '+14155550101', '+14155550102'] },
  telnyx: {
    apiKey: 'KEY_local_sim',
    connectionId: 'local-sim-connection',
    // trizMGnco2iwG2IK3MH+dCydYtFppMY8C/uzdKqcfmM= (the README's telnyx_public_key)
    publicKey: telnyxKeys.publicKey,
    numbers: ['+14155550200', '+14155550201', '+14155550202'],
  },
};

const twilio = await startTwilioSim({ port: twilioPort });
const telnyx = await startTelnyxSim(undefined, { port: telnyxPort });
// The providers, with a realistic pace (first token 300 ms, first audio 150 ms, final words 150 ms).
const llm = await startLlmSim({
  port: llmPort,
  firstTokenMs: 300,
  tokenMs: 20,
  respond: (body) => {
    const last = [...body.messages].reverse().find((m) => m.role === 'user');
    const text = typeof last?.content === 'string' ? last.content : '';
    return /\b(goodbye|bye)\b/i.test(text) ? { text: 'Goodbye, have a nice day!', toolCalls: [{ name: 'end_call', arguments: {} }] } : defaultLlmReply(body);
  },
});
const deepgram = await startDeepgramSim({ port: deepgramPort, finalLatencyMs: 150 });
const tts = await startOpenAiTtsSim({ port: ttsPort, firstAudioMs: 150, speedFactor: 2 });
const cartesia = await startCartesiaSim({ port: cartesiaPort, firstAudioMs: 150 });
// Each answered call's far end: a voice that is silent until told to speak. Inbound
// calls get one per call; outbound calls to a number registered with POST /callee/{number}.
const voices = new Map<string, FarEndVoice>();
const calleeVoices = new Map<string, FarEndVoice>();
function voiceOfCall(id: string): FarEndVoice | undefined {
  const own = voices.get(id);
  if (own) return own;
  const to = twilio.calls.get(id)?.to ?? telnyx.calls.calls.get(id)?.to;
  return to ? calleeVoices.get(to) : undefined;
}
twilio.addAccount(LOCAL.twilio.accountSid, LOCAL.twilio.authToken);
for (const n of LOCAL.twilio.numbers) twilio.addNumber(LOCAL.twilio.accountSid, n);
telnyx.addApiKey(LOCAL.telnyx.apiKey, { keyPair: telnyxKeys });
telnyx.addConnection(LOCAL.telnyx.apiKey, LOCAL.telnyx.connectionId);
const messagingProfileId = telnyx.addMessagingProfile(LOCAL.telnyx.apiKey);
for (const n of LOCAL.telnyx.numbers) telnyx.addNumber(LOCAL.telnyx.apiKey, n, { connectionId: LOCAL.telnyx.connectionId, messagingProfileId });

// The far end of an answered call hangs up after a while, like a person would.
const hangingUp = new Set<string>();
setInterval(() => {
  const due = Date.now() - callSeconds * 1000;
  for (const c of twilio.calls.values()) {
    if (c.status === 'in-progress' && c.answeredAt !== null && c.answeredAt < due && !hangingUp.has(c.sid)) {
      hangingUp.add(c.sid);
      void twilio.hangup(c.sid).catch(() => undefined);
    }
  }
  for (const c of telnyx.calls.calls.values()) {
    if (c.status === 'answered' && c.answeredAt !== null && c.answeredAt < due && !hangingUp.has(c.callControlId)) {
      hangingUp.add(c.callControlId);
      void telnyx.hangup(c.callControlId).catch(() => undefined);
    }
  }
}, 250).unref();

type Answer = { status: number; body: unknown };

async function control(method: string, url: URL): Promise<Answer> {
  const parts = url.pathname.split('/').filter(Boolean);
  if (method === 'GET' && parts[0] === 'calls') {
    return {
      status: 200,
      body: {
        twilio: [...twilio.calls.values()].map((c) => ({ id: c.sid, direction: c.direction, from: c.from, to: c.to, status: c.status })),
        telnyx: [...telnyx.calls.calls.values()].map((c) => ({ id: c.callControlId, direction: c.direction, from: c.from, to: c.to, status: c.status })),
      },
    };
  }
  if (method === 'POST' && parts[0] === 'inbound' && (parts[1] === 'twilio' || parts[1] === 'telnyx')) {
    const to = url.searchParams.get('to');
    const from = url.searchParams.get('from') ?? '+14155559999';
    if (!to) return { status: 400, body: { error: 'to= is one of the simulated numbers' } };
    const voice = new FarEndVoice();
    if (parts[1] === 'twilio') {
      const call = await twilio.placeInboundCall({ from, to, accountSid: LOCAL.twilio.accountSid, audio: voice });
      voices.set(call.callSid, voice);
      return { status: 200, body: { id: call.callSid, twiml: call.twiml } };
    }
    const handle = await telnyx.placeInboundCall({ from, to, apiKey: LOCAL.telnyx.apiKey, audio: voice });
    voices.set(handle.id, voice);
    return { status: 200, body: { id: handle.id } };
  }
  if (method === 'POST' && parts[0] === 'sms' && (parts[1] === 'twilio' || parts[1] === 'telnyx')) {
    const to = url.searchParams.get('to');
    if (!to) return { status: 400, body: { error: 'to= is one of the simulated numbers' } };
    const text = { from: url.searchParams.get('from') ?? '+14155559999', to, body: url.searchParams.get('text') ?? 'Hello' };
    return { status: 200, body: parts[1] === 'twilio' ? await twilio.messages.receive(text) : await telnyx.messages.receive(text) };
  }
  if (method === 'GET' && parts[0] === 'messages') {
    const sent = (ms: { sid: string; from: string; to: string; body: string; status: string }[]) => ms.map(({ sid, from, to, body, status }) => ({ id: sid, from, to, body, status }));
    return { status: 200, body: { twilio: sent(twilio.messages.sent()), telnyx: sent(telnyx.messages.sent()) } };
  }
  if (method === 'POST' && parts[0] === 'callee' && parts[1]) {
    const number = decodeURIComponent(parts[1]);
    const voice = new FarEndVoice();
    calleeVoices.set(number, voice);
    twilio.scenario(number, { name: 'answer', audio: voice });
    telnyx.voiceFor(number, voice);
    return { status: 200, body: { callee: number } };
  }
  if (method === 'POST' && parts[0] === 'say' && parts[1]) {
    const phrase = (url.searchParams.get('phrase') ?? 'book-table') as SpeechFixtureSlug;
    if (!SPEECH_FIXTURE_SLUGS.includes(phrase)) return { status: 400, body: { error: `phrase is one of ${SPEECH_FIXTURE_SLUGS.join(', ')}` } };
    const voice = voiceOfCall(parts[1]);
    if (!voice) return { status: 404, body: { error: 'no call with that id that can speak (GET /calls; outbound: POST /callee/{number} before dialing)' } };
    const text = speechFixture(phrase).text;
    deepgram.say(text);
    void voice.say(loadSpeechFixture(phrase));
    return { status: 200, body: { said: text } };
  }
  if ((method === 'POST' || method === 'DELETE') && parts[0] === 'chaos' && (parts[1] === 'twilio' || parts[1] === 'telnyx')) {
    const sim = parts[1] === 'twilio' ? twilio : telnyx;
    if (method === 'DELETE') {
      sim.chaos(null);
      return { status: 200, body: { chaos: null } };
    }
    const rate = (k: string) => Math.min(1, Math.max(0, Number(url.searchParams.get(k) ?? 0) || 0));
    const chaos = {
      seed: Number(url.searchParams.get('seed') ?? 1) || 1,
      dropRate: rate('drop'),
      resetRate: rate('reset'),
      slowRate: rate('slow'),
      slowMs: Number(url.searchParams.get('slow_ms') ?? 3000) || 3000,
    };
    sim.chaos(chaos);
    return { status: 200, body: { chaos: { ...chaos, match: 'dial' } } };
  }
  if (method === 'POST' && parts[0] === 'hangup' && parts[2]) {
    if (parts[1] === 'twilio') await twilio.hangup(parts[2]);
    else if (parts[1] === 'telnyx') await telnyx.hangup(parts[2]);
    else return { status: 404, body: { error: 'carrier is twilio or telnyx' } };
    return { status: 200, body: { hung_up: parts[2] } };
  }
  return {
    status: 404,
    body: {
      error:
        'GET /calls, POST /inbound/{twilio|telnyx}?to=&from=, POST /say/{call id}?phrase=, POST /callee/{number}, POST /hangup/{twilio|telnyx}/{id}, POST|DELETE /chaos/{twilio|telnyx}?seed=&drop=&reset=&slow=&slow_ms=, POST /sms/{twilio|telnyx}?to=&from=&text=, GET /messages',
    },
  };
}

const server = createServer((req, res) => {
  control(req.method ?? 'GET', new URL(req.url ?? '/', 'http://sim.local'))
    .catch((err: unknown): Answer => ({ status: 500, body: { error: err instanceof Error ? err.message : String(err) } }))
    .then(({ status, body }) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
});
await new Promise<void>((resolve) => server.listen(controlPort, '127.0.0.1', resolve));
const controlUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

console.log(`Local carriers are up.
  carrier A (twilio) REST  ${twilio.baseUrl}   account ${LOCAL.twilio.accountSid}  token ${LOCAL.twilio.authToken}
                           numbers ${LOCAL.twilio.numbers.join(', ')}
  carrier B (telnyx) REST  ${telnyx.baseUrl}   api key ${LOCAL.telnyx.apiKey}  connection ${LOCAL.telnyx.connectionId}
                           numbers ${LOCAL.telnyx.numbers.join(', ')}
                           public key ${telnyx.publicKeyOf(LOCAL.telnyx.apiKey)}  (telnyx_public_key: required to import)
  model (OpenAI-compatible) ${llm.baseUrl}   key sim-llm
  speech to text (Deepgram)  ${deepgram.url}   key sim-deepgram
  text to speech (OpenAI)    ${tts.baseUrl}   (Cartesia: ${cartesia.url})
  control                  ${controlUrl}  (GET /calls, POST /inbound/{twilio|telnyx}?to=&from=, POST /say/{call id}?phrase=,
                           POST /callee/{number} (the called person of outbound calls can then speak),
                           POST /hangup/{twilio|telnyx}/{id}, POST|DELETE /chaos/{twilio|telnyx}?seed=&drop=&reset=&slow=&slow_ms=,
                           POST /sms/{twilio|telnyx}?to=&from=&text= (a text to a number), GET /messages (texts the service sent))
                           phrases: ${SPEECH_FIXTURE_SLUGS.join(', ')}

Start the service against them in another terminal:
  TWILIO_API_BASE=${twilio.baseUrl} TELNYX_API_BASE=${telnyx.baseUrl} PUBLIC_BASE_URL=http://127.0.0.1:8080 \\
  LLM_BASE_URL=${llm.baseUrl} LLM_API_KEY=sim-llm DEEPGRAM_BASE_URL=${deepgram.url} DEEPGRAM_API_KEY=sim-deepgram \\
  TTS_BASE_URL=${tts.baseUrl} TTS_API_KEY=sim-tts npm start

Outbound calls are answered; the far end hangs up after ${callSeconds} s (SIM_CALL_SECONDS).`);

const stop = () => {
  server.close();
  void Promise.all([twilio.close(), telnyx.close(), llm.close(), deepgram.close(), tts.close(), cartesia.close()]).finally(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
