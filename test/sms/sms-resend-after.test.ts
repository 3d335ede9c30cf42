// A carrier whose message list lags (issue 21: an unknown outcome is reconciled, never
// sent again blindly). The answer to a send is lost, and the carrier's list does not show
// the text for its first 2 s: the service must not take "not listed yet" for "never sent".
// With SMS_RESEND_AFTER_MS at 4 s it keeps asking, finds the text on a later read, and the
// carrier's record holds it once (SMS_RESEND_AFTER_MS=0 here would send it twice: the
// first read, 1 s after the lost answer, lists nothing). On carrier A and carrier B alike.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCustomer, startCallStack, type CallStack, type Customer, type Provider } from '../helpers/calls.ts';
import { SMS_ENV, phoneSequence, sendSms, smsReaches, smsSim } from '../helpers/sms.ts';

const LIST_LAG_MS = 2000;
const phone = phoneSequence(5);
let stack: CallStack;

beforeAll(async () => {
  stack = await startCallStack({ ...SMS_ENV, SMS_RESEND_AFTER_MS: '4000' });
  stack.sims.twilio.messages.listLagMs = LIST_LAG_MS;
  stack.sims.telnyx.messages.listLagMs = LIST_LAG_MS;
}, 30_000);
afterAll(async () => stack?.close());

describe.each(['twilio', 'telnyx'] as Provider[])('on %s', (provider) => {
  let c: Customer;
  beforeAll(async () => {
    c = await newCustomer(stack, provider);
  }, 30_000);

  it('a lost answer is not sent again while the carrier’s list has yet to show it', async () => {
    const sim = smsSim(stack, provider);
    const to = phone();
    sim.failSendTo(to, { drop: true });
    const res = await sendSms(stack, c, to, 'Listed late');
    expect(res.status, res.text).toBe(201);
    const m = await smsReaches(stack, c.key, res.body.message.message_id, ['sent', 'delivered'], 20_000);
    expect(m.error_code).toBeNull();
    expect(sim.sentTo(to)).toBe(1);
    expect(sim.requests(to)).toHaveLength(1);
  }, 40_000);
});
