// The Deepgram client against the loopback simulator: what it asks for (query and key),
// the words a burst of caller audio turns into, Finalize, KeepAlive in silence,
// reconnection that loses no audio, and the failures the engine must hear about.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mulawTone } from '../../test/sim/far-end-playback.ts';
import { startDeepgramSim, type DeepgramSim } from '../../test/sim/deepgram-sim.ts';
import { concatMulaw, lineNoiseMulaw, loadSpeechFixture, speechFixture, speechOnLineMulaw } from '../../test/fixtures/speech/noise.ts';
import { MULAW_SILENCE } from '../audio/mulaw.ts';
import { createDeepgramStt, type DeepgramSttOptions } from './deepgram-stt.ts';
import type { SttEvent, SttStream } from './stt.ts';

const KEY = 'dg-test-key';
let sim: DeepgramSim;
const streams: SttStream[] = [];

beforeEach(async () => {
  sim = await startDeepgramSim({ apiKey: KEY });
});
afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  await sim.close();
});

function open(opts: Partial<DeepgramSttOptions> = {}, language = 'en', keyterms: string[] = []) {
  const events: SttEvent[] = [];
  const client = createDeepgramStt({ baseUrl: sim.url, apiKey: KEY, model: 'nova-3', ...opts });
  const stream = client.open({ language, keyterms, onEvent: (e) => events.push(e) });
  streams.push(stream);
  return { stream, events };
}

/** Sends `ms` of audio in 20 ms frames, reusing one buffer as the media path does. */
function sendAudio(stream: SttStream, ms: number, loud: boolean): void {
  const frame = new Uint8Array(160);
  const tone = mulawTone(220, 20);
  for (let t = 0; t < ms; t += 20) {
    if (loud) frame.set(tone);
    else frame.fill(MULAW_SILENCE);
    stream.send(frame);
  }
}

