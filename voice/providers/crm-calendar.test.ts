// The CRM calendar client against the CRM simulator (test/sim/crm-sim.ts, the CRM's own
// rules over HTTP): slots come back in the asked zone, a booking needs the caller as a
// contact, a booking can be moved and cancelled, and each failure is typed with
// whether a retry helps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCrmSim, type CrmSim } from '../../test/sim/crm-sim.ts';
import { createCrmCalendarClient, CrmError } from './crm-calendar.ts';

// Monday 2026-11-23 12:00 UTC (07:00 in New York).
const NOW = Date.UTC(2026, 10, 23, 12, 0);
const DAY = 86_400_000;
let crm: CrmSim;

beforeAll(async () => {
  crm = await startCrmSim({
    tokens: { 'pit-a': 'loc-a' },
    calendars: [{ id: 'cal-a', locationId: 'loc-a', timezone: 'America/New_York', slotMinutes: 60, hours: [9, 12] }],
    now: () => NOW,
  });
});
afterAll(() => crm.close());

const client = () => createCrmCalendarClient({ baseUrl: crm.baseUrl, token: 'pit-a', timeoutMs: 500 });

async function failure(p: Promise<unknown>): Promise<CrmError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof CrmError) return err;
    throw err;
  }
  throw new Error('expected a CrmError');
}

describe('CRM calendar client', () => {
  it('lists free slots in the asked zone, books, reschedules and cancels', async () => {
    const c = client();
    const slots = await c.freeSlots({ calendarId: 'cal-a', from: NOW, to: NOW + DAY, timezone: 'America/Chicago' });
    expect(slots).toEqual(['2026-11-23T08:00:00-06:00', '2026-11-23T09:00:00-06:00', '2026-11-23T10:00:00-06:00']);
    const req = crm.requests.at(-1)!;
    expect(req.headers['authorization']).toBe('Bearer pit-a');
    expect(req.headers['version']).toBe('2021-04-15');

    const contactId = await c.upsertContact({ locationId: 'loc-a', phone: '+14155550100', name: 'Ada Lovelace', email: 'ada@example.com' });
    expect(crm.contacts.get(contactId)).toMatchObject({ phone: '+14155550100', name: 'Ada Lovelace', email: 'ada@example.com' });

    const booked = await c.book({ calendarId: 'cal-a', locationId: 'loc-a', contactId, startTime: slots[0]!, title: 'Consultation' });
    expect(crm.appointments.get(booked.id)).toMatchObject({ startTime: slots[0], contactId, title: 'Consultation', appointmentStatus: 'confirmed' });
    // A booked slot is gone from the free list, and cannot be booked twice.
    expect(await c.freeSlots({ calendarId: 'cal-a', from: NOW, to: NOW + DAY, timezone: 'America/Chicago' })).not.toContain(slots[0]);
    const taken = await failure(c.book({ calendarId: 'cal-a', locationId: 'loc-a', contactId, startTime: slots[0]! }));
    expect(taken.kind).toBe('slot_taken');
    expect(taken.retryable).toBe(false);

    const moved = await c.reschedule({ eventId: booked.id, startTime: slots[1]! });
    expect(moved.id).toBe(booked.id);
    expect(crm.appointments.get(booked.id)!.startTime).toBe(slots[1]);

    await c.cancel({ eventId: booked.id });
    expect(crm.appointments.has(booked.id)).toBe(false);
    expect((await failure(c.cancel({ eventId: booked.id }))).kind).toBe('not_found');
  });

  it('types failures: a wrong token, a failing CRM, a slow one', async () => {
    const wrong = createCrmCalendarClient({ baseUrl: crm.baseUrl, token: 'nope', timeoutMs: 500 });
    const auth = await failure(wrong.freeSlots({ calendarId: 'cal-a', from: NOW, to: NOW + DAY, timezone: 'UTC' }));
    expect([auth.kind, auth.retryable]).toEqual(['auth', false]);

    crm.fail({ status: 503, body: { message: 'down' } });
    const down = await failure(client().freeSlots({ calendarId: 'cal-a', from: NOW, to: NOW + DAY, timezone: 'UTC' }));
    expect([down.kind, down.retryable, down.status]).toEqual(['server', true, 503]);

    crm.fail({ delayMs: 1_500 });
    const slow = await failure(client().freeSlots({ calendarId: 'cal-a', from: NOW, to: NOW + DAY, timezone: 'UTC' }));
    expect([slow.kind, slow.retryable]).toEqual(['timeout', true]);

    const closed = createCrmCalendarClient({ baseUrl: 'http://127.0.0.1:9', token: 'pit-a', timeoutMs: 500 });
    const unreachable = await failure(closed.cancel({ eventId: 'x' }));
    expect([unreachable.kind, unreachable.retryable]).toEqual(['network', true]);
  });
});
