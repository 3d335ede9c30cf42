// Simulator of an OpenAI-compatible speech endpoint for tests and `npm run sim`:
// `POST /v1/audio/speech` {model, input, voice, response_format, speed} validated as
// the API validates it (input at most 4096 characters, speed 0.25 to 4), the Bearer
// key checked when the simulator has one, and the answer raw 24 kHz 16-bit LE mono
// PCM (`response_format: "pcm"`, the only format it speaks) whose length follows the
// text (speech-like-audio.ts), streamed in ~100 ms chunks at `speedFactor` times real
// time after `firstAudioMs`. The chunks are an odd number of bytes on purpose, as TCP
// may cut a real answer anywhere, so the client's handling of half samples is always
// exercised.
import type { ServerResponse } from 'node:http';
import { pcm16leBytes, speechLikePcm24k } from './speech-like-audio.ts';
import { checkBearer, sendError, startStreamSim, whileOpen, type MidStreamFault, type StreamSimFault, type StreamSimRequest } from './stream-sim-http.ts';

export { speechLikePcm24k, pcm16leBytes, speechSamples, SPEECH_MS_PER_CHAR } from './speech-like-audio.ts';

export interface SpeechBody {
  model: string;
  input: string;
  voice: string;
  response_format?: string;
  speed?: number;
  [field: string]: unknown;
}

export type OpenAiTtsSimRequest = StreamSimRequest<SpeechBody>;

export interface OpenAiTtsSimLatency {
  /** From the request to the first audio bytes. */
  firstAudioMs?: number;
  /** How many times faster than real time the audio is streamed (default 4). */
  speedFactor?: number;
}

export interface OpenAiTtsSimOptions extends OpenAiTtsSimLatency {
  /** 0 (a free port) in tests; a fixed one for `npm run sim`. */
  port?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
}

export interface OpenAiTtsSim {
  /** `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  /** Every request received, in order: `body` has model, input, voice, response_format, speed; `authorization` the header. */
  requests: OpenAiTtsSimRequest[];
  setLatency(latency: OpenAiTtsSimLatency): void;
  /** Queues a fault for the next request(s); mid-stream faults count ~100 ms audio chunks. `garbage` answers a 200 JSON body. */
  fail(fault: StreamSimFault): void;
  /** How many requests the client cancelled before their audio was complete. */
  readonly aborted: number;
  close(): Promise<void>;
}

/** About 100 ms of 24 kHz 16-bit audio, plus one byte so chunks split samples. */
const CHUNK_BYTES = 4801;
const CHUNK_MS = 100;

// The same line is asked for many times (greetings, load tests): made once, it leaves the
// simulator's CPU to the service being measured.
const made = new Map<string, Buffer>();
function audioOf(text: string, speed: number): Buffer {
  const key = `${speed}\u0000${text}`;
  let audio = made.get(key);
  if (!audio) {
    if (made.size >= 512) made.clear();
    made.set(key, (audio = pcm16leBytes(speechLikePcm24k(text, speed))));
  }
  return audio;
}

export async function startOpenAiTtsSim(opts: OpenAiTtsSimOptions = {}): Promise<OpenAiTtsSim> {
  const latency = { firstAudioMs: opts.firstAudioMs ?? 30, speedFactor: opts.speedFactor ?? 4 };

  const server = await startStreamSim<SpeechBody>(opts.port ?? 0, (req, res, fault) => {
    if (req.method !== 'POST' || req.path !== '/v1/audio/speech') return sendError(res, 404, `Unknown request URL: ${req.method} ${req.path}.`);
    if (!checkBearer(res, req.authorization, opts.apiKey)) return;
    const invalid = validate(req.body);
    if (invalid) return sendError(res, 400, invalid);
    const audio = audioOf(req.body.input, req.body.speed ?? 1);
    stream(res, audio, fault, { ...latency }, server.drop);
  });

  return {
    baseUrl: server.baseUrl,
    requests: server.requests,
    setLatency(l) {
      if (l.firstAudioMs !== undefined) latency.firstAudioMs = l.firstAudioMs;
      if (l.speedFactor !== undefined) latency.speedFactor = l.speedFactor;
    },
    fail: server.fail,
    get aborted() {
      return server.aborted;
    },
    close: server.close,
  };
}

function validate(body: SpeechBody | undefined): string | null {
  if (body === undefined || body === null || typeof body !== 'object') return 'We could not parse the JSON body of your request.';
  if (typeof body.model !== 'string' || body.model === '') return "you must provide a model parameter";
  if (typeof body.input !== 'string' || body.input === '') return "'input' must be a non-empty string";
  if (body.input.length > 4096) return `'input' is ${body.input.length} characters long, more than the maximum of 4096`;
  if (typeof body.voice !== 'string' || body.voice === '') return "'voice' is required";
  if (body.response_format !== 'pcm') return `the simulator speaks response_format "pcm" only, not ${JSON.stringify(body.response_format ?? 'mp3')}`;
  if (body.speed !== undefined && !(typeof body.speed === 'number' && body.speed >= 0.25 && body.speed <= 4)) {
    return `${JSON.stringify(body.speed)} is not a valid speed (0.25 to 4)`;
  }
  return null;
}

function stream(res: ServerResponse, audio: Buffer, fault: MidStreamFault | undefined, latency: Required<OpenAiTtsSimLatency>, drop: (res: ServerResponse) => void): void {
  if (fault?.kind === 'garbage') {
    // What some compatible servers do with an error: a 200 whose body is not audio.
    whileOpen(res, latency.firstAudioMs, () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'simulated: not audio', type: 'server_error' } }));
    });
    return;
  }
  res.writeHead(200, { 'content-type': 'audio/pcm', 'transfer-encoding': 'chunked' });
  res.flushHeaders();
  const chunks = Math.ceil(audio.length / CHUNK_BYTES);
  const cutAt = fault ? Math.min(fault.after, chunks) : Infinity;
  const interval = latency.speedFactor > 0 ? CHUNK_MS / latency.speedFactor : 0;
  let i = 0;
  const next = (): void => {
    if (i === cutAt && fault) {
      if (fault.kind === 'drop') drop(res);
      // `stall`: nothing more; the connection stays open until the client gives up.
      return;
    }
    if (i === chunks) {
      res.end();
      return;
    }
    res.write(audio.subarray(i * CHUNK_BYTES, ++i * CHUNK_BYTES));
    whileOpen(res, interval, next);
  };
  whileOpen(res, latency.firstAudioMs, next);
}
