// Texts during a call: the send_sms tool is offered (and the call set up to text the far
// end from its number) only with incall_sms_enabled; running it queues an in-call text
// and tells the model the message id, or why nothing was sent; a looping model is
// stopped after MAX_TEXTS_PER_CALL; bookings made or moved are confirmed by text,
// cancellations are not. The SMS system itself is behind CallTexts (call-texts.ts, end
// to end in test/conversation-sms.test.ts); here a recording stand-in takes its place.
import { describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS } from '../../storage/agents.ts';
import { buildSetup, type SetupInput } from './conversation-setup.ts';
import { createEngineSms, type CallSmsSetup, type CallTexts, type CallTextOutcome } from './engine-sms.ts';
import { combineLocalTools } from './engine-tools.ts';
import { MAX_TEXTS_PER_CALL, SEND_SMS_TOOL } from '../../voice/conversation/sms-tool.ts';

const setupInput = (incall: boolean, over: Partial<SetupInput> = {}): SetupInput => ({
  agent: { ...AGENT_DEFAULTS, incall_sms_enabled: incall },
  number: null,
  caller: null,
  callPrompt: null,
  direction: 'inbound',
  ttsProvider: 'openai',
  now: Date.UTC(2026, 10, 23, 18, 30),
  identity: { callId: 'CA123', agentId: 'agent_1' },
  callerPhone: '+14155550100',
  line: { accountId: 'acct_1', phoneNumber: '+14155550199' },
  ...over,
});

describe('the call’s setup', () => {
  it('with incall_sms_enabled offers send_sms and texts the far end from the call’s number', () => {
    const s = buildSetup(setupInput(true));
    expect(s.tools.map((t) => t.function.name)).toEqual(['end_call', SEND_SMS_TOOL]);
    expect(s.sms).toEqual({ accountId: 'acct_1', phoneNumber: '+14155550199', to: '+14155550100', agentId: 'agent_1', callId: 'CA123' });
    // Outbound: the far end is the number called (the loader passes it as callerPhone).
    expect(buildSetup(setupInput(true, { direction: 'outbound', callerPhone: '+14155550111' })).sms?.to).toBe('+14155550111');
  });

  it('without it offers no send_sms and has nothing to text with', () => {
    const s = buildSetup(setupInput(false));
    expect(s.tools.map((t) => t.function.name)).toEqual(['end_call']);
    expect(s.sms).toBeNull();
  });

  it('the prompt offers a text only when one can be sent: not without the setting, nor without a far end to text', () => {
    const offers = 'You may offer to send the caller a text message';
    const refuses = 'You cannot send text messages';
    expect(buildSetup(setupInput(true)).systemPrompt).toContain(offers);
    expect(buildSetup(setupInput(false)).systemPrompt).toContain(refuses);
    // A withheld caller id (or a web call): nobody to text, so the model must not promise one.
    const anonymous = buildSetup(setupInput(true, { callerPhone: undefined }));
    expect(anonymous.sms).toBeNull();
    expect(anonymous.systemPrompt).toContain(refuses);
    expect(anonymous.systemPrompt).not.toContain(offers);
  });
});

type Sent = Parameters<CallTexts['send']>[0];
function recordingTexts(answer: (m: Sent) => CallTextOutcome = () => ({ ok: true, messageId: `msg_${Math.random().toString(36).slice(2)}` })) {
  const sent: Sent[] = [];
  return {
    sent,
    texts: {
      send(m: Sent) {
        const out = answer(m);
        if (out.ok) sent.push(m);
        return out;
      },
    } satisfies CallTexts,
  };
}
const SETUP: CallSmsSetup = { accountId: 'acct_1', phoneNumber: '+14155550199', to: '+14155550100', agentId: 'agent_1', callId: 'CA123' };
const call = (args: unknown, id = 'call_1') => ({ id, name: SEND_SMS_TOOL, arguments: typeof args === 'string' ? args : JSON.stringify(args) });
const signal = new AbortController().signal;

describe('send_sms', () => {
  it('queues the text to the far end from the call’s number and tells the model its message id', async () => {
    const { sent, texts } = recordingTexts(() => ({ ok: true, messageId: 'msg_1' }));
    const sms = createEngineSms({ setup: SETUP, texts });
    expect(await sms.run(call({ body: 'Our address is 1 Main St.' }), signal)).toEqual({ ok: true, result: '{"status":"queued","message_id":"msg_1"}' });
    expect(sent).toEqual([{ ...SETUP, body: 'Our address is 1 Main St.', origin: 'call' }]);
  });

  it('tells the model why nothing was sent: bad arguments, an opted-out person, too many texts', async () => {
    const refused = recordingTexts(() => ({ ok: false, error: 'the person has opted out of texts from this number' }));
    const a = createEngineSms({ setup: SETUP, texts: refused.texts });
    expect(await a.run(call('{"text":"hi"}'), signal)).toMatchObject({ ok: false, error: expect.stringContaining('body') });
    expect(await a.run(call({ body: 'hi' }), signal)).toEqual({ ok: false, error: 'the person has opted out of texts from this number' });
    expect(refused.sent).toEqual([]);

    const { sent, texts } = recordingTexts();
    const b = createEngineSms({ setup: SETUP, texts });
    for (let i = 0; i < MAX_TEXTS_PER_CALL; i++) expect(await b.run(call({ body: `text ${i}` }), signal)).toMatchObject({ ok: true });
    expect(await b.run(call({ body: 'one too many' }), signal)).toMatchObject({ ok: false, error: expect.stringContaining('already sent') });
    expect(sent).toHaveLength(MAX_TEXTS_PER_CALL);
  });

  it('runs beside the booking tools: each set takes its own names', async () => {
    const { texts } = recordingTexts(() => ({ ok: true, messageId: 'msg_2' }));
    const booking = { handles: (n: string) => n === 'book_appointment', run: async () => ({ ok: true as const, result: '{"status":"booked"}' }) };
    const local = combineLocalTools([booking, createEngineSms({ setup: SETUP, texts })])!;
    expect(local.handles(SEND_SMS_TOOL) && local.handles('book_appointment') && !local.handles('end_call')).toBe(true);
    expect(await local.run(call({ body: 'hi' }), signal)).toMatchObject({ ok: true, result: expect.stringContaining('msg_2') });
    expect(await local.run({ id: 'b', name: 'book_appointment', arguments: '{}' }, signal)).toEqual({ ok: true, result: '{"status":"booked"}' });
    expect(combineLocalTools([null, null])).toBeUndefined();
  });
});

describe('booking confirmations', () => {
  it('texts one for a booking made and one for a booking moved, none for a cancellation', () => {
    const { sent, texts } = recordingTexts();
    const sms = createEngineSms({ setup: SETUP, texts });
    const b = { booking_uid: 'evt_9', service: 'Cleaning', timezone: 'America/New_York' };
    sms.onBooking({ action: 'created', start: '2027-03-02T09:00:00-05:00', ...b });
    sms.onBooking({ action: 'rescheduled', start: '2027-03-02T10:00:00-05:00', ...b });
    sms.onBooking({ action: 'cancelled', ...b });
    expect(sent.map((m) => [m.origin, m.to, m.body])).toEqual([
      ['booking', SETUP.to, 'Your Cleaning appointment is booked for Tuesday, March 2 at 9:00 AM EST. Reference: evt_9.'],
      ['booking', SETUP.to, 'Your Cleaning appointment has been moved to Tuesday, March 2 at 10:00 AM EST. Reference: evt_9.'],
    ]);
  });
});
