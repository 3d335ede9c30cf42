// The voicemail screen as the callee's side would notice it: when the agent starts
// talking to a person, when a machine gets its message (after the beep, after the
// greeting) and when it is hung up on silently; all on a simulated clock.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { DelayTrackingClock } from '../test/model/restorable.ts';
import {
  GREETING_END_MS, HUMAN_PAUSE_MS, MAX_WAIT_MS, NO_SPEECH_MS, SCREEN_MS, soundsLikeVoicemail, verdictOf, voicemailScreenMachine, type ScreenEvent,
} from './voicemail-screen.ts';

function start(leaveMessage = true) {
  const clock = new SimulatedClock();
  const effects: { effect: string; at: number; text?: string }[] = [];
  const note = (effect: string, text?: string) => effects.push({ effect, at: clock.now(), ...(text !== undefined ? { text } : {}) });
  const machine = voicemailScreenMachine.provide({
    actions: {
      classify: (_, p: { text: string }) => note('classify', p.text),
      human: () => note('human'),
      leaveMessage: () => note('leaveMessage'),
      hangUpSilently: () => note('hangUpSilently'),
    },
  });
  const actor = createActor(machine, { input: { leaveMessage }, clock });
  actor.start();
  const send = (e: ScreenEvent) => actor.send(e);
  /** The callee speaks for `ms`, then their final words arrive. */
  const speak = (ms: number, text: string) => {
    send({ type: 'SPEECH.START' });
    clock.increment(ms);
    send({ type: 'SPEECH.END' });
    send({ type: 'WORDS', text, final: true });
  };
  const decided = () => effects.filter((e) => e.effect !== 'classify').map((e) => e.effect);
  return { clock, effects, send, speak, decided, actor };
}

const GREETING = 'Hi, you have reached Sam. I am not available right now, please leave a message after the tone.';

describe('voicemail screen', () => {
  it('a short "Hello?" then a pause is a person: the conversation starts HUMAN_PAUSE_MS later', () => {
    const s = start();
    s.clock.increment(300);
    s.speak(600, 'Hello?');
    expect(s.effects).toEqual([{ effect: 'classify', at: 900, text: 'Hello?' }]);
    s.clock.increment(HUMAN_PAUSE_MS - 1);
    expect(s.decided()).toEqual([]);
    s.clock.increment(1);
    expect(s.decided()).toEqual(['human']);
    // A late model answer changes nothing.
    s.send({ type: 'CLASSIFIED', verdict: 'voicemail' });
    s.clock.increment(SCREEN_MS);
    expect(s.decided()).toEqual(['human']);
  });

  it('a greeting with voicemail phrases is a machine; the message starts after the beep', () => {
    const s = start();
    s.speak(5000, GREETING);
    s.clock.increment(400);
    expect(s.decided()).toEqual([]);
    s.send({ type: 'BEEP' });
    expect(s.decided()).toEqual(['leaveMessage']);
  });

  it('without a beep the message starts once the greeting has been quiet for GREETING_END_MS', () => {
    const s = start();
    s.send({ type: 'SPEECH.START' });
    s.clock.increment(3000);
    s.send({ type: 'WORDS', text: GREETING, final: true });
    s.clock.increment(2000);
    s.send({ type: 'SPEECH.END' });
    s.clock.increment(GREETING_END_MS - 1);
    expect(s.decided()).toEqual([]);
    s.send({ type: 'SPEECH.START' }); // the greeting goes on
    s.clock.increment(1000);
    s.send({ type: 'SPEECH.END' });
    s.clock.increment(GREETING_END_MS);
    expect(s.decided()).toEqual(['leaveMessage']);
  });

  it('a beep alone is a machine; with no message to leave the call is hung up at once', () => {
    const s = start(false);
    s.clock.increment(1200);
    s.send({ type: 'BEEP' });
    expect(s.effects).toEqual([{ effect: 'hangUpSilently', at: 1200 }]);
  });

  it('the model decides a long greeting without phrases; unsure leaves it to the clock', () => {
    const s = start(false);
    s.speak(4000, 'This is the Johnson family, we are probably out in the garden or at the shops.');
    s.clock.increment(5000);
    expect(s.decided()).toEqual([]);
    s.send({ type: 'CLASSIFIED', verdict: 'voicemail' });
    expect(s.decided()).toEqual(['hangUpSilently']);

    const unsure = start();
    unsure.speak(4000, 'This is the Johnson family, we are probably out in the garden or at the shops.');
    unsure.send({ type: 'CLASSIFIED', verdict: 'unsure' });
    unsure.clock.increment(SCREEN_MS - 4000 - 1);
    expect(unsure.decided()).toEqual([]);
    unsure.clock.increment(1);
    expect(unsure.decided()).toEqual(['human']);
  });

  it('a person saying "he is not available" is not taken for a machine by the phrase alone', () => {
    const s = start();
    s.speak(1200, "He's not available.");
    s.clock.increment(HUMAN_PAUSE_MS);
    expect(s.decided()).toEqual(['human']);
  });

  it('a silent answer is a person after NO_SPEECH_MS (the agent greets)', () => {
    const s = start();
    s.clock.increment(NO_SPEECH_MS - 1);
    expect(s.decided()).toEqual([]);
    s.clock.increment(1);
    expect(s.decided()).toEqual(['human']);
  });

  it('a machine whose greeting never ends gets the message MAX_WAIT_MS after the verdict', () => {
    const s = start();
    s.send({ type: 'SPEECH.START' });
    s.clock.increment(1000);
    s.send({ type: 'WORDS', text: GREETING, final: true });
    s.clock.increment(MAX_WAIT_MS - 1);
    expect(s.decided()).toEqual([]);
    s.clock.increment(1);
    expect(s.decided()).toEqual(['leaveMessage']);
  });

  it('a hang-up stops the screen', () => {
    const s = start();
    s.send({ type: 'HANGUP' });
    s.clock.increment(SCREEN_MS);
    expect(s.effects).toEqual([]);
  });
});

