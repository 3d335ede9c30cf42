// Audio that stands in for synthesised speech in the TTS simulators: not words, but
// shaped like them, so that a far end (a VAD, an energy gate, a test listening on the
// carrier side) can tell the agent talking from silence, and a test can reason about
// how long a reply plays. Every character of the text takes ~65 ms divided by the
// speed (about 15 characters a second, an ordinary speaking rate); each word is a
// voiced burst (a ~150 Hz fundamental with a few falling harmonics, its pitch drifting
// gently) under one raised-cosine envelope per syllable, each space a pause, at about
// -20 dBFS RMS while voiced. Deterministic: the same text and speed give the same samples.

export const SPEECH_MS_PER_CHAR = 65;
const RATE = 24_000;
/** Harmonic amplitudes of the voice, fundamental first. */
const HARMONICS = [1, 0.6, 0.4, 0.25];
/**
 * Peak scale giving ~-20 dBFS RMS over voiced stretches: the harmonics' RMS is
 * sqrt(Σa²/2) ≈ 0.89 and a raised-cosine envelope's is sqrt(3/8) ≈ 0.61, so
 * 3277 (0.1 of full scale) / (0.89 · 0.61) ≈ 6040.
 */
const SCALE = 6040;

/** Samples of `text` spoken at `speed` (1 normal), at 24 kHz. */
export function speechSamples(text: string, speed: number, rate: number = RATE): number {
  return Math.round((text.length * SPEECH_MS_PER_CHAR * rate) / (1000 * speed));
}

/** The speech-like audio of `text` at `speed`, as 24 kHz 16-bit samples. */
export function speechLikePcm24k(text: string, speed = 1): Int16Array {
  const total = speechSamples(text, speed);
  const out = new Int16Array(total);
  if (text.length === 0) return out;
  const perChar = total / text.length;
  let phase = 0;
  let voicedSoFar = 0;
  for (const word of text.matchAll(/\S+/g)) {
    const start = Math.round(word.index * perChar);
    const end = Math.round((word.index + word[0].length) * perChar);
    const syllables = Math.max(1, (word[0].match(/[aeiouyàâäéèêëîïôöùûü]+/gi) ?? []).length);
    const span = end - start;
    for (let i = 0; i < span; i++) {
      const pos = (i / span) * syllables; // where in which syllable
      const envelope = 0.5 - 0.5 * Math.cos(2 * Math.PI * (pos - Math.floor(pos)));
      // The pitch wanders ±10 % slowly over the utterance, as intonation does.
      const f0 = 150 * (1 + 0.1 * Math.sin((2 * Math.PI * (voicedSoFar + i)) / (RATE * 1.3)));
      phase += (2 * Math.PI * f0) / RATE;
      let v = 0;
      for (let h = 0; h < HARMONICS.length; h++) v += HARMONICS[h]! * Math.sin((h + 1) * phase);
      out[start + i] = Math.round(SCALE * envelope * v);
    }
    voicedSoFar += span;
  }
  return out;
}

/** Samples as raw little-endian bytes, the `pcm` response format's byte order. */
export function pcm16leBytes(samples: Int16Array): Buffer {
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i]!, i * 2);
  return out;
}
