// The calling window: worked examples (overnight, weekdays, no window, DST changes in
// both hemispheres, half-hour offsets and changes, midnight changes), then properties
// against an independent model (test/model/calling-window-oracle.ts: luxon's clock read
// every minute) over random windows, zones and instants, and instants crowded around the
// zones' offset changes.
import fc from 'fast-check';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import {
  WEEKDAYS,
  callingWindowSchema,
  isLocalDate,
  isValidTimeZone,
  isWindowOpen,
  nextWindowClosing,
  nextWindowOpening,
  resolveWindowZone,
  scheduledDateDue,
  windowProblem,
  windowState,
  type CallingWindow,
  type Weekday,
} from './calling-window.ts';
import {
  WindowOracle,
  oracleFirstMinuteOf,
  oracleOffset,
  oracleStartOfDay,
  clockRunsForward,
  transitionsOf,
  wallClockOpen,
} from '../test/model/calling-window-oracle.ts';

const MIN = 60_000;
const DAY = 86_400_000;
const utc = (iso: string) => Date.parse(iso);
const win = (timezone: string, startMinutes: number | null, endMinutes: number | null, days: Weekday[] | null = null): CallingWindow => ({
  startMinutes,
  endMinutes,
  days,
  timezone,
});
const hm = (h: number, m = 0) => h * 60 + m;

