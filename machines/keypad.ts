// Keypad input on one connected call (issue 9): the keys the caller presses, reported
// by whichever path saw them (the carrier's media stream, carrier B's call events, or
// tones heard in the caller's audio), become one entry per group of digits for the
// conversation. Pure: the grouping timer is an XState delay, and the moment of each
// press is a parameter of its event (the engine's clock), so tests run it on a
// simulated clock.
//
// - Grouping: digits pressed within `gapMs` of each other form one entry, handed over
//   `gapMs` after the last one, at once on `#` (the usual "end of entry" key), or when
//   `maxDigits` have been typed.
// - One press, one digit: the same key reported by two different paths within
//   `dedupeMs` is one press (a carrier that sends a stream event and a call event, or
//   whose tones also reach the audio). The same path reporting it twice is two presses.
import { assign, setup, type SnapshotFrom } from 'xstate';

export const KEYPAD_MACHINE_VERSION = 1;

/** Where a key press was seen. */
export type KeySource = 'stream' | 'event' | 'tone';

export interface KeypadInput {
  /** Quiet after the last digit that ends the entry. */
  gapMs: number;
  /** Reports of the same key from different paths this close together are one press. */
  dedupeMs: number;
  /** An entry this long is handed over at once. */
  maxDigits: number;
}

export const KEYPAD_DEFAULTS: KeypadInput = { gapMs: 1500, dedupeMs: 1000, maxDigits: 32 };

/** A press accepted lately, and the paths that reported it. */
interface RecentPress {
  digit: string;
  at: number;
  sources: KeySource[];
}

export interface KeypadContext extends KeypadInput {
  /** The entry being typed. */
  digits: string;
  recent: RecentPress[];
}

export type KeypadEvent = { type: 'KEY'; digit: string; source: KeySource; at: number } | { type: 'CLOSE' };

/** The text the conversation gives the model (and the transcript) for an entry. */
export function keypadText(digits: string): string {
  return `The caller pressed ${[...digits].join(' ')} on the keypad.`;
}

const isKey = (d: string): boolean => /^[0-9A-D*#]$/.test(d);

export const keypadMachine = setup({
  types: {
    context: {} as KeypadContext,
    events: {} as KeypadEvent,
    input: {} as KeypadInput,
  },
  actions: {
    /** A complete entry (provided by the engine: it goes to the conversation as KEYPAD). */
    enter: (_, _params: { digits: string }) => {},
    takeKey: assign(({ context, event }) => {
      const e = event as Extract<KeypadEvent, { type: 'KEY' }>;
      const since = e.at - context.dedupeMs;
      return {
        digits: context.digits + e.digit,
        recent: [...context.recent.filter((r) => r.at >= since), { digit: e.digit, at: e.at, sources: [e.source] }],
      };
    }),
    /** A second path's report of a press already taken: remembered, so a third report of the key is a new press. */
    noteSource: assign(({ context, event }) => {
      const e = event as Extract<KeypadEvent, { type: 'KEY' }>;
      const i = matchOf(context, e);
      return { recent: context.recent.map((r, j) => (j === i ? { ...r, sources: [...r.sources, e.source] } : r)) };
    }),
    clearEntry: assign({ digits: '' }),
  },
  guards: {
    notAKey: ({ event }) => event.type === 'KEY' && !isKey(event.digit),
    duplicate: ({ context, event }) => event.type === 'KEY' && matchOf(context, event) >= 0,
    endsEntry: ({ context, event }) => event.type === 'KEY' && (event.digit === '#' || context.digits.length + 1 >= context.maxDigits),
  },
  delays: {
    gap: ({ context }) => context.gapMs,
  },
}).createMachine({
  id: 'keypad',
  context: ({ input }) => ({ ...input, digits: '', recent: [] }),
  initial: 'idle',
  on: { CLOSE: '.closed' },
  states: {
    idle: {
      on: {
        KEY: [
          { guard: 'notAKey' },
          { guard: 'duplicate', actions: 'noteSource' },
          { guard: 'endsEntry', actions: ['takeKey', { type: 'enter', params: ({ context }) => ({ digits: context.digits }) }, 'clearEntry'] },
          { target: 'typing', actions: 'takeKey' },
        ],
      },
    },
    // Digits are coming; each new one restarts the wait.
    typing: {
      after: { gap: { target: 'idle', actions: [{ type: 'enter', params: ({ context }) => ({ digits: context.digits }) }, 'clearEntry'] } },
      on: {
        KEY: [
          { guard: 'notAKey' },
          { guard: 'duplicate', actions: 'noteSource' },
          { guard: 'endsEntry', target: 'idle', actions: ['takeKey', { type: 'enter', params: ({ context }) => ({ digits: context.digits }) }, 'clearEntry'] },
          { target: 'typing', reenter: true, actions: 'takeKey' },
        ],
      },
    },
    closed: { type: 'final' },
  },
});

/** The index of the recent press this report repeats, or -1: same key, another path, close in time. */
function matchOf(context: KeypadContext, e: { digit: string; source: KeySource; at: number }): number {
  return context.recent.findIndex((r) => r.digit === e.digit && !r.sources.includes(e.source) && Math.abs(e.at - r.at) <= context.dedupeMs);
}

export type KeypadSnapshot = SnapshotFrom<typeof keypadMachine>;
