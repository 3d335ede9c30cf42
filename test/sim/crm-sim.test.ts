// The CRM simulator keeps the CRM's rules, so the service's CRM client is tested
// against them: a token reaches only its location, the Version header is required,
// slots are offered in the calendar's hours in the asked time zone, a booked slot is
// no longer offered nor bookable, and an event can be moved and deleted. It speaks HTTPS
// with a throwaway CA's certificate, as the suites use it: a client trusting the CA gets
// through, one that does not is refused.
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCrmSim, zonedIso, type CrmSim } from './crm-sim.ts';
import { makeTestCa, type TestCa } from './webhook-receiver.ts';

// Monday 2026-11-23 12:00 UTC (07:00 in New York).
const NOW = Date.UTC(2026, 10, 23, 12, 0);
let crm: CrmSim;
let ca: TestCa;

beforeAll(async () => {
  ca = makeTestCa();
  crm = await startCrmSim({
    tls: { cert: ca.certPem, key: ca.keyPem },
    tokens: { 'pit-a': 'loc-a', 'pit-b': 'loc-b' },
    calendars: [{ id: 'cal-a', locationId: 'loc-a', timezone: 'America/New_York', slotMinutes: 60, hours: [9, 12] }],
    now: () => NOW,
  });
});
afterAll(async () => {
  await crm.close();
  ca.dispose();
});

/** One HTTPS request; `trust` false leaves the test CA out of the client's trust. */
function call(method: string, path: string, body?: unknown, token = 'pit-a', version = '2021-04-15', trust = true): Promise<{ status: number; body: Record<string, any> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${crm.baseUrl}${path}`,
      { method, headers: { authorization: `Bearer ${token}`, version, 'content-type': 'application/json' }, ...(trust ? { ca: ca.caPem } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') }));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('CRM simulator', () => {
  it('speaks HTTPS: a client that trusts the test CA gets through, one that does not is refused', async () => {
    expect(crm.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect((await call('POST', '/contacts/upsert', { locationId: 'loc-a', phone: '+14155550199' })).status).toBe(201);
    await expect(call('POST', '/contacts/upsert', { locationId: 'loc-a', phone: '+14155550199' }, 'pit-a', '2021-04-15', false)).rejects.toThrow(/self-signed|unable to verify|certificate/i);
  });

  it('formats instants in a zone with its offset', () => {
    expect(zonedIso(Date.UTC(2026, 10, 23, 14, 0), 'America/New_York')).toBe('2026-11-23T09:00:00-05:00');
    expect(zonedIso(Date.UTC(2026, 6, 1, 14, 0), 'America/New_York')).toBe('2026-07-01T10:00:00-04:00');
    expect(zonedIso(Date.UTC(2026, 10, 23, 14, 0), 'Asia/Kolkata')).toBe('2026-11-23T19:30:00+05:30');
  });

  it('needs a token of the location and the Version header', async () => {
    expect((await call('POST', '/contacts/upsert', { locationId: 'loc-a', phone: '+14155550100' }, 'nope')).status).toBe(401);
    expect((await call('POST', '/contacts/upsert', { locationId: 'loc-a', phone: '+14155550100' }, 'pit-a', '')).status).toBe(400);
    expect((await call('POST', '/contacts/upsert', { locationId: 'loc-a', phone: '+14155550100' }, 'pit-b')).status).toBe(403);
    expect((await call('GET', `/calendars/cal-a/free-slots?startDate=${NOW}&endDate=${NOW + 86_400_000}`, undefined, 'pit-b')).status).toBe(404);
  });

  it('upserts a contact by phone and adds notes to it', async () => {
    const first = await call('POST', '/contacts/upsert', { locationId: 'loc-a', phone: '+14155550123', name: 'Ada' });
    expect(first.status).toBe(201);
    expect(first.body['new']).toBe(true);
    const again = await call('POST', '/contacts/upsert', { locationId: 'loc-a', phone: '+14155550123', email: 'ada@example.com' });
    expect(again.body['new']).toBe(false);
    expect(again.body['contact']).toMatchObject({ id: first.body['contact'].id, name: 'Ada', email: 'ada@example.com' });
    const note = await call('POST', `/contacts/${first.body['contact'].id}/notes`, { body: 'Called about a refill.' });
    expect(note.status).toBe(201);
    expect(crm.notes.at(-1)).toMatchObject({ contactId: first.body['contact'].id, body: 'Called about a refill.' });
    const listed = await call('GET', `/contacts/${first.body['contact'].id}/notes`, undefined, 'pit-a', '2021-07-28');
    expect(listed.body['notes']).toEqual([expect.objectContaining({ contactId: first.body['contact'].id, body: 'Called about a refill.' })]);
    expect((await call('GET', `/contacts/${first.body['contact'].id}/notes`, undefined, 'pit-b')).status).toBe(404);
  });

  it('offers the open weekday slots in the asked zone, then books, moves and deletes one', async () => {
    const range = `startDate=${NOW}&endDate=${NOW + 7 * 86_400_000}`;
    const slots = await call('GET', `/calendars/cal-a/free-slots?${range}&timezone=America/New_York`);
    expect(slots.status).toBe(200);
    expect(slots.body['2026-11-23'].slots).toEqual(['2026-11-23T09:00:00-05:00', '2026-11-23T10:00:00-05:00', '2026-11-23T11:00:00-05:00']);
    expect(slots.body['2026-11-28']).toBeUndefined(); // Saturday
    const inLondon = await call('GET', `/calendars/cal-a/free-slots?${range}&timezone=Europe/London`);
    expect(inLondon.body['2026-11-23'].slots[0]).toBe('2026-11-23T14:00:00+00:00');

    const contact = (await call('POST', '/contacts/upsert', { locationId: 'loc-a', phone: '+14155550124' })).body['contact'];
    const booking = { calendarId: 'cal-a', locationId: 'loc-a', contactId: contact.id, startTime: '2026-11-23T10:00:00-05:00', title: 'Consultation' };
    const made = await call('POST', '/calendars/events/appointments', booking);
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ appointmentStatus: 'confirmed', endTime: '2026-11-23T11:00:00-05:00' });
    expect((await call('POST', '/calendars/events/appointments', booking)).status).toBe(400);
    const after = await call('GET', `/calendars/cal-a/free-slots?${range}`);
    expect(after.body['2026-11-23'].slots).not.toContain('2026-11-23T10:00:00-05:00');

    const moved = await call('PUT', `/calendars/events/appointments/${made.body['id']}`, { startTime: '2026-11-24T09:00:00-05:00' });
    expect(moved.status).toBe(200);
    expect(moved.body['startTime']).toBe('2026-11-24T09:00:00-05:00');
    expect((await call('DELETE', `/calendars/events/${made.body['id']}`)).body).toEqual({ succeeded: true });
    expect(crm.appointments.size).toBe(0);
  });
});
