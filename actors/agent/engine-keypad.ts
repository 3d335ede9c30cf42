// Keypad input of one call's conversation (issue 9), when dtmf_enabled is on: key
// presses from the carrier's media stream, from carrier B's call events, and tones
// heard in the caller's audio (the Goertzel detector of voice/audio/dtmf.ts) go to the
// keypad machine (machines/keypad.ts), which de-duplicates them and groups them into
// entries; each entry goes to the conversation as KEYPAD. When the setting is off every
// key is ignored and no detector runs.
import { createActor } from 'xstate';
import { KEYPAD_DEFAULTS, keypadMachine, type KeypadInput, type KeySource } from '../../machines/keypad.ts';
import { createDtmfDetector } from '../../voice/audio/dtmf.ts';

export interface EngineKeypad {
  /** Caller audio, 8 kHz PCM, in order (every frame: tones are looked for in it). */
  audio(samples: Int16Array): void;
  /** A key a carrier reported. */
  key(digit: string, source: Exclude<KeySource, 'tone'>): void;
  close(): void;
}

export interface EngineKeypadDeps {
  enabled: boolean;
  /** The clock of `at` (performance.now()). */
  now: () => number;
  /** A complete entry. */
  enter(digits: string): void;
  input?: KeypadInput;
}

const OFF: EngineKeypad = { audio() {}, key() {}, close() {} };

export function createEngineKeypad(deps: EngineKeypadDeps): EngineKeypad {
  if (!deps.enabled) return OFF;
  const detector = createDtmfDetector();
  let closed = false;
  const actor = createActor(keypadMachine.provide({ actions: { enter: (_, p: { digits: string }) => deps.enter(p.digits) } }), {
    input: deps.input ?? KEYPAD_DEFAULTS,
  });
  actor.start();
  const press = (digit: string, source: KeySource) => {
    if (!closed) actor.send({ type: 'KEY', digit: digit.toUpperCase(), source, at: deps.now() });
  };
  return {
    audio(samples) {
      if (closed) return;
      const digits = detector.push(samples);
      for (let i = 0; i < digits.length; i++) press(digits[i]!, 'tone');
    },
    key: press,
    close() {
      if (closed) return;
      closed = true;
      actor.send({ type: 'CLOSE' });
      actor.stop();
    },
  };
}

/**
 * Keys a carrier reports outside the media stream (carrier B's `call.dtmf.received`
 * call event), routed to the live conversation of their call by its internal id.
 */
export interface CarrierKeys {
  /** The conversation of `callId` takes its keys; the returned function stops it. */
  register(callId: string, press: (digit: string) => void): () => void;
  /** False when no conversation of that call is live (the key is then dropped). */
  press(callId: string, digit: string): boolean;
}

export function createCarrierKeys(): CarrierKeys {
  const live = new Map<string, (digit: string) => void>();
  return {
    register(callId, press) {
      live.set(callId, press);
      return () => {
        if (live.get(callId) === press) live.delete(callId);
      };
    },
    press(callId, digit) {
      const fn = live.get(callId);
      if (!fn) return false;
      fn(digit);
      return true;
    },
  };
}
