// The booking tools a call's model is offered when its number has a CRM integration
// with a calendar (issue 9): find free slots, book, reschedule, cancel. Pure: the tool
// definitions, the model's arguments checked with zod, times in the call's IANA zone
// (read as the model writes them, spoken as a person says them), the read-back the
// engine says before a change when confirmation is required, and the Booking object of
// api.md each change becomes. The calls themselves are in actors/agent/engine-bookings.ts.
import { z } from 'zod';
import type { LlmTool } from '../providers/llm.ts';

export const BOOKING_TOOLS = {
  find: 'find_free_slots',
  book: 'book_appointment',
  reschedule: 'reschedule_appointment',
  cancel: 'cancel_appointment',
} as const;
export const BOOKING_TOOL_NAMES: ReadonlySet<string> = new Set(Object.values(BOOKING_TOOLS));

/** Days of free slots one search may cover, and how many slots the model is shown. */
export const MAX_SEARCH_DAYS = 14;
export const MAX_SLOTS_SHOWN = 12;

/** Api.md's Booking object. */
export interface Booking {
  action: 'created' | 'rescheduled' | 'cancelled';
  booking_uid: string;
  /** ISO 8601; omitted for cancelled. */
  start?: string;
  attendee_name?: string;
  attendee_email?: string;
  service?: string;
  timezone: string;
}

/** A calendar change the model asked for, its arguments checked. */
export type BookingAction =
  | { kind: 'book'; start: string; name?: string; email?: string; service?: string }
  | { kind: 'reschedule'; bookingUid: string | null; start: string }
  | { kind: 'cancel'; bookingUid: string | null };

const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD');
const startTime = z.string().min(10).max(40);
const optionalText = (max: number) => z.string().trim().max(max).optional();

export const findArgs = z.object({ from_date: isoDate, days: z.number().int().min(1).max(MAX_SEARCH_DAYS).optional() });
const bookArgs = z.object({ start: startTime, name: optionalText(200), email: z.email().max(254).optional(), service: optionalText(200) });
const rescheduleArgs = z.object({ start: startTime, booking_uid: z.string().min(1).max(200).optional() });
const cancelArgs = z.object({ booking_uid: z.string().min(1).max(200).optional() });

/** The tools, described for the model; times are in `timezone`. */
export function bookingToolDefinitions(timezone: string): LlmTool[] {
  const tool = (name: string, description: string, parameters: Record<string, unknown>): LlmTool => ({ type: 'function', function: { name, description, parameters } });
  const startParam = {
    type: 'string',
    description: `The appointment's start, exactly as find_free_slots gave it (ISO 8601 with offset), or a local time YYYY-MM-DDTHH:MM in ${timezone}.`,
  };
  const uidParam = { type: 'string', description: 'The booking_uid of the appointment; leave it out for the appointment booked earlier in this call.' };
  return [
    tool(
      BOOKING_TOOLS.find,
      `Find free appointment times in the calendar. Times are in ${timezone}. Use it before booking or moving an appointment, then offer the caller a few of the times.`,
      {
        type: 'object',
        properties: {
          from_date: { type: 'string', description: `First day to search, YYYY-MM-DD (${timezone}).` },
          days: { type: 'integer', minimum: 1, maximum: MAX_SEARCH_DAYS, description: 'How many days to search (default 1).' },
        },
        required: ['from_date'],
      },
    ),
    tool(BOOKING_TOOLS.book, 'Book an appointment for the caller at a free time the caller chose. Only book times find_free_slots returned.', {
      type: 'object',
      properties: {
        start: startParam,
        name: { type: 'string', description: "The caller's full name, if they gave it." },
        email: { type: 'string', description: "The caller's email address, if they gave it." },
        service: { type: 'string', description: 'What the appointment is for (the service or appointment type), if known.' },
      },
      required: ['start'],
    }),
    tool(BOOKING_TOOLS.reschedule, "Move the caller's appointment to another free time the caller chose.", {
      type: 'object',
      properties: { start: startParam, booking_uid: uidParam },
      required: ['start'],
    }),
    tool(BOOKING_TOOLS.cancel, "Cancel the caller's appointment.", { type: 'object', properties: { booking_uid: uidParam } }),
  ];
}

