// A line-test engine, like a carrier's echo test number: every caller frame is played
// straight back, frame for frame, so a caller hears themself one round trip late.
// Selected with MEDIA_ENGINE=echo; the media benchmark measures the media path with it.
import type { ConversationEngine, EngineFactory } from './engine.ts';

export const createEchoEngine: EngineFactory = (output): ConversationEngine => ({
  // Encoded and sent before onAudio returns, so the pooled payload needs no copy.
  onAudio(mulaw) {
    output.play(mulaw);
  },
  onDtmf() {},
  close() {},
});
