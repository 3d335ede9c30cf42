// The playout clock as the carrier experiences it. Unit tests tick a playout by hand
// on a simulated clock and record what reaches its output: 160-byte frames paced at
// 20 ms with the lead kept, the jitter buffer, marks only after the audio before them,
// clear, pause / resume, underruns, backpressure, tag progress and corked sends. The
// same on a real uWS media socket is in test/playout-socket.test.ts.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { MediaOutput } from '../engine/engine.ts';
import { createPlayout, DEFAULT_LEAD_MS, FRAME_BYTES, type Playout } from './playout.ts';

type Sent = { kind: 'play'; bytes: Uint8Array; corked: boolean } | { kind: 'mark'; name: string; corked: boolean } | { kind: 'clear' };

/** A MediaOutput that records what the carrier would be sent, with a socket that can back up. */
function recordingOutput() {
  const sent: Sent[] = [];
  const socket = { backed: false, corks: 0 };
  let depth = 0;
  const output: MediaOutput = {
    // The playout reuses its frame buffer: copy, as a socket encoding it would have.
    play: (m) => void sent.push({ kind: 'play', bytes: Uint8Array.from(m), corked: depth > 0 }),
    mark: (name) => void sent.push({ kind: 'mark', name, corked: depth > 0 }),
    clear: () => void sent.push({ kind: 'clear' }),
    backedUp: () => socket.backed,
    cork(fn) {
      socket.corks++;
      depth++;
      try {
        fn();
      } finally {
        depth--;
      }
    },
  };
  const frames = (): Uint8Array[] => sent.flatMap((s) => (s.kind === 'play' ? [s.bytes] : []));
  return {
    sent,
    output,
    set backed(on: boolean) {
      socket.backed = on;
    },
    get corks() {
      return socket.corks;
    },
    frames,
    /** All audio sent, concatenated. */
    audio: (): Buffer => Buffer.concat(frames()),
    /** The sequence of sends as short strings: `p` per frame, `m:name`, `clear`. */
    trace: (): string => sent.map((s) => (s.kind === 'play' ? 'p' : s.kind === 'mark' ? `m:${s.name}` : 'clear')).join(' '),
  };
}

/** `ms` of audio whose bytes count up from `from` (mod 251, so frames differ): any loss or repeat shows. */
function ramp(ms: number, from = 0): Uint8Array {
  return Uint8Array.from({ length: ms * 8 }, (_, i) => (from + i) % 251);
}

/** Ticks `p` every `step` ms from `from` while the time is below `to`; returns the next tick's time. */
function run(p: Playout, from: number, to: number, step = 20): number {
  let t = from;
  for (; t < to; t += step) p.tick(t);
  return t;
}

describe('pacing', () => {
  it('sends 160-byte frames, the lead at once and then one per 20 ms tick, in order, byte for byte', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    const audio = ramp(1000);
    p.enqueue(audio);
    void p.markEnd('end');
    const perTick: number[] = [];
    for (let t = 0; t < 1200; t += 20) {
      const before = rec.frames().length;
      p.tick(t);
      perTick.push(rec.frames().length - before);
      // Never more than the lead at the carrier ahead of real time.
      expect(p.aheadMs(t)).toBeLessThanOrEqual(DEFAULT_LEAD_MS);
    }
    expect(perTick.slice(0, 49)).toEqual([3, ...new Array(47).fill(1), 0]);
    expect(perTick.reduce((a, b) => a + b)).toBe(50);
    expect(rec.frames().every((f) => f.length === FRAME_BYTES)).toBe(true);
    expect(rec.audio().equals(audio)).toBe(true);
    expect(p.sentMs()).toBe(1000);
    expect(p.queuedMs()).toBe(0);
  });

  it('keeps the lead it is configured with', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output, { leadMs: 100 });
    p.enqueue(ramp(500));
    p.tick(0);
    expect(rec.frames().length).toBe(5);
    p.tick(20);
    expect(rec.frames().length).toBe(6);
    expect(() => createPlayout(rec.output, { leadMs: 10 })).toThrow(RangeError);
  });

  it('sends one frame per tick when ticks jitter, and stays within half a frame of the lead', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -9, max: 9 }), { minLength: 10, maxLength: 80 }), (jitter) => {
        const rec = recordingOutput();
        const p = createPlayout(rec.output);
        p.enqueue(ramp(3000));
        p.tick(0);
        jitter.forEach((j, i) => {
          const before = rec.frames().length;
          const t = (i + 1) * 20 + j;
          p.tick(t);
          expect(rec.frames().length - before).toBe(1);
          expect(p.aheadMs(t)).toBeGreaterThan(DEFAULT_LEAD_MS - 10);
          expect(p.aheadMs(t)).toBeLessThanOrEqual(DEFAULT_LEAD_MS + 10);
        });
      }),
    );
  });

  it('catches up after a late tick with the frames that are due, never more than the lead ahead', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    p.enqueue(ramp(2000));
    run(p, 0, 60); // 0, 20, 40: 3 + 1 + 1 frames, the carrier holds audio until 100
    expect(rec.frames().length).toBe(5);
    p.tick(70); // 30 ms late: 2 frames are due
    expect(rec.frames().length).toBe(7);
    expect(p.aheadMs(70)).toBe(70);
    p.tick(400); // a stall: the carrier ran dry at 140; only the lead is sent, not 13 frames
    expect(rec.frames().length).toBe(10);
    expect(p.aheadMs(400)).toBe(DEFAULT_LEAD_MS);
  });
});

