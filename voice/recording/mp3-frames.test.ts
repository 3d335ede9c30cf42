// The MP3 check that decides whether a downloaded recording is kept: real MP3s made by the
// encoder the service and the carrier simulators use pass, whatever the chunking, and
// give their length; anything that only starts like one is refused early.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeMp3 } from './mp3.ts';
import { Mp3FrameWalker, NotMp3Error } from './mp3-frames.ts';

let mp3: Buffer;
beforeAll(async () => {
  // 3 s of a 440 Hz tone at 8 kHz.
  const pcm = new Int16Array(24_000).map((_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)));
  mp3 = await encodeMp3(pcm);
});

function walk(chunks: Uint8Array[]) {
  const w = new Mp3FrameWalker();
  for (const c of chunks) w.push(c);
  return w.finish();
}

const id3v2 = (body: number): Buffer => {
  const header = Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, (body >> 21) & 0x7f, (body >> 14) & 0x7f, (body >> 7) & 0x7f, body & 0x7f]);
  return Buffer.concat([header, Buffer.alloc(body, 0x20)]);
};
const id3v1 = (): Buffer => Buffer.concat([Buffer.from('TAG'), Buffer.alloc(125, 0x20)]);

describe('Mp3FrameWalker', () => {
  it('accepts the encoder’s MP3 and measures it from its frames', () => {
    const s = walk([mp3]);
    expect(s.sampleRate).toBe(8000);
    expect(s.seconds).toBeGreaterThan(2.9);
    expect(s.seconds).toBeLessThan(3.3);
  });

  it('gives the same answer however the bytes are cut into chunks', () => {
    const whole = walk([mp3]);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: mp3.length - 1 }), { maxLength: 40 }), (cuts) => {
        const at = [0, ...[...new Set(cuts)].sort((a, b) => a - b), mp3.length];
        const chunks = at.slice(1).map((end, i) => mp3.subarray(at[i], end));
        expect(walk(chunks)).toEqual(whole);
      }),
      { numRuns: 200 },
    );
  });

  it('accepts an ID3v2 tag in front and an ID3v1 tag at the end', () => {
    expect(walk([id3v2(300), mp3, id3v1()]).frames).toBe(walk([mp3]).frames);
    expect(walk([id3v2(5000).subarray(0, 7), id3v2(5000).subarray(7), mp3]).frames).toBe(walk([mp3]).frames);
  });

  it.each([
    ['a web page behind an ID3 tag', () => Buffer.concat([id3v2(20), Buffer.from('<html><body>internal admin page</body></html>'.repeat(20))])],
    ['"ID3" and then text', () => Buffer.from('ID3 this is not audio at all, just a page that starts with three letters'.repeat(10))],
    ['a JSON error', () => Buffer.from('{"code":20404,"message":"The requested resource was not found"}')],
    ['random bytes', () => Buffer.from(Array.from({ length: 4000 }, (_, i) => (i * 7919) % 251))],
    ['an MP3 with a page appended', () => Buffer.concat([mp3, Buffer.from('<html>'.repeat(100))])],
    ['one frame and nothing else', () => mp3.subarray(0, 50)],
    ['nothing', () => Buffer.alloc(0)],
  ])('refuses %s', (_what, bytes) => {
    expect(() => walk([bytes()])).toThrow(NotMp3Error);
  });

  it('stops at the first bad bytes, before the rest arrives', () => {
    const w = new Mp3FrameWalker();
    expect(() => w.push(Buffer.concat([id3v2(10), Buffer.from('<html>')]))).toThrow(NotMp3Error);
  });
});
