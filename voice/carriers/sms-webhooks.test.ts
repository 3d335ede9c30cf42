// The carriers' SMS webhooks as the SMS system reads them (carriers.md §2 and §5).
import { describe, expect, it } from 'vitest';
import { isTelnyxMessageEvent, parseTelnyxSms, parseTwilioSms, parseTwilioSmsStatus } from './sms-webhooks.ts';

const form = (o: Record<string, string>) => new URLSearchParams(o);

describe('carrier A', () => {
  it('reads an incoming text and a status callback', () => {
    expect(parseTwilioSms(form({ MessageSid: 'SM1', SmsSid: 'SM1', From: '+1', To: '+2', Body: 'hi', SmsStatus: 'received' }))).toEqual({ kind: 'received', carrierMessageId: 'SM1', from: '+1', to: '+2', body: 'hi' });
    expect(parseTwilioSmsStatus(form({ MessageSid: 'SM1', MessageStatus: 'undelivered', ErrorCode: '30003' }))).toEqual({
      kind: 'status',
      carrierMessageId: 'SM1',
      status: 'undelivered',
      errorCode: 'carrier:30003',
      errorMessage: 'carrier A error 30003',
    });
  });
  it('ignores steps before sent and forms without ids', () => {
    expect(parseTwilioSmsStatus(form({ MessageSid: 'SM1', MessageStatus: 'queued' })).kind).toBe('ignored');
    expect(parseTwilioSms(form({ From: '+1', To: '+2' })).kind).toBe('ignored');
  });
});

describe('carrier B', () => {
  const envelope = (event_type: string, payload: object) => JSON.stringify({ data: { event_type, id: 'e1', occurred_at: 'x', payload, record_type: 'event' }, meta: { attempt: 1 } });
  it('tells message events from call events', () => {
    expect(isTelnyxMessageEvent(envelope('message.received', {}))).toBe(true);
    expect(isTelnyxMessageEvent(envelope('call.initiated', {}))).toBe(false);
  });
  it('reads message.received, message.sent and a failed message.finalized', () => {
    expect(parseTelnyxSms(envelope('message.received', { id: 'm1', from: { phone_number: '+1' }, to: [{ phone_number: '+2' }], text: 'STOP' }))).toEqual({
      kind: 'received',
      carrierMessageId: 'm1',
      from: '+1',
      to: '+2',
      body: 'STOP',
    });
    expect(parseTelnyxSms(envelope('message.sent', { id: 'm1', to: [{ phone_number: '+2', status: 'sent' }] }))).toMatchObject({ kind: 'status', status: 'sent', errorCode: null });
    expect(parseTelnyxSms(envelope('message.finalized', { id: 'm1', to: [{ status: 'delivery_failed' }], errors: [{ code: '40008', title: 'Undeliverable' }] }))).toMatchObject({
      kind: 'status',
      status: 'undelivered',
      errorCode: 'carrier:40008',
      errorMessage: 'Undeliverable',
    });
  });
});
