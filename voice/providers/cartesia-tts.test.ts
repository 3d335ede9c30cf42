// The Cartesia client against the loopback simulator: the requests it sends (voice,
// speed, language, format, key and version), audio delivered in segment order although
// the contexts finish out of order, one shared socket, cancel, and each failure
// reaching only the utterance it concerns as a typed error.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { speechLikeMulaw, startCartesiaSim, type CartesiaSim } from '../../test/sim/cartesia-sim.ts';
import { createCartesiaTts, type CartesiaTts, type CartesiaTtsOptions } from './cartesia-tts.ts';
import type { ProviderError } from './errors.ts';
import type { TtsSink, TtsVoice } from './tts.ts';

const KEY = 'sk_car_test';
const VOICE = '694f9389-aac1-45b6-b726-9d9369183238';
let sim: CartesiaSim;
const clients: CartesiaTts[] = [];

beforeEach(async () => {
  // 20x real time: a 4 s sentence streams in 200 ms, a short one in a few ms.
  sim = await startCartesiaSim({ apiKey: KEY, speedFactor: 20, firstAudioMs: 10 });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await sim.close();
});

function client(opts: Partial<CartesiaTtsOptions> = {}): CartesiaTts {
  const c = createCartesiaTts({ baseUrl: sim.url, apiKey: KEY, model: 'sonic-3', ...opts });
  clients.push(c);
  return c;
}

type SinkCall = { call: 'audio'; segment: number; bytes: Uint8Array } | { call: 'segmentDone'; segment: number } | { call: 'done' } | { call: 'error'; error: ProviderError };

/** Records every sink call; `finished` settles on done() or error(). */
function recorder() {
  const calls: SinkCall[] = [];
  let settle!: () => void;
  const finished = new Promise<void>((r) => (settle = r));
  const sink: TtsSink = {
    audio: (mulaw, segment) => calls.push({ call: 'audio', segment, bytes: Uint8Array.from(mulaw) }),
    segmentDone: (segment) => calls.push({ call: 'segmentDone', segment }),
    done: () => {
      calls.push({ call: 'done' });
      settle();
    },
    error: (error) => {
      calls.push({ call: 'error', error });
      settle();
    },
  };
  const audioOf = (segment: number) => Buffer.concat(calls.flatMap((c) => (c.call === 'audio' && c.segment === segment ? [c.bytes] : [])));
  return { sink, calls, finished, audioOf };
}

