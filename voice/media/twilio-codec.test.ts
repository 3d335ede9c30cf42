// Carrier A codec: the shared contract with the messages of carriers.md §4 (the `…`
// filled with realistic SIDs and a real 20 ms μ-law payload), plus carrier A quirks.
import { describe, expect, it } from 'vitest';
import { codecContract } from './codec.contract.ts';
import { twilioCodec } from './twilio-codec.ts';

const ACCOUNT = 'AC3d7f0a1b2c4e5f60718293a4b5c6d7e8';
const STREAM = 'MZ18ad3ab5a668481ce02b83e7395059f0';
const CALL = 'CA5f2b9e0c4d3a1b8e7f6a5d4c3b2a1908';
/** 160 μ-law bytes (20 ms of a 118 Hz voiced sound) = 216 base64 characters. */
const PAYLOAD =
  'tLS1uLu9vb29vb/Dx8vMzMzN0dnj8P3/fnRmW1JOTExMS0hEPz49PT09Ozk2NDQ1NjY0Ly0rLDA+fb6wrKutr7S2trW0tLa5u729vb2+v8TIy8zMzM7S2+b0/v99cWNZUU1MTExLR0M/PT09PT07ODY0NDU2NjMvLSstM0Leu6+srK2wtLa2tbS0trm8vb29vb7AxcnLzMzMztTc6ff+/w==';
const BYTES = new Uint8Array(Buffer.from(PAYLOAD, 'base64'));

codecContract('carrier A', twilioCodec, {
  inbound: [
    { name: 'connected', wire: '{"event":"connected","protocol":"Call","version":"1.0.0"}', frame: { type: 'connected' } },
    {
      name: 'start',
      wire: `{"event":"start","sequenceNumber":"1","streamSid":"${STREAM}","start":{"accountSid":"${ACCOUNT}","streamSid":"${STREAM}","callSid":"${CALL}","tracks":["inbound"],"customParameters":{"callId":"abc"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`,
      frame: { type: 'start', carrierCallId: CALL, streamId: STREAM, customParameters: { callId: 'abc' }, encoding: 'mulaw', sampleRate: 8000 },
    },
    {
      name: 'media',
      wire: `{"event":"media","sequenceNumber":"3","streamSid":"${STREAM}","media":{"track":"inbound","chunk":"1","timestamp":"20","payload":"${PAYLOAD}"}}`,
      frame: { type: 'audio', seq: 3, chunk: 1, timestampMs: 20, payload: BYTES },
    },
    {
      name: 'dtmf',
      wire: `{"event":"dtmf","sequenceNumber":"5","streamSid":"${STREAM}","dtmf":{"track":"inbound_track","digit":"1"}}`,
      frame: { type: 'dtmf', digit: '1' },
    },
    {
      name: 'mark',
      wire: `{"event":"mark","sequenceNumber":"4","streamSid":"${STREAM}","mark":{"name":"label"}}`,
      frame: { type: 'mark', name: 'label' },
    },
    {
      name: 'stop',
      wire: `{"event":"stop","sequenceNumber":"9","streamSid":"${STREAM}","stop":{"accountSid":"${ACCOUNT}","callSid":"${CALL}"}}`,
      frame: { type: 'stop' },
    },
  ],
  outbound: [
    { frame: { type: 'audio', payload: BYTES }, streamId: STREAM, wire: `{"event":"media","streamSid":"${STREAM}","media":{"payload":"${PAYLOAD}"}}` },
    { frame: { type: 'mark', name: 'utt-7' }, streamId: STREAM, wire: `{"event":"mark","streamSid":"${STREAM}","mark":{"name":"utt-7"}}` },
    { frame: { type: 'clear' }, streamId: STREAM, wire: `{"event":"clear","streamSid":"${STREAM}"}` },
  ],
  invalid: [
    { name: 'start without callSid', wire: `{"event":"start","sequenceNumber":"1","streamSid":"${STREAM}","start":{"streamSid":"${STREAM}","mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}` },
    { name: 'start in A-law', wire: `{"event":"start","sequenceNumber":"1","streamSid":"${STREAM}","start":{"callSid":"${CALL}","mediaFormat":{"encoding":"audio/x-alaw","sampleRate":8000,"channels":1}}}` },
    { name: 'media with a non-numeric sequenceNumber', wire: `{"event":"media","sequenceNumber":"3a","streamSid":"${STREAM}","media":{"track":"inbound","chunk":"1","timestamp":"20","payload":"${PAYLOAD}"}}` },
    { name: 'media with a negative timestamp', wire: `{"event":"media","sequenceNumber":"3","streamSid":"${STREAM}","media":{"track":"inbound","chunk":"1","timestamp":"-20","payload":"${PAYLOAD}"}}` },
    { name: 'dtmf with a non-key digit', wire: `{"event":"dtmf","sequenceNumber":"5","streamSid":"${STREAM}","dtmf":{"track":"inbound_track","digit":"E"}}` },
    { name: 'mark without name', wire: `{"event":"mark","sequenceNumber":"4","streamSid":"${STREAM}","mark":{}}` },
    { name: 'error (carrier A has no error event)', wire: `{"event":"error","streamSid":"${STREAM}","payload":{"code":1}}` },
  ],
  echo(outbound, seq) {
    const msg = JSON.parse(outbound) as { event: string; streamSid: string; media?: { payload: string }; mark?: { name: string } };
    const head = { event: msg.event, sequenceNumber: String(seq), streamSid: msg.streamSid };
    if (msg.media) return JSON.stringify({ ...head, media: { track: 'inbound', chunk: String(seq), timestamp: String(seq * 20), payload: msg.media.payload } });
    return JSON.stringify({ ...head, mark: msg.mark });
  },
});

describe('carrier A specifics', () => {
  it('takes the stream id from start.streamSid when the top level lacks it, and tolerates numeric counters', () => {
    const frame = twilioCodec.decode(
      `{"event":"start","start":{"streamSid":"${STREAM}","callSid":"${CALL}","mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`,
    );
    expect(frame).toEqual({ type: 'start', carrierCallId: CALL, streamId: STREAM, customParameters: {}, encoding: 'mulaw', sampleRate: 8000 });
    const media = twilioCodec.decode(`{"event":"media","sequenceNumber":3,"media":{"chunk":1,"timestamp":20,"payload":"${PAYLOAD}"}}`);
    expect(media).toMatchObject({ type: 'audio', seq: 3, chunk: 1, timestampMs: 20 });
  });

  it('drops custom parameters that are not strings instead of failing the start', () => {
    const frame = twilioCodec.decode(
      `{"event":"start","streamSid":"${STREAM}","start":{"callSid":"${CALL}","customParameters":{"a":"1","b":2,"c":null},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000}}}`,
    );
    expect(frame).toMatchObject({ type: 'start', customParameters: { a: '1' } });
  });

  it('a 20 ms payload is 160 bytes', () => {
    expect(BYTES).toHaveLength(160);
    expect(PAYLOAD).toHaveLength(216);
  });
});
