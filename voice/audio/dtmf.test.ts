// DTMF detector: every key through the μ-law channel, the debounce timing promised
// in dtmf.ts, and signals that must not be taken for keys.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createDtmfDetector, DTMF_KEYS, generateDtmf } from './dtmf.ts';
import { decodeMulaw, encodeMulaw } from './mulaw.ts';
import { loadSpeechFixture, SPEECH_FIXTURE_SLUGS } from '../../test/fixtures/speech/speech.ts';
import { concatMulaw, speechOnLineMulaw } from '../../test/fixtures/speech/noise.ts';

const silence = (ms: number) => new Int16Array(ms * 8);

function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** What the carrier delivers: μ-law, in 20 ms frames. */
function overTheLine(pcm: Int16Array): Int16Array {
  return decodeMulaw(encodeMulaw(pcm));
}

function detect(pcm: Int16Array, chunk = 160): string[] {
  const detector = createDtmfDetector();
  const digits: string[] = [];
  for (let at = 0; at < pcm.length; at += chunk) digits.push(...detector.push(pcm.subarray(at, at + chunk)));
  return digits;
}

function tone(hz: number, ms: number, amplitude = 0.5): Int16Array {
  return Int16Array.from({ length: ms * 8 }, (_, i) => Math.round(amplitude * 32767 * Math.sin((2 * Math.PI * hz * i) / 8000)));
}

describe('DTMF detector', () => {
  it.each([...DTMF_KEYS])('detects %s exactly once after μ-law coding', (key) => {
    expect(detect(overTheLine(concat(silence(30), generateDtmf(key, 100), silence(60))))).toEqual([key]);
  });

  it('detects "1#5" pressed with gaps, in order', () => {
    const pcm = concat(generateDtmf('1', 70), silence(50), generateDtmf('#', 60), silence(45), generateDtmf('5', 80));
    expect(detect(overTheLine(pcm))).toEqual(['1', '#', '5']);
  });

  it('detects nothing in silence or a 1 kHz tone', () => {
    expect(detect(overTheLine(silence(2000)))).toEqual([]);
    expect(detect(overTheLine(tone(1000, 2000)))).toEqual([]);
  });

  it('detects nothing in a single row or column tone, nor in low-level noise', () => {
    expect(detect(overTheLine(tone(697, 500)))).toEqual([]);
    expect(detect(overTheLine(tone(1336, 500)))).toEqual([]);
    let seed = 7;
    const noise = Int16Array.from({ length: 16000 }, () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return (seed % 2001) - 1000;
    });
    expect(detect(overTheLine(noise))).toEqual([]);
  });

  it('detects a 40 ms press at any alignment and in any chunking', () => {
    fc.assert(
      fc.property(fc.constantFrom(...DTMF_KEYS), fc.nat(101), fc.integer({ min: 1, max: 400 }), (key, lead, chunk) => {
        const pcm = concat(new Int16Array(lead), generateDtmf(key, 40), silence(50));
        expect(detect(overTheLine(pcm), chunk)).toEqual([key]);
      }),
      { numRuns: 200 },
    );
  });

  it('ignores presses shorter than 19 ms', () => {
    fc.assert(
      fc.property(fc.constantFrom(...DTMF_KEYS), fc.nat(101), (key, lead) => {
        expect(detect(overTheLine(concat(new Int16Array(lead), generateDtmf(key, 18), silence(50))))).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });

  it('keeps one press through a dropout under 10 ms, splits on a 40 ms gap', () => {
    fc.assert(
      fc.property(fc.nat(101), (lead) => {
        const dropout = concat(new Int16Array(lead), generateDtmf('7', 60), new Int16Array(79), generateDtmf('7', 60));
        expect(detect(overTheLine(dropout))).toEqual(['7']);
        const gap = concat(new Int16Array(lead), generateDtmf('7', 60), silence(40), generateDtmf('7', 60));
        expect(detect(overTheLine(gap))).toEqual(['7', '7']);
      }),
      { numRuns: 100 },
    );
  });

  // Real speech (espeak-ng) carries strong harmonics across the DTMF bands; the twist,
  // dominance, tone-share and duration checks must keep it from ever reading as a key.
  it.each(SPEECH_FIXTURE_SLUGS)('detects nothing in the speech fixture %s, clean and on a noisy line', (slug) => {
    const speech = loadSpeechFixture(slug);
    expect(detect(decodeMulaw(speech))).toEqual([]);
    expect(detect(decodeMulaw(speechOnLineMulaw(speech)))).toEqual([]);
  });

  it('finds a key pressed between two sentences of speech', () => {
    const line = concatMulaw(loadSpeechFixture('book-table'), encodeMulaw(generateDtmf('6', 80)), loadSpeechFixture('okay'));
    expect(detect(decodeMulaw(line))).toEqual(['6']);
  });

  it('needs a gap before a new press: a key sliding into another counts once', () => {
    expect(detect(concat(generateDtmf('1', 100), generateDtmf('2', 100)))).toEqual(['1']);
  });

  it('reset forgets a half-detected press', () => {
    const detector = createDtmfDetector();
    expect(detector.push(generateDtmf('9', 20))).toEqual([]);
    detector.reset();
    expect(detector.push(silence(10))).toEqual([]);
  });

  it('generateDtmf rejects anything but a key', () => {
    expect(() => generateDtmf('E', 40)).toThrow(RangeError);
    expect(() => generateDtmf('12', 40)).toThrow(RangeError);
    expect(generateDtmf('a', 20)).toHaveLength(160);
  });
});
