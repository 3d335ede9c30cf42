// An independent model of the calling window (machines/calling-window.ts) for property
// tests. It shares the definition, not the method: the machine turns local times into
// instants with Intl offsets, candidates and bisection; this model never converts a local
// time into an instant at all. It reads the zone's clock with luxon at every minute of a
// bounded span (brute force) and lets a local time happen at the first minute the clock
// has reached it, which is the definition: T(D, m) = the first instant at which the clock
// reads D m or later. So gaps, repeated hours and skipped days come out of the clock's
// readings, not out of rules written twice.
//
// Precision: the model samples whole minutes, which is exact for every zone it is used
// with, from 2000 on (all offsets and transitions are whole minutes). It reads luxon's
// offset once an hour and every minute only within an hour whose two ends differ: no zone
// changes offset twice within an hour.
import { DateTime, IANAZone } from 'luxon';
import type { CallingWindow } from '../../machines/calling-window.ts';

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const DAY_NAMES = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

function zoneOf(name: string): IANAZone {
  const zone = IANAZone.create(name);
  if (!zone.isValid) throw new Error(`oracle: unknown zone ${name}`);
  return zone;
}

/** The zone's offset (minutes) at `t`, read by luxon. */
export const oracleOffset = (zone: string, t: number): number => zoneOf(zone).offset(t);

/** The clock of `zone` at every minute of [from, to] (whole minutes), as local ms (local time read as UTC). */
class Clock {
  readonly t0: number;
  readonly local: Float64Array;
  /** The latest local time the clock has shown up to each minute: a mark is reached when this passes it. */
  readonly reached: Float64Array;

  constructor(readonly zone: string, from: number, to: number) {
    const z = zoneOf(zone);
    this.t0 = Math.floor(from / HOUR) * HOUR;
    const hours = Math.ceil((to - this.t0) / HOUR);
    this.local = new Float64Array(hours * 60 + 1);
    let offsetAtHour = z.offset(this.t0);
    for (let h = 0; h < hours; h++) {
      const start = this.t0 + h * HOUR;
      const nextOffset = z.offset(start + HOUR);
      for (let m = 0; m < 60; m++) {
        const t = start + m * MIN;
        const offset = nextOffset === offsetAtHour ? offsetAtHour : z.offset(t);
        this.local[h * 60 + m] = t + offset * MIN;
      }
      offsetAtHour = nextOffset;
    }
    this.local[hours * 60] = this.t0 + hours * HOUR + offsetAtHour * MIN;
    this.reached = new Float64Array(this.local.length);
    let max = -Infinity;
    for (let i = 0; i < this.local.length; i++) this.reached[i] = max = Math.max(max, this.local[i]!);
  }

  instant(i: number): number {
    return this.t0 + i * MIN;
  }

  get end(): number {
    return this.instant(this.local.length - 1);
  }

  /** The first minute at which the clock has shown `mark` or later; null when not within the span. */
  firstReaching(mark: number): number | null {
    if (mark <= this.reached[0]!) throw new Error('oracle: mark before the span');
    let i = 0;
    while (i < this.reached.length && this.reached[i]! < mark) i++; // brute force on purpose
    return i < this.reached.length ? this.instant(i) : null;
  }
}

/** The local dates (as luxon UTC midnights) whose marks fall inside the clock's span. */
function datesOf(clock: Clock): DateTime[] {
  const first = DateTime.fromMillis(clock.t0, { zone: clock.zone });
  const last = DateTime.fromMillis(clock.end, { zone: clock.zone });
  const out: DateTime[] = [];
  for (let d = DateTime.utc(first.year, first.month, first.day).plus({ days: 1 }); d < DateTime.utc(last.year, last.month, last.day); d = d.plus({ days: 1 })) out.push(d);
  return out;
}

/**
 * The window's open intervals over a span, computed from the clock readings: for each
 * local date on which the window opens, [first minute reaching its start, first minute
 * reaching its end), merged where they touch.
 */
export class WindowOracle {
  private readonly intervals: Array<[number, number]> = [];
  private readonly from: number;
  private readonly to: number;

