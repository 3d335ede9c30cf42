// One reply of the agent, from words to the caller's ear: the model's streamed text (or
// a fixed line) cut into segments, each segment spoken by the TTS stream, its audio
// queued on the call's playout in order. The reply knows which words were heard: each
// segment's audio is tagged with its index, so when the caller interrupts, the words
// already played (whole segments, and the played share of the current one, cut at a
// word) are what the transcript keeps. It also times its parts for the turn latency.
import { ProviderError, isAborted } from '../providers/errors.ts';
import type { LlmClient, LlmMessage, LlmTool, LlmToolCall } from '../providers/llm.ts';
import type { TtsClient, TtsUtterance, TtsVoice } from '../providers/tts.ts';
import { createSegmentSplitter } from './sentences.ts';

/** What the reply needs of the call's playout. */
export interface ReplyPlayout {
  enqueue(mulaw: Uint8Array, tag: number): void;
  /** Resolves true once everything queued before it has played, false when a clear dropped it. */
  markEnd(name: string): Promise<boolean>;
  /** Drops all queued audio and clears the carrier's buffer. */
  clear(): void;
  /** Milliseconds of audio with this tag sent to the carrier. */
  progress(tag: number): number;
  /** Audio sent that the carrier has not played yet at `nowMs` (same clock as `now`). */
  aheadMs(nowMs: number): number;
}

export type ReplySource =
  | { kind: 'model'; messages: LlmMessage[]; tools: LlmTool[]; temperature: number; maxTokens: number }
  | { kind: 'text'; text: string };

/** When each part of the reply happened (performance.now() ms); null until it has. */
export interface ReplyTimings {
  startedAt: number;
  llmFirstTokenAt: number | null;
  ttsFirstPushAt: number | null;
  ttsFirstAudioAt: number | null;
  firstFrameSentAt: number | null;
}

export interface ReplyEvents {
  /** The first audio frame of this reply went to the carrier. */
  firstAudio(timings: ReplyTimings): void;
  /** The reply ended: played to the end, or cut (`complete` false) with what was heard. */
  ended(heard: string, complete: boolean): void;
  failed(provider: 'llm' | 'tts', error: ProviderError): void;
  /** The model called a tool (end_call; later issues add more). */
  toolCall(name: string, args: string, id: string): void;
  /**
   * Every tool call of the model's reply, once its stream has ended and before the
   * reply can end (so a round of tools is known before the words that came with it
   * have played).
   */
  toolCalls?(calls: LlmToolCall[]): void;
}

export interface ReplyHandle {
  readonly id: number;
  /** The playout sent audio of this reply (checked after each tick). */
  onSent(now: number): void;
  /** Stops now: the model request and speech are cancelled, queued audio dropped; `ended` reports what was heard. */
  interrupt(): void;
  /** Stops now without a report (nothing was played, or the call is over). */
  cancel(): void;
  readonly timings: ReplyTimings;
}

export interface ReplyDeps {
  llm: LlmClient;
  tts: TtsClient;
  voice: TtsVoice;
  playout: ReplyPlayout;
  now: () => number;
}

interface Segment {
  text: string;
  audioBytes: number;
  done: boolean;
}

/** The heard part of a segment: its first words, in proportion to the audio played. */
function heardPart(text: string, share: number): string {
  if (share >= 1) return text;
  const words = text.split(/\s+/).filter(Boolean);
  return words.slice(0, Math.floor(words.length * share)).join(' ');
}