describe('examples', () => {
  it('overnight Fri 22:00–02:00 with days [fri] is open Friday night into Saturday, not Thursday night', () => {
    const w = win('Europe/London', hm(22), hm(2), ['fri']);
    // June: London is UTC+1.
    expect(isWindowOpen(utc('2024-06-07T20:59:59.999Z'), w)).toBe(false); // Fri 21:59
    expect(isWindowOpen(utc('2024-06-07T21:00:00Z'), w)).toBe(true); // Fri 22:00
    expect(isWindowOpen(utc('2024-06-08T00:59:00Z'), w)).toBe(true); // Sat 01:59
    expect(isWindowOpen(utc('2024-06-08T01:00:00Z'), w)).toBe(false); // Sat 02:00
    expect(isWindowOpen(utc('2024-06-06T22:00:00Z'), w)).toBe(false); // Thu 23:00
    expect(isWindowOpen(utc('2024-06-07T00:30:00Z'), w)).toBe(false); // Fri 01:30: Thursday opened nothing
    expect(nextWindowOpening(utc('2024-06-08T11:00:00Z'), w)).toBe(utc('2024-06-14T21:00:00Z'));
    expect(nextWindowClosing(utc('2024-06-07T23:00:00Z'), w)).toBe(utc('2024-06-08T01:00:00Z'));
    expect(windowState(utc('2024-06-07T23:00:00Z'), w)).toEqual({ open: true, changesAt: utc('2024-06-08T01:00:00Z') });
  });

  it('weekdays 09:00–17:00 in New York: a Saturday waits for Monday 09:00', () => {
    const w = win('America/New_York', hm(9), hm(17), ['mon', 'tue', 'wed', 'thu', 'fri']);
    const saturday = utc('2024-06-08T15:00:00Z');
    expect(isWindowOpen(saturday, w)).toBe(false);
    expect(nextWindowOpening(saturday, w)).toBe(utc('2024-06-10T13:00:00Z'));
    expect(nextWindowClosing(utc('2024-06-10T13:00:00Z'), w)).toBe(utc('2024-06-10T21:00:00Z'));
    expect(nextWindowClosing(saturday, w)).toBe(saturday); // closed now
    expect(windowState(saturday, w)).toEqual({ open: false, changesAt: utc('2024-06-10T13:00:00Z') });
  });

  it('no window is always open; days alone are whole days, touching days one stretch', () => {
    const always = win('Europe/London', null, null, null);
    const at = utc('2024-06-08T15:00:00Z');
    expect(isWindowOpen(at, always)).toBe(true);
    expect(nextWindowOpening(at, always)).toBe(at);
    expect(nextWindowClosing(at, always)).toBe(null);
    expect(nextWindowClosing(at, win('UTC', 0, 1440, null))).toBe(null); // all day, every day
    const weekend = win('Europe/London', null, null, ['sat', 'sun']);
    expect(nextWindowOpening(utc('2024-06-05T12:00:00Z'), weekend)).toBe(utc('2024-06-07T23:00:00Z')); // Sat 00:00 BST
    expect(nextWindowClosing(at, weekend)).toBe(utc('2024-06-09T23:00:00Z')); // Mon 00:00 BST
  });

  it('windows that never open answer so', () => {
    const at = utc('2024-06-08T15:00:00Z');
    for (const w of [win('UTC', 600, 600), win('UTC', 600, 700, []), win('UTC', null, null, [])]) {
      expect(isWindowOpen(at, w)).toBe(false);
      expect(nextWindowOpening(at, w)).toBe(null);
      expect(nextWindowClosing(at, w)).toBe(at);
    }
  });

  it('Europe/London, BST starts: 01:00–02:00 is skipped; the window opens when the clock jumps', () => {
    // 2024-03-31 01:00 GMT becomes 02:00 BST.
    const w = win('Europe/London', hm(1, 30), hm(3));
    expect(nextWindowOpening(utc('2024-03-30T23:00:00Z'), w)).toBe(utc('2024-03-31T01:00:00Z'));
    expect(nextWindowClosing(utc('2024-03-31T01:00:00Z'), w)).toBe(utc('2024-03-31T02:00:00Z'));
  });

  it('Europe/London, BST ends: a window opened in the repeated hour stays open through the repeat', () => {
    // 2024-10-27 02:00 BST becomes 01:00 GMT; 01:00–02:00 happens twice.
    const w = win('Europe/London', hm(1, 30), hm(2, 30));
    expect(nextWindowOpening(utc('2024-10-26T22:00:00Z'), w)).toBe(utc('2024-10-27T00:30:00Z')); // first 01:30
    expect(isWindowOpen(utc('2024-10-27T01:15:00Z'), w)).toBe(true); // 01:15 GMT, the second pass
    expect(wallClockOpen(utc('2024-10-27T01:15:00Z'), w)).toBe(false); // where the plain reading differs
    expect(nextWindowClosing(utc('2024-10-27T00:30:00Z'), w)).toBe(utc('2024-10-27T02:30:00Z'));
  });

  it('America/New_York springs forward: 02:30 opens at 03:00 EDT; a window inside the gap is empty that day', () => {
    // 2024-03-10 02:00 EST becomes 03:00 EDT.
    const w = win('America/New_York', hm(2, 30), hm(4));
    expect(nextWindowOpening(utc('2024-03-10T05:00:00Z'), w)).toBe(utc('2024-03-10T07:00:00Z'));
    expect(isWindowOpen(utc('2024-03-10T06:59:59.999Z'), w)).toBe(false); // 01:59:59 EST
    expect(nextWindowClosing(utc('2024-03-10T07:00:00Z'), w)).toBe(utc('2024-03-10T08:00:00Z'));
    const inGap = win('America/New_York', hm(2), hm(2, 30));
    expect(nextWindowOpening(utc('2024-03-10T05:00:00Z'), inGap)).toBe(utc('2024-03-11T06:00:00Z'));
    const sundaysInGap = win('America/New_York', hm(2), hm(2, 30), ['sun']);
    expect(nextWindowOpening(utc('2024-03-10T05:00:00Z'), sundaysInGap)).toBe(utc('2024-03-17T06:00:00Z'));
  });

  it('America/New_York falls back: an ambiguous start and end are their first occurrences', () => {
    // 2024-11-03 02:00 EDT becomes 01:00 EST.
    const w = win('America/New_York', hm(1, 30), hm(1, 45));
    expect(nextWindowOpening(utc('2024-11-03T04:00:00Z'), w)).toBe(utc('2024-11-03T05:30:00Z'));
    expect(nextWindowClosing(utc('2024-11-03T05:30:00Z'), w)).toBe(utc('2024-11-03T05:45:00Z'));
    expect(isWindowOpen(utc('2024-11-03T06:35:00Z'), w)).toBe(false); // 01:35 EST, the repeat
    expect(nextWindowOpening(utc('2024-11-03T05:50:00Z'), w)).toBe(utc('2024-11-04T06:30:00Z'));
    const overnight = win('America/New_York', hm(22), hm(1, 30));
    expect(nextWindowClosing(utc('2024-11-03T03:00:00Z'), overnight)).toBe(utc('2024-11-03T05:30:00Z'));
  });

  it('Asia/Kolkata is UTC+5:30 all year', () => {
    const w = win('Asia/Kolkata', hm(9), hm(18));
    expect(nextWindowOpening(utc('2024-01-15T00:00:00Z'), w)).toBe(utc('2024-01-15T03:30:00Z'));
    expect(nextWindowClosing(utc('2024-07-15T04:00:00Z'), w)).toBe(utc('2024-07-15T12:30:00Z'));
  });

  it('Australia/Lord_Howe moves by 30 minutes', () => {
    // 2024-10-06 02:00 +10:30 becomes 02:30 +11; 2024-04-07 02:00 +11 becomes 01:30 +10:30.
    const spring = win('Australia/Lord_Howe', hm(2, 10), hm(3));
    expect(nextWindowOpening(utc('2024-10-05T12:00:00Z'), spring)).toBe(utc('2024-10-05T15:30:00Z'));
    expect(nextWindowClosing(utc('2024-10-05T15:30:00Z'), spring)).toBe(utc('2024-10-05T16:00:00Z'));
    const inGap = win('Australia/Lord_Howe', hm(2), hm(2, 30), ['sun']);
    expect(nextWindowOpening(utc('2024-10-05T12:00:00Z'), inGap)).toBe(utc('2024-10-12T15:00:00Z'));
    const autumn = win('Australia/Lord_Howe', hm(1, 45), hm(2, 15));
    expect(nextWindowOpening(utc('2024-04-06T12:00:00Z'), autumn)).toBe(utc('2024-04-06T14:45:00Z'));
    expect(nextWindowClosing(utc('2024-04-06T14:45:00Z'), autumn)).toBe(utc('2024-04-06T15:45:00Z'));
  });

  it('America/Nuuk, the evening after its fall-back: the overnight window opened the night before is still open (the model agrees)', () => {
    const w = win('America/Nuuk', 1439, 1438);
    const at = utc('2030-10-28T01:00:00Z'); // Sunday 27 October, 23:00 -02:00; the clock went back at 01:00Z that morning
    expect(isWindowOpen(at, w)).toBe(true);
    expect(nextWindowClosing(at, w)).toBe(utc('2030-10-28T01:58:00Z'));
    const model = new WindowOracle(w, at, at + 3 * DAY);
    expect(model.isOpen(at)).toBe(true);
    expect(model.nextClosing(at)).toBe(utc('2030-10-28T01:58:00Z'));
  });

  it('scheduled dates begin at local midnight, or where a change at midnight skips it', () => {
    expect(scheduledDateDue('2024-06-01', 'Europe/London')).toBe(utc('2024-05-31T23:00:00Z'));
    expect(scheduledDateDue('2024-01-01', 'Asia/Kolkata')).toBe(utc('2023-12-31T18:30:00Z'));
    // Chile: Saturday 24:00 (-04) becomes Sunday 01:00 (-03).
    expect(scheduledDateDue('2024-09-08', 'America/Santiago')).toBe(utc('2024-09-08T04:00:00Z'));
    // …and back: Sunday 00:00 (-03) becomes Saturday 23:00 (-04): Sunday begins an hour later.
    expect(scheduledDateDue('2024-04-07', 'America/Santiago')).toBe(utc('2024-04-07T04:00:00Z'));
    // Lebanon: Sunday 00:00 (+02) becomes 01:00 (+03).
    expect(scheduledDateDue('2024-03-31', 'Asia/Beirut')).toBe(utc('2024-03-30T22:00:00Z'));
    // Samoa skipped 2011-12-30 whole: it "begins" when Dec 31 does.
    expect(scheduledDateDue('2011-12-30', 'Pacific/Apia')).toBe(utc('2011-12-30T10:00:00Z'));
    expect(() => scheduledDateDue('2024-02-30', 'UTC')).toThrow(RangeError);
    expect(isLocalDate('2024-02-29')).toBe(true);
    expect(isLocalDate('2023-02-29')).toBe(false);
  });
});

