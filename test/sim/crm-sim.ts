// Simulator of the CRM's REST API (the HighLevel v2 shape, reached at CRM_BASE_URL) for
// tests and `npm run sim`: the contact and calendar endpoints the service uses, with
// the CRM's own rules, so the service's client meets what it would meet in production:
//   POST   /contacts/upsert                          {locationId, phone, name?, email?, …} → {new, contact}
//   POST   /contacts/{contactId}/notes               {body}                                → {note}
//   GET    /contacts/{contactId}/notes                                                     → {notes: [note, …]}
//   GET    /calendars/{calendarId}/free-slots        ?startDate&endDate (epoch ms)&timezone → {"YYYY-MM-DD": {slots: [ISO with offset]}}
//   POST   /calendars/events/appointments            {calendarId, locationId, contactId, startTime, endTime?, title?} → the event
//   PUT    /calendars/events/appointments/{eventId}  {startTime, endTime?, …}              → the event
//   DELETE /calendars/events/{eventId}                                                     → {succeeded: true}
// Every request needs `Authorization: Bearer <private integration token>` and a
// `Version` header; a token reaches only its own location (403 otherwise). A calendar
// offers slots of `slotMinutes` within its opening hours on weekdays, in its time zone,
// minus those already booked; booking a slot that is not free answers 400 as the CRM
// does. Faults come from sim-http.ts (`fail`, `chaos`).
import { randomUUID } from 'node:crypto';
import { startSimServer, type RecordedRequest, type SimFault, type SimResponse, type SimServer } from './sim-http.ts';

export interface CrmCalendar {
  id: string;
  locationId: string;
  /** IANA zone the opening hours are in (default America/New_York). */
  timezone?: string;
  /** Length of a slot (default 30). */
  slotMinutes?: number;
  /** Opening hours on weekdays, local time, [from, to) in hours (default [9, 17]). */
  hours?: [number, number];
}

export interface CrmContact {
  id: string;
  locationId: string;
  phone: string;
  name?: string;
  email?: string;
  [field: string]: unknown;
}

export interface CrmNote {
  id: string;
  contactId: string;
  body: string;
  dateAdded: string;
}

export interface CrmAppointment {
  id: string;
  calendarId: string;
  locationId: string;
  contactId: string;
  title?: string;
  /** ISO 8601 with the offset the client sent. */
  startTime: string;
  endTime: string;
  appointmentStatus: 'confirmed' | 'cancelled';
}

export interface CrmSimOptions {
  /** 0 (a free port) in tests; a fixed one for `npm run sim`. */
  port?: number;
  /** Private integration tokens and the location each one reaches. */
  tokens: Record<string, string>;
  calendars?: CrmCalendar[];
  /** The CRM's clock (ms): slots before it are not offered (default Date.now). */
  now?: () => number;
  /** Serve HTTPS, as the real CRM does, with this certificate (a test CA's: test/sim/webhook-receiver.ts makeTestCa). */
  tls?: { cert: string; key: string };
}

export interface CrmSim {
  baseUrl: string;
  requests: RecordedRequest<Record<string, unknown> | undefined>[];
  contacts: Map<string, CrmContact>;
  notes: CrmNote[];
  appointments: Map<string, CrmAppointment>;
  addCalendar(calendar: CrmCalendar): void;
  fail(fault: SimFault<Record<string, unknown> | undefined>): void;
  close(): Promise<void>;
}

/** The Version header values the CRM documents (contacts 2021-07-28, calendars 2021-04-15); any is accepted. */
const VERSIONS = new Set(['2021-04-15', '2021-07-28']);
const DAY_MS = 86_400_000;
/** The CRM refuses free-slot ranges longer than this. */
const MAX_RANGE_DAYS = 31;

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

