// The recipient checks of POST /v1/calls/batch: every reason a row is not called
// (missing, invalid_format, invalid_number, duplicate), duplicates found after
// normalisation, row indexes and order, the invalid_phone_format error and its details,
// a property (every row lands exactly once; valid phones are E.164, real and distinct)
// and the time 10,000 rows take against libphonenumber-js's own cost for them.
import fc from 'fast-check';
import { isValidPhoneNumber, parsePhoneNumberFromString as parseMax } from 'libphonenumber-js/max';
import { parsePhoneNumberFromString as parseMin } from 'libphonenumber-js/min';
import { describe, expect, it } from 'vitest';
import { checkRecipients, invalidPhoneDetails, recipientsError, type RecipientCheck } from './batch-recipients.ts';

const E164 = /^\+[1-9]\d{7,14}$/;
const rows = (...phones: unknown[]) => phones.map((phone) => (phone === undefined ? {} : { phone }));
const reasons = (c: RecipientCheck) => c.invalid.map((i) => [i.row_index, i.reason]);

describe('why a row is not called', () => {
  it('missing: no phone key, null, empty or only spaces (and a row that is not an object)', () => {
    const c = checkRecipients([{}, { phone: null }, { phone: '' }, { phone: '   ' }, null, '+14155550123', { variables: { a: 1 } }]);
    expect(c.valid).toEqual([]);
    expect(c.invalid).toEqual([
      { phone: null, reason: 'missing', row_index: 0 },
      { phone: null, reason: 'missing', row_index: 1 },
      { phone: '', reason: 'missing', row_index: 2 },
      { phone: '   ', reason: 'missing', row_index: 3 },
      { phone: null, reason: 'missing', row_index: 4 },
      { phone: null, reason: 'missing', row_index: 5 },
      { phone: null, reason: 'missing', row_index: 6 },
    ]);
  });

  it('invalid_format: not E.164 shape, the phone echoed as sent', () => {
    const bad = ['4155550123', '14155550123', '+1 415 555 0123', '+1-415-555-0123', '+(415)5550123', '+0415550123', '+1234567', '+1234567890123456', '+1415555012a', 'tel:+14155550123', '++14155550123'];
    const c = checkRecipients(rows(...bad));
    expect(c.valid).toEqual([]);
    expect(c.invalid).toEqual(bad.map((phone, row_index) => ({ phone, reason: 'invalid_format', row_index })));
    // A phone of another JSON type (only if the schema were skipped) is not E.164 either.
    expect(checkRecipients([{ phone: 14155550123 }]).invalid).toEqual([{ phone: '14155550123', reason: 'invalid_format', row_index: 0 }]);
  });

  it('invalid_number: E.164 shape, but not a number of the country (libphonenumber-js max)', () => {
    const unreal = [
      '+15550100', // 7 digits after +1: NANP numbers have 10
      '+11234567890', // NANP area codes never start with 1
      '+10000000000',
      '+447700900123', // a UK range reserved for drama, never assigned
      '+33012345678', // France: no 0 after the country code
      '+999123456789', // no such country code
      '+43014000', // Vienna's +43 1 4000 with the trunk 0: valid, but 7 digits once normalised, short of E.164's 8
      '+31195510864', // right length for the Netherlands, but no area code 19: "min" metadata calls it valid
    ];
    for (const n of unreal) expect(E164.test(n), n).toBe(true);
    const c = checkRecipients(rows(...unreal));
    expect(c.valid).toEqual([]);
    expect(c.invalid).toEqual(unreal.map((phone, row_index) => ({ phone, reason: 'invalid_number', row_index })));
    // The last one is why the "max" metadata is used: "min" only checks the length.
    expect(parseMin('+31195510864')?.isValid()).toBe(true);
    expect(parseMax('+31195510864')?.isValid()).toBe(false);
  });

  it('real numbers of many countries are valid, normalised to E.164', () => {
    const real = ['+14155552671', '+12125550100', '+18005551234', '+442079460000', '+33612345678', '+491701234567', '+61412345678', '+5511987654321', '+390612345678', '+8613800138000', '+79161234567'];
    const c = checkRecipients(rows(...real));
    expect(c.invalid).toEqual([]);
    expect(c.valid.map((v) => v.phone)).toEqual(real);
    expect(c.valid.map((v) => v.rowIndex)).toEqual(real.map((_, i) => i));
  });

  it('duplicate: the same number as an earlier row after normalisation; the first is called', () => {
    const c = checkRecipients(
      rows(
        '+442079460000', // 0 valid
        '+4402079460000', // 1 the same number, written with the UK trunk 0
        ' +14155552671\t', // 2 valid (spaces around are dropped)
        '+14155552671', // 3 duplicate of row 2
        '+15550100', // 4 invalid_number
        '+15550100', // 5 invalid_number again, not duplicate: only callable numbers repeat
        '+14155552671 ', // 6 duplicate of row 2
      ),
    );
    expect(c.valid.map((v) => [v.rowIndex, v.phone])).toEqual([
      [0, '+442079460000'],
      [2, '+14155552671'],
    ]);
    expect(reasons(c)).toEqual([
      [1, 'duplicate'],
      [3, 'duplicate'],
      [4, 'invalid_number'],
      [5, 'invalid_number'],
      [6, 'duplicate'],
    ]);
    // The phone is echoed as sent, so the developer can find it.
    expect(c.invalid[0]!.phone).toBe('+4402079460000');
    expect(c.invalid[4]!.phone).toBe('+14155552671 ');
    expect(c.messages[0]).toBe('Row 2: +4402079460000 is the same number as Row 1, which will be called.');
  });

  it('a duplicate is a later row only: the first occurrence is valid however it is written', () => {
    const c = checkRecipients(rows('+4402079460000', '+442079460000'));
    expect(c.valid).toEqual([{ rowIndex: 0, phone: '+442079460000', variables: {}, promptOverride: null }]);
    expect(reasons(c)).toEqual([[1, 'duplicate']]);
  });
});

