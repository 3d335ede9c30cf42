// The static greeting in every combination of welcome_message, greet_by_name and a
// caller with or without a name on file: it greets by name only when both are there,
// and it reads as a sentence either way (issue 24).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { staticGreeting } from './greeting.ts';

const NAME = 'Marisol Quintero';

/** welcome_message → the line with the name, and without it (greet_by_name off, or no name on file). */
const CASES: [welcome: string, named: string, unnamed: string][] = [
  ['Hello! How can I help you today?', 'Hello Marisol Quintero! How can I help you today?', 'Hello! How can I help you today?'],
  // The line: a greeting word running on into the sentence.
  ['Hello and thanks for calling Luigi’s.', 'Hello Marisol Quintero, and thanks for calling Luigi’s.', 'Hello and thanks for calling Luigi’s.'],
  ['Hello, and thanks for calling Luigi’s.', 'Hello Marisol Quintero, and thanks for calling Luigi’s.', 'Hello, and thanks for calling Luigi’s.'],
  ['Hi there! Welcome to Luigi’s.', 'Hi Marisol Quintero! Welcome to Luigi’s.', 'Hi there! Welcome to Luigi’s.'],
  ['hi there, welcome to Luigi’s.', 'hi Marisol Quintero, welcome to Luigi’s.', 'hi there, welcome to Luigi’s.'],
  ['Good evening, welcome to Luigi’s.', 'Good evening Marisol Quintero, welcome to Luigi’s.', 'Good evening, welcome to Luigi’s.'],
  ['Hello. This is Ava at Luigi’s.', 'Hello Marisol Quintero. This is Ava at Luigi’s.', 'Hello. This is Ava at Luigi’s.'],
  ['Hello! thanks for calling.', 'Hello Marisol Quintero! Thanks for calling.', 'Hello! thanks for calling.'],
  ['Hey I’m Ava from Luigi’s, how can I help?', 'Hey Marisol Quintero! I’m Ava from Luigi’s, how can I help?', 'Hey I’m Ava from Luigi’s, how can I help?'],
  ['Hello — thanks for calling.', 'Hello Marisol Quintero — thanks for calling.', 'Hello — thanks for calling.'],
  ['Hello? Is this about your booking?', 'Hello Marisol Quintero? Is this about your booking?', 'Hello? Is this about your booking?'],
  ['Hello', 'Hello Marisol Quintero!', 'Hello'],
  ['Hello!', 'Hello Marisol Quintero!', 'Hello!'],
  ['Highland Grill, how can I help?', 'Hi Marisol Quintero! Highland Grill, how can I help?', 'Highland Grill, how can I help?'],
  ['Welcome to Luigi’s.', 'Hi Marisol Quintero! Welcome to Luigi’s.', 'Welcome to Luigi’s.'],
  ['thanks for calling Luigi’s!', 'Hi Marisol Quintero! Thanks for calling Luigi’s!', 'thanks for calling Luigi’s!'],
  ['', 'Hi Marisol Quintero!', ''],
  // A {name} slot: filled, or emptied with the comma that set it off.
  ['Hi {name}, welcome back!', 'Hi Marisol Quintero, welcome back!', 'Hi, welcome back!'],
  ['Hi, {name}, welcome back!', 'Hi, Marisol Quintero, welcome back!', 'Hi, welcome back!'],
  ['Welcome back, {name}!', 'Welcome back, Marisol Quintero!', 'Welcome back!'],
  ['{name}, thanks for calling.', 'Marisol Quintero, thanks for calling.', 'Thanks for calling.'],
  ['Hello {name}! How can I help?', 'Hello Marisol Quintero! How can I help?', 'Hello! How can I help?'],
  ['Thanks for calling, {name}. How can I help, {name}?', 'Thanks for calling, Marisol Quintero. How can I help, Marisol Quintero?', 'Thanks for calling. How can I help?'],
  ['{name}!', 'Marisol Quintero!', 'Hello!'],
];

