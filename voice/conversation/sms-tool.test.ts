// The send_sms tool's arguments as the model writes them, and the confirmation text a
// booking made or moved on a call becomes (its time in the booking's own zone).
import { describe, expect, it } from 'vitest';
import { bookingConfirmationText, parseSmsArgs, sendSmsToolDefinition, SEND_SMS_TOOL } from './sms-tool.ts';

describe('send_sms arguments', () => {
  it('takes a body, trimmed; refuses none, an empty one, one over 1600 characters, and arguments that are not JSON', () => {
    expect(sendSmsToolDefinition().function).toMatchObject({ name: SEND_SMS_TOOL, parameters: { required: ['body'] } });
    expect(parseSmsArgs('{"body":"  Our address: 1 Main St.  "}')).toEqual({ ok: true, body: 'Our address: 1 Main St.' });
    expect(parseSmsArgs('{}')).toMatchObject({ ok: false, error: expect.stringContaining('body') });
    expect(parseSmsArgs('{"body":"   "}')).toMatchObject({ ok: false, error: expect.stringContaining('empty') });
    expect(parseSmsArgs(JSON.stringify({ body: 'x'.repeat(1601) }))).toMatchObject({ ok: false, error: expect.stringContaining('1600') });
    expect(parseSmsArgs('{"body": "unterminated')).toMatchObject({ ok: false, error: expect.stringContaining('JSON') });
  });
});

describe('bookingConfirmationText', () => {
  const booking = { booking_uid: 'evt_42', start: '2027-03-02T09:00:00-05:00', service: 'Cleaning', timezone: 'America/New_York' };

  it('confirms a booking and a move with the service, the time in the booking’s zone and the reference', () => {
    expect(bookingConfirmationText({ action: 'created', ...booking })).toBe('Your Cleaning appointment is booked for Tuesday, March 2 at 9:00 AM EST. Reference: evt_42.');
    expect(bookingConfirmationText({ action: 'rescheduled', ...booking, start: '2027-03-02T15:30:00Z', timezone: 'Europe/London', service: undefined })).toBe(
      'Your appointment has been moved to Tuesday, March 2 at 3:30 PM GMT. Reference: evt_42.',
    );
  });

  it('has nothing to confirm for a cancellation', () => {
    expect(bookingConfirmationText({ action: 'cancelled', booking_uid: 'evt_42', timezone: 'UTC' })).toBeNull();
  });
});