async function until(check: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const voice = (over: Partial<TtsVoice> = {}): TtsVoice => ({ voice: VOICE, speed: 1, language: 'en', ...over });

describe('cartesia websocket client', () => {
  it('sends one complete context per segment with the voice, speed, language and μ-law 8 kHz, keyed and versioned', async () => {
    const tts = client();
    expect(tts.name).toBe('cartesia');
    const r = recorder();
    const u = tts.start(voice({ speed: 1.2, language: 'es-MX' }), r.sink);
    expect(u.push('Hola, ¿en qué puedo ayudarle?')).toBe(0);
    u.end();
    await r.finished;
    expect(sim.connections[0]!.headers['x-api-key']).toBe(KEY);
    expect(sim.connections[0]!.headers['cartesia-version']).toBe('2025-04-16');
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]).toEqual({
      model_id: 'sonic-3',
      transcript: 'Hola, ¿en qué puedo ayudarle?',
      voice: { mode: 'id', id: VOICE },
      language: 'es',
      context_id: expect.any(String),
      output_format: { container: 'raw', encoding: 'pcm_mulaw', sample_rate: 8000 },
      continue: false,
      generation_config: { speed: 1.2 },
    });
    // Every byte Cartesia made, in order: the sentence at 1.2x.
    expect(r.audioOf(0).equals(speechLikeMulaw('Hola, ¿en qué puedo ayudarle?', 1.2))).toBe(true);
    expect(r.calls.slice(-2)).toEqual([{ call: 'segmentDone', segment: 0 }, { call: 'done' }]);
  });

  it('keeps speed inside what the model takes and lets the voice choose the language for multi', async () => {
    const r1 = recorder();
    const u1 = client().start(voice({ speed: 0.5, language: 'multi' }), r1.sink);
    u1.push('Slowly.');
    u1.end();
    await r1.finished;
    expect(sim.requests[0]!.generation_config).toEqual({ speed: 0.6 });
    expect(sim.requests[0]).not.toHaveProperty('language');
    // sonic-2 predates generation_config: the coarse speed word instead.
    const r2 = recorder();
    const u2 = client({ model: 'sonic-2' }).start(voice({ speed: 0.7 }), r2.sink);
    u2.push('Slowly.');
    u2.end();
    await r2.finished;
    expect(sim.requests[1]).toMatchObject({ model_id: 'sonic-2', speed: 'slow' });
    expect(sim.requests[1]).not.toHaveProperty('generation_config');
  });

  it('requests every segment at once and delivers the audio strictly in segment order', async () => {
    const texts = ['This first sentence is much longer than the two that follow it.', 'Short one.', 'Last.'];
    const tts = client();
    const r = recorder();
    const u = tts.start(voice(), r.sink);
    texts.forEach((t, i) => expect(u.push(t)).toBe(i));
    u.end();
    await until(() => r.calls.length > 0, 'the first audio');
    expect(sim.requests).toHaveLength(3); // the later sentences are already synthesizing
    await r.finished;
    // Every call of segment n comes before any of n+1, and segmentDone(n) between them.
    const order = r.calls.map((c) => (c.call === 'audio' ? `a${c.segment}` : c.call === 'segmentDone' ? `d${c.segment}` : c.call));
    const compact = order.filter((x, i) => x !== order[i - 1]);
    expect(compact).toEqual(['a0', 'd0', 'a1', 'd1', 'a2', 'd2', 'done']);
    texts.forEach((t, i) => expect(r.audioOf(i).equals(speechLikeMulaw(t)), `segment ${i}`).toBe(true));

    // A second utterance shares the same socket.
    const r2 = recorder();
    const u2 = tts.start(voice(), r2.sink);
    u2.push('Again.');
    u2.end();
    await r2.finished;
    expect(sim.connections).toHaveLength(1);
  });

  it('connects lazily, and an utterance with nothing said is done at once', async () => {
    const tts = client();
    await sleep(50);
    expect(sim.connections).toHaveLength(0);
    const r = recorder();
    const u = tts.start(voice(), r.sink);
    expect(u.push('   ')).toBe(0);
    u.end();
    await r.finished;
    expect(r.calls).toEqual([{ call: 'segmentDone', segment: 0 }, { call: 'done' }]);
    expect(sim.requests).toHaveLength(0);
  });

  it('cancel() cancels every open context and stops the sink at once', async () => {
    await sim.close();
    // Audio already in flight keeps arriving for a while after the cancel, as on a real network.
    sim = await startCartesiaSim({ apiKey: KEY, speedFactor: 20, firstAudioMs: 10, cancelLatencyMs: 100 });
    const tts = client();
    const r = recorder();
    const u = tts.start(voice(), r.sink);
    u.push('The first sentence takes a few seconds of audio to say out loud.');
    u.push('The second sentence is also long enough to still be generating.');
    u.push('And a third one, just as long, to be sure it is still open.');
    await until(() => r.calls.length > 0, 'the first audio');
    u.cancel();
    u.cancel(); // idempotent
    const contexts = sim.requests.map((q) => q.context_id);
    await until(() => sim.cancels.length === 3, 'three cancels');
    expect(sim.cancels.sort()).toEqual([...contexts].sort());
    const seen = r.calls.length;
    await sleep(150);
    expect(r.calls).toHaveLength(seen);
    expect(r.calls.some((c) => c.call === 'done' || c.call === 'error')).toBe(false);
  });

  it('an error message fails its utterance with a typed error and leaves the others alone', async () => {
    const tts = client();
    const a = recorder();
    const b = recorder();
    const ua = tts.start(voice(), a.sink);
    const ub = tts.start(voice(), b.sink);
    sim.fail('error', { status: 400, message: 'Voice not found.' });
    ua.push('This request is refused.');
    ua.push('So this one is cancelled.');
    ub.push('This one is fine.');
    ua.end();
    ub.end();
    await Promise.all([a.finished, b.finished]);
    const last = a.calls.at(-1)!;
    if (last.call !== 'error') throw new Error(`expected an error, got ${last.call}`);
    expect(last.error).toMatchObject({ provider: 'tts', kind: 'bad_request', retryable: false, status: 400 });
    expect(last.error.message).toContain('Voice not found.');
    // Only the utterance's other context is cancelled; the refused one is already over.
    await until(() => sim.cancels.length === 1, 'the cancel');
    expect(sim.cancels).toEqual([sim.requests[1]!.context_id]);
    expect(b.calls.at(-1)).toEqual({ call: 'done' });
  });

  it('a lost socket fails the utterances on it as retryable, and the next one reconnects', async () => {
    const tts = client();
    const r = recorder();
    const u = tts.start(voice(), r.sink);
    u.push('A long sentence that is still streaming when the connection drops.');
    await until(() => r.calls.length > 0, 'the first audio');
    sim.fail('drop');
    await r.finished;
    expect(r.calls.at(-1)).toMatchObject({ call: 'error', error: { kind: 'unavailable', retryable: true } });
    const r2 = recorder();
    const u2 = tts.start(voice(), r2.sink);
    u2.push('Back again.');
    u2.end();
    await r2.finished;
    expect(r2.calls.at(-1)).toEqual({ call: 'done' });
    expect(sim.connections).toHaveLength(2);
  });

  it('a refused key is an auth error, not retryable', async () => {
    const r = recorder();
    const u = client({ apiKey: 'sk_car_revoked' }).start(voice(), r.sink);
    u.push('Hello.');
    await r.finished;
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0]).toMatchObject({ call: 'error', error: { kind: 'auth', retryable: false, status: 401 } });
  });

  it('a request Cartesia never answers times out, but waiting on the model does not', async () => {
    const tts = client({ progressTimeoutMs: 150 });
    const r = recorder();
    const u = tts.start(voice(), r.sink);
    u.push('Hi.');
    await until(() => r.calls.some((c) => c.call === 'segmentDone'), 'the first segment');
    await sleep(400); // the model is slow to write the next sentence: no Cartesia deadline runs
    expect(r.calls.some((c) => c.call === 'error')).toBe(false);
    sim.fail('stall');
    u.push('This one hangs.');
    await r.finished;
    expect(r.calls.at(-1)).toMatchObject({ call: 'error', error: { kind: 'timeout', retryable: true } });
    await until(() => sim.cancels.length === 1, 'the cancel');
    expect(sim.cancels).toEqual([sim.requests[1]!.context_id]);
  });
});