describe('voicemail words', () => {
  it.each([
    [GREETING, true],
    ['The person you are calling cannot take your call right now.', true],
    ['Sorry I cannot take your call, please leave your name and number.', true],
    ["He's not available.", false],
    ['Hello, who is this?', false],
  ])('%s → %s', (text, expected) => expect(soundsLikeVoicemail(text)).toBe(expected));

  it.each([
    ['voicemail', 'voicemail'],
    ['Voicemail.', 'voicemail'],
    ['machine', 'voicemail'],
    ['HUMAN', 'human'],
    ['You said: hello', 'unsure'],
    ['', 'unsure'],
  ])('model answer %j → %s', (answer, expected) => expect(verdictOf(answer)).toBe(expected));
});

type Step = { wait: number } | ScreenEvent | { restore: true };

/**
 * Runs the steps, then the clock past every deadline; returns the decisions made, with
 * when each was made (simulated ms). A `restore` step stores the screen (snapshot and
 * pending delays, test/model/restorable.ts) and goes on with a new actor from it.
 */
function run(steps: Step[], leaveMessage: boolean): string[] {
  const clock = new DelayTrackingClock();
  const effects: string[] = [];
  const note = (what: string) => () => void effects.push(`${what}@${clock.now()}`);
  const machine = voicemailScreenMachine.provide({
    actions: { classify: () => {}, human: note('human'), leaveMessage: note('leaveMessage'), hangUpSilently: note('hangUpSilently') },
  });
  let actor = clock.actorOf(machine, { leaveMessage });
  actor.start();
  for (const step of steps) {
    if ('wait' in step) clock.increment(step.wait);
    else if ('restore' in step) {
      if (actor.getSnapshot().status === 'active') actor = clock.restore(machine, actor, { leaveMessage }).actor;
    } else if (actor.getSnapshot().status === 'active') actor.send(step);
  }
  clock.increment(SCREEN_MS + MAX_WAIT_MS);
  return effects;
}

const decisionsOf = (effects: string[]) => effects.map((e) => e.split('@')[0]);

// In production the screen lives and dies with the media stream (after a restart the call
// is hung up as media_lost); restored from a store that keeps its pending delays it must
// still decide the same, at the same moment.
describe('voicemail screen, any order of evidence', () => {
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ wait: fc.integer({ min: 1, max: 4000 }) }),
    fc.constantFrom<ScreenEvent>(
      { type: 'SPEECH.START' },
      { type: 'SPEECH.END' },
      { type: 'BEEP' },
      { type: 'WORDS', text: 'Hello?', final: true },
      { type: 'WORDS', text: GREETING, final: true },
      { type: 'WORDS', text: 'we are out in the garden', final: false },
      { type: 'CLASSIFIED', verdict: 'human' },
      { type: 'CLASSIFIED', verdict: 'voicemail' },
      { type: 'CLASSIFIED', verdict: 'unsure' },
    ),
  );

  it('always decides exactly once within its deadlines; a message only when there is one to leave; a beep before any decision is always a machine', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 25 }), fc.boolean(), (steps, leave) => {
        const decisions = decisionsOf(run(steps, leave));
        expect(decisions).toHaveLength(1);
        expect(leave ? ['human', 'leaveMessage'] : ['human', 'hangUpSilently']).toContain(decisions[0]);
        const machineNow = decisionsOf(run([{ type: 'BEEP' }, ...steps], leave));
        expect(machineNow).toEqual([leave ? 'leaveMessage' : 'hangUpSilently']);
      }),
      { numRuns: 300 },
    );
  });

  it('restored at any step (snapshot and pending delays), it decides the same, at the same moment', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof({ weight: 4, arbitrary: step }, { weight: 1, arbitrary: fc.constant<Step>({ restore: true }) }), { maxLength: 30 }), fc.boolean(), (steps, leave) => {
        const without = run(steps.filter((s) => !('restore' in s)), leave);
        expect(run(steps, leave)).toEqual(without);
      }),
      { numRuns: 300 },
    );
  });
});