describe('rows, order and what a valid row carries', () => {
  it('keeps row order in both lists, with 0-based row indexes and messages counting from 1', () => {
    const c = checkRecipients([
      { phone: '+14155552671', variables: { first_name: 'Ada', balance: 42.5, vip: true }, prompt_override: 'Ask about the invoice.' },
      { phone: 'nope' },
      { phone: '+12125550100' },
      {},
      { phone: '+12125550100' },
    ]);
    expect(c.valid).toEqual([
      { rowIndex: 0, phone: '+14155552671', variables: { first_name: 'Ada', balance: 42.5, vip: true }, promptOverride: 'Ask about the invoice.' },
      { rowIndex: 2, phone: '+12125550100', variables: {}, promptOverride: null },
    ]);
    expect(c.invalid).toEqual([
      { phone: 'nope', reason: 'invalid_format', row_index: 1 },
      { phone: null, reason: 'missing', row_index: 3 },
      { phone: '+12125550100', reason: 'duplicate', row_index: 4 },
    ]);
    expect(c.messages).toEqual([
      'Row 2: "nope" is not E.164 (a leading + and country code, e.g. +14155550123).',
      'Row 4: no phone.',
      'Row 5: +12125550100 is the same number as Row 3, which will be called.',
    ]);
  });

  it('an empty list is empty both ways', () => {
    expect(checkRecipients([])).toEqual({ valid: [], invalid: [], messages: [] });
  });
});

