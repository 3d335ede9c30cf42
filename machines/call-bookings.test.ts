// Bookings on the call record: each calendar change the conversation reports is kept in
// the call's state in order (so it is saved with every snapshot and survives a
// restart), reaches the record, and an older snapshot without bookings has none.
import { describe, expect, it } from 'vitest';
import { callRecordOf } from './call.ts';
import { migrateCallSnapshot } from './call-migrate.ts';
import { CallDriver, T0, inboundInput } from '../test/model/call-driver.ts';

const created = { action: 'created' as const, booking_uid: 'ev1', start: '2027-03-02T09:00:00-05:00', attendee_name: 'Ada', timezone: 'America/New_York' };
const cancelled = { action: 'cancelled' as const, booking_uid: 'ev1', attendee_name: 'Ada', timezone: 'America/New_York' };

describe('bookings on the call record', () => {
  it('keeps each booking in order, across a restart', () => {
    const c = CallDriver.start(inboundInput({ provider: 'twilio' }));
    expect(callRecordOf(c.ctx).bookings).toEqual([]);
    c.send({ type: 'CONVERSATION.BOOKING', at: T0 + 5_000, booking: created });
    c.restart(T0 + 6_000);
    c.send({ type: 'CONVERSATION.BOOKING', at: T0 + 9_000, booking: cancelled });
    expect(callRecordOf(c.ctx).bookings).toEqual([created, cancelled]);
  });

  it('a snapshot from before bookings restores with none', () => {
    const c = CallDriver.start(inboundInput({ provider: 'twilio' }));
    const { bookings: _none, ...old } = c.ctx;
    const migrated = migrateCallSnapshot({ version: 1, value: { 'in-progress': 'listening' }, context: old });
    expect(migrated).not.toBeNull();
    expect(callRecordOf(migrated!.context as typeof c.ctx).bookings).toEqual([]);
  });
});
