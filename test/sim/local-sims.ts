// The local carrier and provider simulators as one set, on loopback, for `npm run sim`
// (test/sim/local-carriers.ts) and `npm run demo` (test/sim/demo.ts): both carriers with
// fixed, obviously fake accounts and numbers, the three providers (model, speech to text,
// text to speech, and Cartesia) at a realistic pace, the far ends of calls as voices that
// speak the recorded speech fixtures when told to, and a small control server that rings
// the service's numbers, makes callers speak, hangs calls up, sends texts and makes dials
// misbehave (see `control` below).
import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTwilioSim } from './twilio-sim.ts';
import { startTelnyxSim } from './telnyx-sim.ts';
import { startLlmSim, defaultLlmReply, simplestJson, type ChatCompletionBody, type LlmSimReply } from './llm-sim.ts';
import { startDeepgramSim } from './deepgram-sim.ts';
import { startOpenAiTtsSim } from './openai-tts-sim.ts';
import { startCartesiaSim } from './cartesia-sim.ts';
import { FarEndVoice } from './far-end-playback.ts';
import { loadSpeechFixture, speechFixture, SPEECH_FIXTURE_SLUGS, type SpeechFixtureSlug } from '../fixtures/speech/speech.ts';
import type { TelnyxKeyPair } from '../../voice/carriers/telnyx-signature.ts';

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

/** Each simulator's port; 0 picks a free one. */
export interface LocalSimPorts {
  twilio: number;
  telnyx: number;
  control: number;
  llm: number;
  deepgram: number;
  tts: number;
  cartesia: number;
}

/** The ports of `npm run sim` (SIM_*_PORT, else 4010 to 4016), with the variable that sets each. */
export function localSimPorts(env: Record<string, string | undefined> = process.env): { [K in keyof LocalSimPorts]: { port: number; variable: string } } {
  const at = (variable: string, fallback: number) => ({ port: Number(env[variable] ?? fallback), variable });
  return {
    twilio: at('SIM_TWILIO_PORT', 4010),
    telnyx: at('SIM_TELNYX_PORT', 4011),
    control: at('SIM_CONTROL_PORT', 4012),
    llm: at('SIM_LLM_PORT', 4013),
    deepgram: at('SIM_DEEPGRAM_PORT', 4014),
    tts: at('SIM_TTS_PORT', 4015),
    cartesia: at('SIM_CARTESIA_PORT', 4016),
  };
}

/** Just the port numbers of localSimPorts(). */
export function portNumbers(configured: ReturnType<typeof localSimPorts>): LocalSimPorts {
  return Object.fromEntries(Object.entries(configured).map(([k, v]) => [k, v.port])) as unknown as LocalSimPorts;
}

/**
 * The simulated model's answers: when the caller says goodbye it says goodbye and ends
 * the call with its end_call tool; structured requests (post-call analysis, the voicemail
 * screen) get JSON that fits their schema; anything else "You said: …" (defaultLlmReply).
 */
export function localModelReply(body: ChatCompletionBody): LlmSimReply {
  const format = body.response_format as { json_schema?: { name?: string; schema?: unknown } } | undefined;
  if (format) return { text: JSON.stringify(format.json_schema?.name === 'call_analysis' ? simulatedAnalysis(body) : simplestJson(format.json_schema?.schema)) };
  const last = [...body.messages].reverse().find((m) => m.role === 'user');
  const text = typeof last?.content === 'string' ? last.content : '';
  return /\b(goodbye|bye)\b/i.test(text) ? { text: 'Goodbye, have a nice day!', toolCalls: [{ name: 'end_call', arguments: {} }] } : defaultLlmReply(body);
}

/** A post-call analysis made by rules, not a model: what the caller said, and every extraction field null. */
function simulatedAnalysis(body: ChatCompletionBody): Record<string, unknown> {
  const request = body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
  const said = request
    .split('\n')
    .filter((l) => l.startsWith('Caller:'))
    .map((l) => l.slice('Caller:'.length).trim());
  const format = body.response_format as { json_schema?: { schema?: { properties?: Record<string, unknown> } } };
  const extracted = format.json_schema?.schema?.properties?.['extracted'];
  return {
    summary: said.length > 0 ? `The caller said: ${said.map((s) => `"${s}"`).join(', then ')}.` : 'The caller said nothing.',
    sentiment: said.some((s) => /\bthank/i.test(s)) ? 'happy' : 'neutral',
    successful: /How the call ended: agent_hangup/.test(request),
    open_item: null,
    ...(extracted ? { extracted: simplestJson(extracted) } : {}),
  };
}