describe('jitter buffer', () => {
  it('starts an utterance only once 40 ms is queued', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    p.enqueue(ramp(20));
    run(p, 0, 100);
    expect(rec.frames().length).toBe(0);
    expect(p.isIdle()).toBe(false);
    p.enqueue(ramp(20, 160));
    p.tick(100);
    expect(rec.frames().length).toBe(2);
    expect(rec.audio().equals(ramp(40))).toBe(true);
  });

  it('starts at once when the utterance is complete, padding its last frame with silence', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    p.enqueue(ramp(10)); // 80 bytes: half a frame
    void p.markEnd('short');
    p.tick(0);
    expect(rec.trace()).toBe('p m:short');
    const [frame] = rec.frames();
    expect(Array.from(frame!.subarray(0, 80))).toEqual(Array.from(ramp(10)));
    expect(frame!.subarray(80).every((b) => b === 0xff)).toBe(true);
    expect(p.isIdle()).toBe(true);
  });
});

describe('marks', () => {
  it('go to the carrier right after the last frame queued before them, not before', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    p.enqueue(ramp(100)); // 5 frames
    void p.markEnd('first');
    p.enqueue(ramp(31, 7)); // 248 bytes: a full frame and a padded one
    void p.markEnd('second');
    p.tick(0);
    expect(rec.trace()).toBe('p p p');
    p.tick(20);
    p.tick(40);
    expect(rec.trace()).toBe('p p p p p m:first');
    run(p, 60, 200);
    expect(rec.trace()).toBe('p p p p p m:first p p m:second');
    // The second utterance starts on a frame boundary, and only its padding is silence.
    const frames = rec.frames();
    expect(Buffer.concat([frames[5]!, frames[6]!.subarray(0, 88)]).equals(ramp(31, 7))).toBe(true);
    expect(frames[6]!.subarray(88).every((b) => b === 0xff)).toBe(true);
  });

  it('resolve true when the carrier returns them, false when a clear drops them', async () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    p.enqueue(ramp(40));
    const played = p.markEnd('a');
    p.enqueue(ramp(200));
    const cleared = p.markEnd('b');
    p.tick(0);
    expect(p.onMark('nope')).toBe(false);
    expect(p.onMark('a')).toBe(true);
    expect(p.onMark('a')).toBe(false);
    p.clear();
    await expect(played).resolves.toBe(true);
    await expect(cleared).resolves.toBe(false);
    // The carrier's echo of a mark flushed by the clear is not ours any more.
    expect(p.onMark('b')).toBe(false);
  });

  it('a mark with nothing before it goes on the next tick', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    void p.markEnd('now');
    expect(rec.trace()).toBe('');
    p.tick(0);
    expect(rec.trace()).toBe('m:now');
  });
});

describe('clear, pause and resume', () => {
  it('clear drops everything queued, calls output.clear, and the next audio starts fresh', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    p.enqueue(ramp(1000));
    run(p, 0, 100);
    expect(p.sentMs()).toBe(140);
    p.clear();
    expect(rec.trace()).toBe('p p p p p p p clear');
    expect(p.queuedMs()).toBe(0);
    expect(p.sentMs()).toBe(0);
    expect(p.isIdle()).toBe(true);
    run(p, 100, 200);
    expect(rec.frames().length).toBe(7);
    p.enqueue(ramp(60, 99));
    p.tick(200);
    expect(Buffer.concat(rec.frames().slice(7)).equals(ramp(60, 99))).toBe(true);
  });

  it('pause stops sending without dropping; resume goes on from the same byte', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    const audio = ramp(1000);
    p.enqueue(audio);
    run(p, 0, 100); // 7 frames
    p.pause();
    expect(p.paused).toBe(true);
    run(p, 100, 600);
    expect(rec.frames().length).toBe(7);
    expect(p.queuedMs()).toBe(1000 - 140);
    expect(p.underruns).toBe(0); // a pause is not the TTS being slow
    p.resume();
    p.tick(600); // the carrier ran dry during the pause: the lead again
    expect(rec.frames().length).toBe(10);
    run(p, 620, 2000);
    expect(rec.audio().equals(audio)).toBe(true);
  });

  it('clear also ends a pause', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    p.enqueue(ramp(100));
    p.pause();
    p.clear();
    p.enqueue(ramp(40));
    p.tick(0);
    expect(rec.frames().length).toBe(2);
  });
});

