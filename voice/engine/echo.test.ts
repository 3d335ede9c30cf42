// The echo engine plays every caller frame straight back, frame for frame; through a
// media session that means each carrier's own outbound message with the same bytes.
import { describe, expect, it } from 'vitest';
import { createMediaSession } from '../media/session.ts';
import { createEchoEngine } from './echo.ts';
import type { MediaOutput } from './engine.ts';

const call = { callId: 'call_1', accountId: 'acct_1', direction: 'inbound' as const, agentId: null, deliver() {} };

function recordingOutput() {
  const played: number[][] = [];
  const controls: string[] = [];
  const output: MediaOutput = {
    play: (m) => played.push([...m]),
    mark: (n) => controls.push(`mark:${n}`),
    clear: () => controls.push('clear'),
  };
  return { output, played, controls };
}

describe('echo engine', () => {
  it('plays each frame back once, in order, byte for byte, and nothing else', () => {
    const rec = recordingOutput();
    const engine = createEchoEngine(rec.output, call);
    const frames = [0, 1, 2, 3, 4].map((i) => Uint8Array.from({ length: 160 }, (_, j) => (i * 31 + j) & 0xff));
    frames.forEach((f, i) => engine.onAudio(f, (i + 1) * 20));
    engine.onDtmf('5');
    engine.close();
    expect(rec.played).toEqual(frames.map((f) => [...f]));
    expect(rec.controls).toEqual([]);
  });

  it('echoes frames of any length, including several frames in one message', () => {
    const rec = recordingOutput();
    const engine = createEchoEngine(rec.output, call);
    const big = new Uint8Array(480).fill(0x12);
    engine.onAudio(big, 20);
    engine.onAudio(new Uint8Array([1, 2, 3]), 80);
    expect(rec.played).toEqual([[...big], [1, 2, 3]]);
  });

  for (const provider of ['twilio', 'telnyx'] as const) {
    it(`through a ${provider} media session, every inbound payload comes back as the carrier's outbound media message`, () => {
      const sent: string[] = [];
      const session = createMediaSession({
        provider,
        token: provider === 'telnyx' ? 'tok' : undefined,
        bindings: { claim: () => ({ callId: 'call_1', accountId: 'acct_1', direction: 'outbound', agentId: null, deliver() {} }) },
        engine: createEchoEngine,
        clock: () => 0,
        transport: { send: (t) => (sent.push(t), true), bufferedAmount: () => 0, close: () => session.close() },
      });
      const payloads = Array.from({ length: 20 }, (_, i) => Buffer.alloc(160, i * 7).toString('base64'));
      if (provider === 'twilio') {
        session.handle(
          JSON.stringify({
            event: 'start',
            sequenceNumber: '1',
            streamSid: 'MZ1',
            start: { streamSid: 'MZ1', callSid: 'CA1', customParameters: { token: 'tok' }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
          }),
        );
        payloads.forEach((p, i) =>
          session.handle(JSON.stringify({ event: 'media', sequenceNumber: String(i + 2), streamSid: 'MZ1', media: { track: 'inbound', chunk: String(i + 1), timestamp: String(i * 20), payload: p } })),
        );
        expect(sent).toEqual(payloads.map((p) => JSON.stringify({ event: 'media', streamSid: 'MZ1', media: { payload: p } })));
      } else {
        session.handle(
          JSON.stringify({ event: 'start', sequence_number: '1', stream_id: 'S1', start: { call_control_id: 'v3:1', media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 } } }),
        );
        payloads.forEach((p, i) =>
          session.handle(JSON.stringify({ event: 'media', sequence_number: String(i + 2), stream_id: 'S1', media: { track: 'inbound', chunk: String(i + 1), timestamp: String(i * 20), payload: p } })),
        );
        expect(sent).toEqual(payloads.map((p) => JSON.stringify({ event: 'media', media: { payload: p } })));
      }
      expect(session.stats()).toMatchObject({ framesIn: 20, framesOut: 20, dropped: 0 });
    });
  }
});
