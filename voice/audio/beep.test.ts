// Beep detector: generated beeps through the μ-law channel, on line noise, after speech;
// and the signals that must not be taken for a beep (every speech fixture, noise, DTMF,
// a too-short blip, a dial tone that never stops).
import { describe, expect, it } from 'vitest';
import { createBeepDetector, generateBeep, type Beep } from './beep.ts';
import { generateDtmf } from './dtmf.ts';
import { decodeMulaw, encodeMulaw } from './mulaw.ts';
import { concatMulaw, humMulaw, lineNoiseMulaw, loadSpeechFixture, mixMulaw, noiseBurstMulaw, silenceMulaw, SPEECH_FIXTURE_SLUGS } from '../../test/fixtures/speech/noise.ts';

const beepMulaw = (hz: number, ms: number, amplitude?: number): Uint8Array => encodeMulaw(generateBeep(hz, ms, amplitude));

/** Feeds μ-law audio in 20 ms frames, as a carrier delivers it. */
function detect(mulaw: Uint8Array): Beep[] {
  const detector = createBeepDetector();
  const pcm = decodeMulaw(mulaw);
  const beeps: Beep[] = [];
  for (let at = 0; at < pcm.length; at += 160) {
    const b = detector.push(pcm.subarray(at, at + 160));
    if (b) beeps.push(b);
  }
  return beeps;
}

describe('beep detector', () => {
  it.each([400, 440, 850, 1000, 1400, 1987, 2000])('finds a %d Hz beep once, at its frequency and length', (hz) => {
    const beeps = detect(concatMulaw(silenceMulaw(100), beepMulaw(hz, 500), silenceMulaw(100)));
    expect(beeps).toHaveLength(1);
    expect(Math.abs(beeps[0]!.hz - hz)).toBeLessThanOrEqual(25);
    expect(beeps[0]!.durationMs).toBeGreaterThanOrEqual(440);
    expect(beeps[0]!.durationMs).toBeLessThanOrEqual(520);
  });

  it('finds a beep on line noise and hum, right after a greeting', () => {
    const greeting = loadSpeechFixture('maria-order');
    const tone = concatMulaw(silenceMulaw(300), beepMulaw(1000, 250, 0.1), silenceMulaw(300));
    const audio = concatMulaw(greeting, tone);
    const noisy = mixMulaw(mixMulaw(audio, lineNoiseMulaw(audio.length / 8, { noiseDbfs: -35 })), humMulaw(audio.length / 8, -45));
    const beeps = detect(noisy);
    expect(beeps).toHaveLength(1);
    expect(beeps[0]!.hz).toBe(1000);
  });

  it('finds each beep across a stream cut in odd chunks', () => {
    const detector = createBeepDetector();
    const pcm = decodeMulaw(concatMulaw(beepMulaw(600, 300), silenceMulaw(200), beepMulaw(1500, 300), silenceMulaw(60)));
    const found: Beep[] = [];
    for (let at = 0; at < pcm.length; at += 37) {
      const b = detector.push(pcm.subarray(at, at + 37));
      if (b) found.push(b);
    }
    expect(found.map((b) => b.hz)).toEqual([600, 1500]);
  });

  it.each(SPEECH_FIXTURE_SLUGS)('finds no beep in the speech fixture %s, clean or on a noisy line', (slug) => {
    const speech = loadSpeechFixture(slug);
    expect(detect(concatMulaw(silenceMulaw(100), speech, silenceMulaw(200)))).toEqual([]);
    expect(detect(mixMulaw(speech, lineNoiseMulaw(speech.length / 8, { noiseDbfs: -45 })))).toEqual([]);
  });

  it('finds no beep in the speech fixtures played back to back', () => {
    expect(detect(concatMulaw(...SPEECH_FIXTURE_SLUGS.map((s) => loadSpeechFixture(s))))).toEqual([]);
  });

  it('takes neither noise, hum, knocks, DTMF, a short blip, a quiet tone nor a dial tone for a beep', () => {
    expect(detect(lineNoiseMulaw(3000, { noiseDbfs: -30 }))).toEqual([]);
    expect(detect(humMulaw(2000, -20))).toEqual([]);
    expect(detect(concatMulaw(noiseBurstMulaw(400), silenceMulaw(100)))).toEqual([]);
    expect(detect(concatMulaw(encodeMulaw(generateDtmf('5', 300)), silenceMulaw(100)))).toEqual([]);
    expect(detect(concatMulaw(beepMulaw(1000, 100), silenceMulaw(100)))).toEqual([]);
    expect(detect(concatMulaw(beepMulaw(1000, 400, 0.003), silenceMulaw(100)))).toEqual([]);
    expect(detect(concatMulaw(beepMulaw(440, 5000), silenceMulaw(100)))).toEqual([]);
  });
});

describe('beep detector on a voicemail greeting', () => {
  it('hears nothing in the greeting and the beep after it, once', async () => {
    const { loadVoicemailGreeting, voicemailBeep } = await import('../../test/fixtures/voicemail/voicemail.ts');
    expect(detect(loadVoicemailGreeting())).toEqual([]);
    const beeps = detect(concatMulaw(loadVoicemailGreeting(), silenceMulaw(400), voicemailBeep(), silenceMulaw(200)));
    expect(beeps).toHaveLength(1);
    expect(beeps[0]!.hz).toBe(1000);
  });
});