describe('zones and validation', () => {
  it('knows IANA names, not offsets', () => {
    expect(isValidTimeZone('Europe/London')).toBe(true);
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(isValidTimeZone('America/Argentina/Buenos_Aires')).toBe(true);
    expect(isValidTimeZone('Mars/Olympus')).toBe(false);
    expect(isValidTimeZone('+05:30')).toBe(false);
    expect(isValidTimeZone('')).toBe(false);
    expect(isValidTimeZone(null)).toBe(false);
  });

  it('resolves the zone: campaign, then agent, then Europe/London', () => {
    expect(resolveWindowZone('Asia/Tokyo', 'America/New_York')).toBe('Asia/Tokyo');
    expect(resolveWindowZone(null, 'America/New_York')).toBe('America/New_York');
    expect(resolveWindowZone(undefined, 'Not/AZone')).toBe('Europe/London');
    expect(resolveWindowZone(null, null)).toBe('Europe/London');
  });

  it('says why a window is refused, naming the API field', () => {
    expect(windowProblem(win('UTC', 540, 1020, ['mon']))).toBe(null);
    expect(windowProblem(win('UTC', null, null, null))).toBe(null);
    expect(windowProblem(win('UTC', 1320, 120))).toBe(null); // overnight
    expect(windowProblem(win('UTC', 540, 1440))).toBe(null); // until midnight
    expect(windowProblem(win('UTC', 540, null))).toMatchObject({ code: 'invalid_request', field: 'window_end_minutes' });
    expect(windowProblem(win('UTC', null, 540))).toMatchObject({ code: 'invalid_request', field: 'window_start_minutes' });
    expect(windowProblem(win('UTC', 1440, 100))).toMatchObject({ field: 'window_start_minutes' });
    expect(windowProblem(win('UTC', -1, 100))).toMatchObject({ field: 'window_start_minutes' });
    expect(windowProblem(win('UTC', 100, 1441))).toMatchObject({ field: 'window_end_minutes' });
    expect(windowProblem(win('UTC', 100.5, 200))).toMatchObject({ field: 'window_start_minutes' });
    expect(windowProblem(win('UTC', 600, 600))).toMatchObject({ field: 'window_end_minutes' });
    expect(windowProblem(win('UTC', 600, 700, []))).toMatchObject({ field: 'window_days' });
    expect(windowProblem(win('UTC', 600, 700, ['Mon' as Weekday]))).toMatchObject({ field: 'window_days' });
    expect(windowProblem(win('Mars/Olympus', 600, 700))).toMatchObject({ code: 'invalid_timezone', field: 'timezone' });
    const parsed = callingWindowSchema.safeParse(win('UTC', 600, 600));
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({ path: ['endMinutes'], params: { code: 'invalid_request', field: 'window_end_minutes' } });
    expect(callingWindowSchema.parse(win('UTC', 600, 700, ['mon']))).toEqual(win('UTC', 600, 700, ['mon']));
  });

  it('refuses a malformed window or instant instead of guessing', () => {
    expect(() => isWindowOpen(0, win('Mars/Olympus', 1, 2))).toThrow(RangeError);
    expect(() => nextWindowOpening(Number.NaN, win('UTC', 1, 2))).toThrow(RangeError);
  });
});