export function startReply(id: number, source: ReplySource, deps: ReplyDeps, events: ReplyEvents): ReplyHandle {
  const { playout, now } = deps;
  const timings: ReplyTimings = { startedAt: now(), llmFirstTokenAt: null, ttsFirstPushAt: null, ttsFirstAudioAt: null, firstFrameSentAt: null };
  const segments: Segment[] = [];
  const markName = `reply-${id}`;
  // Tags unique across replies, so one reply's progress never reads another's.
  const tagBase = id * 10_000;
  const sentOf = (segment: number): number => playout.progress(tagBase + segment);
  const abort = new AbortController();
  let finished = false; // ended, failed or cancelled: no more events
  let audioQueued = false;

  const utterance: TtsUtterance = deps.tts.start(deps.voice, {
    audio(mulaw, segment) {
      if (finished) return;
      timings.ttsFirstAudioAt ??= now();
      const seg = segments[segment];
      if (seg) seg.audioBytes += mulaw.length;
      audioQueued = true;
      playout.enqueue(mulaw, tagBase + segment);
      // The playout sends an utterance's first frames at once: note it now, not at the next tick.
      if (timings.firstFrameSentAt === null && sentOf(0) > 0) {
        timings.firstFrameSentAt = now();
        events.firstAudio(timings);
      }
    },
    segmentDone(segment) {
      const seg = segments[segment];
      if (seg) seg.done = true;
    },
    done() {
      if (finished) return;
      // Nothing to say (a tool call alone): over at once. Otherwise the mark says when it has played.
      if (!audioQueued) finish('', true);
      else
        void playout.markEnd(markName).then((played) => {
          if (played) finish(segments.map((s) => s.text).join(' '), true);
        });
    },
    error(err) {
      if (finished) return;
      fail('tts', err);
    },
  });

  function push(text: string): void {
    timings.ttsFirstPushAt ??= now();
    segments.push({ text, audioBytes: 0, done: false });
    utterance.push(text);
  }

  /** The words played so far: audio sent, less what the carrier still holds unplayed. */
  function heard(): string {
    const sent = segments.map((_, i) => sentOf(i));
    let played = Math.max(0, sent.reduce((a, b) => a + b, 0) - playout.aheadMs(now()));
    const parts: string[] = [];
    for (let i = 0; i < segments.length && played > 0; i++) {
      const seg = segments[i]!;
      const total = seg.audioBytes / 8;
      const p = Math.min(played, sent[i]!);
      played -= p;
      const share = seg.done && total > 0 ? p / total : Math.min(0.99, p / Math.max(total, 1));
      const part = heardPart(seg.text, share);
      if (part) parts.push(part);
      if (share < 1) break;
    }
    return parts.join(' ');
  }

  function finish(text: string, complete: boolean): void {
    if (finished) return;
    finished = true;
    events.ended(text, complete);
  }

  function fail(provider: 'llm' | 'tts', err: ProviderError): void {
    finished = true;
    abort.abort();
    utterance.cancel();
    playout.clear();
    events.failed(provider, err);
  }

  async function runModel(src: Extract<ReplySource, { kind: 'model' }>): Promise<void> {
    const splitter = createSegmentSplitter();
    const calls: LlmToolCall[] = [];
    try {
      for await (const chunk of deps.llm.stream({
        messages: src.messages,
        tools: src.tools,
        temperature: src.temperature,
        maxTokens: src.maxTokens,
        signal: abort.signal,
      })) {
        if (finished) return;
        if (chunk.type === 'text') {
          timings.llmFirstTokenAt ??= now();
          for (const seg of splitter.push(chunk.text)) push(seg);
        } else if (chunk.type === 'tool_call') {
          timings.llmFirstTokenAt ??= now();
          calls.push(chunk.call);
          events.toolCall(chunk.call.name, chunk.call.arguments, chunk.call.id);
        }
      }
      if (finished) return;
      if (calls.length > 0) events.toolCalls?.(calls);
      if (finished) return;
      for (const seg of splitter.flush()) push(seg);
      utterance.end();
    } catch (err) {
      if (finished || isAborted(err)) return;
      fail('llm', err instanceof ProviderError ? err : new ProviderError('llm', 'protocol', String(err), { cause: err }));
    }
  }

  if (source.kind === 'text') {
    push(source.text);
    utterance.end();
  } else {
    void runModel(source);
  }

  return {
    id,
    timings,
    onSent(at) {
      if (timings.firstFrameSentAt !== null || finished) return;
      if (sentOf(0) > 0) {
        timings.firstFrameSentAt = at;
        events.firstAudio(timings);
      }
    },
    interrupt() {
      if (finished) return;
      const text = heard();
      finished = true;
      abort.abort();
      utterance.cancel();
      playout.clear();
      events.ended(text, false);
    },
    cancel() {
      if (finished) return;
      finished = true;
      abort.abort();
      utterance.cancel();
      playout.clear();
    },
  };
}
