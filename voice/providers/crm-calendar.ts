// The CRM's calendar over its REST API (the HighLevel v2 shape, at CRM_BASE_URL), for
// the booking tools of a call (issue 9): free slots, the caller as a contact (a booking
// needs a contactId), book, reschedule, cancel. Every request carries the number's
// private integration token (`Authorization: Bearer <pit>`) and the `Version` header the
// CRM requires, and has a deadline. Failures are typed (CrmError) and say whether asking
// again may help, so the engine can tell the model honestly. Nothing here is logged: the
// token and the caller's details never leave this module except on the wire.

import { CONTACT_UPSERT_PATH, contactUpsertBody, CRM_CONTACTS_VERSION, upsertedContactId } from './crm-contacts.ts';

/** The CRM's documented API versions: contacts and calendars each have their own. */
export const CRM_VERSION = { contacts: CRM_CONTACTS_VERSION, calendars: '2021-04-15' } as const;
export const CRM_TIMEOUT_MS = 8_000;
/** The CRM refuses free-slot ranges longer than 31 days; the tools ask for less. */
export const CRM_MAX_RANGE_DAYS = 31;

export type CrmErrorKind =
  /** No answer within the deadline (the action may or may not have happened). */
  | 'timeout'
  /** The CRM could not be reached, or the connection broke. */
  | 'network'
  /** The token is wrong or does not reach the location (401/403): only the developer can fix it. */
  | 'auth'
  /** The calendar, contact or event does not exist (404). */
  | 'not_found'
  /** The slot is not free (the CRM's 400 on a booking). */
  | 'slot_taken'
  /** The CRM refused what was sent (other 4xx). */
  | 'rejected'
  /** The CRM failed (5xx, 429) or answered something unreadable. */
  | 'server';

export class CrmError extends Error {
  constructor(
    readonly kind: CrmErrorKind,
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
    this.name = 'CrmError';
  }

  /** Asking again (later) may succeed: the CRM was slow, unreachable or failing, or rate-limited us. */
  get retryable(): boolean {
    return this.kind === 'timeout' || this.kind === 'network' || this.kind === 'server';
  }
}

export interface CrmCalendarConfig {
  /** CRM_BASE_URL, without a trailing slash needed. */
  baseUrl: string;
  /** The number's private integration token. */
  token: string;
  timeoutMs?: number;
}

export interface CrmAppointmentRef {
  /** The CRM's event id: the booking_uid, stable across reschedule and cancel. */
  id: string;
  /** ISO 8601 as the CRM holds it. */
  startTime: string;
}

export interface CrmCalendarClient {
  /** Free slot starts in [from, to) (epoch ms), as ISO 8601 in `timezone`, soonest first. */
  freeSlots(p: { calendarId: string; from: number; to: number; timezone: string; signal?: AbortSignal }): Promise<string[]>;
  /** The caller as a contact of the location (created or updated); its id. */
  upsertContact(p: { locationId: string; phone: string; name?: string; email?: string; signal?: AbortSignal }): Promise<string>;
  book(p: { calendarId: string; locationId: string; contactId: string; startTime: string; title?: string; signal?: AbortSignal }): Promise<CrmAppointmentRef>;
  reschedule(p: { eventId: string; startTime: string; signal?: AbortSignal }): Promise<CrmAppointmentRef>;
  cancel(p: { eventId: string; signal?: AbortSignal }): Promise<void>;
}

export function createCrmCalendarClient(config: CrmCalendarConfig): CrmCalendarClient {
  const base = config.baseUrl.replace(/\/+$/, '');
  const timeoutMs = config.timeoutMs ?? CRM_TIMEOUT_MS;

  async function request(method: string, path: string, version: string, body: unknown, signal: AbortSignal | undefined, notFree = false): Promise<Record<string, unknown>> {
    const deadline = AbortSignal.timeout(timeoutMs);
    const abort = signal ? AbortSignal.any([deadline, signal]) : deadline;
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${config.token}`,
          version,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: abort,
      });
      text = await res.text();
    } catch (err) {
      if (deadline.aborted) throw new CrmError('timeout', `the calendar did not answer within ${Math.round(timeoutMs / 1000)} seconds`);
      throw new CrmError('network', `the calendar could not be reached (${(err as Error).name})`);
    }
    if (res.status === 401 || res.status === 403) throw new CrmError('auth', 'the calendar refused the integration token', res.status);
    if (res.status === 404) throw new CrmError('not_found', 'the calendar, contact or appointment was not found', res.status);
    if (res.status === 400 && notFree) throw new CrmError('slot_taken', 'that time is not free', res.status);
    if (res.status === 429 || res.status >= 500) throw new CrmError('server', `the calendar failed (HTTP ${res.status})`, res.status);
    if (res.status < 200 || res.status > 299) throw new CrmError('rejected', `the calendar refused the request (HTTP ${res.status})`, res.status);
    if (text.trim() === '') return {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    } catch {
      // fall through
    }
    throw new CrmError('server', 'the calendar answered something unreadable', res.status);
  }

  const appointmentOf = (body: Record<string, unknown>, fallbackStart: string): CrmAppointmentRef => {
    const id = body['id'];
    if (typeof id !== 'string' || id === '') throw new CrmError('server', 'the calendar answered without an appointment id');
    return { id, startTime: typeof body['startTime'] === 'string' ? body['startTime'] : fallbackStart };
  };

  return {
    async freeSlots({ calendarId, from, to, timezone, signal }) {
      const q = new URLSearchParams({ startDate: String(Math.floor(from)), endDate: String(Math.floor(to)), timezone });
      const body = await request('GET', `/calendars/${encodeURIComponent(calendarId)}/free-slots?${q}`, CRM_VERSION.calendars, undefined, signal);
      // {"2026-11-24": {"slots": [...]}, …, "traceId": "…"}: every day's slots, in day order.
      const slots: string[] = [];
      for (const day of Object.keys(body).filter((k) => /^\d{4}-\d{2}-\d{2}$/.test(k)).sort()) {
        const list = (body[day] as { slots?: unknown } | null)?.slots;
        if (Array.isArray(list)) for (const s of list) if (typeof s === 'string') slots.push(s);
      }
      return slots.sort((a, b) => Date.parse(a) - Date.parse(b));
    },
    async upsertContact({ signal, ...contact }) {
      const body = await request('POST', CONTACT_UPSERT_PATH, CRM_VERSION.contacts, contactUpsertBody(contact), signal);
      const id = upsertedContactId(body);
      if (id === null) throw new CrmError('server', 'the calendar answered without a contact id');
      return id;
    },
    async book({ calendarId, locationId, contactId, startTime, title, signal }) {
      const body = await request(
        'POST',
        '/calendars/events/appointments',
        CRM_VERSION.calendars,
        { calendarId, locationId, contactId, startTime, ...(title ? { title } : {}) },
        signal,
        true,
      );
      return appointmentOf(body, startTime);
    },
    async reschedule({ eventId, startTime, signal }) {
      const body = await request('PUT', `/calendars/events/appointments/${encodeURIComponent(eventId)}`, CRM_VERSION.calendars, { startTime }, signal, true);
      return appointmentOf(body, startTime);
    },
    async cancel({ eventId, signal }) {
      await request('DELETE', `/calendars/events/${encodeURIComponent(eventId)}`, CRM_VERSION.calendars, undefined, signal);
    },
  };
}