describe('underruns', () => {
  it('counts ticks where the TTS fell behind and the carrier ran out mid-utterance, then buffers again', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    // A TTS delivering 20 ms of audio every 40 ms: half real time.
    let t = 0;
    for (let i = 0; i < 25; i++) {
      p.enqueue(ramp(20, i));
      p.tick(t);
      p.tick(t + 20);
      t += 40;
    }
    expect(p.underruns).toBeGreaterThanOrEqual(10);
    void p.markEnd('end');
    p.tick(t);
    const after = p.underruns;
    run(p, t + 20, t + 500); // after the end: silence is not an underrun
    expect(p.underruns).toBe(after);
    expect(p.isIdle()).toBe(true);
  });

  it('does not count a bursty TTS the jitter buffer and lead absorb', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    const audio = ramp(2400);
    // 60 ms of audio every 60 ms, in bursts: real time on average.
    for (let t = 0; t < 2400; t += 20) {
      if (t % 60 === 0) p.enqueue(audio.subarray(t * 8, (t + 60) * 8));
      p.tick(t);
    }
    void p.markEnd('end');
    run(p, 2400, 2600);
    expect(p.underruns).toBe(0);
    expect(rec.audio().equals(audio)).toBe(true);
  });
});

describe('backpressure', () => {
  it('holds its place while the output is backed up, counts it, and resumes from the same byte', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    const audio = ramp(600);
    p.enqueue(audio);
    void p.markEnd('end');
    run(p, 0, 60); // 5 frames
    rec.backed = true;
    run(p, 60, 160); // 5 ticks with audio due
    expect(rec.frames().length).toBe(5);
    expect(p.dropped).toBe(5);
    expect(p.queuedMs()).toBe(600 - 100);
    rec.backed = false;
    run(p, 160, 1000);
    expect(rec.audio().equals(audio)).toBe(true);
    expect(rec.trace().endsWith('p m:end')).toBe(true);
    expect(p.dropped).toBe(5);
  });
});

describe('progress by tag', () => {
  it('reports how much of each segment was sent and which one is playing', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    p.enqueue(ramp(10), 1); // 80 bytes
    p.enqueue(ramp(27.5), 1); // 220 more: 300 bytes of segment 1
    p.enqueue(ramp(56.25), 2); // 450 bytes of segment 2
    void p.markEnd('u');
    expect(p.playedTag()).toBeUndefined();
    p.tick(0); // 480 bytes
    expect(p.progress(1)).toBe(37.5);
    expect(p.progress(2)).toBe(22.5);
    expect(p.playedTag()).toBe(2);
    run(p, 20, 100);
    expect(p.progress(2)).toBe(56.25); // the padding of the last frame is not the segment's
    expect(p.sentMs()).toBe(100);
    expect(p.progress(3)).toBe(0);
    // A barge-in clear keeps what was sent readable: the engine cuts the transcript after it.
    p.clear();
    expect(p.progress(1)).toBe(37.5);
  });
});

describe('corked writes', () => {
  it('wraps each tick that sends in one cork, and idle ticks in none', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output);
    run(p, 0, 100);
    expect(rec.corks).toBe(0);
    p.enqueue(ramp(100));
    void p.markEnd('m');
    run(p, 100, 200);
    expect(rec.corks).toBe(3); // 3 frames, 1, then 1 and the mark
    expect(rec.sent.every((s) => s.kind === 'clear' || s.corked)).toBe(true);
    expect(rec.trace()).toBe('p p p p p m:m');
  });
});

describe('an utterance starting between ticks', () => {
  it('with a clock, its first frames leave at once (the lead), then one per tick', () => {
    const rec = recordingOutput();
    let t = 1000;
    const p = createPlayout(rec.output, { now: () => t });
    p.tick(990);
    t = 1005;
    p.enqueue(ramp(200));
    // The lead (60 ms) leaves now, corked, rather than at the tick of 1010.
    expect(rec.frames()).toHaveLength(3);
    expect(rec.sent.every((s) => s.kind !== 'play' || s.corked)).toBe(true);
    p.tick(1010);
    expect(rec.frames()).toHaveLength(3);
    p.tick(1030);
    expect(rec.frames()).toHaveLength(4);
    expect(rec.audio()).toEqual(Buffer.from(ramp(200).subarray(0, 4 * FRAME_BYTES)));
  });

  it('waits for the jitter buffer, and without a clock leaves on ticks only', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output, { now: () => 0 });
    p.enqueue(ramp(20));
    expect(rec.frames()).toHaveLength(0);
    p.enqueue(ramp(20, 160));
    expect(rec.frames()).toHaveLength(2);
    const plain = recordingOutput();
    const q = createPlayout(plain.output);
    q.enqueue(ramp(200));
    expect(plain.frames()).toHaveLength(0);
    q.tick(0);
    expect(plain.frames()).toHaveLength(3);
  });

  it('does not start while paused', () => {
    const rec = recordingOutput();
    const p = createPlayout(rec.output, { now: () => 0 });
    p.pause();
    p.enqueue(ramp(200));
    expect(rec.frames()).toHaveLength(0);
  });
});
