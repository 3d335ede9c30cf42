// A call's playout clock: the agent's μ-law audio arrives from the TTS in bursts
// (often faster than real time, sometimes slower) and leaves for the carrier here as
// 160-byte frames, one per 20 ms of real time. Pacing it ourselves, instead of handing
// the carrier whole sentences, keeps barge-in cheap and honest: at most `leadMs` of
// audio sits at the carrier, so a `clear` silences the agent at once, and "sent" is
// within `leadMs` of "heard", which is how the engine cuts an interrupted reply in the
// transcript to what the caller actually heard (`progress(tag)`).
//
// Pacing: `playHead` is when the carrier will have played everything sent so far. A
// tick sends frames while the carrier holds less than the lead (rounded to the nearest
// frame, so a tick a few ms early or late still sends one frame), so late ticks catch
// up by sending what is due and never put more than the lead ahead of real time. An
// utterance starts only once `jitterMs` is queued or its end is known (a mark follows
// it), so a TTS stream arriving in bursts plays without gaps. When the queue and then
// the carrier run dry mid-utterance, the caller hears a gap: that tick counts as an
// underrun and the playout buffers `jitterMs` again before going on.
//
// Marks: `markEnd(name)` goes into the queue after the audio before it; the frame
// holding an utterance's last byte is padded with silence so the mark follows it at
// once, and the carrier returns the mark once it has played that audio.
//
// Backpressure: when the output reports its socket backed up (`backedUp`), the frame
// that was due stays queued, the tick is counted in `dropped`, and sending resumes
// from the same byte once the socket drains; the playout never skips audio it did not
// send. The queue is a ring that grows by doubling and is kept, and one frame buffer is
// reused: ticks allocate nothing.
import type { MediaOutput } from '../engine/engine.ts';
export { createPlayoutTicker, type PlayoutTicker, type PlayoutTickerOptions, type Tickable } from './playout-ticker.ts';

/** One 20 ms frame of μ-law 8 kHz. */
export const FRAME_BYTES = 160;
export const FRAME_MS = 20;
const BYTES_PER_MS = 8;
/** μ-law silence: pads the last frame of an utterance. */
const SILENCE = 0xff;
/** Audio kept at the carrier ahead of real time: rides out a late tick, and is all that plays on after a clear. */
export const DEFAULT_LEAD_MS = 60;
/** Audio an utterance waits for before it starts (unless its end is already queued). */
export const DEFAULT_JITTER_MS = 40;
/** Tags whose progress is remembered (the oldest is forgotten first). */
const MAX_TAGS = 64;

export interface PlayoutOptions {
  /** Audio kept at the carrier ahead of real time, at least one frame (default 60 ms). */
  leadMs?: number;
  /** Audio queued before an utterance starts (default 40 ms). */
  jitterMs?: number;
  /**
   * The ticks' clock. Given, an utterance's first frames are sent as soon as its jitter
   * buffer is full, at this time, instead of at the next tick: waiting for the tick adds
   * up to 20 ms to every reply. Without it audio leaves on ticks only.
   */
  now?: () => number;
}

export interface Playout {
  /**
   * Queues μ-law 8 kHz audio of any length (copied). `tag` is the engine's number for
   * the segment it belongs to, for `progress`; number segments uniquely within a call.
   */
  enqueue(mulaw: Uint8Array, tag?: number): void;
  /**
   * Ends an utterance: the carrier is sent mark `name` right after the last frame
   * queued before it. Resolves true when the carrier returns it (`onMark`: the audio
   * before it has played), false when `clear` or `close` dropped it. Names should be
   * unique within a call: a returned name resolves the oldest mark waiting under it.
   */
  markEnd(name: string): Promise<boolean>;
  /** Barge-in: drops everything queued, forgets marks (false), un-pauses, calls `output.clear()`. */
  clear(): void;
  /** Stops sending without dropping anything (the engine is deciding whether the caller interrupts). */
  pause(): void;
  /** Goes on sending from the byte where `pause` stopped. */
  resume(): void;
  readonly paused: boolean;
  /** Sends every frame (and mark) due at `nowMs`; the ticker calls it every 20 ms. */
  tick(nowMs: number): void;
  /** The carrier returned mark `name`; true when it was one of this playout's. */
  onMark(name: string): boolean;
  /** Audio queued and not sent yet, in ms. */
  queuedMs(): number;
  /** Audio sent to the carrier since the last `clear`, in ms (whole frames, padding included). */
  sentMs(): number;
  /** Audio sent that the carrier has not played yet at `nowMs`, by the playout's clock. */
  aheadMs(nowMs: number): number;
  /** The tag of the last audio sent; undefined when it had none, or before any was sent. Kept across `clear`. */
  playedTag(): number | undefined;
  /**
   * Milliseconds of audio enqueued with `tag` that have been sent (0 for a tag not seen).
   * Kept across `clear`, so a barge-in can clear first and read after; the last 64 tags are kept.
   */
  progress(tag: number): number;
  /** Nothing queued, no mark waiting to be sent, no utterance in progress. */
  isIdle(): boolean;
  /** Ticks on which an utterance was in progress, the queue had run dry before its end and the carrier had run out too. */
  readonly underruns: number;
  /** Ticks on which audio was due but the output was backed up; that audio stayed queued. */
  readonly dropped: number;
  /** The call ended: drops everything, resolves waiting marks false, ignores further calls. */
  close(): void;
}