  /**
   * Answers for instants in [from, to]; reads the clock three days either side. Two were
   * not enough: a window opening late on the day before `from` (overnight, up to a day
   * long) must be seen, and with an hour given back between, two days before `from` can
   * be that day's very first minute, which `datesOf` skips (a seeded run found it:
   * America/Nuuk, 23:59–23:58, the day after its fall-back).
   */
  constructor(readonly window: CallingWindow, from: number, to: number) {
    this.from = from;
    this.to = to;
    const clock = new Clock(window.timezone, from - 3 * DAY, to + 3 * DAY);
    const hasTimes = window.startMinutes !== null && window.endMinutes !== null;
    const start = window.startMinutes ?? 0;
    const end = window.endMinutes ?? 0;
    for (const date of datesOf(clock)) {
      if (window.days !== null && !window.days.includes(DAY_NAMES[date.weekday - 1] as never)) continue;
      let openMark: number;
      let closeMark: number;
      if (!hasTimes) {
        openMark = date.toMillis();
        closeMark = date.plus({ days: 1 }).toMillis();
      } else if (start === end) {
        continue;
      } else {
        openMark = date.toMillis() + start * MIN;
        closeMark = (start < end ? date : date.plus({ days: 1 })).toMillis() + end * MIN;
      }
      const open = clock.firstReaching(openMark);
      if (open === null) continue;
      const close = clock.firstReaching(closeMark) ?? Infinity;
      if (open >= close) continue;
      const last = this.intervals[this.intervals.length - 1];
      if (last && open <= last[1]) last[1] = Math.max(last[1], close);
      else this.intervals.push([open, close]);
    }
  }

  private check(at: number): void {
    if (at < this.from || at > this.to) throw new Error('oracle: instant outside its span');
  }

  isOpen(at: number): boolean {
    this.check(at);
    return this.intervals.some(([open, close]) => open <= at && at < close);
  }

  /** The first instant ≥ at that is open; null when none within the span. */
  nextOpening(at: number): number | null {
    if (this.isOpen(at)) return at;
    return this.intervals.find(([open]) => open > at)?.[0] ?? null;
  }

  /** The first instant ≥ at that is closed; null when the window stays open past the span (the model cannot see further). */
  nextClosing(at: number): number | null {
    this.check(at);
    const holding = this.intervals.find(([open, close]) => open <= at && at < close);
    if (!holding) return at;
    return holding[1] > this.to ? null : holding[1];
  }
}

/** When `date` (YYYY-MM-DD) begins in `zone`, by luxon's own start of day. */
export function oracleStartOfDay(date: string, zone: string): number {
  return DateTime.fromISO(date, { zone }).startOf('day').toMillis();
}

/** When `date` begins in `zone` by the clock readings: the first minute the clock reaches its midnight. */
export function oracleFirstMinuteOf(date: string, zone: string): number {
  const midnight = DateTime.fromISO(date, { zone: 'utc' }).toMillis();
  return new Clock(zone, midnight - 2 * DAY, midnight + 3 * DAY).firstReaching(midnight)!;
}

/**
 * The plain reading of the rules, on local wall-clock fields: open iff the local time is
 * within [start, end) on an allowed day (overnight: [start, 24:00) on an allowed day or
 * [00:00, end) on the day after one). The intervals agree with it wherever the clock runs
 * forward, skipped hours included; only around a fall-back change do they differ, on purpose.
 */
export function wallClockOpen(at: number, window: CallingWindow): boolean {
  const local = DateTime.fromMillis(at, { zone: window.timezone });
  const allowed = (weekday: number) => window.days === null || window.days.includes(DAY_NAMES[weekday - 1] as never);
  const minute = local.hour * 60 + local.minute;
  const yesterday = ((local.weekday + 5) % 7) + 1;
  if (window.startMinutes === null || window.endMinutes === null) return allowed(local.weekday);
  const { startMinutes: start, endMinutes: end } = window;
  if (start < end) return allowed(local.weekday) && start <= minute && minute < end;
  if (start > end) return (allowed(local.weekday) && minute >= start) || (allowed(yesterday) && minute < end);
  return false;
}

/** Whether the clock of `zone` never steps back within [from, to]: luxon's offset never falls (sampled hourly). */
export function clockRunsForward(zone: string, from: number, to: number): boolean {
  const z = zoneOf(zone);
  let last = z.offset(from);
  for (let t = from + HOUR; t < to + HOUR; t += HOUR) {
    const offset = z.offset(Math.min(t, to));
    if (offset < last) return false;
    last = offset;
  }
  return true;
}

const transitionCache = new Map<string, number[]>();

/** The instants at which luxon's offset for `zone` changes within [from, to): weekly samples, then bisection to the minute. */
export function transitionsOf(zone: string, from: number, to: number): number[] {
  const key = `${zone} ${from} ${to}`;
  const cached = transitionCache.get(key);
  if (cached) return cached;
  const z = zoneOf(zone);
  const out: number[] = [];
  const WEEK = 7 * DAY;
  let offset = z.offset(from);
  for (let t = from; t < to; t += WEEK) {
    const next = z.offset(t + WEEK);
    if (next !== offset) {
      let lo = t / MIN;
      let hi = (t + WEEK) / MIN;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (z.offset(mid * MIN) === offset) lo = mid;
        else hi = mid;
      }
      out.push(hi * MIN);
    }
    offset = next;
  }
  transitionCache.set(key, out);
  return out;
}
