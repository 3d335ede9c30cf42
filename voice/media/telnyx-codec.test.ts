// Carrier B codec: the shared contract with the messages of carriers.md §6 (the `…`
// filled with realistic ids and a real 20 ms μ-law payload), plus carrier B quirks.
import { describe, expect, it } from 'vitest';
import { codecContract } from './codec.contract.ts';
import { telnyxCodec } from './telnyx-codec.ts';

const STREAM = '32de0dea-53cb-4b21-89a4-9e1819c043bc';
const USER = '3e6f995f-85f7-4705-9741-53b116d28237';
const CALL = 'v3:u5OAKGEPT3Dx8SZSSDRWEMdNH2OripQhO';
const SESSION = '428c31b6-7af4-4bcb-b68e-5013ef9657c1';
/** 160 μ-law bytes (20 ms of a 205 Hz voiced sound) = 216 base64 characters. */
const PAYLOAD =
  'tba0tbm9vb3AyMzMztru/3xmVE1MS0U+PT08ODQ1NjItLDfYsKuutLa0tbm9vb3Ax8zMztnt/3xnVU1MS0U/PT08ODQ1NjMtLDbbsauutLa0tbm9vb2/x8zMztnt/n1nVU1MS0U/PT08ODQ0NjMtLDbesauutLa0tbm9vb2/x8zMztjs/n1oVU1MS0Y/PT08ODQ0NjMtLDXisquutLa0tQ==';
const BYTES = new Uint8Array(Buffer.from(PAYLOAD, 'base64'));

const start = (encoding: string) =>
  `{"event":"start","sequence_number":"1","stream_id":"${STREAM}","start":{"user_id":"${USER}","call_control_id":"${CALL}","call_session_id":"${SESSION}","from":"+13125550100","to":"+13125550123","tags":[],"client_state":"Y2FsbElkPWFiYw==","media_format":{"encoding":"${encoding}","sample_rate":8000,"channels":1}}}`;
const startFrame = { type: 'start', carrierCallId: CALL, streamId: STREAM, customParameters: {}, encoding: 'mulaw', sampleRate: 8000 } as const;

codecContract('carrier B', telnyxCodec, {
  inbound: [
    { name: 'connected', wire: '{"event":"connected","version":"1.0.0"}', frame: { type: 'connected' } },
    { name: 'start (PCMU)', wire: start('PCMU'), frame: startFrame },
    { name: 'start (audio/x-mulaw, older docs)', wire: start('audio/x-mulaw'), frame: startFrame },
    {
      name: 'media',
      wire: `{"event":"media","sequence_number":"4","stream_id":"${STREAM}","media":{"track":"inbound","chunk":"2","timestamp":"5","payload":"${PAYLOAD}"}}`,
      frame: { type: 'audio', seq: 4, chunk: 2, timestampMs: 5, payload: BYTES },
    },
    {
      name: 'dtmf',
      wire: `{"event":"dtmf","sequence_number":"5","stream_id":"${STREAM}","occurred_at":"2025-03-14T09:41:07.123456Z","dtmf":{"digit":"1"}}`,
      frame: { type: 'dtmf', digit: '1' },
    },
    { name: 'mark', wire: `{"event":"mark","sequence_number":"5","stream_id":"${STREAM}","mark":{"name":"m1"}}`, frame: { type: 'mark', name: 'm1' } },
    {
      name: 'error',
      wire: `{"event":"error","stream_id":"${STREAM}","payload":{"code":100002,"title":"unknown_error","detail":"An unknown error occurred while processing the stream"}}`,
      frame: { type: 'error', code: 100002, title: 'unknown_error', detail: 'An unknown error occurred while processing the stream' },
    },
    {
      name: 'stop',
      wire: `{"event":"stop","sequence_number":"9","stream_id":"${STREAM}","stop":{"user_id":"${USER}","call_control_id":"${CALL}"}}`,
      frame: { type: 'stop' },
    },
  ],
  outbound: [
    { frame: { type: 'audio', payload: BYTES }, streamId: STREAM, wire: `{"event":"media","media":{"payload":"${PAYLOAD}"}}` },
    { frame: { type: 'mark', name: 'm1' }, streamId: STREAM, wire: '{"event":"mark","mark":{"name":"m1"}}' },
    { frame: { type: 'clear' }, streamId: STREAM, wire: '{"event":"clear"}' },
  ],
  invalid: [
    { name: 'start without call_control_id', wire: start('PCMU').replace(`"call_control_id":"${CALL}",`, '') },
    { name: 'start in L16', wire: start('L16') },
    { name: 'start with sample_rate 0', wire: start('PCMU').replace('"sample_rate":8000', '"sample_rate":0') },
    { name: 'media with camelCase sequenceNumber', wire: `{"event":"media","sequenceNumber":"4","stream_id":"${STREAM}","media":{"chunk":"2","timestamp":"5","payload":"${PAYLOAD}"}}` },
    { name: 'error without code', wire: `{"event":"error","stream_id":"${STREAM}","payload":{"title":"unknown_error"}}` },
    { name: 'dtmf without digit', wire: `{"event":"dtmf","sequence_number":"5","stream_id":"${STREAM}","dtmf":{}}` },
  ],
  echo(outbound, seq) {
    const msg = JSON.parse(outbound) as { event: string; media?: { payload: string }; mark?: { name: string } };
    const head = { event: msg.event, sequence_number: String(seq), stream_id: STREAM };
    if (msg.media) return JSON.stringify({ ...head, media: { track: 'inbound', chunk: String(seq), timestamp: String(seq * 20), payload: msg.media.payload } });
    return JSON.stringify({ ...head, mark: msg.mark });
  },
});

describe('carrier B specifics', () => {
  it('accepts custom parameters as a {name, value} list, the shape streaming_start takes', () => {
    const wire = start('PCMU').replace('"tags":[]', '"tags":[],"custom_parameters":[{"name":"callId","value":"abc"},{"name":"n","value":1}]');
    expect(telnyxCodec.decode(wire)).toEqual({ ...startFrame, customParameters: { callId: 'abc' } });
  });

  it('maps every documented stream error code', () => {
    for (const [code, title] of [[100003, 'malformed_frame'], [100004, 'invalid_media'], [100005, 'rate_limit_reached']] as const) {
      expect(telnyxCodec.decode(`{"event":"error","stream_id":"${STREAM}","payload":{"code":${code},"title":"${title}","detail":"x"}}`)).toEqual({
        type: 'error',
        code,
        title,
        detail: 'x',
      });
    }
  });

  it('ignores the stream id on outbound messages', () => {
    expect(telnyxCodec.encode({ type: 'clear' }, 'anything')).toBe('{"event":"clear"}');
  });
});
