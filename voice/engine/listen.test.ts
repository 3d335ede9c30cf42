// The listen engine says nothing and tells speech from silence by frame energy.
import { describe, expect, it } from 'vitest';
import { encodeMulaw, MULAW_SILENCE } from '../audio/mulaw.ts';
import type { MediaOutput } from './engine.ts';
import { createListenEngine, SPEECH_RMS } from './listen.ts';

function tone(amplitude: number, samples = 160): Uint8Array {
  const pcm = new Int16Array(samples);
  for (let i = 0; i < samples; i++) pcm[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return encodeMulaw(pcm);
}

describe('listen engine', () => {
  it('counts frames, speech and silence time, and DTMF, and never uses its output', () => {
    const used: string[] = [];
    const output: MediaOutput = { play: () => used.push('play'), mark: () => used.push('mark'), clear: () => used.push('clear') };
    const engine = createListenEngine(output, { callId: 'call_1', accountId: 'acct_1', direction: 'inbound', agentId: null, deliver() {} });
    const silence = new Uint8Array(160).fill(MULAW_SILENCE);
    for (let i = 0; i < 10; i++) engine.onAudio(silence, i * 20);
    for (let i = 0; i < 5; i++) engine.onAudio(tone(8192), 200 + i * 20); // -12 dBFS peak: speech
    engine.onAudio(tone(SPEECH_RMS), 300); // peak at the threshold: RMS is 3 dB under it, silence
    engine.onAudio(tone(8192, 320), 320); // a 40 ms message counts 40 ms
    engine.onAudio(new Uint8Array(0), 360);
    engine.onDtmf('1');
    engine.close();
    expect(engine.stats()).toEqual({ frames: 17, speechMs: 140, silenceMs: 220, dtmf: 1 });
    expect(used).toEqual([]);
  });
});
