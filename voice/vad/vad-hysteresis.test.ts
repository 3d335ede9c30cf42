// The hysteresis alone, on synthetic probability sequences: when speech starts and ends,
// what the thresholds ignore, and (fast-check) that any sequence gives alternating events
// each justified by the windows before it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createVadHysteresis, type VadEvent, type VadHysteresisOptions } from './vad-hysteresis.ts';

const W = 32;

/** Feeds probabilities as consecutive 32 ms windows from 0; the events with the window index that caused each. */
function play(probabilities: number[], options: VadHysteresisOptions = {}): { at: number; event: VadEvent }[] {
  const h = createVadHysteresis(options);
  const out: { at: number; event: VadEvent }[] = [];
  probabilities.forEach((p, k) => {
    const event = h.update(p, (k + 1) * W);
    if (event) out.push({ at: k, event });
  });
  return out;
}

const repeat = (p: number, n: number): number[] => Array.from({ length: n }, () => p);

describe('vad hysteresis', () => {
  it('starts after two windows over activation, dated from the first', () => {
    expect(play([0.1, 0.1, 0.9, 0.6])).toEqual([{ at: 3, event: { type: 'speech_start', atMs: 64 } }]);
  });

  it('ignores a single window of speech (a click) and probabilities between the thresholds', () => {
    expect(play([0.1, 0.95, 0.1, 0.95, 0.2, 0.49, 0.45, 0.4, 0.49, 0.36])).toEqual([]);
  });

  it('keeps speaking while the probability stays at or above deactivation, however long', () => {
    const events = play([0.9, 0.9, ...repeat(0.36, 100), 0.35, 0.4]);
    expect(events.map((e) => e.event.type)).toEqual(['speech_start']);
  });

  it('ends after 550 ms below deactivation, dated from the first quiet window, with the speech length', () => {
    // Speech in windows 0..9 (320 ms), a 544 ms gap (17 windows: not enough), more speech to window 39, then quiet.
    const probabilities = [...repeat(0.8, 10), ...repeat(0.1, 17), ...repeat(0.8, 13), ...repeat(0.2, 30)];
    expect(play(probabilities)).toEqual([
      { at: 1, event: { type: 'speech_start', atMs: 0 } },
      // 18 quiet windows from window 40 (1280 ms): the event comes at window 57.
      { at: 57, event: { type: 'speech_end', atMs: 1280, speechMs: 1280 } },
    ]);
  });

  it('takes its thresholds and durations as options', () => {
    const options = { activation: 0.8, deactivation: 0.6, minSpeechMs: 96, minSilenceMs: 64 };
    expect(play([0.7, 0.7, 0.7, 0.9, 0.9, 0.9, 0.65, 0.5, 0.5], options)).toEqual([
      { at: 5, event: { type: 'speech_start', atMs: 96 } },
      { at: 8, event: { type: 'speech_end', atMs: 224, speechMs: 128 } },
    ]);
  });

  it('forgets a run in progress on reset', () => {
    const h = createVadHysteresis();
    expect(h.update(0.9, 32)).toBeNull();
    expect(h.update(0.9, 64)?.type).toBe('speech_start');
    h.reset();
    expect(h.speaking).toBe(false);
    expect(h.update(0.1, 96)).toBeNull();
    expect(h.update(0.9, 128)).toBeNull();
    expect(h.update(0.9, 160)).toEqual({ type: 'speech_start', atMs: 96 });
  });

  it('treats a NaN probability as silence', () => {
    expect(play([NaN, NaN, NaN])).toEqual([]);
    expect(play([0.9, 0.9, ...repeat(NaN, 18)]).map((e) => e.event.type)).toEqual(['speech_start', 'speech_end']);
  });

  it('on any sequence: events alternate from speech_start, each backed by the windows before it', () => {
    // Uniform in 0..1 in steps of 0.01 (fc.double crowds near 0), plus the thresholds' edges.
    const probability = fc.oneof(fc.integer({ min: 0, max: 100 }).map((n) => n / 100), fc.constantFrom(0.35, 0.5, 0.349, 0.499));
    fc.assert(
      fc.property(
        fc.array(probability, { maxLength: 300 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 25 }),
        (ps, speechWindows, silenceWindows) => {
          const options = { minSpeechMs: speechWindows * W, minSilenceMs: silenceWindows * W };
          const h = createVadHysteresis(options);
          let expectSpeaking = false;
          ps.forEach((p, k) => {
            const event = h.update(p, (k + 1) * W);
            if (event === null) return;
            expect(event.type).toBe(expectSpeaking ? 'speech_end' : 'speech_start');
            const run = expectSpeaking ? silenceWindows : speechWindows;
            const window = ps.slice(k + 1 - run, k + 1);
            expect(window.length).toBe(run);
            if (expectSpeaking) for (const q of window) expect(q).toBeLessThan(0.35);
            else for (const q of window) expect(q).toBeGreaterThanOrEqual(0.5);
            expect(event.atMs).toBe((k + 1 - run) * W);
            if (event.type === 'speech_end') expect(event.speechMs).toBeGreaterThanOrEqual(speechWindows * W);
            expectSpeaking = !expectSpeaking;
            expect(h.speaking).toBe(expectSpeaking);
          });
        },
      ),
    );
  });
});
