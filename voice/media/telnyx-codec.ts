// Carrier B (Telnyx) media streaming codec, carriers.md §6. Differences from carrier
// A that matter here: snake_case ids (`sequence_number`, `stream_id`), μ-law named
// `PCMU` (or `audio/x-mulaw` in older docs), an `error` event, outbound messages
// without a stream id, and audio that may arrive out of order (see reorder.ts).
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
  const seq = readCount(msg.sequence_number);
  if (seq < 0) return invalid('media: missing or malformed sequence_number');
  const chunk = readCount(media.chunk);
  if (chunk < 0) return invalid('media: missing or malformed chunk');
  const timestampMs = readCount(media.timestamp);
  if (timestampMs < 0) return invalid('media: missing or malformed timestamp');
  return { type: 'audio', seq, chunk, timestampMs, payload };
}

function decodeStart(msg: Record<string, unknown>): InboundFrame {
  const start = asObject(msg.start);
  if (!start) return invalid('start: missing start');
  const carrierCallId = readString(start.call_control_id);
  if (!carrierCallId) return invalid('start: missing call_control_id');
  const streamId = readString(msg.stream_id);
  if (!streamId) return invalid('start: missing stream_id');
  const format = asObject(start.media_format);
  if (!format) return invalid('start: missing media_format');
  if (!isMulaw(format.encoding)) return invalid('start: unsupported encoding');
  const sampleRate = readCount(format.sample_rate);
  if (sampleRate <= 0) return invalid('start: missing or malformed sample_rate');
  const customParameters = readParameters(start.custom_parameters);
  return { type: 'start', carrierCallId, streamId, customParameters, encoding: 'mulaw', sampleRate };
}

function decodeError(msg: Record<string, unknown>): InboundFrame {
  const payload = asObject(msg.payload);
  const code = readCount(payload?.code);
  if (!payload || code < 0) return invalid('error: missing or malformed code');
  const title = typeof payload.title === 'string' ? payload.title : '';
  const detail = typeof payload.detail === 'string' ? payload.detail : '';
  return { type: 'error', code, title, detail };
}

export const telnyxCodec: MediaCodec = {
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
      case 'error':
        return decodeError(msg);
      case undefined:
        return invalid('missing event');
      default:
        return invalid('unknown event');
    }
  },

  /** Carrier B binds the socket to one stream, so `streamId` is not sent. */
  encode(frame: OutboundFrame): string {
    switch (frame.type) {
      case 'audio':
        return `{"event":"media","media":{"payload":"${writeBase64(frame.payload)}"}}`;
      case 'mark':
        return `{"event":"mark","mark":{"name":${JSON.stringify(frame.name)}}}`;
      case 'clear':
        return '{"event":"clear"}';
    }
  },
};
