// The OpenAI-compatible speech client against the speech simulator on loopback: what
// the endpoint receives, how much audio comes back for a text, segments delivered in
// order with the next one requested ahead (no gap between sentences), long text split
// over several requests, cancel silencing everything, and failures reported once as
// the ProviderError the engine decides on.
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { mulawToLinear } from '../audio/mulaw.ts';
import { closedPort } from '../../test/sim/sim-http.ts';
import { speechSamples, startOpenAiTtsSim, type OpenAiTtsSim } from '../../test/sim/openai-tts-sim.ts';
import { ProviderError } from './errors.ts';
import { createOpenAiTts } from './openai-tts.ts';
import { splitForSpeech } from './split-text.ts';
import type { TtsClient, TtsSink, TtsUtterance, TtsVoice } from './tts.ts';

const KEY = 'sk-tts-test-123456';
let sim: OpenAiTtsSim;
let tts: TtsClient;
const voice: TtsVoice = { voice: 'nova', speed: 1, language: 'en' };

beforeAll(async () => {
  sim = await startOpenAiTtsSim({ apiKey: KEY });
  tts = createOpenAiTts({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'tts-test', firstAudioTimeoutMs: 2000 });
});
afterAll(() => sim.close());
beforeEach(() => sim.setLatency({ firstAudioMs: 5, speedFactor: 100 }));

type Event =
  | { type: 'audio'; segment: number; bytes: Uint8Array; at: number }
  | { type: 'segmentDone'; segment: number; at: number }
  | { type: 'done'; at: number }
  | { type: 'error'; error: ProviderError; at: number };

/** A sink that records every call, and a promise of the end (done or error). */
function recorder(onAudio?: (segment: number) => void): { sink: TtsSink; events: Event[]; ended: Promise<Event> } {
  const events: Event[] = [];
  let resolve!: (e: Event) => void;
  const ended = new Promise<Event>((r) => (resolve = r));
  const sink: TtsSink = {
    audio(mulaw, segment) {
      events.push({ type: 'audio', segment, bytes: mulaw.slice(), at: performance.now() });
      onAudio?.(segment);
    },
    segmentDone(segment) {
      events.push({ type: 'segmentDone', segment, at: performance.now() });
    },
    done() {
      const e: Event = { type: 'done', at: performance.now() };
      events.push(e);
      resolve(e);
    },
    error(error) {
      const e: Event = { type: 'error', error, at: performance.now() };
      events.push(e);
      resolve(e);
    },
  };
  return { sink, events, ended };
}

async function speak(client: TtsClient, texts: string[], v: TtsVoice = voice): Promise<Event[]> {
  const { sink, events, ended } = recorder();
  const u = client.start(v, sink);
  for (const t of texts) u.push(t);
  u.end();
  await ended;
  return events;
}

const audioBytes = (events: Event[], segment?: number) =>
  events.reduce((n, e) => n + (e.type === 'audio' && (segment === undefined || e.segment === segment) ? e.bytes.length : 0), 0);

/** The RMS of μ-law audio in dBFS. */
function dbfs(mulaw: Uint8Array): number {
  let sum = 0;
  for (const b of mulaw) sum += mulawToLinear(b) ** 2;
  return 10 * Math.log10(sum / mulaw.length / 32768 ** 2);
}

async function failure(client: TtsClient, texts: string[]): Promise<{ error: ProviderError; events: Event[] }> {
  const events = await speak(client, texts);
  const last = events[events.length - 1]!;
  if (last.type !== 'error') throw new Error(`expected an error, got ${last.type}`);
  expect(events.filter((e) => e.type === 'error' || e.type === 'done')).toHaveLength(1);
  return { error: last.error, events };
}

describe('what the speech endpoint receives', () => {
  it('posts model, input, voice, speed and response_format "pcm" with the Bearer key', async () => {
    const before = sim.requests.length;
    await speak(tts, ['Hello there.'], { voice: 'shimmer', speed: 1.25, language: 'en' });
    expect(sim.requests.length).toBe(before + 1);
    const req = sim.requests[before]!;
    expect(req.path).toBe('/v1/audio/speech');
    expect(req.authorization).toBe(`Bearer ${KEY}`);
    expect(req.body).toEqual({ model: 'tts-test', input: 'Hello there.', voice: 'shimmer', response_format: 'pcm', speed: 1.25 });
  });
});

