// The paced sender (paced-sender.ts) on a manual clock (issue 21, acceptance 3): texts on
// one number start no faster than one per interval, never while the previous one on that
// number is still out, lanes take turns round robin (a single send is not held behind a
// campaign, nor one campaign behind another), and no turn is wasted: a text starts as
// soon as the interval and the previous text allow. The clock is a small fake timer queue:
// `sleep(ms)` registers a wake-up at now + ms; the test moves the time to the next
// wake-up, wakes it, and lets the microtasks run before the next one.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPacer, type Pacer } from './paced-sender.ts';

// ---- The manual clock -----------------------------------------------------------------

interface Timer {
  at: number;
  seq: number;
  wake: () => void;
}

function manualClock() {
  let t = 0;
  let seq = 0;
  const timers: Timer[] = [];
  // One macrotask turn: every microtask queued so far (and those they queue) has run.
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  const nextTimer = (): Timer | undefined => {
    timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
    return timers[0];
  };
  const clock = {
    now: (): number => t,
    sleep: (ms: number): Promise<void> => new Promise<void>((wake) => void timers.push({ at: t + Math.max(0, ms), seq: seq++, wake })),
    /** Runs `fn` when the clock reaches `at` (in wake-up order with the pacer's own). */
    at(at: number, fn: () => void): void {
      timers.push({ at, seq: seq++, wake: fn });
    },
    pending: (): number => timers.length,
    /** Wakes every wake-up due by `until`, in time order, each with its microtasks; the clock then reads `until`. */
    async advanceTo(until: number): Promise<void> {
      await flush();
      for (let next = nextTimer(); next !== undefined && next.at <= until; next = nextTimer()) {
        timers.shift();
        t = Math.max(t, next.at);
        next.wake();
        await flush();
      }
      t = Math.max(t, until);
    },
    /** Runs until no wake-up is left; the clock stays at the last one. Throws past `limitMs`. */
    async runAll(limitMs = 1_000_000): Promise<void> {
      await flush();
      for (let next = nextTimer(); next !== undefined; next = nextTimer()) {
        if (next.at > limitMs) throw new Error(`still waking at ${next.at} ms, past ${limitMs} ms`);
        await clock.advanceTo(next.at);
      }
    },
  };
  return clock;
}

// ---- Jobs and what they record ---------------------------------------------------------

interface Spec {
  id: string;
  number: string;
  lane: string;
  /** When it is queued (simulated ms). */
  at: number;
  /** Simulated time the job takes (its request at the carrier). */
  takesMs: number;
  fails?: boolean;
}

interface Run extends Spec {
  queuedAt: number;
  /** Texts already started on its number when it was queued. */
  startedWhenQueued: number;
  /** Its place among the starts on its number (0: the first). */
  turn: number | null;
  start: number | null;
  end: number | null;
  settled: 'resolved' | 'rejected' | null;
}

/** Queues every spec at its time on a fresh pacer; returns the records as they fill in. */
function harness(intervalMs: number, specs: readonly Spec[]) {
  const clock = manualClock();
  const pacer = createPacer({ now: clock.now, sleep: clock.sleep, intervalMs });
  const runs: Run[] = [];
  const out = new Map<string, string>();
  const overlaps: string[] = [];
  const started = new Map<string, number>();
  const queue = (s: Spec) => {
    const run: Run = { ...s, queuedAt: clock.now(), startedWhenQueued: started.get(s.number) ?? 0, turn: null, start: null, end: null, settled: null };
    runs.push(run);
    pacer
      .turn(s.number, s.lane, async () => {
        if (run.start !== null) overlaps.push(`${s.id} ran twice`);
        run.start = clock.now();
        run.turn = started.get(s.number) ?? 0;
        started.set(s.number, run.turn + 1);
        const busy = out.get(s.number);
        if (busy !== undefined) overlaps.push(`${s.id} started at ${run.start} while ${busy} was still out on ${s.number}`);
        out.set(s.number, s.id);
        if (s.takesMs > 0) await clock.sleep(s.takesMs);
        out.delete(s.number);
        run.end = clock.now();
        if (s.fails) throw new Error(`${s.id} refused`);
        return s.id;
      })
      .then(
        (v) => {
          expect(v).toBe(s.id);
          run.settled = 'resolved';
        },
        () => (run.settled = 'rejected'),
      );
  };
  // Those at 0 are queued now, in order (the first one starts at once); the rest when the clock gets there.
  for (const s of specs) {
    if (s.at === 0) queue(s);
    else clock.at(s.at, () => queue(s));
  }
  return { clock, pacer, runs, overlaps, queue };
}

