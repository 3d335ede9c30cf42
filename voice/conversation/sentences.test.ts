// The model's stream cut into speakable segments: sentences, long clauses, an early
// first clause, nothing lost or repeated whatever the token boundaries.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createSegmentSplitter } from './sentences.ts';

function split(chunks: string[]): string[] {
  const s = createSegmentSplitter();
  return [...chunks.flatMap((c) => s.push(c)), ...s.flush()];
}

describe('createSegmentSplitter', () => {
  it('cuts at sentence ends as the tokens arrive', () => {
    const s = createSegmentSplitter();
    expect(s.push('Sure. We open')).toEqual(['Sure.']);
    expect(s.push(' at nine! And')).toEqual(['We open at nine!']);
    expect(s.push(' close late')).toEqual([]);
    expect(s.flush()).toEqual(['And close late']);
  });

  it('lets the first segment end at a clause once it is long enough, later ones only when long', () => {
    expect(split(['Well, ', 'let me check that for you, one moment please while I look'])).toEqual([
      'Well, let me check that for you,',
      'one moment please while I look',
    ]);
  });

  it('drops segments without words', () => {
    expect(split(['... ', '!! ', 'Hi'])).toEqual(['Hi']);
  });

  it('keeps every word once, in order, however the text is chunked', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('Yes', 'we', 'open', 'at', 'nine', '.', ',', '!', ' ', 'ok?', 'then,'), { maxLength: 60 }), fc.integer({ min: 1, max: 7 }), (pieces, size) => {
        const text = pieces.join('');
        const chunks: string[] = [];
        for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
        const words = (t: string) => t.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w));
        expect(words(split(chunks).join(' '))).toEqual(words(text));
      }),
      { numRuns: 300 },
    );
  });
});