describe('audio', () => {
  it('comes back as μ-law 8 kHz as long as the text takes to say, and sounds like speech', async () => {
    const text = 'Thanks for calling, how can I help you today?';
    const events = await speak(tts, [text]);
    // 24 kHz samples -> 8 kHz bytes, give or take the resampler's edges.
    const expected = speechSamples(text, 1) / 3;
    expect(Math.abs(audioBytes(events) - expected)).toBeLessThan(30);
    expect(events.map((e) => e.type)).toContain('segmentDone');
    const all = new Uint8Array(audioBytes(events));
    let at = 0;
    for (const e of events) if (e.type === 'audio') all.set(e.bytes, (at += e.bytes.length) - e.bytes.length);
    // The first word ("Thanks", ~390 ms) is loud; the pause after it is quiet.
    const perChar = expected / text.length;
    expect(dbfs(all.subarray(0, Math.round(6 * perChar)))).toBeGreaterThan(-26);
    expect(dbfs(all.subarray(Math.round(6.2 * perChar), Math.round(6.8 * perChar)))).toBeLessThan(-50);
  });

  it('twice the speed is half as long', async () => {
    const text = 'The same sentence, said faster.';
    const normal = audioBytes(await speak(tts, [text]));
    const fast = audioBytes(await speak(tts, [text], { ...voice, speed: 2 }));
    expect(Math.abs(fast - normal / 2)).toBeLessThan(30);
  });
});

describe('segments', () => {
  it('are delivered strictly in order, the next requested while the current streams, with no gap between them', async () => {
    // 250 ms to first audio: without look-ahead every sentence would start with that gap.
    sim.setLatency({ firstAudioMs: 250, speedFactor: 8 });
    const before = sim.requests.length;
    const texts = ['First sentence here.', 'Second one.', 'And a third.'];
    const events = await speak(tts, texts);
    const requests = sim.requests.slice(before);
    expect(requests.map((r) => r.body.input)).toEqual(texts);

    // Order: all audio of n, then segmentDone(n), then audio of n+1; done last.
    const order = events.map((e) => (e.type === 'audio' ? `a${e.segment}` : e.type === 'segmentDone' ? `d${e.segment}` : e.type));
    const compact = order.filter((x, i) => x !== order[i - 1]);
    expect(compact).toEqual(['a0', 'd0', 'a1', 'd1', 'a2', 'd2', 'done']);
    for (let s = 0; s < 3; s++) expect(Math.abs(audioBytes(events, s) - speechSamples(texts[s]!, 1) / 3)).toBeLessThan(30);

    const doneAt = (s: number) => events.find((e) => e.type === 'segmentDone' && e.segment === s)!.at;
    const firstAudioAt = (s: number) => events.find((e) => e.type === 'audio' && e.segment === s)!.at;
    // Segment 1 was requested while segment 0 still streamed; segment 2 only once 0 was done.
    expect(requests[1]!.receivedAt).toBeLessThan(doneAt(0));
    expect(requests[2]!.receivedAt).toBeGreaterThanOrEqual(doneAt(0) - 1);
    // Segment 1's audio was ready when segment 0 ended: handed over at once.
    expect(firstAudioAt(1) - doneAt(0)).toBeLessThan(100);
  });

  it('longer than one request may carry, is split at sentence ends into requests of at most 4096 characters', async () => {
    sim.setLatency({ firstAudioMs: 0, speedFactor: 100_000 });
    const sentence = 'This sentence is repeated to make a very long reply. ';
    const text = sentence.repeat(90).trim(); // 4,769 characters
    const fast = { ...voice, speed: 4 }; // keeps the audio (and the test) short
    const before = sim.requests.length;
    const events = await speak(tts, [text], fast);
    const inputs = sim.requests.slice(before).map((r) => r.body.input);
    expect(inputs.length).toBe(2);
    expect(inputs.every((i) => i.length <= 4096)).toBe(true);
    expect(inputs.join('')).toBe(text);
    expect(inputs[0]!.endsWith('reply.')).toBe(true);
    expect(events.filter((e) => e.type === 'segmentDone')).toEqual([expect.objectContaining({ segment: 0 })]);
    const expected = inputs.reduce((n, i) => n + speechSamples(i, 4) / 3, 0);
    expect(Math.abs(audioBytes(events) - expected)).toBeLessThan(60);
  });

  it('an empty segment is done without a request', async () => {
    const before = sim.requests.length;
    const events = await speak(tts, ['One.', '  ', 'Two.']);
    expect(sim.requests.length).toBe(before + 2);
    expect(events.filter((e) => e.type !== 'audio').map((e) => (e.type === 'segmentDone' ? e.segment : e.type))).toEqual([0, 1, 2, 'done']);
  });

  it('ending with nothing pushed is done at once; pushing after the end is a mistake', async () => {
    const { sink, events, ended } = recorder();
    const u = tts.start(voice, sink);
    u.end();
    await ended;
    expect(events.map((e) => e.type)).toEqual(['done']);
    expect(() => u.push('late')).toThrow(/after end/);
  });
});

