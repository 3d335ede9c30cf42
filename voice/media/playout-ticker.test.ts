// The process's one playout clock: many playouts on one timer, ticks on an absolute
// 20 ms grid (no drift however long a tick takes), slots skipped after a stall rather
// than fired back to back, a failing playout removed without stopping the others, and
// `tickOnce` for deterministic tests.
import { describe, expect, it } from 'vitest';
import type { MediaOutput } from '../engine/engine.ts';
import { createPlayout, createPlayoutTicker, type Playout, type Tickable } from './playout.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Timers alive in this process, as Node counts them. */
const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

function countingOutput() {
  const rec = { frames: 0, marks: [] as string[], output: null as unknown as MediaOutput };
  rec.output = { play: () => void rec.frames++, mark: (n) => void rec.marks.push(n), clear() {} };
  return rec;
}

describe('playout ticker', () => {
  it('drives 300 playouts with one timer, and stops it when the last one leaves', async () => {
    const ticker = createPlayoutTicker();
    const before = timers();
    const calls = Array.from({ length: 300 }, (_, i) => {
      const rec = countingOutput();
      const playout = createPlayout(rec.output);
      playout.enqueue(new Uint8Array(1600).fill(i & 0xff)); // 200 ms
      void playout.markEnd(`end-${i}`);
      ticker.add(playout);
      return { rec, playout };
    });
    // Measured synchronously around the adds: other timers of the process come and go.
    expect(ticker.size).toBe(300);
    expect(timers()).toBe(before + 1);
    const deadline = Date.now() + 3000;
    while (calls.some((c) => c.rec.marks.length === 0) && Date.now() < deadline) await sleep(20);
    for (const [i, c] of calls.entries()) {
      expect(c.rec.frames).toBe(10);
      expect(c.rec.marks).toEqual([`end-${i}`]);
    }
    const running = timers();
    for (const c of calls) ticker.remove(c.playout);
    expect(ticker.size).toBe(0);
    expect(timers()).toBe(running - 1);
    ticker.stop();
  });

  it('keeps real time: 50 slots in 1 s on the 20 ms grid, even when every tick takes 4 ms of work', async () => {
    const ticker = createPlayoutTicker();
    // Each tick's time and its slot on the grid (ticks run plus slots skipped after a stall:
    // on a busy 2-core machine a timer can fire more than a slot late, and that slot is skipped).
    const at: { now: number; slot: number }[] = [];
    const start = performance.now();
    ticker.add({
      tick(now) {
        at.push({ now, slot: ticker.ticks + ticker.skipped });
        busy(4); // a timer re-armed after the work would drift to ~42 ticks a second
      },
    });
    await sleep(1100);
    ticker.stop();
    const inFirstSecond = at.filter((a) => a.now - start <= 1010);
    expect(inFirstSecond.at(-1)!.slot).toBeGreaterThanOrEqual(49);
    expect(inFirstSecond.at(-1)!.slot).toBeLessThanOrEqual(51);
    expect(inFirstSecond.length).toBeGreaterThanOrEqual(40);
    // Ticks land on the grid: never early (beyond the timer's 1 ms rounding), mostly within a few ms.
    const late = at.map((a) => a.now - start - 20 * a.slot).sort((x, y) => x - y);
    expect(late[0]!).toBeGreaterThan(-2);
    expect(late[Math.floor(late.length / 2)]!).toBeLessThan(5);
  });

  it('skips the slots an event-loop stall covered and goes on from the grid', async () => {
    const ticker = createPlayoutTicker();
    const at: number[] = [];
    const start = performance.now();
    ticker.add({
      tick(now) {
        at.push(now);
        if (at.length === 3) busy(105);
      },
    });
    await sleep(400);
    ticker.stop();
    expect(ticker.skipped).toBeGreaterThanOrEqual(4);
    // No burst after the stall: consecutive ticks stay about a slot apart.
    const gaps = at.slice(4).map((t, i) => t - at[i + 3]!);
    expect(Math.min(...gaps)).toBeGreaterThan(10);
    expect(at.length).toBeLessThanOrEqual(Math.ceil((performance.now() - start) / 20) + 1);
  });

  it('tickOnce ticks every playout at the time given, in order, without a timer', () => {
    const ticker = createPlayoutTicker({ manual: true });
    const before = timers();
    const seen: string[] = [];
    const names = ['a', 'b', 'c'];
    const ts: Tickable[] = names.map((n) => ({ tick: (now: number) => void seen.push(`${n}@${now}`) }));
    ts.forEach((t) => ticker.add(t));
    ticker.add(ts[0]!); // twice is once
    expect(timers()).toBe(before);
    ticker.tickOnce(0);
    ticker.tickOnce(20);
    expect(seen).toEqual(['a@0', 'b@0', 'c@0', 'a@20', 'b@20', 'c@20']);
    expect(ticker.ticks).toBe(2);
  });

  it('paces every playout alike on tickOnce: the lead, then a frame per tick', () => {
    const ticker = createPlayoutTicker({ manual: true });
    const recs = [countingOutput(), countingOutput()];
    const ps: Playout[] = recs.map((r) => createPlayout(r.output));
    ps.forEach((p) => {
      p.enqueue(new Uint8Array(8000));
      ticker.add(p);
    });
    for (let t = 0; t <= 200; t += 20) ticker.tickOnce(t);
    expect(recs.map((r) => r.frames)).toEqual([13, 13]);
  });

  it('a playout removed during a tick does not make the next one miss it', () => {
    const ticker = createPlayoutTicker({ manual: true });
    const seen: string[] = [];
    const a: Tickable = { tick: () => void (seen.push('a'), ticker.remove(a)) };
    const b: Tickable = { tick: () => void seen.push('b') };
    ticker.add(a);
    ticker.add(b);
    ticker.tickOnce(0);
    ticker.tickOnce(20);
    expect(seen).toEqual(['a', 'b', 'b']);
  });

  it('removes a playout that throws and reports it; the others keep their clock', () => {
    const errors: unknown[] = [];
    const ticker = createPlayoutTicker({ manual: true, onError: (err) => errors.push(err) });
    let ok = 0;
    const bad: Tickable = {
      tick() {
        throw new Error('socket gone');
      },
    };
    ticker.add(bad);
    ticker.add({ tick: () => void ok++ });
    ticker.tickOnce(0);
    ticker.tickOnce(20);
    expect(ok).toBe(2);
    expect(ticker.size).toBe(1);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe('socket gone');
  });
});
