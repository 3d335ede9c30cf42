// One simulated caller of the conversation benchmark, through carrier A's simulator
// (the real webhook, TwiML and media-stream protocol): it rings the agent's number,
// waits until the greeting has played, then for each turn speaks a real speech fixture
// (espeak-ng μ-law), waits for the agent's reply to start and to finish playing, and
// after the last turn hangs up. What it hears is judged by a FarEndEar (gaps inside the
// agent's speech); the turn latency it measures is the caller's own: from the last
// frame of their words leaving to the first frame of the reply arriving.
import { performance } from 'node:perf_hooks';
import { FarEndVoice } from '../test/sim/far-end-playback.ts';
import type { TwilioMediaClient } from '../test/sim/twilio-media-client.ts';
import type { TwilioSim } from '../test/sim/twilio-sim.ts';
import { FarEndEar } from './far-end-ear.ts';
import type { Poller } from './poller.ts';

export interface CallerScript {
  /** μ-law 8 kHz lines, one per turn, in order. */
  lines: Uint8Array[];
  /** Silence after the agent finished before the caller speaks (a person's pause). */
  pauseMs: number;
  /** Longest wait for any one step (greeting, reply start, reply end). */
  timeoutMs: number;
}

export interface CallerResult {
  /** Null when every turn was answered and the call was hung up; otherwise what failed. */
  failure: string | null;
  /** performance.now() when the greeting's first audio arrived (null if it never did). */
  greetedAt: number | null;
  /** performance.now() when the caller hung up (or gave up). */
  endedAt: number;
  /** Per answered turn: the caller's end of speech to the reply's first audio arriving, ms. */
  turnLatenciesMs: number[];
  ear: FarEndEar;
}

/**
 * Stamps every `media` payload the service sends on `stream` as it arrives. The client
 * keeps the payloads (`audio`) but not their times, and the times are what an ear
 * needs: this wraps that one array's push (the client object's own, nothing of the
 * module) to tell the ear before the payload is stored.
 */
function listen(stream: TwilioMediaClient, ear: FarEndEar): void {
  const audio = stream.audio as Uint8Array[];
  const store = audio.push;
  audio.push = function (...payloads: Uint8Array[]): number {
    const now = performance.now();
    for (const p of payloads) ear.arrived(p.length, now, stream.marks.length + stream.clears);
    return store.apply(this, payloads);
  };
}

/** Moments the bench times its CPU window by. */
export interface CallerHooks {
  /** The greeting's first audio arrived. */
  greeted?(): void;
  /** The conversation is over (all turns answered, or a step failed): the caller hangs up next. */
  finishing?(): void;
}

export async function runCaller(twilio: TwilioSim, poller: Poller, from: string, to: string, script: CallerScript, hooks: CallerHooks = {}): Promise<CallerResult> {
  const voice = new FarEndVoice();
  const ear = new FarEndEar();
  const turnLatenciesMs: number[] = [];
  let greetedAt: number | null = null;
  let hangup: (() => Promise<unknown>) | null = null;
  let failure: string | null = null;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  try {
    const call = await twilio.placeInboundCall({ from, to, audio: voice });
    hangup = () => call.hangup();
    if (call.httpStatus !== 200) throw new Error(`the incoming-call webhook answered ${call.httpStatus}`);
    await poller.until(() => call.stream !== null, script.timeoutMs, 'the media stream');
    const stream = call.stream!;
    listen(stream, ear);
    await poller.until(() => ear.utterances >= 1, script.timeoutMs, 'the greeting to start');
    greetedAt = ear.utteranceStartedAt;
    hooks.greeted?.();
    await poller.until(() => stream.returnedMarks.length >= 1, script.timeoutMs, 'the greeting to finish');
    for (let turn = 0; turn < script.lines.length; turn++) {
      await sleep(script.pauseMs);
      const heard = ear.utterances;
      const played = stream.returnedMarks.length;
      await voice.say(script.lines[turn]!);
      const spokeAt = voice.lastSpokeAt;
      await poller.until(() => ear.utterances > heard, script.timeoutMs, `reply ${turn + 1} to start`);
      turnLatenciesMs.push(ear.utteranceStartedAt - spokeAt);
      await poller.until(() => stream.returnedMarks.length > played, script.timeoutMs, `reply ${turn + 1} to finish`);
    }
  } catch (err) {
    failure = (err as Error).message;
  }
  const endedAt = performance.now();
  hooks.finishing?.();
  if (hangup) await hangup().catch((err: Error) => (failure ??= `hang-up failed: ${err.message}`));
  return { failure, greetedAt, endedAt, turnLatenciesMs, ear };
}
