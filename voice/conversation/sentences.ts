// Cuts the model's streamed text into segments for speech: a segment ends at a
// sentence end (or a clause end once it is long), so the first words can be spoken
// while the model is still writing, and speech keeps a sentence's intonation. The
// first segment of a reply may end at a comma to start speaking sooner.

const SENTENCE_END = /[.!?…。！？]+["')\]]*\s/g;
const CLAUSE_END = /[,;:—–]\s/g;
/** A clause this long may be spoken on its own rather than waiting for the sentence. */
const CLAUSE_MIN = 60;
const FIRST_CLAUSE_MIN = 24;

export interface SegmentSplitter {
  /** Adds streamed text; returns the segments it completes (possibly none). */
  push(text: string): string[];
  /** The end of the reply: whatever is left, if it has words. */
  flush(): string[];
}

export function createSegmentSplitter(): SegmentSplitter {
  let pending = '';
  let emitted = 0;

  function cutAt(index: number, out: string[]): void {
    const seg = pending.slice(0, index).trim();
    pending = pending.slice(index);
    if (/[\p{L}\p{N}]/u.test(seg)) {
      out.push(seg);
      emitted++;
    }
  }

  return {
    push(text) {
      pending += text;
      const out: string[] = [];
      for (;;) {
        SENTENCE_END.lastIndex = 0;
        const s = SENTENCE_END.exec(pending);
        if (s) {
          cutAt(s.index + s[0].length, out);
          continue;
        }
        CLAUSE_END.lastIndex = 0;
        let c: RegExpExecArray | null;
        let cut = -1;
        const min = emitted === 0 ? FIRST_CLAUSE_MIN : CLAUSE_MIN;
        while ((c = CLAUSE_END.exec(pending)) !== null) {
          if (c.index + 1 >= min) {
            cut = c.index + c[0].length;
            break;
          }
        }
        if (cut < 0) break;
        cutAt(cut, out);
      }
      return out;
    },
    flush() {
      const out: string[] = [];
      cutAt(pending.length, out);
      return out;
    },
  };
}
