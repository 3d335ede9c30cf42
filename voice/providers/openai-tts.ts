// Text to speech over an OpenAI-compatible speech endpoint: one
// `POST {baseUrl}/audio/speech` per segment (`response_format: "pcm"`: raw 24 kHz
// 16-bit little-endian mono), the body converted to μ-law 8 kHz as it streams in, so
// the caller hears the first syllables while the rest is still being made.
//
// One request per segment would leave a gap of one first-audio latency between
// sentences; so the next segment's request starts while the current one streams (one
// segment of look-ahead), its audio held until the current one is delivered. Text
// longer than one request may carry (`input` is at most 4096 characters) becomes
// several pieces of the same segment, requested the same way. Audio reaches the sink
// strictly in order; a failure is reported when its piece's turn comes, so whatever
// came before it is still heard.
import { createTtsPcmToMulaw } from '../audio/resample.ts';
import { ProviderError } from './errors.ts';
import { errorOfStatus, errorOfThrow } from './http-failure.ts';
import { splitForSpeech } from './split-text.ts';
import type { TtsClient, TtsSink, TtsUtterance, TtsVoice } from './tts.ts';

export interface OpenAiTtsOptions {
  /** E.g. `https://api.openai.com/v1`; a trailing slash is ignored. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; omitted for local servers that need none. */
  apiKey?: string | undefined;
  model: string;
  /** No audio within this long of a request, or a pause this long mid-stream, is a timeout. */
  firstAudioTimeoutMs?: number;
}

/** The speech endpoint's limit on `input`. */
export const OPENAI_TTS_MAX_INPUT = 4096;

const WHAT = 'tts POST /audio/speech';

export function createOpenAiTts(opts: OpenAiTtsOptions): TtsClient {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/audio/speech`;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  const config: RequestConfig = { url, headers, model: opts.model, timeoutMs: opts.firstAudioTimeoutMs ?? 8_000 };
  return {
    name: 'openai',
    start: (voice, sink) => startUtterance(config, voice, sink),
  };
}

interface RequestConfig {
  url: string;
  headers: Record<string, string>;
  model: string;
  timeoutMs: number;
}

/** One request's worth of text: a whole segment, or one piece of a long one. */
interface Piece {
  segment: number;
  text: string;
  /** The segment is delivered once this piece is. */
  lastOfSegment: boolean;
  state: 'waiting' | 'streaming' | 'finished' | 'failed';
  /** Audio that came while an earlier piece was still being delivered. */
  held: Uint8Array[];
  error: ProviderError | null;
  controller: AbortController | null;
  timer: ReturnType<typeof setTimeout> | null;
}

function startUtterance(config: RequestConfig, voice: TtsVoice, sink: TtsSink): TtsUtterance {
  // Not yet delivered, in order; [0] is the one whose audio goes to the sink as it comes.
  const pieces: Piece[] = [];
  let segments = 0;
  let ended = false;
  let over = false; // done, error or cancel: no more sink calls
  let scheduled = false;

  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      pump();
    });
  };

  // Starts what may start, hands over what is ready, in order. Every sink call may
  // cancel the utterance (a barge-in decided inside it), so `over` is checked after each.
  function pump(): void {
    while (!over) {
      const head = pieces[0];
      if (!head) {
        if (ended) {
          over = true;
          sink.done();
        }
        return;
      }
      if (head.state === 'waiting') void request(head);
      const next = pieces[1];
      if (next?.state === 'waiting') void request(next);
      if (head.held.length > 0) {
        const held = head.held;
        head.held = [];
        for (const chunk of held) {
          sink.audio(chunk, head.segment);
          if (over) return;
        }
      }
      if (head.state === 'failed') {
        fail(head.error!);
        return;
      }
      if (head.state !== 'finished') return;
      pieces.shift();
      if (head.lastOfSegment) {
        sink.segmentDone(head.segment);
      }
    }
  }

  function fail(error: ProviderError): void {
    over = true;
    stopAll();
    sink.error(error);
  }

  function stopAll(): void {
    for (const p of pieces) {
      if (p.timer) clearTimeout(p.timer);
      p.controller?.abort();
    }
    pieces.length = 0;
  }

  function audio(piece: Piece, mulaw: Uint8Array): void {
    if (mulaw.length === 0) return;
    // The converter reuses its buffer; the sink (and the hold queue) get a chunk of their own.
    const chunk = mulaw.slice();
    if (piece === pieces[0]) sink.audio(chunk, piece.segment);
    else piece.held.push(chunk);
  }

  async function request(piece: Piece): Promise<void> {
    piece.state = 'streaming';
    if (piece.text.trim() === '') {
      piece.state = 'finished';
      return;
    }
    const controller = (piece.controller = new AbortController());
    let timedOut = false;
    let gotAudio = false;
    const timer = (piece.timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, config.timeoutMs));
    timer.unref();
    try {
      const res = await fetch(config.url, {
        method: 'POST',
        headers: config.headers,
        body: JSON.stringify({ model: config.model, input: piece.text, voice: voice.voice, response_format: 'pcm', speed: voice.speed }),
        signal: controller.signal,
      });
      if (!res.ok) throw await errorOfStatus('tts', WHAT, res);
      const type = res.headers.get('content-type') ?? '';
      // Some compatible servers answer an error as a 200 JSON body.
      if (type.includes('json') || type.startsWith('text/') || !res.body) {
        await res.body?.cancel().catch(() => {});
        throw new ProviderError('tts', 'protocol', `${WHAT}: answered ${type || 'no body'} instead of audio`);
      }
      const reader = res.body.getReader();
      const convert = createTtsPcmToMulaw(24000);
      for (;;) {
        const read = await reader.read();
        if (over) return;
        if (read.done) break;
        gotAudio = true;
        timer.refresh(); // from now on the deadline bounds a pause in the stream
        audio(piece, convert.push(read.value));
      }
      audio(piece, convert.end());
      piece.state = 'finished';
    } catch (err) {
      if (over) return;
      const why = gotAudio ? `the audio stalled for ${config.timeoutMs} ms` : `no audio within ${config.timeoutMs} ms`;
      piece.error = errorOfThrow('tts', WHAT, err, timedOut ? { reason: 'timeout', message: why } : null);
      piece.state = 'failed';
    } finally {
      clearTimeout(timer);
      piece.controller = null;
      piece.timer = null;
    }
    if (!over) pump();
  }

  return {
    push(text) {
      if (ended) throw new Error('tts: push after end()');
      const segment = segments++;
      if (over) return segment;
      const parts = splitForSpeech(text, OPENAI_TTS_MAX_INPUT);
      parts.forEach((part, i) => {
        pieces.push({ segment, text: part, lastOfSegment: i === parts.length - 1, state: 'waiting', held: [], error: null, controller: null, timer: null });
      });
      schedule();
      return segment;
    },
    end() {
      ended = true;
      schedule();
    },
    cancel() {
      if (over) return;
      over = true;
      stopAll();
    },
  };
}
