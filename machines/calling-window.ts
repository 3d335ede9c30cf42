// The calling window of a batch campaign (issue 20) as pure functions of an instant: is
// it open, when does it next open, when does it next close, and when does a scheduled
// date become due. The campaign machine arms one durable deadline at the answer instead
// of polling every minute. No clock: every instant (`at`, epoch ms) is a parameter. Local
// time comes from the built-in `Intl` with the window's IANA zone, never a fixed offset;
// the formatters are cached per zone because making one costs far more than using it.
//
// Semantics:
// - A window is `startMinutes`/`endMinutes` (whole minutes of local wall-clock time since
//   midnight; both or neither), `days` (the weekdays on which the window OPENS; null =
//   every day) and `timezone`. No times means all day ([00:00, 24:00)) on the allowed
//   days; no times and no days means always open.
// - start < end: on an allowed local date D the window is open from D start until D end.
//   start > end (overnight): open from D start until (D + 1) end, so Fri 22:00–02:00 with
//   days [fri] is open Friday 22:00 → Saturday 02:00 and not Thursday night.
//   start === end is an empty window; it and an empty `days` never open, and
//   `windowProblem` refuses both at creation (a campaign that can never dial is a mistake;
//   omit the times for "all day").
// - Start is 0…1439; end is 0…1440 (1440 = the midnight that ends the day, so 09:00–24:00
//   is expressible; an end of 0 on an overnight window means the same midnight).
// - A local time T(D, m) becomes an instant as "the first instant at which the zone's
//   clock reads D m or later". So a time skipped by a spring-forward change (02:30 in
//   America/New_York on its change day) is the instant the clock jumps (03:00 EDT); a
//   time repeated by a fall-back change is its earlier occurrence; ends alike. The window
//   of day D is the half-open interval of instants [T(D, start), T(D or D + 1, end)), and
//   it is open at `at` iff some allowed day's interval holds `at`. Wherever the clock runs
//   forward (spring-forward gaps included) this is exactly "the local wall-clock time is
//   within [start, end) on an allowed day (overnight: [start, 24:00) on an allowed day or
//   [00:00, end) on the day after one)". Where the clock steps back (a fall-back change)
//   it differs on purpose: a window that opened in the repeated hour
//   stays open through the repeat instead of closing and reopening, and a window whose
//   end falls in the repeated hour closes at the end's first occurrence. A window whose
//   start and end both fall in one skipped hour is empty that day.
// - The scheduled date is due at T(date, 00:00) in the window's zone: local midnight, or
//   the first instant of the date where midnight is skipped (America/Santiago, Asia/Beirut).
// - Assumes a zone's offset changes at most once within a day of any local time, as
//   zones do in practice (Temporal's implementations look the same day either side).
import { z } from 'zod';

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** A campaign's calling window, resolved: `timezone` is already the window's zone (see `resolveWindowZone`). Plain JSON. */
export interface CallingWindow {
  /** Minutes since local midnight, 0…1439; null with `endMinutes` null: all day. */
  startMinutes: number | null;
  /** Minutes since local midnight, 0…1440; less than start: the window ends the next day. */
  endMinutes: number | null;
  /** The weekdays on which the window opens; null: every day. */
  days: Weekday[] | null;
  /** IANA zone. */
  timezone: string;
}

/** Why a window is refused, in the API's terms (contract.md: errors name the field). */
export interface WindowProblem {
  code: 'invalid_timezone' | 'invalid_request';
  field: 'window_start_minutes' | 'window_end_minutes' | 'window_days' | 'timezone';
  message: string;
}

export const DEFAULT_WINDOW_ZONE = 'Europe/London';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** Days nextWindowOpening looks ahead: a week, and a week more for an opening a DST change emptied. */
const SEARCH_DAYS = 15;