export type LocalSims = Awaited<ReturnType<typeof startLocalSims>>;

/**
 * Starts every simulator on 127.0.0.1. `respond` answers the model's requests (default
 * localModelReply); answered calls' far ends hang up after `callSeconds`. The speech
 * recogniser hears what a far end was told to say; any other speech (a browser's
 * microphone) it hears as `heardAs`, one phrase per utterance in turn (default: nothing).
 */
export async function startLocalSims(
  ports: LocalSimPorts,
  opts: { callSeconds?: number; respond?: (body: ChatCompletionBody) => LlmSimReply; heardAs?: readonly string[] } = {},
) {
  const callSeconds = opts.callSeconds ?? 60;
  const twilio = await startTwilioSim({ port: ports.twilio });
  const telnyx = await startTelnyxSim(undefined, { port: ports.telnyx });
  // The providers, with a realistic pace (first token 300 ms, first audio 150 ms, final words 150 ms).
  const llm = await startLlmSim({ port: ports.llm, firstTokenMs: 300, tokenMs: 20, respond: opts.respond ?? localModelReply });
  let heard = 0;
  const heardAs = opts.heardAs ?? [];
  const deepgram = await startDeepgramSim({
    port: ports.deepgram,
    finalLatencyMs: 150,
    ...(heardAs.length > 0 ? { transcribe: () => heardAs[heard++ % heardAs.length]! } : {}),
  });
  const tts = await startOpenAiTtsSim({ port: ports.tts, firstAudioMs: 150, speedFactor: 2 });
  const cartesia = await startCartesiaSim({ port: ports.cartesia, firstAudioMs: 150 });
  // Each answered call's far end: a voice that is silent until told to speak. Inbound
  // calls get one per call; outbound calls to a number registered with callee(number).
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
  const hangups = setInterval(() => {
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
  }, 250);
  hangups.unref();

  /** The person called at `number` (outbound) answers, silent until told to speak. */
  function callee(number: string): void {
    const voice = new FarEndVoice();
    calleeVoices.set(number, voice);
    twilio.scenario(number, { name: 'answer', audio: voice });
    telnyx.voiceFor(number, voice);
  }

  /** The far end of call `id` (the carrier's id) speaks a fixture; false when that call cannot speak. */
  function say(id: string, phrase: SpeechFixtureSlug): boolean {
    const voice = voiceOfCall(id);
    if (!voice) return false;
    deepgram.say(speechFixture(phrase).text);
    void voice.say(loadSpeechFixture(phrase));
    return true;
  }

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
      callee(number);
      return { status: 200, body: { callee: number } };
    }
    if (method === 'POST' && parts[0] === 'say' && parts[1]) {
      const phrase = (url.searchParams.get('phrase') ?? 'book-table') as SpeechFixtureSlug;
      if (!SPEECH_FIXTURE_SLUGS.includes(phrase)) return { status: 400, body: { error: `phrase is one of ${SPEECH_FIXTURE_SLUGS.join(', ')}` } };
      if (!say(parts[1], phrase)) return { status: 404, body: { error: 'no call with that id that can speak (GET /calls; outbound: POST /callee/{number} before dialing)' } };
      return { status: 200, body: { said: speechFixture(phrase).text } };
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
  await new Promise<void>((resolve) => server.listen(ports.control, '127.0.0.1', resolve));
  const controlUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    twilio,
    telnyx,
    llm,
    deepgram,
    tts,
    cartesia,
    controlUrl,
    callee,
    say,
    /** The environment that points `npm start` at these simulators. */
    serviceEnv: {
      TWILIO_API_BASE: twilio.baseUrl,
      TELNYX_API_BASE: telnyx.baseUrl,
      LLM_BASE_URL: llm.baseUrl,
      LLM_API_KEY: 'sim-llm',
      DEEPGRAM_BASE_URL: deepgram.url,
      DEEPGRAM_API_KEY: 'sim-deepgram',
      TTS_BASE_URL: tts.baseUrl,
      TTS_API_KEY: 'sim-tts',
    },
    async close(): Promise<void> {
      clearInterval(hangups);
      server.close();
      await Promise.all([twilio.close(), telnyx.close(), llm.close(), deepgram.close(), tts.close(), cartesia.close()]);
    },
  };
}
