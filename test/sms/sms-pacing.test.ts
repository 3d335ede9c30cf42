// Issue 21, acceptance 3, through the real server on real time (the manual-clock test is
// actors/sms/paced-sender.test.ts): two sending numbers, one on each carrier, each with 3
// texts at once (a 2-recipient campaign and a single send), SMS_SEND_INTERVAL_MS=300.
// Each carrier's simulator records when it accepted each text; per number those are at
// least the interval apart, less 50 ms of network and timer jitter (the pacer spaces the
// requests' starts on our side by the full interval; their arrival can be a little closer).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually, newCustomer, startCallStack, type CallStack, type Customer } from '../helpers/calls.ts';

const INTERVAL_MS = 300;
const JITTER_MS = 50;

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack({ SMS_SEND_INTERVAL_MS: String(INTERVAL_MS) });
}, 30_000);
afterAll(async () => stack?.close());

it(`2 numbers × 3 texts at SMS_SEND_INTERVAL_MS=${INTERVAL_MS}: each number's texts reach its carrier at least ${INTERVAL_MS - JITTER_MS} ms apart`, async () => {
  const customers: Customer[] = [await newCustomer(stack, 'twilio'), await newCustomer(stack, 'telnyx')];
  const simOf = (c: Customer) => (c.provider === 'twilio' ? stack.sims.twilio.messages : stack.sims.telnyx.messages);
  const recipients = (i: number) => [`+1628555${i}101`, `+1628555${i}102`, `+1628555${i}103`];

  // Everything at once: per number, a campaign of two and a single send.
  const requests = customers.flatMap((c, i) => {
    const [r1, r2, r3] = recipients(i);
    return [
      stack.server.request('POST', '/v1/sms/campaigns', {
        key: c.key,
        body: { agent_id: c.agentId, from_number: c.number, name: 'pace', message_template: 'Hello {{n}}', recipients: [{ phone: r1, variables: { n: 1 } }, { phone: r2, variables: { n: 2 } }], schedule_type: 'now' },
      }),
      stack.server.request('POST', '/v1/sms', { key: c.key, body: { from_number: c.number, to: r3, body: 'single' } }),
    ];
  });
  for (const res of await Promise.all(requests)) expect(res.status, res.text).toBe(201);

  for (const [i, c] of customers.entries()) {
    const sim = simOf(c);
    const mine = await eventually(() => {
      const sent = sim.sent().filter((m) => m.from === c.number);
      return sent.length >= 3 ? sent : undefined;
    }, 10_000, `3 texts from ${c.number}`);
    expect(mine.map((m) => m.to).sort()).toEqual(recipients(i));
    const at = mine.map((m) => m.at).sort((a, b) => a - b);
    const gaps = at.slice(1).map((t, k) => t - at[k]!);
    console.log(`[sms-pacing] ${c.provider} ${c.number}: accepted at +${at.map((t) => t - at[0]!).join(', +')} ms (gaps ${gaps.join(', ')} ms)`);
    for (const g of gaps) expect(g, `${c.provider}: gaps ${gaps.join(', ')} ms`).toBeGreaterThanOrEqual(INTERVAL_MS - JITTER_MS);
    // Exactly one request per text: nothing was sent twice.
    expect(sim.requests().filter((r) => mine.some((m) => m.to === (c.provider === 'twilio' ? (r.body as Record<string, string>)['To'] : (r.body as { to?: string }).to)))).toHaveLength(3);
  }
});