// ---- zones -------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();
/** Case variants of valid names are valid too, so the cache is bounded rather than trusted to stay small. */
const MAX_FORMATTERS = 1000;
/** IANA names only: Intl may accept offsets such as "+05:30" in later engines, which are not zones. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

function formatterOf(zone: string): Intl.DateTimeFormat | null {
  const cached = formatters.get(zone);
  if (cached) return cached;
  if (typeof zone !== 'string' || zone.length > 64 || !ZONE_NAME.test(zone)) return null;
  let made: Intl.DateTimeFormat;
  try {
    // h23: some engines print midnight as hour 24 under the default hour cycle.
    made = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    return null;
  }
  if (formatters.size >= MAX_FORMATTERS) formatters.clear();
  formatters.set(zone, made);
  return made;
}

/** True for an IANA zone name this runtime's Intl knows (`Europe/London`, `UTC`); false for offsets like `+05:30`. */
export function isValidTimeZone(tz: unknown): tz is string {
  return typeof tz === 'string' && formatterOf(tz) !== null;
}

/** The window's zone: the first valid of the campaign's zone, the agent's zone, `Europe/London` (api.md). */
export function resolveWindowZone(campaignTz: string | null | undefined, agentTz: string | null | undefined): string {
  if (isValidTimeZone(campaignTz)) return campaignTz;
  if (isValidTimeZone(agentTz)) return agentTz;
  return DEFAULT_WINDOW_ZONE;
}

function zoneFormatter(zone: string): Intl.DateTimeFormat {
  const fmt = formatterOf(zone);
  if (!fmt) throw new RangeError(`invalid time zone: ${String(zone)}`);
  return fmt;
}

// ---- civil arithmetic (proleptic Gregorian, day 0 = 1970-01-01, a Thursday) ----------

function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * ((month + 9) % 12) + 2) / 5) + day - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

const weekdayIndex = (dayNumber: number): number => (((dayNumber + 3) % 7) + 7) % 7; // 0 = mon