// ---- properties ----------------------------------------------------------------------

/** DST in both hemispheres, changes at midnight, 30-minute and 2-hour changes, odd offsets, a skipped day. */
const ZONES = [
  'UTC',
  'Europe/London',
  'Europe/Dublin',
  'America/New_York',
  'America/St_Johns',
  'America/Nuuk',
  'America/Havana',
  'America/Santiago',
  'America/Asuncion',
  'America/Sao_Paulo',
  'Asia/Beirut',
  'Asia/Gaza',
  'Asia/Tehran',
  'Asia/Kolkata',
  'Asia/Kathmandu',
  'Africa/Casablanca',
  'Australia/Sydney',
  'Australia/Lord_Howe',
  'Antarctica/Troll',
  'Pacific/Chatham',
  'Pacific/Apia',
  'Pacific/Kiritimati',
  'Pacific/Pago_Pago',
];
const FROM = Date.UTC(2000, 0, 1);
const TO = Date.UTC(2037, 11, 1);
const SPAN_DAYS = 16; // nextWindowOpening looks ahead 15 days

const daysArb: fc.Arbitrary<Weekday[] | null> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(null) },
  { weight: 5, arbitrary: fc.subarray([...WEEKDAYS], { minLength: 1 }) },
  { weight: 1, arbitrary: fc.constant([] as Weekday[]) },
);
const timesArb: fc.Arbitrary<[number, number] | null> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 6, arbitrary: fc.tuple(fc.integer({ min: 0, max: 1439 }), fc.integer({ min: 0, max: 1440 })) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 1439 }).map((m): [number, number] => [m, m]) }, // refused at creation, never open
);
const windowArb = (zone: string): fc.Arbitrary<CallingWindow> =>
  fc.tuple(timesArb, daysArb).map(([times, days]) => ({ startMinutes: times?.[0] ?? null, endMinutes: times?.[1] ?? null, days, timezone: zone }));