describe('cancel', () => {
  it('stops every request in flight and the sink hears nothing more', async () => {
    sim.setLatency({ firstAudioMs: 20, speedFactor: 2 });
    const abortedBefore = sim.aborted;
    let u: TtsUtterance | undefined;
    const { sink, events } = recorder();
    u = tts.start(voice, sink);
    u.push('A long first sentence that is still playing when the caller interrupts.');
    u.push('A second sentence that is never heard.');
    await vi.waitFor(() => expect(audioBytes(events)).toBeGreaterThan(0));
    u.cancel();
    const count = events.length;
    u.cancel(); // idempotent
    await vi.waitFor(() => expect(sim.aborted).toBe(abortedBefore + 2));
    await new Promise((r) => setTimeout(r, 100));
    expect(events.length).toBe(count);
    expect(events.some((e) => e.type === 'done' || e.type === 'error' || e.type === 'segmentDone')).toBe(false);
  });

  it('from inside the sink (a barge-in decided on an audio chunk) is the last call', async () => {
    sim.setLatency({ firstAudioMs: 5, speedFactor: 8 });
    let u: TtsUtterance | undefined;
    const { sink, events } = recorder(() => u!.cancel());
    u = tts.start(voice, sink);
    u.push('Some words.');
    u.push('More words.');
    u.end();
    await vi.waitFor(() => expect(events.length).toBe(1));
    await new Promise((r) => setTimeout(r, 150));
    expect(events.map((e) => e.type)).toEqual(['audio']);
  });
});