/** `ms` as local ISO 8601 in `zone` with its offset, as the CRM writes slots: 2026-11-24T09:30:00-05:00. */
export function zonedIso(ms: number, zone: string): string {
  const offset = zoneOffsetMinutes(ms, zone);
  const local = new Date(ms + offset * 60_000).toISOString().slice(0, 19);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The instant of local wall time (y, m, d, h, min) in `zone` (two passes settle DST edges). */
function zonedInstant(y: number, m: number, d: number, h: number, min: number, zone: string): number {
  const wall = Date.UTC(y, m, d, h, min);
  let ms = wall - zoneOffsetMinutes(wall, zone) * 60_000;
  ms = wall - zoneOffsetMinutes(ms, zone) * 60_000;
  return ms;
}

function json(status: number, body: unknown): SimResponse {
  return { status, body };
}

function error(status: number, message: string): SimResponse {
  return json(status, { statusCode: status, message });
}

export async function startCrmSim(options: CrmSimOptions): Promise<CrmSim> {
  const now = options.now ?? (() => Date.now());
  const calendars = new Map<string, Required<CrmCalendar>>();
  const contacts = new Map<string, CrmContact>();
  const notes: CrmNote[] = [];
  const appointments = new Map<string, CrmAppointment>();

  const addCalendar = (c: CrmCalendar): void => {
    calendars.set(c.id, { timezone: 'America/New_York', slotMinutes: 30, hours: [9, 17], ...c });
  };
  for (const c of options.calendars ?? []) addCalendar(c);

  /** Slot start instants of `cal` in [from, to), open, in the future and not booked. */
  function freeSlots(cal: Required<CrmCalendar>, from: number, to: number): number[] {
    const booked = new Set<number>();
    for (const a of appointments.values()) {
      if (a.calendarId === cal.id && a.appointmentStatus === 'confirmed') booked.add(Date.parse(a.startTime));
    }
    const out: number[] = [];
    const earliest = now();
    for (let day = from - DAY_MS; day < to + DAY_MS; day += DAY_MS) {
      const local = new Date(day + zoneOffsetMinutes(day, cal.timezone) * 60_000);
      const weekday = local.getUTCDay();
      if (weekday === 0 || weekday === 6) continue;
      for (let minute = cal.hours[0] * 60; minute + cal.slotMinutes <= cal.hours[1] * 60; minute += cal.slotMinutes) {
        const at = zonedInstant(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate(), Math.floor(minute / 60), minute % 60, cal.timezone);
        if (at >= from && at < to && at > earliest && !booked.has(at) && !out.includes(at)) out.push(at);
      }
    }
    return out.sort((a, b) => a - b);
  }

  /** Whether `start` is an offered slot of `cal` (an event being moved may keep its own). */
  function isFree(cal: Required<CrmCalendar>, start: number, movingEvent?: string): boolean {
    const own = movingEvent === undefined ? undefined : appointments.get(movingEvent);
    if (own && Date.parse(own.startTime) === start) return true;
    return freeSlots(cal, start, start + 1).length === 1;
  }

  function route(req: RecordedRequest<Record<string, unknown> | undefined>): SimResponse {
    const auth = /^Bearer (.+)$/.exec(String(req.headers['authorization'] ?? ''));
    const location = auth ? options.tokens[auth[1]!] : undefined;
    if (location === undefined) return error(401, 'Invalid JWT');
    if (!VERSIONS.has(String(req.headers['version'] ?? ''))) return error(400, 'Version header was not found');
    const body = req.body ?? {};
    const segments = req.path.split('/').filter(Boolean).map(decodeURIComponent);
    const key = `${req.method} /${segments.map((s, i) => (i > 0 && !['upsert', 'notes', 'free-slots', 'events', 'appointments'].includes(s) ? ':' : s)).join('/')}`;

    switch (key) {
      case 'POST /contacts/upsert': {
        if (body['locationId'] !== location) return error(403, 'The token does not have access to this location.');
        const phone = body['phone'];
        if (typeof phone !== 'string' || !/^\+[1-9]\d{6,14}$/.test(phone)) return error(422, 'phone must be a valid phone number');
        const existing = [...contacts.values()].find((c) => c.locationId === location && c.phone === phone);
        const { locationId: _l, ...fields } = body;
        if (existing) {
          Object.assign(existing, fields);
          return json(200, { new: false, contact: existing, traceId: randomUUID() });
        }
        const contact: CrmContact = { ...fields, id: randomUUID().replace(/-/g, '').slice(0, 20), locationId: location, phone };
        contacts.set(contact.id, contact);
        return json(201, { new: true, contact, traceId: randomUUID() });
      }
      case 'POST /contacts/:/notes': {
        const contact = contacts.get(segments[1]!);
        if (!contact || contact.locationId !== location) return error(404, 'Contact not found');
        if (typeof body['body'] !== 'string' || body['body'].length === 0) return error(422, 'body must be a string');
        const note: CrmNote = { id: randomUUID().replace(/-/g, '').slice(0, 20), contactId: contact.id, body: body['body'], dateAdded: new Date(now()).toISOString() };
        notes.push(note);
        return json(201, { note });
      }
      case 'GET /contacts/:/notes': {
        const contact = contacts.get(segments[1]!);
        if (!contact || contact.locationId !== location) return error(404, 'Contact not found');
        return json(200, { notes: notes.filter((n) => n.contactId === contact.id) });
      }
      case 'GET /calendars/:/free-slots': {
        const cal = calendars.get(segments[1]!);
        if (!cal || cal.locationId !== location) return error(404, 'Calendar not found');
        const from = Number(req.query['startDate']);
        const to = Number(req.query['endDate']);
        if (!Number.isFinite(from) || !Number.isFinite(to) || to <= from) return error(422, 'startDate and endDate must be epoch milliseconds, startDate first');
        if (to - from > MAX_RANGE_DAYS * DAY_MS) return error(422, `the range must be at most ${MAX_RANGE_DAYS} days`);
        const zone = typeof req.query['timezone'] === 'string' ? req.query['timezone'] : cal.timezone;
        try {
          new Intl.DateTimeFormat('en-US', { timeZone: zone });
        } catch {
          return error(422, 'timezone must be an IANA time zone');
        }
        const byDay: Record<string, { slots: string[] }> = {};
        for (const at of freeSlots(cal, from, to)) {
          const iso = zonedIso(at, zone);
          (byDay[iso.slice(0, 10)] ??= { slots: [] }).slots.push(iso);
        }
        return json(200, { ...byDay, traceId: randomUUID() });
      }
      case 'POST /calendars/events/appointments': {
        const cal = calendars.get(String(body['calendarId']));
        if (!cal || cal.locationId !== location || body['locationId'] !== location) return error(404, 'Calendar not found');
        const contact = contacts.get(String(body['contactId']));
        if (!contact || contact.locationId !== location) return error(422, 'contactId must be a contact of this location');
        const start = Date.parse(String(body['startTime']));
        if (!Number.isFinite(start)) return error(422, 'startTime must be ISO 8601');
        if (!isFree(cal, start)) return error(400, 'The slot you have selected is no longer available.');
        const end = body['endTime'] !== undefined ? String(body['endTime']) : zonedIso(start + cal.slotMinutes * 60_000, cal.timezone);
        const event: CrmAppointment = {
          id: randomUUID().replace(/-/g, '').slice(0, 20),
          calendarId: cal.id,
          locationId: location,
          contactId: contact.id,
          ...(typeof body['title'] === 'string' ? { title: body['title'] } : {}),
          startTime: String(body['startTime']),
          endTime: end,
          appointmentStatus: 'confirmed',
        };
        appointments.set(event.id, event);
        return json(201, event);
      }
      case 'PUT /calendars/events/appointments/:': {
        const event = appointments.get(segments[3]!);
        if (!event || event.locationId !== location) return error(404, 'Appointment not found');
        const cal = calendars.get(event.calendarId)!;
        if (body['startTime'] !== undefined) {
          const start = Date.parse(String(body['startTime']));
          if (!Number.isFinite(start)) return error(422, 'startTime must be ISO 8601');
          if (!isFree(cal, start, event.id)) return error(400, 'The slot you have selected is no longer available.');
          event.startTime = String(body['startTime']);
          event.endTime = body['endTime'] !== undefined ? String(body['endTime']) : zonedIso(start + cal.slotMinutes * 60_000, cal.timezone);
        }
        if (typeof body['title'] === 'string') event.title = body['title'];
        if (body['appointmentStatus'] === 'cancelled' || body['appointmentStatus'] === 'confirmed') event.appointmentStatus = body['appointmentStatus'];
        return json(200, event);
      }
      case 'DELETE /calendars/events/:': {
        const event = appointments.get(segments[2]!);
        if (!event || event.locationId !== location) return error(404, 'Event not found');
        appointments.delete(event.id);
        return json(200, { succeeded: true });
      }
      default:
        return error(404, `Cannot ${req.method} ${req.path}`);
    }
  }

  const server: SimServer<Record<string, unknown> | undefined> = await startSimServer(
    (raw) => {
      if (raw === '') return undefined;
      try {
        const parsed: unknown = JSON.parse(raw);
        return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
      } catch {
        return undefined;
      }
    },
    route,
    options.port ?? 0,
    {},
    options.tls,
  );

  return {
    baseUrl: server.baseUrl,
    requests: server.requests,
    contacts,
    notes,
    appointments,
    addCalendar,
    fail: (f) => server.fail(f),
    close: () => server.close(),
  };
}