function monthLength(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** The local wall-clock time at `at`, as ms since 1970-01-01 00:00 of local time. */
function wallMs(at: number, fmt: Intl.DateTimeFormat): number {
  const second = Math.floor(at / 1000) * 1000;
  let year = 0, month = 0, day = 0, hour = 0, minute = 0, sec = 0, bc = false; // prettier-ignore
  for (const part of fmt.formatToParts(second)) {
    if (part.type === 'year') year = Number(part.value);
    else if (part.type === 'month') month = Number(part.value);
    else if (part.type === 'day') day = Number(part.value);
    else if (part.type === 'hour') hour = Number(part.value);
    else if (part.type === 'minute') minute = Number(part.value);
    else if (part.type === 'second') sec = Number(part.value);
    else if (part.type === 'era') bc = part.value === 'BC';
  }
  if (bc) year = 1 - year;
  return daysFromCivil(year, month, day) * DAY + ((hour * 60 + minute) * 60 + sec) * 1000 + (at - second);
}

/**
 * T(local): the first instant at which the zone's clock reads `local` or later. The one
 * or two instants that read it exactly are `local` minus the offset a day before or a
 * day after; neither reads it when `local` was skipped, and the answer is then the
 * instant the clock jumped, found by bisection between them (offsets are whole seconds).
 */
function firstInstantReading(local: number, fmt: Intl.DateTimeFormat): number {
  const a = local - (wallMs(local - DAY, fmt) - (local - DAY));
  const b = local - (wallMs(local + DAY, fmt) - (local + DAY));
  const lo = Math.min(a, b);
  const hi = Math.max(a, b);
  if (wallMs(lo, fmt) === local) return lo; // the earlier of two occurrences wins
  if (hi === lo || wallMs(hi, fmt) === local) return hi;
  // Skipped: the clock is behind `local` at lo and past it at hi.
  let before = lo / 1000;
  let after = hi / 1000;
  while (after - before > 1) {
    const mid = Math.floor((before + after) / 2);
    if (wallMs(mid * 1000, fmt) >= local) after = mid;
    else before = mid;
  }
  return after * 1000;
}

// ---- windows -----------------------------------------------------------------------

interface Prepared {
  fmt: Intl.DateTimeFormat;
  start: number;
  end: number;
  /** Bit i set: the window opens on WEEKDAYS[i]. */
  mask: number;
  always: boolean;
  never: boolean;
}

function shapeProblem(w: CallingWindow): WindowProblem | null {
  const { startMinutes: start, endMinutes: end, days } = w;
  if ((start === null) !== (end === null)) {
    const field = start === null ? 'window_start_minutes' : 'window_end_minutes';
    return { code: 'invalid_request', field, message: 'window_start_minutes and window_end_minutes go together: give both, or neither for all day' };
  }
  if (start !== null && !(Number.isInteger(start) && start >= 0 && start <= 1439)) {
    return { code: 'invalid_request', field: 'window_start_minutes', message: 'window_start_minutes must be a whole number of minutes from 0 to 1439' };
  }
  if (end !== null && !(Number.isInteger(end) && end >= 0 && end <= 1440)) {
    return { code: 'invalid_request', field: 'window_end_minutes', message: 'window_end_minutes must be a whole number of minutes from 0 to 1440' };
  }
  if (days !== null && !(Array.isArray(days) && days.every((d) => (WEEKDAYS as readonly string[]).includes(d)))) {
    return { code: 'invalid_request', field: 'window_days', message: 'window_days must list weekdays as mon, tue, wed, thu, fri, sat, sun' };
  }
  if (!isValidTimeZone(w.timezone)) {
    return { code: 'invalid_timezone', field: 'timezone', message: `timezone must be an IANA zone such as Europe/London; got ${JSON.stringify(w.timezone)}` };
  }
  return null;
}

/**
 * Why a window cannot be a campaign's, or null when it can: the shape rules (both times
 * or neither, start 0…1439, end 0…1440, known weekdays, an IANA zone) and the windows that
 * never open (start equal to end, an empty day list). The HTTP layer and `callingWindowSchema` share it.
 */
export function windowProblem(w: CallingWindow): WindowProblem | null {
  const shape = shapeProblem(w);
  if (shape) return shape;
  if (w.startMinutes !== null && w.startMinutes === w.endMinutes) {
    return { code: 'invalid_request', field: 'window_end_minutes', message: 'window_end_minutes equals window_start_minutes, so the window would never open; omit both for all day' };
  }
  if (w.days !== null && w.days.length === 0) {
    return { code: 'invalid_request', field: 'window_days', message: 'window_days is empty, so the window would never open; omit it for every day' };
  }
  return null;
}

/** The window settings, with every rule of `windowProblem` (issues carry `params.code` and the API field in `params.field`). */
export const callingWindowSchema = z
  .object({
    startMinutes: z.number().int().nullable(),
    endMinutes: z.number().int().nullable(),
    days: z.array(z.enum(WEEKDAYS)).nullable(),
    timezone: z.string(),
  })
  .superRefine((w, ctx) => {
    const problem = windowProblem(w);
    if (problem) {
      const path = { window_start_minutes: 'startMinutes', window_end_minutes: 'endMinutes', window_days: 'days', timezone: 'timezone' }[problem.field];
      ctx.addIssue({ code: 'custom', path: [path], message: problem.message, params: { code: problem.code, field: problem.field } });
    }
  });

/** The functions below accept windows that never open (they answer so); a malformed one is a programming error. */
function prepare(w: CallingWindow): Prepared {
  const problem = shapeProblem(w);
  if (problem) throw new RangeError(problem.message);
  const start = w.startMinutes ?? 0;
  const end = w.endMinutes ?? 1440;
  const mask = w.days === null ? 0b1111111 : w.days.reduce((m, d) => m | (1 << WEEKDAYS.indexOf(d)), 0);
  return { fmt: zoneFormatter(w.timezone), start, end, mask, always: mask === 0b1111111 && start === 0 && end === 1440, never: mask === 0 || start === end };
}

function checkInstant(at: number): void {
  if (!Number.isFinite(at)) throw new RangeError(`not an instant: ${at}`);
}

const opensOn = (p: Prepared, dayNumber: number): boolean => (p.mask & (1 << weekdayIndex(dayNumber))) !== 0;

/** The interval of instants [open, close) of the window that opens on local day `dayNumber`; empty when open === close. */
function intervalOf(p: Prepared, dayNumber: number): [number, number] {
  const open = firstInstantReading(dayNumber * DAY + p.start * MINUTE, p.fmt);
  const closeDay = p.start < p.end ? dayNumber : dayNumber + 1;
  return [open, firstInstantReading(closeDay * DAY + p.end * MINUTE, p.fmt)];
}

const localDay = (at: number, p: Prepared): number => Math.floor(wallMs(at, p.fmt) / DAY);

/**
 * The interval holding `at`, or null. Only the windows of the local day before, of, and
 * after `at` can hold it: an interval ends by the day after it opens, and no clock steps
 * back a whole day.
 */
function intervalHolding(at: number, p: Prepared): [number, number] | null {
  const today = localDay(at, p);
  for (let d = today - 1; d <= today + 1; d++) {
    if (!opensOn(p, d)) continue;
    const [open, close] = intervalOf(p, d);
    if (open <= at && at < close) return [open, close];
  }
  return null;
}

/** Whether the window is open at `at`. */
export function isWindowOpen(at: number, window: CallingWindow): boolean {
  checkInstant(at);
  const p = prepare(window);
  if (p.always) return true;
  if (p.never) return false;
  return intervalHolding(at, p) !== null;
}

/** The first instant ≥ `at` at which the window is open: `at` itself when open now; null when it never opens. */
export function nextWindowOpening(at: number, window: CallingWindow): number | null {
  checkInstant(at);
  const p = prepare(window);
  if (p.always) return at;
  if (p.never) return null;
  // Intervals of later days never start earlier (T only grows with local time), so the
  // first one that has not ended by `at` is the answer.
  const today = localDay(at, p);
  for (let d = today - 1; d <= today + SEARCH_DAYS; d++) {
    if (!opensOn(p, d)) continue;
    const [open, close] = intervalOf(p, d);
    if (open < close && at < close) return Math.max(open, at);
  }
  return null;
}

/**
 * The first instant ≥ `at` at which the window is closed: `at` itself when closed now;
 * null when it never closes (all days, all day). Days whose windows touch (Mon and Tue
 * all day) are one stretch: it closes where the stretch ends.
 */
export function nextWindowClosing(at: number, window: CallingWindow): number | null {
  checkInstant(at);
  const p = prepare(window);
  if (p.always) return null;
  if (p.never) return at;
  const holding = intervalHolding(at, p);
  if (!holding) return at;
  let close = holding[1];
  // Walk later days while their windows start exactly where this one stops. Only a DST
  // change can join two windows that are not all day, so a stretch lasting a week would
  // be `always`: the walk is short, and the cap only makes it total.
  const first = localDay(close, p) - 1;
  for (let d = first, last = first + 8; d <= last && d < first + 400; d++) {
    if (!opensOn(p, d)) continue;
    const [open, next] = intervalOf(p, d);
    if (open >= next || next <= close) continue;
    if (open > close) return close;
    close = next;
    last = d + 8;
  }
  return close;
}

/** Whether the window is open at `at`, and when that next changes (null: never). One deadline for the machine to arm. */
export function windowState(at: number, window: CallingWindow): { open: boolean; changesAt: number | null } {
  const open = isWindowOpen(at, window);
  return { open, changesAt: open ? nextWindowClosing(at, window) : nextWindowOpening(at, window) };
}

// ---- scheduled date ----------------------------------------------------------------

const LOCAL_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** `YYYY-MM-DD`, a real calendar date. */
export function isLocalDate(date: unknown): date is string {
  if (typeof date !== 'string') return false;
  const m = LOCAL_DATE.exec(date);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return month >= 1 && month <= 12 && day >= 1 && day <= monthLength(year, month);
}

export const localDateSchema = z.string().refine(isLocalDate, { message: 'expected a date YYYY-MM-DD' });

/** The instant `date` begins in `timezone`: local midnight, or the first instant of the date where midnight is skipped. */
export function scheduledDateDue(date: string, timezone: string): number {
  if (!isLocalDate(date)) throw new RangeError(`not a date YYYY-MM-DD: ${String(date)}`);
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  return firstInstantReading(daysFromCivil(year, month, day) * DAY, zoneFormatter(timezone));
}
