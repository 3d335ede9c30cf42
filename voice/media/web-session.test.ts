// The browser media session alone, with a recording transport and a recording engine:
// 16 kHz PCM in any chunking becomes the engine's 20 ms μ-law 8 kHz frames; the engine's
// μ-law becomes 16 kHz PCM; marks, clears, captions, hang-up and end on the wire.
import { describe, expect, it } from 'vitest';
import type { CallEvent } from '../../machines/call-events.ts';
import type { ConversationEngine, EngineCall, MediaOutput } from '../engine/engine.ts';
import type { MediaBinding } from './bindings.ts';
import { createWebMediaSession, type WebTransport } from './web-session.ts';
import { decodeMulaw, encodeMulaw } from '../audio/mulaw.ts';

function tone16k(hz: number, ms: number, amplitude = 8000): Uint8Array {
  const n = (ms * 16000) / 1000;
  const out = new Uint8Array(n * 2);
  for (let i = 0; i < n; i++) {
    const v = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / 16000));
    out[2 * i] = v & 0xff;
    out[2 * i + 1] = (v >> 8) & 0xff;
  }
  return out;
}

const rms = (samples: Int16Array): number => Math.sqrt(samples.reduce((s, v) => s + v * v, 0) / Math.max(1, samples.length));

function setup(buffered = 0) {
  const texts: any[] = [];
  const binaries: Uint8Array[] = [];
  const closes: [number, string][] = [];
  const delivered: CallEvent[] = [];
  const frames: { bytes: Uint8Array; ts: number }[] = [];
  const marks: string[] = [];
  let engineCall: EngineCall | null = null;
  let output: MediaOutput | null = null;
  let engineClosed = 0;
  const transport: WebTransport = {
    sendText: (t) => (texts.push(JSON.parse(t)), true),
    sendBinary: (b) => (binaries.push(new Uint8Array(b)), true),
    bufferedAmount: () => buffered,
    close: (code, reason) => void closes.push([code, reason]),
  };
  const binding: MediaBinding = { callId: 'call_1', accountId: 'acct_1', direction: 'inbound', agentId: 'agent_1', deliver: (e) => void delivered.push(e) };
  const session = createWebMediaSession({
    transport,
    binding,
    publicId: 'call_1',
    clock: () => 1000,
    engine: (out, call): ConversationEngine => {
      output = out;
      engineCall = call;
      return {
        onAudio: (m, ts) => void frames.push({ bytes: new Uint8Array(m), ts }),
        onDtmf() {},
        onMark: (name) => void marks.push(name),
        close: () => void engineClosed++,
      };
    },
  });
  return { session, texts, binaries, closes, delivered, frames, marks, out: () => output!, call: () => engineCall!, engineClosed: () => engineClosed };
}

describe('the browser media session', () => {
  it('starts with `start`, answers the call, and hands the engine the call', () => {
    const t = setup();
    t.session.start();
    expect(t.texts[0]).toEqual({ type: 'start', call_id: 'call_1', sample_rate: 16000, encoding: 'pcm_s16le', channels: 1 });
    expect(t.delivered).toEqual([{ type: 'MEDIA.STARTED', at: 1000 }]);
    expect(t.call()).toMatchObject({ callId: 'call_1', accountId: 'acct_1', direction: 'inbound', agentId: 'agent_1' });
  });

  it('turns 16 kHz PCM in odd-sized chunks into 20 ms μ-law frames at 8 kHz, keeping the level', () => {
    const t = setup();
    t.session.start();
    const pcm = tone16k(440, 1000);
    for (let i = 0; i < pcm.length; i += 333) t.session.audio(pcm.subarray(i, i + 333));
    // One second of audio: 50 frames, less the part still in the filter and the frame buffer.
    expect(t.frames.length).toBeGreaterThanOrEqual(49);
    expect(t.frames.every((f) => f.bytes.length === 160)).toBe(true);
    expect(t.frames.map((f) => f.ts).slice(0, 3)).toEqual([0, 20, 40]);
    const level = rms(decodeMulaw(t.frames[25]!.bytes));
    expect(level / (8000 / Math.SQRT2)).toBeGreaterThan(0.9);
    expect(level / (8000 / Math.SQRT2)).toBeLessThan(1.1);
  });

  it('sends the engine’s μ-law as 16 kHz little-endian PCM, and marks, clears and captions as JSON', () => {
    const t = setup();
    t.session.start();
    const samples = new Int16Array(160);
    for (let i = 0; i < 160; i++) samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 500 * i) / 8000));
    t.out().play(encodeMulaw(samples));
    t.out().play(encodeMulaw(samples));
    expect(t.binaries.map((b) => b.length)).toEqual([640, 640]);
    const second = new Int16Array(320);
    for (let i = 0; i < 320; i++) second[i] = ((t.binaries[1]![2 * i]! | (t.binaries[1]![2 * i + 1]! << 8)) << 16) >> 16;
    expect(rms(second)).toBeGreaterThan(4000);
    t.out().mark('reply_1');
    t.out().clear();
    t.call().deliver({ type: 'CONVERSATION.LINE', at: 5, speaker: 'agent', text: 'Hello there.' });
    expect(t.texts.slice(1)).toEqual([
      { type: 'mark', name: 'reply_1' },
      { type: 'clear' },
      { type: 'transcript', speaker: 'agent', text: 'Hello there.', final: true },
    ]);
    // The line reaches the call actor too.
    expect(t.delivered.at(-1)).toMatchObject({ type: 'CONVERSATION.LINE', text: 'Hello there.' });
  });

  it('gives marks back to the engine, ignores what it does not know, and ends once on hang-up', () => {
    const t = setup();
    t.session.start();
    t.session.text(JSON.stringify({ type: 'mark', name: 'reply_1' }));
    t.session.text('not json');
    t.session.text(JSON.stringify({ type: 'dance' }));
    expect(t.marks).toEqual(['reply_1']);
    expect(t.session.stats().invalid).toBe(2);
    t.session.text(JSON.stringify({ type: 'hangup' }));
    expect(t.engineClosed()).toBe(1);
    expect(t.delivered.filter((e) => e.type === 'MEDIA.STOPPED')).toHaveLength(1);
    // Audio after the hang-up goes nowhere; the socket closing ends nothing again.
    t.session.audio(tone16k(440, 100));
    t.session.close();
    expect(t.engineClosed()).toBe(1);
    expect(t.delivered.filter((e) => e.type === 'MEDIA.STOPPED')).toHaveLength(1);
  });

  it('`end` stops the engine, tells the browser why, and closes the socket normally', () => {
    const t = setup();
    t.session.start();
    t.session.end('agent_hangup');
    expect(t.engineClosed()).toBe(1);
    expect(t.texts.at(-1)).toEqual({ type: 'end', reason: 'agent_hangup' });
    expect(t.closes).toEqual([[1000, 'call ended']]);
  });

  it('the socket closing ends the call (MEDIA.STOPPED) once', () => {
    const t = setup();
    t.session.start();
    t.session.close();
    t.session.close();
    expect(t.engineClosed()).toBe(1);
    expect(t.delivered.map((e) => e.type)).toEqual(['MEDIA.STARTED', 'MEDIA.STOPPED']);
  });

  it('drops agent audio while the browser is backed up, and says so', () => {
    const t = setup(1024 * 1024);
    t.session.start();
    t.out().play(new Uint8Array(160).fill(0x7f));
    expect(t.binaries).toEqual([]);
    expect(t.session.stats().dropped).toBe(1);
    expect(t.out().backedUp!()).toBe(true);
  });
});