async function until(check: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('deepgram live client', () => {
  it('asks for 8 kHz μ-law with the agent language, key terms and turn events, with a Token key', async () => {
    open({ endpointingMs: 300, utteranceEndMs: 1000 }, 'multi', ['Switchboard', ' Acme Corp ', '', 'Switchboard']);
    await until(() => sim.connections.length === 1, 'a connection');
    const { query, headers } = sim.connections[0]!;
    expect(headers.authorization).toBe(`Token ${KEY}`);
    expect(Object.fromEntries([...query].filter(([k]) => k !== 'keyterm'))).toMatchObject({
      model: 'nova-3',
      encoding: 'mulaw',
      sample_rate: '8000',
      channels: '1',
      interim_results: 'true',
      endpointing: '300',
      utterance_end_ms: '1000',
      vad_events: 'true',
      language: 'multi',
    });
    // Repeated params, trimmed, without blanks or duplicates.
    expect(query.getAll('keyterm')).toEqual(['Switchboard', 'Acme Corp']);
  });

  it('reports speech start, growing interims, the final and the utterance end for a burst of speech', async () => {
    sim.say('hello there how are you');
    const { stream, events } = open();
    sendAudio(stream, 1000, true);
    sendAudio(stream, 1200, false);
    await until(() => events.some((e) => e.type === 'utterance_end'), 'UtteranceEnd');
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('speech_started');
    expect(types.indexOf('final')).toBeGreaterThan(types.lastIndexOf('interim'));
    expect(types.indexOf('utterance_end')).toBeGreaterThan(types.indexOf('final'));
    const interims = events.flatMap((e) => (e.type === 'interim' ? [e.text] : []));
    expect(interims.slice(0, 3)).toEqual(['hello', 'hello there', 'hello there how']);
    expect(events.filter((e) => e.type === 'final')).toEqual([{ type: 'final', text: 'hello there how are you', speechFinal: true }]);
  });

  it('hears real speech on a noisy line as one utterance, and line noise alone as nothing', async () => {
    const { text } = speechFixture('book-table');
    sim.say(text);
    const { stream, events } = open();
    stream.send(lineNoiseMulaw(1500)); // nobody speaking yet
    stream.send(concatMulaw(speechOnLineMulaw(loadSpeechFixture('book-table')), lineNoiseMulaw(1200)));
    await until(() => events.some((e) => e.type === 'utterance_end'), 'UtteranceEnd');
    expect(events.filter((e) => e.type === 'speech_started')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'final')).toEqual([{ type: 'final', text, speechFinal: true }]);
    expect(events.at(-1)).toEqual({ type: 'utterance_end' });
  });

  it('reports no interim for words it did not hear, but still the empty final', async () => {
    const { stream, events } = open();
    sendAudio(stream, 600, true); // nothing queued with say(): the simulator hears no words
    sendAudio(stream, 400, false);
    await until(() => events.some((e) => e.type === 'final'), 'the final');
    // The simulator did send empty interims; the client kept them to itself.
    expect(sim.connections[0]!.sent.some((m) => m['type'] === 'Results' && m['is_final'] === false)).toBe(true);
    expect(events.filter((e) => e.type !== 'speech_started')).toEqual([{ type: 'final', text: '', speechFinal: true }]);
  });

  it('finalize() makes the words heard so far final at once', async () => {
    sim.say('book a table for two');
    const { stream, events } = open();
    sendAudio(stream, 600, true); // still speaking: no endpoint yet
    stream.finalize();
    await until(() => events.some((e) => e.type === 'final'), 'the final');
    expect(sim.connections[0]!.control).toEqual(['Finalize']);
    expect(events.find((e) => e.type === 'final')).toEqual({ type: 'final', text: 'book a table for two', speechFinal: false });
  });

  it('sends KeepAlive only while no audio is being sent', async () => {
    const { stream } = open({ keepAliveMs: 150 });
    await until(() => sim.connections.length === 1, 'a connection');
    // Audio every 50 ms for 450 ms: the line is busy, no KeepAlive.
    for (let i = 0; i < 9; i++) {
      sendAudio(stream, 20, false);
      await sleep(50);
    }
    expect(sim.connections[0]!.control).toEqual([]);
    await until(() => sim.connections[0]!.control.length >= 2, 'two KeepAlives', 2000);
    expect(new Set(sim.connections[0]!.control)).toEqual(new Set(['KeepAlive']));
  });

  it('reconnects after an abrupt close and sends the audio spoken during the gap to the new socket', async () => {
    sim.say('are you still there');
    const { stream, events } = open({ reconnectDelaysMs: [100, 150, 200] });
    sendAudio(stream, 200, false);
    await until(() => sim.connections[0]?.bytes === 1600, 'the first audio');
    sim.fail('unavailable'); // the first attempt is refused, so the gap is long enough to speak into
    sim.fail('drop');
    await until(() => sim.refused === 1, 'a refused reconnection attempt');
    sendAudio(stream, 800, true);
    sendAudio(stream, 400, false);
    await until(() => events.some((e) => e.type === 'final'), 'the final');
    expect(sim.connections).toHaveLength(2);
    expect(sim.connections[1]!.bytes).toBe(9600);
    expect(events.find((e) => e.type === 'final')).toEqual({ type: 'final', text: 'are you still there', speechFinal: true });
    expect(events.some((e) => e.type === 'error')).toBe(false);
  });

  it('reports a refused key at once as a non-retryable auth error, and nothing after it', async () => {
    const events: SttEvent[] = [];
    const client = createDeepgramStt({ baseUrl: sim.url, apiKey: 'revoked', model: 'nova-3', reconnectDelaysMs: [50, 50, 50] });
    const stream = client.open({ language: 'en', keyterms: [], onEvent: (e) => events.push(e) });
    streams.push(stream);
    const started = Date.now();
    await until(() => events.length > 0, 'the error');
    expect(Date.now() - started).toBeLessThan(500);
    await sleep(300);
    expect(sim.refused).toBe(1); // no second try
    expect(events).toHaveLength(1);
    const event = events[0]!;
    if (event.type !== 'error') throw new Error(`expected an error, got ${event.type}`);
    expect(event.error).toMatchObject({ provider: 'stt', kind: 'auth', retryable: false, status: 401 });
    expect(event.error.message).not.toContain('revoked');
  });

  it('sends audio 40 ms at a time, and a Finalize sends the frames still gathered first', async () => {
    const { stream } = open();
    const conns = sim.connections.length;
    await until(() => sim.connections[conns]?.open === true, 'the socket');
    sendAudio(stream, 100, false);
    await until(() => sim.connections[conns]!.bytes === 640, 'two 40 ms messages');
    stream.finalize();
    await until(() => sim.connections[conns]!.control.includes('Finalize'), 'the Finalize');
    expect(sim.connections[conns]!.bytes).toBe(800);
    stream.close();
  });

  it('while quiet sends audio 200 ms at a time, and going live sends what it holds at once', async () => {
    const { stream } = open();
    const conns = sim.connections.length;
    await until(() => sim.connections[conns]?.open === true, 'the socket');
    const conn = sim.connections[conns]!;
    stream.callerSilence(1500); // UtteranceEnd (1000 ms) and the margin
    sendAudio(stream, 500, false);
    await until(() => conn.bytes === 3200, 'two 200 ms messages');
    expect(conn.audioMessages).toBe(2);
    // The caller speaks again: the 100 ms held go now, then 40 ms messages as before.
    stream.callerSilence(0);
    await until(() => conn.bytes === 4000, 'the held 100 ms');
    expect(conn.audioMessages).toBe(3);
    sendAudio(stream, 80, true);
    await until(() => conn.bytes === 4640, '80 ms more');
    expect(conn.audioMessages).toBe(5); // two 40 ms messages
    // A chunk as large as a message is not held for the next one.
    stream.send(new Uint8Array(160).fill(0xff));
    stream.send(new Uint8Array(320).fill(0xff));
    await until(() => conn.bytes === 5120, 'the gathered frame, then the 40 ms chunk');
    expect(conn.audioMessages).toBe(7);
    stream.close();
  });

  it('gives up after its reconnection attempts with one retryable error', async () => {
    const { stream, events } = open({ reconnectDelaysMs: [30, 30, 30] });
    sendAudio(stream, 100, false);
    // Audio goes out 40 ms at a time: of 100 ms, the last frame waits for the next one.
    await until(() => sim.connections[0]?.bytes === 640, 'the first audio');
    sim.fail('unavailable', 10);
    sim.fail('drop');
    await until(() => events.length > 0, 'the error');
    await sleep(200);
    expect(sim.refused).toBe(3);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'error', error: { kind: 'unavailable', retryable: true, status: 503 } });
  });

  it('close() sends CloseStream, closes, and reports nothing afterwards', async () => {
    sim.say('goodbye');
    const { stream, events } = open();
    sendAudio(stream, 600, true);
    await until(() => events.some((e) => e.type === 'interim'), 'an interim');
    const seen = events.length;
    stream.close();
    stream.close(); // idempotent
    await until(() => sim.connections[0]!.open === false, 'the socket to close');
    expect(sim.connections[0]!.control).toEqual(['CloseStream']);
    // The simulator flushed the pending words as a final on CloseStream; the engine does not hear it.
    expect(sim.connections[0]!.sent.some((m) => m['is_final'] === true)).toBe(true);
    await sleep(50);
    expect(events).toHaveLength(seen);
  });
});
