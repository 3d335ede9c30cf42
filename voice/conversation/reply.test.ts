// One reply from words to the caller's ear, against the model and speech simulators
// over loopback and the real playout clock: segments spoken in order, the end reported
// only once the carrier played it, the heard words on an interruption, tool calls, and
// failures reported with whether a retry may help.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim } from '../../test/sim/llm-sim.ts';
import { startOpenAiTtsSim, type OpenAiTtsSim } from '../../test/sim/openai-tts-sim.ts';
import { createOpenAiLlm } from '../providers/openai-llm.ts';
import { createOpenAiTts } from '../providers/openai-tts.ts';
import { createPlayout, createPlayoutTicker, type Playout } from '../media/playout.ts';
import type { MediaOutput } from '../engine/engine.ts';
import type { ProviderError } from '../providers/errors.ts';
import { startReply, type ReplySource } from './reply.ts';

let llm: LlmSim;
let tts: OpenAiTtsSim;
beforeAll(async () => {
  llm = await startLlmSim({ firstTokenMs: 20, tokenMs: 2 });
  tts = await startOpenAiTtsSim({ firstAudioMs: 20, speedFactor: 8 });
});
afterAll(async () => {
  await Promise.all([llm?.close(), tts?.close()]);
});

const ticker = createPlayoutTicker();
afterAll(() => ticker.stop());

/** A carrier that plays in real time: marks come back once the audio before them has played. */
function carrier() {
  let bytes = 0;
  let clears = 0;
  let playout: Playout;
  const output: MediaOutput = {
    play: (m) => void (bytes += m.length),
    mark: (name) => void setTimeout(() => playout.onMark(name), 150),
    clear: () => void clears++,
  };
  playout = createPlayout(output, { now: () => performance.now(), leadMs: 120 });
  ticker.add(playout);
  return { playout, bytes: () => bytes, clears: () => clears, stop: () => ticker.remove(playout) };
}

interface Outcome {
  ended?: { heard: string; complete: boolean };
  failed?: { provider: string; error: ProviderError };
  tools: string[];
  firstAudio: boolean;
}

function run(id: number, source: ReplySource) {
  const c = carrier();
  const out: Outcome = { tools: [], firstAudio: false };
  let done!: () => void;
  const over = new Promise<void>((r) => (done = r));
  const handle = startReply(
    id,
    source,
    {
      llm: createOpenAiLlm({ baseUrl: llm.baseUrl, model: 'm' }),
      tts: createOpenAiTts({ baseUrl: tts.baseUrl, model: 't' }),
      voice: { voice: 'onyx', speed: 1.5, language: 'en' },
      playout: c.playout,
      now: () => performance.now(),
    },
    {
      firstAudio: () => void (out.firstAudio = true),
      ended: (heard, complete) => {
        out.ended = { heard, complete };
        done();
      },
      failed: (provider, error) => {
        out.failed = { provider, error };
        done();
      },
      toolCall: (name) => void out.tools.push(name),
    },
  );
  return { handle, out, over, carrier: c };
}

const model = (): ReplySource => ({ kind: 'model', messages: [{ role: 'user', content: 'hi' }], tools: [], temperature: 0.3, maxTokens: 150 });

describe('a reply', () => {
  it('speaks the model’s sentences in order and ends, complete, once the carrier has played them', async () => {
    llm.reply({ text: 'Sure. We open at nine on Saturdays.' });
    const before = tts.requests.length;
    const r = run(1, model());
    await r.over;
    r.carrier.stop();
    expect(r.out.ended).toEqual({ heard: 'Sure. We open at nine on Saturdays.', complete: true });
    expect(r.out.firstAudio).toBe(true);
    expect(tts.requests.slice(before).map((q) => [q.body.input, q.body.voice, q.body.speed])).toEqual([
      ['Sure.', 'onyx', 1.5],
      ['We open at nine on Saturdays.', 'onyx', 1.5],
    ]);
    expect(r.carrier.bytes()).toBeGreaterThan(8 * 1000);
    expect(r.handle.timings.firstFrameSentAt).toBeGreaterThanOrEqual(r.handle.timings.ttsFirstAudioAt!);
  });

  it('interrupted, it reports the words already played, a prefix of the reply, and clears the carrier', async () => {
    const text = 'We are open from nine in the morning until ten at night, every day of the week, holidays included.';
    llm.reply({ text });
    const r = run(2, model());
    await new Promise((res) => setTimeout(res, 1500));
    r.handle.interrupt();
    await r.over;
    r.carrier.stop();
    expect(r.out.ended!.complete).toBe(false);
    expect(r.out.ended!.heard.length).toBeGreaterThan(0);
    expect(r.out.ended!.heard.length).toBeLessThan(text.length);
    expect(text.startsWith(r.out.ended!.heard)).toBe(true);
    expect(r.carrier.clears()).toBe(1);
  });

  it('reports a tool call; a reply with nothing to say ends at once, complete and empty', async () => {
    llm.reply({ toolCalls: [{ name: 'end_call', arguments: {} }] });
    const r = run(3, model());
    await r.over;
    r.carrier.stop();
    expect(r.out.tools).toEqual(['end_call']);
    expect(r.out.ended).toEqual({ heard: '', complete: true });
  });

  it('a fixed line needs no model', async () => {
    const requests = llm.requests.length;
    const r = run(4, { kind: 'text', text: 'Sorry, could you say that again?' });
    await r.over;
    r.carrier.stop();
    expect(r.out.ended).toEqual({ heard: 'Sorry, could you say that again?', complete: true });
    expect(llm.requests.length).toBe(requests);
  });

  it('fails with the provider and whether a retry may help: model 500 (yes), speech 401 (no)', async () => {
    llm.fail({ kind: 'status', status: 500 });
    const a = run(5, model());
    await a.over;
    a.carrier.stop();
    expect(a.out.failed!.provider).toBe('llm');
    expect(a.out.failed!.error.retryable).toBe(true);
    tts.fail({ kind: 'status', status: 401 });
    const b = run(6, { kind: 'text', text: 'Hello there.' });
    await b.over;
    b.carrier.stop();
    expect(b.out.failed!.provider).toBe('tts');
    expect(b.out.failed!.error.retryable).toBe(false);
  });
});
