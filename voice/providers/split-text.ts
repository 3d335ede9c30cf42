// Cuts text longer than a speech endpoint accepts in one request (OpenAI's speech
// endpoint: 4096 characters) into pieces that each sound natural on their own: at the
// last sentence end that fits, else the last space, else (one giant word) at the limit,
// never inside a surrogate pair. Pieces keep every character in order, so joined they
// are the text again, and the pieces are spoken back to back as one segment.

// A Latin sentence ends at its punctuation (and closing quotes) before a space; a CJK
// one at its full-width punctuation, with no space after it.
const SENTENCE_END = /[.!?…]["'”’)\]]*\s|[。！？]/g;

export function splitForSpeech(text: string, max: number): string[] {
  if (!(max >= 2)) throw new RangeError('splitForSpeech: max must be at least 2');
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const window = rest.slice(0, max + 1); // the +1: a space right after the limit still ends a sentence
    let cut = 0;
    SENTENCE_END.lastIndex = 0;
    for (let m = SENTENCE_END.exec(window); m; m = SENTENCE_END.exec(window)) {
      // Keep the closing punctuation; cut before the space (which starts the next piece).
      const end = /\s$/.test(m[0]) ? m.index + m[0].length - 1 : m.index + m[0].length;
      if (end <= max) cut = end;
    }
    if (cut === 0) cut = window.lastIndexOf(' ', max);
    if (cut <= 0) {
      cut = max;
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut--; // a high surrogate stays with its low half
    }
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.length > 0 || pieces.length === 0) pieces.push(rest);
  return pieces;
}