interface QueuedMark {
  /** Byte offset (since the last clear) the mark follows. */
  pos: number;
  name: string;
  resolve: (played: boolean) => void;
}

interface TagRun {
  /** Byte offset (since the last clear) where this run of same-tag audio ends. */
  end: number;
  tag: number | undefined;
}

export function createPlayout(output: MediaOutput, opts: PlayoutOptions = {}): Playout {
  const leadMs = opts.leadMs ?? DEFAULT_LEAD_MS;
  const jitterMs = opts.jitterMs ?? DEFAULT_JITTER_MS;
  if (!(leadMs >= FRAME_MS)) throw new RangeError(`playout: leadMs must be at least ${FRAME_MS}, got ${leadMs}`);
  if (!(jitterMs >= 0)) throw new RangeError(`playout: jitterMs must not be negative, got ${jitterMs}`);
  const jitterBytes = Math.round(jitterMs * BYTES_PER_MS);
  const clock = opts.now;
  // Send while the carrier holds at most this much: the lead, rounded to the nearest frame.
  const sendBelow = leadMs - FRAME_MS / 2;

  let ring = new Uint8Array(4096);
  let head = 0; // ring index of the next byte to send
  let size = 0; // bytes queued
  let read = 0; // bytes sent since the last clear
  let written = 0; // bytes enqueued since the last clear
  const frame = new Uint8Array(FRAME_BYTES);

  const runs: TagRun[] = [];
  let runHead = 0;
  const tagBytes = new Map<number, number>();
  let lastTag: number | undefined;

  const marks: QueuedMark[] = []; // queued, not sent yet
  let markHead = 0;
  const awaiting: QueuedMark[] = []; // sent, not returned yet

  let playHead = -Infinity;
  let inUtterance = false;
  let buffering = true;
  let paused = false;
  let closed = false;
  let sentFrames = 0;
  let underruns = 0;
  let dropped = 0;
  let tickNow = 0;

  function grow(need: number): void {
    let cap = ring.length * 2;
    while (cap < need) cap *= 2;
    const bigger = new Uint8Array(cap);
    const first = Math.min(size, ring.length - head);
    bigger.set(ring.subarray(head, head + first), 0);
    if (first < size) bigger.set(ring.subarray(0, size - first), first);
    ring = bigger;
    head = 0;
  }

  function credit(from: number, to: number): void {
    let pos = from;
    while (pos < to) {
      const run = runs[runHead]!;
      const upto = run.end < to ? run.end : to;
      const tag = run.tag;
      if (tag !== undefined) {
        const had = tagBytes.get(tag);
        if (had === undefined && tagBytes.size >= MAX_TAGS) {
          for (const oldest of tagBytes.keys()) {
            tagBytes.delete(oldest);
            break;
          }
        }
        tagBytes.set(tag, (had ?? 0) + (upto - pos));
      }
      lastTag = tag;
      pos = upto;
      if (run.end <= pos) runHead++;
    }
    if (runHead === runs.length) {
      runs.length = 0;
      runHead = 0;
    } else if (runHead >= 64) {
      runs.splice(0, runHead);
      runHead = 0;
    }
  }

  /** Sends `n` (1..160) queued bytes as one frame, padded with silence. */
  function sendFrame(n: number): void {
    // A byte loop rather than set(subarray): a view would be an allocation per frame.
    const cap = ring.length;
    let h = head;
    for (let i = 0; i < n; i++) {
      frame[i] = ring[h]!;
      if (++h === cap) h = 0;
    }
    if (n < FRAME_BYTES) frame.fill(SILENCE, n);
    head = h;
    size -= n;
    credit(read, read + n);
    read += n;
    sentFrames++;
    output.play(frame);
  }

  function sendMark(): void {
    const m = marks[markHead++]!;
    if (markHead === marks.length) {
      marks.length = 0;
      markHead = 0;
    }
    awaiting.push(m);
    inUtterance = false;
    buffering = true;
    output.mark(m.name);
  }

  /** One tick's sends; runs inside `output.cork` so they leave in one write. */
  function flush(): void {
    const now = tickNow;
    if (playHead < now) playHead = now;
    let starved = false;
    for (;;) {
      while (markHead < marks.length && marks[markHead]!.pos <= read) sendMark();
      if (size === 0) {
        starved = true;
        break;
      }
      if (playHead - now > sendBelow) break;
      if (buffering) {
        if (size < jitterBytes && markHead === marks.length) {
          starved = true;
          break;
        }
        buffering = false;
        inUtterance = true;
      }
      // A frame never straddles a mark: the utterance's last frame is padded instead.
      let n = FRAME_BYTES;
      if (markHead < marks.length) n = Math.min(n, marks[markHead]!.pos - read);
      if (n > size) {
        starved = true; // part of a frame, and more of the utterance to come
        break;
      }
      if (output.backedUp?.()) {
        dropped++;
        break;
      }
      sendFrame(n);
      playHead += FRAME_MS;
    }
    if (starved) starvedAt(now);
  }

  /** The queue has no frame to send: a gap the caller hears if the carrier has run out too. */
  function starvedAt(now: number): void {
    if (inUtterance && playHead - now < FRAME_MS) {
      underruns++;
      buffering = true;
    }
  }

  function dropQueue(): void {
    head = 0;
    size = 0;
    read = 0;
    written = 0;
    runs.length = 0;
    runHead = 0;
    for (let i = markHead; i < marks.length; i++) marks[i]!.resolve(false);
    marks.length = 0;
    markHead = 0;
    for (const m of awaiting.splice(0)) m.resolve(false);
    playHead = -Infinity;
    inUtterance = false;
    buffering = true;
    paused = false;
    sentFrames = 0;
  }

  return {
    enqueue(mulaw, tag) {
      const n = mulaw.length;
      if (closed || n === 0) return;
      if (size + n > ring.length) grow(size + n);
      const tail = (head + size) % ring.length;
      const first = Math.min(n, ring.length - tail);
      ring.set(first === n ? mulaw : mulaw.subarray(0, first), tail);
      if (first < n) ring.set(mulaw.subarray(first), 0);
      size += n;
      written += n;
      const last = runs.length > runHead ? runs[runs.length - 1]! : undefined;
      if (last && last.tag === tag) last.end = written;
      else runs.push({ end: written, tag });
      // An utterance starting (or restarting after a gap): its first frames leave now.
      if (clock && buffering && !paused && size >= jitterBytes) {
        tickNow = clock();
        if (output.cork) output.cork(flush);
        else flush();
      }
    },
    markEnd(name) {
      if (closed) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => marks.push({ pos: written, name, resolve }));
    },
    clear() {
      if (closed) return;
      dropQueue();
      output.clear();
    },
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
    },
    get paused() {
      return paused;
    },
    tick(nowMs) {
      if (closed || paused) return;
      if (size === 0 && markHead === marks.length) {
        // Nothing to send: the common idle tick costs two comparisons.
        if (inUtterance) starvedAt(nowMs);
        return;
      }
      tickNow = nowMs;
      if (output.cork) output.cork(flush);
      else flush();
    },
    onMark(name) {
      for (let i = 0; i < awaiting.length; i++) {
        const m = awaiting[i]!;
        if (m.name !== name) continue;
        awaiting.splice(i, 1);
        m.resolve(true);
        return true;
      }
      return false;
    },
    queuedMs: () => size / BYTES_PER_MS,
    sentMs: () => sentFrames * FRAME_MS,
    aheadMs: (nowMs) => (playHead > nowMs ? playHead - nowMs : 0),
    playedTag: () => lastTag,
    progress: (tag) => (tagBytes.get(tag) ?? 0) / BYTES_PER_MS,
    isIdle: () => size === 0 && markHead === marks.length && !inUtterance,
    get underruns() {
      return underruns;
    },
    get dropped() {
      return dropped;
    },
    close() {
      if (closed) return;
      dropQueue();
      closed = true;
    },
  };
}