const startsOn = (runs: readonly Run[], number: string): Run[] =>
  runs.filter((r) => r.number === number && r.start !== null).sort((a, b) => a.start! - b.start!);

/**
 * What holds for any set of texts: each ran exactly once and settled as it ended; per
 * number, starts at least `intervalMs` apart and never while the previous one is out;
 * each lane first in, first out; no turn wasted (a start comes exactly when the interval,
 * the previous text's end and the earliest text waiting allow); and round robin: while a
 * text is first in its lane, every other lane of its number starts at most once before it.
 */
function checkInvariants(runs: readonly Run[], overlaps: readonly string[], intervalMs: number): void {
  expect(overlaps).toEqual([]);
  for (const r of runs) {
    expect(r.start, `${r.id} never started`).not.toBeNull();
    expect(r.end, `${r.id} never ended`).not.toBeNull();
    expect(r.settled, `${r.id}'s turn never settled`).toBe(r.fails ? 'rejected' : 'resolved');
    expect(r.start!).toBeGreaterThanOrEqual(r.queuedAt);
  }
  for (const number of new Set(runs.map((r) => r.number))) {
    const seq = startsOn(runs, number);
    for (let k = 0; k < seq.length; k++) {
      const cur = seq[k]!;
      // The earliest time it could have started: the previous start plus the interval, the previous end, the first text waiting.
      const waitingFrom = Math.min(...seq.slice(k).map((r) => r.queuedAt));
      const prev = seq[k - 1];
      const earliest = prev ? Math.max(prev.start! + intervalMs, prev.end!, waitingFrom) : waitingFrom;
      if (prev) {
        expect(cur.start! - prev.start!, `${number}: ${prev.id} → ${cur.id}`).toBeGreaterThanOrEqual(intervalMs);
        expect(cur.start!, `${number}: ${cur.id} started before ${prev.id} ended`).toBeGreaterThanOrEqual(prev.end!);
      }
      expect(cur.start, `${number}: ${cur.id} waited longer than the pace asks (a wasted turn)`).toBe(earliest);
    }
    for (const lane of new Set(seq.map((r) => r.lane))) {
      const inLane = seq.filter((r) => r.lane === lane);
      const queued = runs.filter((r) => r.number === number && r.lane === lane);
      expect(inLane.map((r) => r.id), `${number} ${lane}: first in, first out`).toEqual(queued.map((r) => r.id));
      // Round robin: from the moment a text is first in its lane until it starts, no other lane goes twice.
      inLane.forEach((r, i) => {
        const head = Math.max(r.queuedAt, i > 0 ? inLane[i - 1]!.start! : -Infinity);
        const before = seq.filter((o) => o.lane !== lane && o.start! > head && o.start! < r.start!);
        const perLane = new Map<string, number>();
        for (const o of before) perLane.set(o.lane, (perLane.get(o.lane) ?? 0) + 1);
        for (const [other, n] of perLane) {
          expect(n, `${number}: ${other} started ${n} times while ${r.id} (${lane}) was first in its lane (${before.map((o) => `${o.id}@${o.start}`).join(', ')})`).toBe(1);
        }
      });
    }
  }
}

// ---- The tests -------------------------------------------------------------------------

const A = '+16285550001';
const B = '+16285550002';
const C = '+16285550003';

