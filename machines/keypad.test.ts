// The keypad machine as a caller would notice it: digits typed in a row reach the
// conversation as one entry, after a pause or at once on `#`; a press the carrier
// reports twice (or that is also heard as tones) is one digit; a restore keeps the
// entry being typed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { KEYPAD_DEFAULTS, keypadMachine, keypadText, type KeypadInput, type KeySource } from './keypad.ts';

function start(input: KeypadInput = KEYPAD_DEFAULTS) {
  const clock = new SimulatedClock();
  const entries: { digits: string; at: number }[] = [];
  const machine = keypadMachine.provide({ actions: { enter: (_, p: { digits: string }) => void entries.push({ digits: p.digits, at: clock.now() }) } });
  let actor = createActor(machine, { input, clock });
  actor.start();
  const press = (digit: string, source: KeySource = 'stream') => actor.send({ type: 'KEY', digit, source, at: clock.now() });
  return {
    clock,
    entries,
    press,
    type(digits: string, everyMs = 300, source: KeySource = 'stream') {
      for (const d of digits) {
        press(d, source);
        clock.increment(everyMs);
      }
    },
    restore() {
      const stored = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
      actor.stop();
      actor = createActor(machine, { input, clock, snapshot: stored });
      actor.start();
    },
    get actor() {
      return actor;
    },
  };
}

describe('keypad', () => {
  it('hands over the digits typed in a row once the caller pauses for gapMs', () => {
    const k = start();
    k.type('1234', 400);
    expect(k.entries).toEqual([]);
    k.clock.increment(KEYPAD_DEFAULTS.gapMs - 400 - 1);
    expect(k.entries).toEqual([]);
    k.clock.increment(1);
    expect(k.entries).toEqual([{ digits: '1234', at: 3 * 400 + KEYPAD_DEFAULTS.gapMs }]);
  });

  it('hands over at once on #, the # included', () => {
    const k = start();
    k.type('42', 200);
    k.press('#');
    expect(k.entries.map((e) => e.digits)).toEqual(['42#']);
    k.clock.increment(10_000);
    expect(k.entries.map((e) => e.digits)).toEqual(['42#']);
  });

  it('two entries separated by a pause are two entries', () => {
    const k = start();
    k.type('12');
    k.clock.increment(KEYPAD_DEFAULTS.gapMs);
    k.type('9*');
    k.clock.increment(KEYPAD_DEFAULTS.gapMs);
    expect(k.entries.map((e) => e.digits)).toEqual(['12', '9*']);
  });

  it('an entry of maxDigits is handed over without waiting', () => {
    const k = start({ ...KEYPAD_DEFAULTS, maxDigits: 4 });
    k.type('123456', 100);
    expect(k.entries[0]?.digits).toBe('1234');
  });

  it('a press reported by the stream, the call events and the tones is one digit; the same path twice is two', () => {
    const k = start();
    k.press('5', 'stream');
    k.clock.increment(60);
    k.press('5', 'tone');
    k.clock.increment(300);
    k.press('5', 'event');
    k.clock.increment(200);
    k.press('5', 'stream'); // a second press of 5
    k.clock.increment(KEYPAD_DEFAULTS.gapMs);
    expect(k.entries.map((e) => e.digits)).toEqual(['55']);
  });

  it('a report of another path long after the press is a new press', () => {
    const k = start();
    k.press('7', 'stream');
    k.clock.increment(KEYPAD_DEFAULTS.dedupeMs + 1);
    k.press('7', 'tone');
    k.clock.increment(KEYPAD_DEFAULTS.gapMs);
    expect(k.entries.map((e) => e.digits)).toEqual(['77']);
  });

  it('a late duplicate of # does not open a new entry', () => {
    const k = start();
    k.press('#', 'stream');
    k.clock.increment(100);
    k.press('#', 'tone');
    k.clock.increment(KEYPAD_DEFAULTS.gapMs);
    expect(k.entries.map((e) => e.digits)).toEqual(['#']);
  });

  it('ignores anything that is not a key', () => {
    const k = start();
    k.press('E');
    k.press('12');
    k.clock.increment(KEYPAD_DEFAULTS.gapMs);
    expect(k.entries).toEqual([]);
  });

  it('survives persist and restore with the entry being typed', () => {
    const k = start();
    k.type('31', 100);
    k.restore();
    k.press('#');
    expect(k.entries.map((e) => e.digits)).toEqual(['31#']);
  });

  it('keypadText spells the digits out for the model', () => {
    expect(keypadText('1234#')).toBe('The caller pressed 1 2 3 4 # on the keypad.');
  });

  it('whatever the interleaving of paths, each press is one digit, in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ digit: fc.constantFrom(...'0123456789*'), gap: fc.integer({ min: 1_100, max: 1_400 }), paths: fc.subarray<KeySource>(['stream', 'event', 'tone'], { minLength: 1 }), lag: fc.integer({ min: 0, max: 300 }) }), { maxLength: 12 }),
        (presses) => {
          // Presses 1.1 s+ apart (over dedupeMs), each reported by its paths within 300 ms, all within one entry (gap 1.5 s).
          const k = start({ ...KEYPAD_DEFAULTS, maxDigits: 100 });
          for (const p of presses) {
            for (const source of p.paths) {
              k.press(p.digit, source);
              k.clock.increment(Math.floor(p.lag / p.paths.length));
            }
            k.clock.increment(p.gap - p.lag);
          }
          k.clock.increment(KEYPAD_DEFAULTS.gapMs);
          expect(k.entries.map((e) => e.digits).join('')).toBe(presses.map((p) => p.digit).join(''));
        },
      ),
      { numRuns: 200 },
    );
  });
});
