// Backchannels over a long reply, end to end (issue 24): carrier A's media stream, real
// espeak-ng speech, the provider simulators' protocols. The agent speaks a two-sentence
// reply of about ten seconds; the caller says "Uh-huh." about 0.8 s into it, then
// "Yeah, okay." and "Uh-huh." again about 2.2 s apart, at the default
// interruption_sensitivity (50). The agent must not stop for any of them: no `clear`,
// the reply heard to its end and kept whole in the transcript, the model never asked to
// answer a backchannel, and no silence over 300 ms inside the reply.
//
// The race this guards against needs voice activity to run behind the recogniser (under
// load the Silero model's thread, batched across calls, answers late), so the words of a
// backchannel are final before the pause the speech would start. Instead of a dozen other
// live calls, each run moves the two apart by a seeded amount: the recogniser simulator
// settles words after a shorter silence than the 300 ms the service asks for, so its
// final reaches the engine 60 to 240 ms earlier relative to voice activity's speech
// start, exactly as if voice activity ran that much behind it. Every other run the
// recogniser sends no interim words (as Deepgram may not for a short utterance), so the
// final words alone must settle each backchannel. Before the fix all of 10 runs here
// stalled at both "Uh-huh."s for about 1.9 s (the 2 s resume timer); with 12 real calls
// beside it instead of the skew, 3 runs of 14 did.
//
// BACKCHANNEL_RUNS=50 (and BACKCHANNEL_SEED=…) for a longer search; each run is one call
// of about 15 s.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually, newCustomer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import { loadSpeechFixture } from './fixtures/speech/speech.ts';
import { mulberry32 } from './sim/sim-http.ts';
import { FarEndEar } from '../bench/far-end-ear.ts';
import { monitorStalls } from '../bench/loop-stalls.ts';

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack();
});
afterAll(async () => {
  await stack?.close();
});

const RUNS = Number(process.env['BACKCHANNEL_RUNS'] ?? 2);
const SEED = Number(process.env['BACKCHANNEL_SEED'] ?? 24);
const REPLY =
  'We open at eleven in the morning on Saturdays and stay open until eleven at night. ' +
  'The kitchen takes its last orders at ten, so come before then for a full dinner.';
/** Longest silence the caller may hear inside the reply (the carrier holds 120 ms ahead; a pause of a tick or two is not heard). */
const MAX_SILENCE_MS = 300;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const YEAH_OKAY = new Uint8Array([...loadSpeechFixture('yeah'), ...loadSpeechFixture('okay')]);

interface RunResult {
  run: number;
  endpointingMs: number;
  interims: boolean;
  saidAtMs: number[];
  maxSilenceMs: number;
  silences: string;
}

it(`backchannels over a long reply never stop it: ${RUNS} seeded runs, no silence over ${MAX_SILENCE_MS} ms`, { timeout: 30_000 + RUNS * 25_000 }, async () => {
  const c = await newCustomer(stack, 'twilio', { welcome_message: 'Hi.' });
  const rand = mulberry32(SEED);
  const results: RunResult[] = [];
  for (let run = 0; run < RUNS; run++) {
    const endpointingMs = Math.round(60 + rand() * 180);
    const interims = run % 2 === 0;
    // About 0.8 s into the reply, then about 2.2 s apart.
    const first = 700 + rand() * 200;
    const saidAtMs = [first, first + 2050 + rand() * 300, first + 4100 + rand() * 600].map(Math.round);

    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const stream = [...stack.sims.twilio.calls.values()].find((x) => x.sid === far.id)!.stream!;
    const ear = listen(stream);
    const stalls = monitorStalls();
    try {
      const llmBefore = stack.llm.requests.length;
      stack.llm.reply({ text: REPLY });
      const heard = ear.utterances;
      const marks = stream.returnedMarks.length;
      await far.say('saturday-hours');
      await eventually(() => (ear.utterances > heard ? true : undefined), 10_000, 'the reply to start');
      const replyAt = ear.utteranceStartedAt;
      stack.stt.endpointing(endpointingMs);
      stack.stt.interims(interims);
      const at = (ms: number) => sleep(Math.max(0, replyAt + ms - performance.now()));
      await at(saidAtMs[0]!);
      await far.say('uh-huh');
      await at(saidAtMs[1]!);
      stack.stt.say('Yeah, okay.');
      await far.voice.say(YEAH_OKAY);
      await at(saidAtMs[2]!);
      await far.say('uh-huh');
      await eventually(() => (stream.returnedMarks.length > marks ? true : undefined), 20_000, 'the reply to finish playing');
      stack.stt.endpointing(null);
      stack.stt.interims(true);

      // What held on every run before the fix, and must still.
      expect(stream.clears).toBe(0);
      const done = await recordWhere(stack, c, far.id, (r) => typeof r.transcript === 'string' && r.transcript.endsWith(`Agent: ${REPLY}`), 10_000, 'the reply kept whole');
      expect(done.transcript).toBe(`Agent: Hi.\nCaller: What time do you open on Saturday?\nAgent: ${REPLY}`);
      expect(stack.llm.requests.length).toBe(llmBefore + 1);

      const silences: string[] = [];
      for (let i = 0; i < ear.gapIntervals.length; i += 2) {
        const from = ear.gapIntervals[i]!;
        if (from >= replyAt) silences.push(`${Math.round(ear.gapIntervals[i + 1]! - from)} ms at ${Math.round(from - replyAt)}`);
      }
      results.push({ run, endpointingMs, interims, saidAtMs, maxSilenceMs: Math.round(ear.gapsHeard(stalls).maxGapMs), silences: silences.join(', ') || 'none' });
      if (process.env['BACKCHANNEL_RUNS']) console.info(JSON.stringify(results.at(-1)));
    } finally {
      stalls.stop();
      stack.stt.endpointing(null);
      stack.stt.interims(true);
      await far.hangup();
      // Ended on both sides before the next call (or the stack closing under its last webhooks).
      await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed', 10_000, 'the call to end');
    }
  }
  const silent = results.filter((r) => r.maxSilenceMs > MAX_SILENCE_MS);
  expect(silent, `runs with silence over ${MAX_SILENCE_MS} ms: ${silent.length} of ${RUNS} (seed ${SEED})`).toEqual([]);
});

/**
 * Stamps each `media` payload the service sends as it arrives, for the ear (bench/far-end-ear.ts):
 * the stream keeps the payloads but not their times. Only this stream's own array is wrapped.
 */
function listen(stream: { audio: Uint8Array[]; marks: string[]; clears: number }): FarEndEar {
  const ear = new FarEndEar();
  const audio = stream.audio;
  const store = audio.push;
  audio.push = function (...payloads: Uint8Array[]): number {
    const now = performance.now();
    for (const p of payloads) ear.arrived(p.length, now, stream.marks.length + stream.clears);
    return store.apply(this, payloads);
  };
  return ear;
}