/** A random window and instant anywhere in 2000–2037. */
const anywhereArb = fc.constantFrom(...ZONES).chain((zone) => fc.tuple(windowArb(zone), fc.integer({ min: FROM, max: TO })));

/**
 * An instant within two days of one of the zone's offset changes, and half the time a
 * window whose start and end sit within 90 minutes of the local time of that change.
 */
const nearChangeArb = fc
  .constantFrom(...ZONES.filter((z) => transitionsOf(z, FROM, TO).length > 0))
  .chain((zone) => fc.tuple(fc.constant(zone), fc.constantFrom(...transitionsOf(zone, FROM, TO))))
  .chain(([zone, change]) => {
    const localMinute = (t: number) => (((Math.floor((t + oracleOffset(zone, t) * MIN) / MIN) % 1440) + 1440) % 1440);
    const before = localMinute(change - 1);
    const near = fc.integer({ min: -90, max: 90 }).map((d) => Math.min(1439, Math.max(0, before + d)));
    const anchored = fc.tuple(near, near, daysArb).map(([s, e, days]) => ({ startMinutes: s, endMinutes: e, days, timezone: zone }));
    return fc.tuple(fc.oneof(windowArb(zone), anchored), fc.integer({ min: change - 2 * DAY, max: change + 2 * DAY }));
  });

const never = (w: CallingWindow) => (w.days !== null && w.days.length === 0) || (w.startMinutes !== null && w.startMinutes === w.endMinutes);

/** `from` and every whole minute in [from, to). */
function* minutesOf(from: number, to: number): Generator<number> {
  if (from < to) yield from;
  for (let t = Math.ceil(from / MIN + 1e-9) * MIN; t < to; t += MIN) yield t;
}

// CALLING_WINDOW_RUNS=5000 hunts harder (about a minute a thousand runs); the default keeps the file near 3 s.
const RUNS = Number(process.env.CALLING_WINDOW_RUNS ?? 150);

