// Carrier A (Twilio) Media Streams codec, carriers.md §4. Carrier A sends
// `sequenceNumber`, `chunk` and `timestamp` as strings and wants `streamSid` on every
// message we send. Outbound JSON is built by concatenation: the payload is base64
// (nothing to escape) and only the stream id and mark names go through JSON.stringify.
import type { MediaCodec } from './codec.ts';
import { asObject, isMulaw, parseObject, readBase64, readCount, readDigit, readParameters, readString, writeBase64 } from './codec.ts';
import type { InboundFrame, OutboundFrame } from './frames.ts';
import { invalid } from './frames.ts';

const CONNECTED: InboundFrame = Object.freeze({ type: 'connected' });
const STOP: InboundFrame = Object.freeze({ type: 'stop' });

function decodeMedia(msg: Record<string, unknown>): InboundFrame {
  const media = asObject(msg.media);
  if (!media) return invalid('media: missing media');
  const payload = readBase64(media.payload);
  if (!payload) return invalid('media: missing or malformed payload');
  const seq = readCount(msg.sequenceNumber);
  if (seq < 0) return invalid('media: missing or malformed sequenceNumber');
  const chunk = readCount(media.chunk);
  if (chunk < 0) return invalid('media: missing or malformed chunk');
  const timestampMs = readCount(media.timestamp);
  if (timestampMs < 0) return invalid('media: missing or malformed timestamp');
  return { type: 'audio', seq, chunk, timestampMs, payload };
}

function decodeStart(msg: Record<string, unknown>): InboundFrame {
  const start = asObject(msg.start);
  if (!start) return invalid('start: missing start');
  const carrierCallId = readString(start.callSid);
  if (!carrierCallId) return invalid('start: missing callSid');
  const streamId = readString(msg.streamSid) ?? readString(start.streamSid);
  if (!streamId) return invalid('start: missing streamSid');
  const format = asObject(start.mediaFormat);
  if (!format) return invalid('start: missing mediaFormat');
  if (!isMulaw(format.encoding)) return invalid('start: unsupported encoding');
  const sampleRate = readCount(format.sampleRate);
  if (sampleRate <= 0) return invalid('start: missing or malformed sampleRate');
  const customParameters = readParameters(start.customParameters);
  return { type: 'start', carrierCallId, streamId, customParameters, encoding: 'mulaw', sampleRate };
}

export const twilioCodec: MediaCodec = {
  decode(text) {
    const msg = parseObject(text);
    if (!msg) return invalid('not a JSON object');
    switch (msg.event) {
      case 'media':
        return decodeMedia(msg);
      case 'start':
        return decodeStart(msg);
      case 'connected':
        return CONNECTED;
      case 'dtmf': {
        const digit = readDigit(asObject(msg.dtmf)?.digit);
        return digit ? { type: 'dtmf', digit } : invalid('dtmf: missing or malformed digit');
      }
      case 'mark': {
        const name = asObject(msg.mark)?.name;
        return typeof name === 'string' ? { type: 'mark', name } : invalid('mark: missing name');
      }
      case 'stop':
        return STOP;
      case undefined:
        return invalid('missing event');
      default:
        return invalid('unknown event');
    }
  },

  encode(frame: OutboundFrame, streamId: string): string {
    const sid = JSON.stringify(streamId);
    switch (frame.type) {
      case 'audio':
        return `{"event":"media","streamSid":${sid},"media":{"payload":"${writeBase64(frame.payload)}"}}`;
      case 'mark':
        return `{"event":"mark","streamSid":${sid},"mark":{"name":${JSON.stringify(frame.name)}}}`;
      case 'clear':
        return `{"event":"clear","streamSid":${sid}}`;
    }
  },
};