describe('paced sender on a manual clock', () => {
  it('3 numbers, 30 texts (campaign rows and single sends mixed): at most 1 per second per number, done in about 10 s', async () => {
    // Per number 10 texts in 3 lanes, queued interleaved at time 0; the requests take 0 to 950 ms at the carrier.
    const plan: Record<string, string[]> = {
      [A]: ['campaign:c1', 'api', 'campaign:c1', 'campaign:c2', 'campaign:c1', 'api', 'campaign:c1', 'campaign:c2', 'campaign:c1', 'api'],
      [B]: ['campaign:c3', 'campaign:c3', 'api', 'campaign:c3', 'replies', 'campaign:c3', 'campaign:c3', 'api', 'campaign:c3', 'campaign:c3'],
      [C]: ['api', 'campaign:c4', 'campaign:c4', 'campaign:c4', 'api', 'campaign:c4', 'api', 'campaign:c4', 'campaign:c4', 'api'],
    };
    const durations = [0, 80, 350, 700, 950, 20, 500];
    const specs: Spec[] = [];
    for (let i = 0; i < 10; i++) {
      for (const number of [A, B, C]) {
        const n = specs.length;
        specs.push({ id: `${number.slice(-1)}-${i}-${plan[number]![i]}`, number, lane: plan[number]![i]!, at: 0, takesMs: durations[n % durations.length]! });
      }
    }
    expect(specs).toHaveLength(30);
    const { clock, pacer, runs, overlaps } = harness(1000, specs);
    expect(pacer.waiting()).toBe(27); // one started at once on each number
    expect(pacer.waiting(A)).toBe(9);
    await clock.runAll(60_000);

    checkInvariants(runs, overlaps, 1000);
    for (const number of [A, B, C]) {
      const seq = startsOn(runs, number);
      expect(seq.map((r) => r.start)).toEqual([0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000]);
      // In any second, one start at most on the number.
      for (const r of seq) expect(seq.filter((o) => o.start! >= r.start! && o.start! < r.start! + 1000)).toHaveLength(1);
    }
    // The last texts start at 9 s and are done before 10 s; the pacer's last wake-up is its interval after that start.
    expect(Math.max(...runs.map((r) => r.start!))).toBe(9000);
    expect(Math.max(...runs.map((r) => r.end!))).toBeLessThanOrEqual(10_000);
    expect(Math.max(...runs.map((r) => r.end!))).toBeGreaterThan(9000);
    expect(clock.now()).toBe(10_000);
    expect(pacer.waiting()).toBe(0);
  });

  it('never starts a text while the previous one on its number is out: a slow request pushes the next start to its end', async () => {
    const takes = [1500, 200, 2600, 0, 999, 1000, 1001, 50];
    const specs: Spec[] = takes.map((takesMs, i) => ({ id: `a${i}`, number: A, lane: i % 3 === 0 ? 'api' : 'campaign:c1', at: 0, takesMs }));
    // Another number alongside is not slowed by this one's slow requests.
    for (let i = 0; i < 8; i++) specs.push({ id: `b${i}`, number: B, lane: 'campaign:c2', at: 0, takesMs: 10 });
    const { clock, runs, overlaps } = harness(1000, specs);
    await clock.runAll(60_000);
    checkInvariants(runs, overlaps, 1000);
    // start(k) = max(start(k-1) + 1 s, end(k-1)), in the order the lanes take turns.
    const a = startsOn(runs, A);
    let expected = 0;
    for (const r of a) {
      expect(r.start, r.id).toBe(expected);
      expected = Math.max(r.start! + 1000, r.end!);
    }
    expect(startsOn(runs, B).map((r) => r.start)).toEqual([0, 1000, 2000, 3000, 4000, 5000, 6000, 7000]);
  });

  it('a single send queued behind 10 campaign texts starts within 2 turns, at the start or in the middle', async () => {
    const specs: Spec[] = [];
    for (let i = 0; i < 10; i++) specs.push({ id: `c${i}`, number: A, lane: 'campaign:c1', at: 0, takesMs: 100 });
    specs.push({ id: 'single-at-0', number: A, lane: 'api', at: 0, takesMs: 100 });
    specs.push({ id: 'single-at-3.5s', number: A, lane: 'api', at: 3500, takesMs: 100 });
    // Another campaign on the number, created later: it gets every other turn from then on.
    for (let i = 0; i < 3; i++) specs.push({ id: `d${i}`, number: A, lane: 'campaign:c2', at: 6200, takesMs: 100 });
    const { clock, runs, overlaps } = harness(1000, specs);
    await clock.runAll(60_000);
    checkInvariants(runs, overlaps, 1000);
    const seq = startsOn(runs, A);
    /** Texts that started on the number after `r` was queued and before it: 0 or 1 is within 2 turns. */
    const startedBefore = (r: Run) => r.turn! - r.startedWhenQueued;
    const single0 = runs.find((r) => r.id === 'single-at-0')!;
    const single35 = runs.find((r) => r.id === 'single-at-3.5s')!;
    // c0 was out when it came: c1, then the single send.
    expect(single0.start).toBeLessThanOrEqual(2000);
    expect(single35.start).toBeLessThanOrEqual(5000);
    // Counted in turns on the number from when it was queued: the first or the second.
    expect(startedBefore(single0)).toBeLessThanOrEqual(1);
    expect(startedBefore(single35)).toBeLessThanOrEqual(1);
    // Once the second campaign is there, the two campaigns alternate.
    const afterD = seq.filter((r) => r.start! >= 6200).map((r) => r.lane);
    expect(afterD.slice(0, 6)).toEqual(afterD[0] === 'campaign:c2' ? ['campaign:c2', 'campaign:c1', 'campaign:c2', 'campaign:c1', 'campaign:c2', 'campaign:c1'] : ['campaign:c1', 'campaign:c2', 'campaign:c1', 'campaign:c2', 'campaign:c1', 'campaign:c2']);
    expect(Math.max(...seq.map((r) => r.start!))).toBe(14_000); // 15 texts, one a second
  });

  it('single sends trickling in one at a time do not starve a campaign: the lanes alternate', async () => {
    // After the first single send has gone (at 2 s), each next one arrives 100 ms after a turn:
    // its lane is empty (and dropped) at every turn and back before the next one. A lane that
    // comes back must not go ahead of one that waited all along.
    const specs: Spec[] = [];
    for (let i = 0; i < 10; i++) specs.push({ id: `c${i}`, number: A, lane: 'campaign:c1', at: 0, takesMs: 50 });
    for (let i = 0; i < 10; i++) specs.push({ id: `s${i}`, number: A, lane: 'api', at: i === 0 ? 100 : 1100 + i * 1000, takesMs: 50 });
    // The same with replies on another number, against two campaigns.
    for (let i = 0; i < 6; i++) specs.push({ id: `x${i}`, number: B, lane: 'campaign:x', at: 0, takesMs: 50 });
    for (let i = 0; i < 6; i++) specs.push({ id: `y${i}`, number: B, lane: 'campaign:y', at: 0, takesMs: 50 });
    for (let i = 0; i < 6; i++) specs.push({ id: `r${i}`, number: B, lane: 'replies', at: i === 0 ? 100 : 2100 + i * 1000, takesMs: 50 });
    const { clock, runs, overlaps } = harness(1000, specs);
    await clock.runAll(60_000);
    const lanesA = startsOn(runs, A).map((r) => r.lane);
    // Never two turns in a row for the single sends while the campaign has texts waiting.
    const campaignLastStart = Math.max(...runs.filter((r) => r.lane === 'campaign:c1').map((r) => r.start!));
    const seqA = startsOn(runs, A).filter((r) => r.start! <= campaignLastStart);
    for (let k = 1; k < seqA.length; k++) {
      expect(seqA[k - 1]!.lane === 'api' && seqA[k]!.lane === 'api', `two single sends in a row at ${seqA[k]!.start} ms while the campaign waits: ${lanesA.join(' ')}`).toBe(false);
    }
    // The campaign's 10 texts are done within 20 turns, not pushed behind every single send.
    expect(campaignLastStart).toBeLessThanOrEqual(19_000);
    checkInvariants(runs, overlaps, 1000);
  });

  it('a text arriving after a pause waits only for what is left of the interval', async () => {
    const specs: Spec[] = [
      { id: 'first', number: A, lane: 'api', at: 0, takesMs: 10 },
      { id: 'soon', number: A, lane: 'api', at: 300, takesMs: 10 },
      { id: 'late', number: A, lane: 'campaign:c1', at: 5000, takesMs: 10 },
      { id: 'just-after', number: A, lane: 'replies', at: 6001, takesMs: 10 },
    ];
    const { clock, runs, overlaps } = harness(1000, specs);
    await clock.runAll(60_000);
    checkInvariants(runs, overlaps, 1000);
    expect(Object.fromEntries(runs.map((r) => [r.id, r.start]))).toEqual({ first: 0, soon: 1000, late: 5000, 'just-after': 6001 });
  });

  it('a refused text rejects its own turn only; the queue goes on at the same pace', async () => {
    const specs: Spec[] = Array.from({ length: 6 }, (_, i) => ({ id: `t${i}`, number: A, lane: i % 2 ? 'api' : 'campaign:c1', at: 0, takesMs: 100, fails: i === 1 || i === 2 }));
    const { clock, runs, overlaps } = harness(1000, specs);
    await clock.runAll(60_000);
    checkInvariants(runs, overlaps, 1000);
    expect(startsOn(runs, A).map((r) => r.start)).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
    expect(runs.filter((r) => r.settled === 'rejected').map((r) => r.id).sort()).toEqual(['t1', 't2']);
  });

  it('waiting() counts the texts not started, per number and in all', async () => {
    const clock = manualClock();
    const pacer: Pacer = createPacer({ now: clock.now, sleep: clock.sleep, intervalMs: 1000 });
    const done: string[] = [];
    const job = (id: string) => async () => {
      done.push(id);
    };
    for (let i = 0; i < 4; i++) void pacer.turn(A, 'campaign:c1', job(`a${i}`));
    for (let i = 0; i < 2; i++) void pacer.turn(B, 'api', job(`b${i}`));
    expect(pacer.waiting(A)).toBe(3);
    expect(pacer.waiting(B)).toBe(1);
    expect(pacer.waiting(C)).toBe(0);
    expect(pacer.waiting()).toBe(4);
    await clock.advanceTo(1000);
    expect(pacer.waiting()).toBe(2);
    await clock.runAll();
    expect(pacer.waiting()).toBe(0);
    expect(done).toHaveLength(6);
  });

  it('holds for any arrivals, lanes, request times and refusals (property)', async () => {
    const NUMBERS = [A, B, C];
    const LANES = ['campaign:c1', 'campaign:c2', 'api', 'replies', 'calls'];
    // Arrivals anywhere, and many just after a turn (a lane emptied by that turn comes back before the next).
    const spec = (intervalMs: number) =>
      fc.record({
        number: fc.constantFrom(...NUMBERS),
        lane: fc.constantFrom(...LANES),
        at: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 0, max: 12_000 }),
          fc.tuple(fc.integer({ min: 0, max: 15 }), fc.constantFrom(0, 1, Math.ceil(intervalMs / 10))).map(([k, off]) => k * intervalMs + off),
        ),
        takesMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2500 }), fc.integer({ min: 0, max: Math.max(0, intervalMs - 1) })),
        fails: fc.boolean(),
      });
    const scenario = fc.constantFrom(1, 250, 1000).chain((intervalMs) => fc.tuple(fc.constant(intervalMs), fc.array(spec(intervalMs), { minLength: 1, maxLength: 40 })));
    await fc.assert(
      fc.asyncProperty(scenario, async ([intervalMs, raw]) => {
        const specs: Spec[] = raw.map((s, i) => ({ ...s, id: `j${i}`, fails: s.fails && i % 4 === 0 }));
        const { clock, runs, overlaps } = harness(intervalMs, specs);
        await clock.runAll(10_000_000);
        checkInvariants(runs, overlaps, intervalMs);
      }),
      { numRuns: 3000 },
    );
  });
});