/** A caller's name as the record may hold it: with greet_by_name, only a real one greets. */
const CALLERS: [label: string, name: string | null | undefined, greets: boolean][] = [
  ['a name on file', NAME, true],
  ['a name with stray spaces', `  Marisol   Quintero `, true],
  ['no record', undefined, false],
  ['no name', null, false],
  ['a blank name', '   ', false],
];

describe('the static greeting', () => {
  for (const [welcome, named, unnamed] of CASES) {
    describe(JSON.stringify(welcome), () => {
      it.each(CALLERS)('greet_by_name on, %s', (_label, name, greets) => {
        expect(staticGreeting(welcome, true, name)).toBe(greets ? named : unnamed);
      });
      it.each(CALLERS)('greet_by_name off, %s', (_label, name) => {
        expect(staticGreeting(welcome, false, name)).toBe(unnamed);
      });
    });
  }

  // Welcome messages built of sentence parts, every combination of a greeting word, its
  // mark, what follows and a {name} slot: the line keeps every word of the message in
  // order (less "there" and the slot), greets by name exactly when it should, and reads
  // as a sentence (no mark after a space, no comma before a mark, no mark first, no
  // lowercase word after a closing mark it put there).
  it('reads as a sentence for any message, setting and caller', () => {
    const greetingWord = fc.constantFrom('', 'Hello', 'Hi', 'Hey', 'Good morning', 'Hi there', 'hello');
    const mark = fc.constantFrom('', ',', '!', '.', '?', ':');
    const rest = fc.constantFrom('', 'and thanks for calling Luigi’s.', 'Thanks for calling Luigi’s.', 'welcome back!', 'I’m Ava, how can I help?', '— how can I help?');
    const slot = fc.constantFrom('none', 'after greeting', 'before rest', 'at end');
    const name = fc.constantFrom<string | null>(NAME, 'Ann', null, '', '  ');
    fc.assert(
      fc.property(greetingWord, mark, rest, slot, fc.boolean(), name, (g, mk, r, s, greetByName, who) => {
        const head = g === '' ? '' : `${g}${s === 'after greeting' ? ' {name}' : ''}${mk}`;
        const tail = r === '' ? '' : `${s === 'before rest' ? '{name}, ' : ''}${r}`;
        const welcome = `${head} ${tail}${s === 'at end' ? ' {name}' : ''}`.trim();
        const line = staticGreeting(welcome, greetByName, who);
        const named = greetByName && who !== null && who.trim() !== '';
        const context = `${JSON.stringify(welcome)} (greet_by_name ${greetByName}, name ${JSON.stringify(who)}) → ${JSON.stringify(line)}`;
        expect(line.includes('{name}'), context).toBe(false);
        if (named) expect(line.split(who!.trim()).length - 1, context).toBe(Math.max(1, welcome.split('{name}').length - 1));
        else if (who !== null && who.trim() !== '') expect(line.includes(who.trim()), context).toBe(false);
        expect(line, context).not.toMatch(/\s[,;:!.?]/);
        expect(line, context).not.toMatch(/[,;:!.?][,;:]|[,;:][!.?]/);
        expect(line, context).not.toMatch(/^[,;:!.?\s]/);
        expect(line, context).not.toMatch(/\s{2}/);
        if (named && !welcome.includes('{name}')) expect(line, context).not.toMatch(/[!.?] \p{Ll}/u);
        const words = (t: string): string[] => t.replace(/\{name\}/g, ' ').toLowerCase().match(/[\p{L}’]+/gu) ?? [];
        const kept = words(line);
        let at = 0;
        for (const w of words(welcome).filter((w) => !(w === 'there' && named))) {
          at = kept.indexOf(w, at);
          expect(at, `${context}: lost "${w}"`).toBeGreaterThanOrEqual(0);
          at++;
        }
      }),
      { numRuns: 2000 },
    );
  });
});
