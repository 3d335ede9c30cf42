// max_call_duration_seconds during a conversation: the call's durable deadline ends it
// with max_duration_reached however the conversation stands (its own file: it takes the
// agent's one-minute minimum, and runs beside the other suites).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newCustomer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack } from './helpers/conversation.ts';

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack();
});
afterAll(async () => {
  await stack?.close();
});

it('ends a conversation that runs past max_call_duration_seconds with max_duration_reached', async () => {
  const c = await newCustomer(stack, 'telnyx', { max_call_duration_seconds: 60, silence_hangup_seconds: 45, welcome_message: 'Hi!' });
  const far = await ringAgent(stack, c);
  await agentSpeaks(far);
  // The caller keeps the conversation going, so silence never reaches its own limit.
  await far.say('saturday-hours');
  await agentSpeaks(far, far.heardBytes());
  await new Promise((r) => setTimeout(r, 25_000));
  await far.say('repeat-please');
  await agentSpeaks(far, far.heardBytes());
  const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed', 70_000, 'the max-duration hang-up');
  expect(done.ended_reason).toBe('max_duration_reached');
  expect(done.duration_ms).toBeGreaterThanOrEqual(59_000);
  expect(done.duration_ms).toBeLessThan(63_000);
  const lines = done.transcript.split('\n');
  expect(lines.slice(0, 2)).toEqual(['Agent: Hi!', 'Caller: What time do you open on Saturday?']);
  expect(lines).toContain('Caller: Actually, wait, can you repeat that please?');
}, 90_000);