describe.each([
  ['random instants', anywhereArb],
  ['instants near offset changes', nearChangeArb],
])('against the model, %s', (_name, arb) => {
  it('is open exactly when the model is', () => {
    fc.assert(
      fc.property(arb, ([w, at]) => {
        expect(isWindowOpen(at, w)).toBe(new WindowOracle(w, at, at).isOpen(at));
      }),
      { numRuns: RUNS },
    );
  });

  it('opens next at the first open instant: ≥ at, open, and nothing open before it', () => {
    fc.assert(
      fc.property(arb, ([w, at]) => {
        const model = new WindowOracle(w, at, at + SPAN_DAYS * DAY);
        const next = nextWindowOpening(at, w);
        expect(next).toBe(model.nextOpening(at));
        if (never(w)) {
          expect(next).toBe(null);
          return;
        }
        expect(next).not.toBe(null);
        expect(next!).toBeGreaterThanOrEqual(at);
        expect(model.isOpen(next!)).toBe(true);
        expect(isWindowOpen(next!, w)).toBe(true);
        for (const t of minutesOf(at, next!)) if (model.isOpen(t)) throw new Error(`open at ${new Date(t).toISOString()} before the opening`);
      }),
      { numRuns: RUNS },
    );
  });

  it('closes next after at: closed there, open everywhere before', () => {
    fc.assert(
      fc.property(arb, ([w, at]) => {
        const model = new WindowOracle(w, at, at + SPAN_DAYS * DAY);
        const close = nextWindowClosing(at, w);
        if (!model.isOpen(at)) {
          expect(close).toBe(at);
          return;
        }
        expect(close).toBe(model.nextClosing(at));
        if (close === null) {
          // Only all day, every day never closes (the model saw it open to its span's end).
          const everyDay = w.days === null || WEEKDAYS.every((d) => w.days!.includes(d));
          expect(everyDay && (w.startMinutes === null || (w.startMinutes === 0 && w.endMinutes === 1440))).toBe(true);
          return;
        }
        expect(close).toBeGreaterThan(at);
        expect(model.isOpen(close)).toBe(false);
        expect(isWindowOpen(close, w)).toBe(false);
        for (const t of minutesOf(at, close)) if (!model.isOpen(t)) throw new Error(`closed at ${new Date(t).toISOString()} before the closing`);
      }),
      { numRuns: RUNS },
    );
  });

  it('reads like the plain wall-clock rule wherever the clock runs forward (spring-forward gaps included)', () => {
    fc.assert(
      fc.property(arb, ([w, at]) => {
        fc.pre(clockRunsForward(w.timezone, at - 2 * DAY, at + 2 * DAY));
        expect(isWindowOpen(at, w)).toBe(wallClockOpen(at, w));
      }),
      { numRuns: RUNS },
    );
  });
});

describe('scheduled dates against the model', () => {
  const dateOf = (t: number) => new Date(t).toISOString().slice(0, 10);
  const dateArb = fc.oneof(
    fc.tuple(fc.constantFrom(...ZONES), fc.integer({ min: FROM, max: TO }).map(dateOf)),
    // Dates on which the zone's offset changes, seen from either side of the date line.
    fc
      .constantFrom(...ZONES.filter((z) => transitionsOf(z, FROM, TO).length > 0))
      .chain((zone) => fc.tuple(fc.constant(zone), fc.constantFrom(...transitionsOf(zone, FROM, TO)), fc.integer({ min: -1, max: 1 })))
      .map(([zone, change, shift]): [string, string] => [zone, dateOf(change + oracleOffset(zone, change - 1) * MIN + shift * DAY)]),
  );

  it('a date is due when the model says it begins: the first minute the clock reaches it, and luxon’s start of day', () => {
    fc.assert(
      fc.property(dateArb, ([zone, date]) => {
        const due = scheduledDateDue(date, zone);
        expect(due).toBe(oracleFirstMinuteOf(date, zone));
        // luxon takes the LATER of two midnights (a fall-back at midnight: America/Havana,
        // America/St_Johns before 2011); the machine takes the earlier, when the date begins.
        const luxon = oracleStartOfDay(date, zone);
        if (due !== luxon) {
          expect(due).toBeLessThan(luxon);
          expect(DateTime.fromMillis(due, { zone }).toFormat('yyyy-MM-dd HH:mm:ss')).toBe(`${date} 00:00:00`);
          expect(DateTime.fromMillis(luxon, { zone }).toFormat('yyyy-MM-dd HH:mm:ss')).toBe(`${date} 00:00:00`);
        }
      }),
      { numRuns: 300 },
    );
  });
});
