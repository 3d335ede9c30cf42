// What a carrier's answer to a send means (refused for certain, or unknown), and which
// carrier message a send whose answer was lost became.
import { describe, expect, it } from 'vitest';
import { CarrierAuthError, CarrierRequestError, CarrierUnreachableError } from './errors.ts';
import { classifySendError, CLOCK_SLACK_MS, earliestUnknown, SmsOutcomeUnknown, SmsRefused } from './sms.ts';

describe('classifySendError', () => {
  it('names the refusals the API answers with, by carrier code', () => {
    const refusal = (carrier: 'twilio' | 'telnyx', code: number | string) => classifySendError(carrier, new CarrierRequestError(carrier, 400, code, 'no', {})) as SmsRefused;
    expect(refusal('twilio', 30034).code).toBe('sms_not_supported_in_region');
    expect(refusal('telnyx', '40010').code).toBe('sms_not_supported_in_region');
    expect(refusal('twilio', 21610).code).toBe('recipient_unsubscribed');
    expect(refusal('telnyx', '40300').code).toBe('recipient_unsubscribed');
    expect(refusal('twilio', 21211)).toMatchObject({ code: 'carrier_refused', carrierCode: '21211' });
    expect(classifySendError('twilio', new CarrierAuthError('twilio', 401, 20003, 'Authenticate', {}))).toMatchObject({ code: 'carrier_auth_failed' });
  });
  it('a request that never left is refused; anything after it may have left is unknown', () => {
    expect(classifySendError('twilio', new CarrierUnreachableError('twilio', 'refused', null, undefined, 'not-sent'))).toMatchObject({ code: 'carrier_unreachable' });
    expect(classifySendError('twilio', new CarrierUnreachableError('twilio', 'reset', null, undefined, 'connection-lost'))).toBeInstanceOf(SmsOutcomeUnknown);
    expect(classifySendError('telnyx', new CarrierUnreachableError('telnyx', '503', 503))).toBeInstanceOf(SmsOutcomeUnknown);
    expect(classifySendError('telnyx', new Error('anything else'))).toBeInstanceOf(SmsOutcomeUnknown);
  });
});

describe('earliestUnknown', () => {
  const since = 1_000_000;
  it('takes the earliest message not known to be another’s, created since the send (less the slack)', () => {
    const found = earliestUnknown(
      [
        { id: 'later', at: since + 500, status: 'sent', errorCode: null },
        { id: 'known', at: since + 10, status: 'sent', errorCode: null },
        { id: 'ours', at: since + 20, status: 'undelivered', errorCode: 'carrier:30003' },
        { id: 'too-old', at: since - CLOCK_SLACK_MS - 1, status: 'sent', errorCode: null },
      ],
      { from: '+1', to: '+2', since, exclude: ['known'] },
    );
    expect(found).toEqual({ carrierMessageId: 'ours', status: 'undelivered', errorCode: 'carrier:30003' });
  });
  it('finds nothing when the carrier has no such message', () => {
    expect(earliestUnknown([{ id: 'known', at: since, status: 'sent', errorCode: null }], { from: '+1', to: '+2', since, exclude: ['known'] })).toBeNull();
  });
});
