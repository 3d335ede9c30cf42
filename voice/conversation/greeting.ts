// The static opening line (the agent's welcome_message), greeting the caller by name
// when greet_by_name is on and the caller's record for the number has one. Whatever the
// message, the setting and the record, the line must read as a sentence: the name is
// set in as a vocative, a slot left empty takes its comma with it, and nothing is
// spliced before a word it does not belong to (issue 24: "Hello Marisol Quintero! and
// thanks for calling …").

/** A greeting word leading the message, "there" after it (dropped for the name), and the mark that closes it. */
const GREETING_WORD = /^(hello|hi|hey|good (?:morning|afternoon|evening|day))(\s+there)?(?![\p{L}\p{N}'’-])\s*([,;:!.?])?\s*/iu;
const SLOT = /\{name\}/g;

/**
 * The opening line. With greet_by_name and a name on file: `{name}` in the message is
 * replaced; otherwise the name follows a leading greeting word ("Hello!" → "Hello
 * Maria!", "Hello and thanks for calling" → "Hello Maria, and thanks for calling", "Hi
 * there!" → "Hi Maria!"), or "Hi Maria!" opens the line. Without one, `{name}` is taken
 * out with the comma that set it off ("Welcome back, {name}!" → "Welcome back!") and the
 * rest of the message is as written.
 */
export function staticGreeting(welcome: string, greetByName: boolean, name: string | null | undefined): string {
  const text = welcome.trim();
  const who = greetByName && typeof name === 'string' && name.trim() !== '' ? name.trim().replace(/\s+/g, ' ') : null;
  if (text.includes('{name}')) return who === null ? withoutSlot(text) : tidy(text.replace(SLOT, who));
  if (who === null) return text;
  const m = GREETING_WORD.exec(text);
  if (!m) return text === '' ? `Hi ${who}!` : `Hi ${who}! ${capitalised(text)}`;
  const greeting = m[1]!;
  const mark = m[3];
  const rest = text.slice(m[0].length);
  if (rest === '') return `${greeting} ${who}${mark ?? '!'}`;
  // The greeting word closed its own sentence: so does the name, and the rest starts one.
  if (mark === '!' || mark === '.' || mark === '?') return `${greeting} ${who}${mark} ${capitalised(rest)}`;
  if (mark !== undefined) return `${greeting} ${who}${mark} ${rest}`;
  // No mark: the message runs on ("Hello and thanks…") or starts anew ("Hello I'm Ava…").
  if (/^\p{Ll}/u.test(rest)) return `${greeting} ${who}, ${rest}`;
  if (/^[\p{Lu}\p{Lt}\p{N}]/u.test(rest)) return `${greeting} ${who}! ${rest}`;
  return `${greeting} ${who} ${rest}`;
}

/** The message with its name slots empty: the slot goes with a comma beside it; the line is never left empty. */
function withoutSlot(text: string): string {
  const out = tidy(text.replace(SLOT, ''))
    .replace(/^[\s,;:]+/u, '')
    .trim();
  if (!/[\p{L}\p{N}]/u.test(out)) return 'Hello!';
  return text.startsWith('{name}') ? capitalised(out) : out;
}

/** Spaces as in a sentence: one between words, none before a mark; a comma or colon beside another mark goes. */
function tidy(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/\s+([,;:!.?])/g, '$1')
    .replace(/[,;:]+(?=[,;:!.?])/g, '')
    .replace(/([!.?])[,;:]+/g, '$1')
    .trim();
}

function capitalised(text: string): string {
  return text.charAt(0).toLocaleUpperCase() + text.slice(1);
}