describe('failures', () => {
  it('a 500 is one retryable unavailable error, and no done', async () => {
    sim.fail({ kind: 'status', status: 500 });
    const { error } = await failure(tts, ['Hello.']);
    expect(error.provider).toBe('tts');
    expect(error.kind).toBe('unavailable');
    expect(error.retryable).toBe(true);
    expect(error.status).toBe(500);
  });

  it('a refused key (401) is auth, not retryable', async () => {
    const wrong = createOpenAiTts({ baseUrl: sim.baseUrl, apiKey: 'sk-nope-000000000', model: 'tts-test' });
    const { error } = await failure(wrong, ['Hello.']);
    expect(error.kind).toBe('auth');
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(401);
    expect(error.message).not.toContain('sk-nope-000000000');
  });

  it('a 429 is rate_limited with its Retry-After', async () => {
    sim.fail({ kind: 'status', status: 429, retryAfter: '3' });
    const { error } = await failure(tts, ['Hello.']);
    expect(error.kind).toBe('rate_limited');
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBe(3000);
  });

  it('a request the endpoint refuses (speed out of range) is bad_request', async () => {
    const events = await speak(tts, ['Hello.'], { ...voice, speed: 9 });
    const last = events[events.length - 1]!;
    expect(last.type === 'error' && last.error.kind).toBe('bad_request');
  });

  it('no audio within the deadline is a timeout, and the request is cancelled', async () => {
    const impatient = createOpenAiTts({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'tts-test', firstAudioTimeoutMs: 150 });
    sim.fail({ kind: 'hang' });
    const before = sim.requests.length;
    const started = performance.now();
    const { error } = await failure(impatient, ['Hello.']);
    expect(error.kind).toBe('timeout');
    expect(error.retryable).toBe(true);
    expect(performance.now() - started).toBeLessThan(600);
    await vi.waitFor(() => expect(sim.requests[before]!.aborted).toBe(true));
  });

  it('audio that stalls mid-stream is a timeout after what came was delivered', async () => {
    const impatient = createOpenAiTts({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'tts-test', firstAudioTimeoutMs: 150 });
    sim.fail({ kind: 'stall', after: 2 });
    const { error, events } = await failure(impatient, ['A sentence long enough for several chunks of audio.']);
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('stalled');
    expect(audioBytes(events)).toBeGreaterThan(1000);
  });

  it('a connection cut mid-audio is unavailable', async () => {
    sim.fail({ kind: 'drop', after: 2 });
    const { error, events } = await failure(tts, ['A sentence long enough for several chunks of audio.']);
    expect(error.kind).toBe('unavailable');
    expect(audioBytes(events)).toBeGreaterThan(0);
  });

  it('a 200 that is not audio is protocol', async () => {
    sim.fail({ kind: 'garbage' });
    const { error } = await failure(tts, ['Hello.']);
    expect(error.kind).toBe('protocol');
    expect(error.retryable).toBe(false);
  });

  it('connection refused is unavailable', async () => {
    const down = createOpenAiTts({ baseUrl: `http://127.0.0.1:${await closedPort()}/v1`, model: 'tts-test' });
    const { error } = await failure(down, ['Hello.']);
    expect(error.kind).toBe('unavailable');
  });

  it('a failure of the next segment comes after the current one was heard in full', async () => {
    sim.setLatency({ firstAudioMs: 5, speedFactor: 8 });
    const before = sim.requests.length;
    const { sink, events, ended } = recorder();
    const u = tts.start(voice, sink);
    u.push('The first sentence plays to the end.');
    await vi.waitFor(() => expect(sim.requests.length).toBe(before + 1));
    sim.fail({ kind: 'status', status: 503 });
    u.push('The second fails.');
    u.end();
    const end = await ended;
    expect(end.type).toBe('error');
    expect(events.filter((e) => e.type !== 'audio').map((e) => e.type)).toEqual(['segmentDone', 'error']);
    expect(Math.abs(audioBytes(events, 0) - speechSamples('The first sentence plays to the end.', 1) / 3)).toBeLessThan(30);
  });
});

describe('splitting long text', () => {
  it('keeps every character, cuts at sentence ends, then spaces, then anywhere but inside a surrogate pair', () => {
    expect(splitForSpeech('Short.', 10)).toEqual(['Short.']);
    expect(splitForSpeech('One two. Three four five.', 12)).toEqual(['One two.', ' Three four', ' five.']);
    expect(splitForSpeech('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    expect(splitForSpeech('ab😀cd', 3)).toEqual(['ab', '😀c', 'd']);
    expect(splitForSpeech('今日は晴れです。明日は雨です。', 10)).toEqual(['今日は晴れです。', '明日は雨です。']);
  });

  it('any text: the pieces join to the text, none is longer than the limit or splits a surrogate pair', () => {
    const word = fc.array(fc.constantFrom('a', 'b', 'é', '😀', 'z'), { minLength: 1, maxLength: 12 }).map((cs) => cs.join(''));
    const sep = fc.constantFrom(' ', '. ', '! ', '? ', ', ', '。', '\n');
    fc.assert(
      fc.property(fc.array(fc.tuple(word, sep), { maxLength: 40 }), fc.integer({ min: 2, max: 30 }), (parts, max) => {
        const text = parts.map(([w, s]) => w + s).join('');
        const pieces = splitForSpeech(text, max);
        expect(pieces.join('')).toBe(text);
        for (const p of pieces) {
          expect(p.length).toBeLessThanOrEqual(max);
          expect(/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(p)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});
