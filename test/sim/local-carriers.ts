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
// The simulators themselves start in local-sims.ts (shared with `npm run demo`).
import { SPEECH_FIXTURE_SLUGS } from '../fixtures/speech/speech.ts';
import { LOCAL, localSimPorts, portNumbers, startLocalSims } from './local-sims.ts';

export { LOCAL };

const ports = portNumbers(localSimPorts());
const callSeconds = Number(process.env['SIM_CALL_SECONDS'] ?? 60);
const { twilio, telnyx, llm, deepgram, tts, cartesia, controlUrl, close } = await startLocalSims(ports, { callSeconds });

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
  void close().finally(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
