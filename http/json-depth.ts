// How deeply a JSON text nests, read from its bytes before it is parsed. Validators
// and size checks walk parsed bodies recursively; a body nested thousands of levels
// deep (30 KB is enough) overflows the stack there. Counting brackets outside strings
// is one linear pass with no recursion, so the bound holds for any input.

/** The deepest nesting any API body needs is far below this. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** True when `bytes` opens more than `max` objects or arrays inside one another. */
export function jsonNestsDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) {
      inString = true;
    } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}
