// Reorder buffer: the invariants stated in reorder.ts, on bounded shuffles (nothing
// lost) and on arbitrary arrival orders with duplicates and losses.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { AudioFrame } from './frames.ts';
import { createReorderBuffer } from './reorder.ts';

const frame = (chunk: number): AudioFrame => ({ type: 'audio', seq: chunk + 10, chunk, timestampMs: chunk * 20, payload: new Uint8Array(160) });

function run(chunks: number[], window = 5) {
  const out: number[] = [];
  const buffer = createReorderBuffer((f) => out.push(f.chunk), window);
  for (const c of chunks) buffer.push(frame(c));
  return { out, buffer };
}

describe('reorder buffer', () => {
  it('passes in-order audio straight through', () => {
    const { out } = run([1, 2, 3, 4]);
    expect(out).toEqual([1, 2, 3, 4]);
  });

  it('holds a frame until the one before it arrives', () => {
    const { out } = run([1, 3, 4]);
    expect(out).toEqual([1]);
    const late = run([1, 3, 4, 2]);
    expect(late.out).toEqual([1, 2, 3, 4]);
  });

  it('drops duplicates and frames older than the last delivered', () => {
    const { out, buffer } = run([1, 2, 2, 4, 4, 1, 3]);
    expect(out).toEqual([1, 2, 3, 4]);
    expect(buffer.dropped).toBe(3);
  });

  it('gives up on a lost frame once the window moves past it', () => {
    const { out, buffer } = run([1, 3, 4, 5, 6]);
    expect(out).toEqual([1]);
    buffer.push(frame(7));
    expect(out).toEqual([1, 3, 4, 5, 6, 7]);
    expect(buffer.skipped).toBe(1);
  });

  it('waits for the frames before a first frame that arrived early', () => {
    expect(run([2, 1, 3]).out).toEqual([1, 2, 3]);
    expect(run([0, 1]).out).toEqual([0, 1]);
    const joined = run([40, 41, 42, 43]);
    expect(joined.out).toEqual([]);
    joined.buffer.push(frame(44));
    expect(joined.out).toEqual([40, 41, 42, 43, 44]);
  });

  it('flush delivers what waits, then starts afresh', () => {
    const { out, buffer } = run([10, 12, 13]);
    buffer.flush();
    expect(out).toEqual([10, 12, 13]);
    buffer.push(frame(1));
    expect(out).toEqual([10, 12, 13, 1]);
  });

  it('with window 1 never waits', () => {
    expect(run([1, 3, 2, 5], 1).out).toEqual([1, 3, 5]);
  });

  it('rejects a window below 1', () => {
    expect(() => createReorderBuffer(() => {}, 0)).toThrow(RangeError);
  });

  it('property: a shuffle within the window is fully restored', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 200 }), (window, jitter) => {
        // Frame i arrives at i + jitter·(window - 1): it overtakes at most window - 2 others.
        const arrival = jitter.map((j, i) => ({ chunk: i + 1, at: i + j * (window - 1) * 0.999 })).sort((a, b) => a.at - b.at);
        const { out, buffer } = run(arrival.map((a) => a.chunk), window);
        buffer.flush();
        expect(out).toEqual(jitter.map((_, i) => i + 1));
        expect(buffer.dropped + buffer.skipped).toBe(0);
      }),
    );
  });

  it('property: any arrival order gives increasing, unique, bounded-latency output', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.nat(60), { maxLength: 200 }), (window, chunks) => {
        const delivered: AudioFrame[] = [];
        const buffer = createReorderBuffer((f) => delivered.push(f), window);
        const sent = new Set<AudioFrame>();
        chunks.forEach((c, i) => {
          const f = frame(c);
          sent.add(f);
          buffer.push(f);
          expect(i + 1 - buffer.dropped - delivered.length).toBeLessThanOrEqual(window - 1);
        });
        buffer.flush();
        expect(delivered.length + buffer.dropped).toBe(chunks.length);
        for (const f of delivered) expect(sent.has(f)).toBe(true);
        for (let i = 1; i < delivered.length; i++) expect(delivered[i]!.chunk).toBeGreaterThan(delivered[i - 1]!.chunk);
      }),
    );
  });
});