describe('the invalid_phone_format error', () => {
  const mixed = () => checkRecipients(rows('+14155552671', 'x', undefined, '+15550100', '+14155552671', '+12125550100', 'y'));

  it('skip_invalid false: any invalid row rejects the request, with every invalid row in details', () => {
    const err = recipientsError(mixed(), false)!;
    expect(err.code).toBe('invalid_phone_format');
    expect(err.status).toBe(400);
    expect(err.toBody().error.details).toEqual({
      field: 'recipients',
      total: 7,
      valid_count: 2,
      invalid_count: 5,
      invalid: [
        { phone: 'x', reason: 'invalid_format', row_index: 1 },
        { phone: null, reason: 'missing', row_index: 2 },
        { phone: '+15550100', reason: 'invalid_number', row_index: 3 },
        { phone: '+14155552671', reason: 'duplicate', row_index: 4 },
        { phone: 'y', reason: 'invalid_format', row_index: 6 },
      ],
      hint: 'Fix the rows listed in details.invalid (row_index counts from 0) and send the request again, or send skip_invalid: true to call only the 2 valid numbers.',
    });
    // The first three rows in words, counted from 1; the rest are in details.
    expect(err.message).toBe(
      '5 of 7 recipients cannot be called. Row 2: "x" is not E.164 (a leading + and country code, e.g. +14155550123). Row 3: no phone. ' +
        'Row 4: +15550100 is not a valid phone number for its country. And 2 more in details.invalid.',
    );
  });

  it('skip_invalid true: the valid ones go ahead', () => {
    expect(recipientsError(mixed(), true)).toBeNull();
  });

  it('no invalid row: no error either way', () => {
    const c = checkRecipients(rows('+14155552671', '+12125550100'));
    expect(recipientsError(c, false)).toBeNull();
    expect(recipientsError(c, true)).toBeNull();
  });

  it('every row invalid: rejected even with skip_invalid true, since nothing could be called', () => {
    const c = checkRecipients(rows('+15550100', '', 'abc'));
    for (const skip of [true, false]) {
      const err = recipientsError(c, skip)!;
      expect(err.code).toBe('invalid_phone_format');
      expect(err.message).toBe('No recipient can be called: all 3 are invalid. Row 1: +15550100 is not a valid phone number for its country. Row 2: no phone. Row 3: "abc" is not E.164 (a leading + and country code, e.g. +14155550123).');
      const details = err.details as unknown as ReturnType<typeof invalidPhoneDetails>;
      expect(details).toMatchObject({ total: 3, valid_count: 0, invalid_count: 3 });
      expect(details.hint).toMatch(/^None of the 3 recipients can be called, so skip_invalid does not help/);
    }
  });
});

// ---- property ---------------------------------------------------------------------

/** Numbers libphonenumber-js (max) calls valid, some in two spellings of one number. */
const REAL = ['+14155552671', '+12125550100', '+442079460000', '+4402079460000', '+33612345678', '+491701234567', '+61412345678', '+8613800138000'];
const UNREAL = ['+15550100', '+11234567890', '+447700900123', '+31195510864', '+999123456789'];

const phoneArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...REAL) },
  { weight: 2, arbitrary: fc.constantFrom(...REAL).map((p) => ` ${p} `) },
  { weight: 2, arbitrary: fc.constantFrom(...UNREAL) },
  { weight: 2, arbitrary: fc.stringMatching(/^\+[1-9]\d{7,14}$/) },
  // Trunk prefixes after the country code, which normalisation drops: +43 0 1 4000 is 7 digits once dropped.
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('+430', '+440', '+490', '+390', '+330'), fc.stringMatching(/^\d{3,10}$/)).map(([p, d]) => p + d) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constant(null) },
);
const rowArb = fc.oneof(
  { weight: 8, arbitrary: fc.record({ phone: phoneArb, variables: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.oneof(fc.string(), fc.integer(), fc.boolean()), { maxKeys: 3 }) }, { requiredKeys: ['phone'] }) },
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.oneof(fc.constant(null), fc.string(), fc.integer()) },
);