/** The model's arguments (JSON text) as an object, or an error the model can act on. */
function argumentsOf(text: string): Record<string, unknown> | string {
  if (text.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  return 'the arguments were not a JSON object; call the tool again with valid JSON arguments';
}

const problem = (err: z.ZodError): string =>
  `invalid arguments: ${err.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ')}`;

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

export function parseFind(args: string, timezone: string): Parsed<{ from: number; to: number }> {
  const raw = argumentsOf(args);
  if (typeof raw === 'string') return { ok: false, error: raw };
  const p = findArgs.safeParse(raw);
  if (!p.success) return { ok: false, error: problem(p.error) };
  const [y, m, d] = p.data.from_date.split('-').map(Number) as [number, number, number];
  const from = zonedInstant(y, m - 1, d, 0, 0, timezone);
  const to = zonedInstant(y, m - 1, d + (p.data.days ?? 1), 0, 0, timezone);
  return { ok: true, value: { from, to } };
}

/** A change the model asked for: its checked action, or what was wrong with the arguments. */
export function parseAction(name: string, args: string, timezone: string): Parsed<BookingAction> {
  const raw = argumentsOf(args);
  if (typeof raw === 'string') return { ok: false, error: raw };
  const start = (text: string): string | null => {
    const ms = parseStart(text, timezone);
    return ms === null ? null : zonedIso(ms, timezone);
  };
  const badStart = { ok: false as const, error: `invalid arguments: start must be a time find_free_slots gave, or YYYY-MM-DDTHH:MM in ${timezone}` };
  switch (name) {
    case BOOKING_TOOLS.book: {
      const p = bookArgs.safeParse(raw);
      if (!p.success) return { ok: false, error: problem(p.error) };
      const s = start(p.data.start);
      if (s === null) return badStart;
      return {
        ok: true,
        value: { kind: 'book', start: s, ...(p.data.name ? { name: p.data.name } : {}), ...(p.data.email ? { email: p.data.email } : {}), ...(p.data.service ? { service: p.data.service } : {}) },
      };
    }
    case BOOKING_TOOLS.reschedule: {
      const p = rescheduleArgs.safeParse(raw);
      if (!p.success) return { ok: false, error: problem(p.error) };
      const s = start(p.data.start);
      if (s === null) return badStart;
      return { ok: true, value: { kind: 'reschedule', bookingUid: p.data.booking_uid ?? null, start: s } };
    }
    case BOOKING_TOOLS.cancel: {
      const p = cancelArgs.safeParse(raw);
      if (!p.success) return { ok: false, error: problem(p.error) };
      return { ok: true, value: { kind: 'cancel', bookingUid: p.data.booking_uid ?? null } };
    }
    default:
      return { ok: false, error: `there is no booking tool named ${name}` };
  }
}

/** ISO 8601 with an offset or Z, or a local YYYY-MM-DDTHH:MM[:SS] in `timezone`; null when neither. */
export function parseStart(text: string, timezone: string): number | null {
  const t = text.trim();
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(t)) {
    const ms = Date.parse(t);
    return Number.isFinite(ms) ? ms : null;
  }
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::\d{2})?$/.exec(t);
  if (!m) return null;
  const [, y, mo, d, h, mi] = m.map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59) return null;
  return zonedInstant(y, mo - 1, d, h, mi, timezone);
}

/** A time as a person says it in `timezone`: "Tuesday, November 24 at 10 AM". */
export function spokenTime(iso: string, timezone: string): string {
  const at = new Date(Date.parse(iso));
  const day = new Intl.DateTimeFormat('en-US', { timeZone: timezone, weekday: 'long', month: 'long', day: 'numeric' }).format(at);
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: timezone, hour: 'numeric', minute: '2-digit' }).format(at);
  return `${day} at ${parts.replace(':00', '')}`;
}

/** The read-back before a change (require_booking_confirmation); `current` is the appointment's time now, if known. */
export function readBack(action: BookingAction, timezone: string, current: { start?: string; service?: string } | null): string {
  switch (action.kind) {
    case 'book': {
      const what = action.service ? `${article(action.service)} ${action.service}` : 'an appointment';
      const who = action.name ? ` for ${action.name}` : '';
      return `Just to confirm: ${what}${who} on ${spokenTime(action.start, timezone)}. Shall I book it?`;
    }
    case 'reschedule': {
      const from = current?.start ? ` from ${spokenTime(current.start, timezone)}` : '';
      return `Just to confirm: I will move your appointment${from} to ${spokenTime(action.start, timezone)}. Shall I make that change?`;
    }
    case 'cancel': {
      const when = current?.start ? ` on ${spokenTime(current.start, timezone)}` : '';
      return `Just to confirm: I will cancel your appointment${when}. Shall I cancel it?`;
    }
  }
}

const article = (word: string): string => (/^[aeiou]/i.test(word) ? 'an' : 'a');

/** The offset of `zone` at instant `ms`, in minutes east of UTC. */
export function zoneOffsetMinutes(ms: number, zone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(ms));
  const get = (t: string) => Number(parts.find((p) => p.type === t)!.value);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60_000);
}

/** `ms` as local ISO 8601 in `zone` with its offset: 2026-11-24T09:30:00-05:00. */
export function zonedIso(ms: number, zone: string): string {
  const offset = zoneOffsetMinutes(ms, zone);
  const local = new Date(ms + offset * 60_000).toISOString().slice(0, 19);
  const abs = Math.abs(offset);
  return `${local}${offset < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The instant of local wall time in `zone` (two passes settle DST edges). */
function zonedInstant(y: number, m: number, d: number, h: number, min: number, zone: string): number {
  const wall = Date.UTC(y, m, d, h, min);
  let ms = wall - zoneOffsetMinutes(wall, zone) * 60_000;
  ms = wall - zoneOffsetMinutes(ms, zone) * 60_000;
  return ms;
}

/** A usable IANA zone: the agent's, else UTC. */
export function bookingZone(timezone: string | null | undefined): string {
  if (!timezone) return 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return timezone;
  } catch {
    return 'UTC';
  }
}
