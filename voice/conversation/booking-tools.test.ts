// The booking tools' pure parts: times read in the call's zone (with an offset or as local
// wall time, across a DST change), spoken as a person says them, the read-back, and the
// model's bad arguments turned into errors it can act on.
import { describe, expect, it } from 'vitest';
import { bookingToolDefinitions, bookingZone, parseAction, parseFind, parseStart, readBack, spokenTime, zonedIso } from './booking-tools.ts';

const NY = 'America/New_York';

describe('booking tools', () => {
  it('offers four tools with JSON-Schema parameters that name the zone', () => {
    const tools = bookingToolDefinitions(NY);
    expect(tools.map((t) => t.function.name)).toEqual(['find_free_slots', 'book_appointment', 'reschedule_appointment', 'cancel_appointment']);
    expect(tools[0]!.function.description).toContain(NY);
    expect(tools[1]!.function.parameters).toMatchObject({ type: 'object', required: ['start'] });
  });

  it('reads times with an offset or as local wall time in the zone, on both sides of a DST change', () => {
    expect(parseStart('2027-03-02T09:00:00-05:00', NY)).toBe(Date.UTC(2027, 2, 2, 14));
    expect(parseStart('2027-03-02T09:00', NY)).toBe(Date.UTC(2027, 2, 2, 14));
    expect(parseStart('2027-03-16T09:00', NY)).toBe(Date.UTC(2027, 2, 16, 13));
    expect(zonedIso(Date.UTC(2027, 2, 16, 13), NY)).toBe('2027-03-16T09:00:00-04:00');
    expect(parseStart('next tuesday', NY)).toBeNull();
    expect(parseStart('2027-13-02T09:00', NY)).toBeNull();
  });

  it('searches whole local days', () => {
    expect(parseFind('{"from_date":"2027-03-02","days":2}', NY)).toEqual({ ok: true, value: { from: Date.UTC(2027, 2, 2, 5), to: Date.UTC(2027, 2, 4, 5) } });
    expect(parseFind('{"from_date":"March 2"}', NY)).toMatchObject({ ok: false, error: expect.stringContaining('from_date') });
    expect(parseFind('{"from_date":"2027-03-02","days":40}', NY)).toMatchObject({ ok: false });
  });

  it('speaks times and reads the change back', () => {
    expect(spokenTime('2027-03-02T09:00:00-05:00', NY)).toBe('Tuesday, March 2 at 9 AM');
    expect(spokenTime('2027-03-02T14:30:00-05:00', NY)).toBe('Tuesday, March 2 at 2:30 PM');
    const book = parseAction('book_appointment', '{"start":"2027-03-02T09:00","name":"Ada","service":"exam"}', NY);
    expect(book).toEqual({ ok: true, value: { kind: 'book', start: '2027-03-02T09:00:00-05:00', name: 'Ada', service: 'exam' } });
    if (!book.ok) throw new Error(book.error);
    expect(readBack(book.value, NY, null)).toBe('Just to confirm: an exam for Ada on Tuesday, March 2 at 9 AM. Shall I book it?');
    expect(readBack({ kind: 'reschedule', bookingUid: null, start: '2027-03-02T10:00:00-05:00' }, NY, { start: '2027-03-02T09:00:00-05:00' })).toBe(
      'Just to confirm: I will move your appointment from Tuesday, March 2 at 9 AM to Tuesday, March 2 at 10 AM. Shall I make that change?',
    );
    expect(readBack({ kind: 'cancel', bookingUid: null }, NY, null)).toBe('Just to confirm: I will cancel your appointment. Shall I cancel it?');
  });

  it('turns bad arguments into errors the model can act on', () => {
    expect(parseAction('book_appointment', 'not json', NY)).toMatchObject({ ok: false, error: expect.stringContaining('JSON') });
    expect(parseAction('book_appointment', '{}', NY)).toMatchObject({ ok: false, error: expect.stringContaining('start') });
    expect(parseAction('book_appointment', '{"start":"tomorrow at 9"}', NY)).toMatchObject({ ok: false, error: expect.stringContaining('YYYY-MM-DDTHH:MM') });
    expect(parseAction('book_appointment', '{"start":"2027-03-02T09:00","email":"nope"}', NY)).toMatchObject({ ok: false, error: expect.stringContaining('email') });
    expect(parseAction('cancel_appointment', '{"booking_uid":"ev1"}', NY)).toEqual({ ok: true, value: { kind: 'cancel', bookingUid: 'ev1' } });
    expect(bookingZone('Not/AZone')).toBe('UTC');
    expect(bookingZone(null)).toBe('UTC');
  });
});