it('property: every row is valid or invalid exactly once, in order; valid phones are E.164, real and distinct', () => {
  fc.assert(
    fc.property(fc.array(rowArb, { maxLength: 40 }), (input) => {
      const c = checkRecipients(input);
      const seen = [...c.valid.map((v) => v.rowIndex), ...c.invalid.map((i) => i.row_index)].sort((a, b) => a - b);
      expect(seen).toEqual(input.map((_, i) => i));
      expect(c.messages.length).toBe(c.invalid.length);
      const ascending = (xs: number[]) => xs.every((x, i) => i === 0 || xs[i - 1]! < x);
      expect(ascending(c.valid.map((v) => v.rowIndex))).toBe(true);
      expect(ascending(c.invalid.map((i) => i.row_index))).toBe(true);
      for (const v of c.valid) {
        expect(v.phone).toMatch(E164);
        expect(isValidPhoneNumber(v.phone)).toBe(true);
      }
      expect(new Set(c.valid.map((v) => v.phone)).size).toBe(c.valid.length);
      // A duplicate repeats an earlier valid row; checking the valid phones again changes nothing.
      for (const i of c.invalid.filter((x) => x.reason === 'duplicate')) {
        const normalised = parseMax(i.phone!.trim())!.number;
        expect(c.valid.some((v) => v.phone === normalised && v.rowIndex < i.row_index)).toBe(true);
      }
      const again = checkRecipients(c.valid.map((v) => ({ phone: v.phone })));
      expect(again.invalid).toEqual([]);
      expect(again.valid.map((v) => v.phone)).toEqual(c.valid.map((v) => v.phone));
    }),
    { numRuns: 300 },
  );
});

// ---- time -------------------------------------------------------------------------

/** 10,000 distinct real numbers over eight countries (every one valid under max metadata). */
function tenThousand(): string[] {
  // Prefix → digits that follow it: NANP (San Francisco, New York), London, French and
  // German mobiles, Australian mobiles, São Paulo mobiles, Chinese mobiles.
  const plans: [string, number][] = [['+1415', 7], ['+1212', 7], ['+4420', 8], ['+3361', 7], ['+49170', 7], ['+6141', 7], ['+55119', 8], ['+86138', 8]];
  const out = new Set<string>();
  for (let i = 0; out.size < 10_000; i++) {
    const [prefix, digits] = plans[i % plans.length]!;
    const n = prefix + String(2_000_000 + i * 7919).padStart(digits, '3').slice(-digits);
    if (isValidPhoneNumber(n)) out.add(n);
  }
  return [...out];
}

/** The lowest of `runs` timings of `f`, in ms of CPU time (a busy machine's other work does not count). */
function cpuMs(f: () => void, runs = 3): number {
  let best = Infinity;
  for (let r = 0; r < runs; r++) {
    const start = process.cpuUsage();
    f();
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

it('10,000 recipients: about what libphonenumber-js alone takes for them, far below a second', () => {
  const numbers = tenThousand();
  expect(new Set(numbers).size).toBe(10_000);
  const input = numbers.map((phone, i) => ({ phone, variables: { n: i } }));
  checkRecipients(input); // warm-up: the first pass compiles the code paths

  // The baseline: libphonenumber-js (max) parsing and validating the same numbers, nothing else.
  const baseline = cpuMs(() => {
    for (const n of numbers) parseMax(n)?.isValid();
  });
  const minBaseline = cpuMs(() => {
    for (const n of numbers) parseMin(n)?.isValid();
  });
  let result: RecipientCheck | undefined;
  const ours = cpuMs(() => {
    result = checkRecipients(input);
  });
  // The same list repeated: a number already seen is not parsed again.
  const repeated = Array.from({ length: 10_000 }, () => ({ phone: numbers[0] }));
  const dup = cpuMs(() => checkRecipients(repeated));
  console.log(
    `10,000 recipients, CPU ms (best of 3): checkRecipients ${ours.toFixed(1)}; libphonenumber-js max alone ${baseline.toFixed(1)}, min alone ${minBaseline.toFixed(1)}; 10,000 copies of one number ${dup.toFixed(1)}`,
  );

  expect(result!.valid.length).toBe(10_000);
  // Generous bounds from the baseline: the checks add bookkeeping, never a second pass or
  // a quadratic duplicate search. The absolute bound only catches a disaster on a slow CI.
  expect(ours).toBeLessThan(2 * baseline + 50);
  expect(ours).toBeLessThan(2000);
  expect(dup).toBeLessThan(baseline / 2 + 20);
});
