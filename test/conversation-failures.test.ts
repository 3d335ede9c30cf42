// No dead air: what the caller hears when a provider fails mid-call, end to end. The
// model failing is retried, then apologised for, and the call goes on; speech synthesis
// failing twice ends the call honestly (provider_error); speech recognition lost for
// good gets an apology and the same ending; and a service with no provider credentials
// ends every call at once (provider_not_configured) and says so in GET /readyz.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCustomer, startCallStack } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import { nextNumber } from './helpers/fixtures.ts';

const APOLOGY = 'I am sorry, I am having a technical problem on my side.';

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack();
});
afterAll(async () => {
  await stack?.close();
});

describe('a provider failing mid-call', () => {
  it('the model: retried once, then an apology, and the conversation goes on', async () => {
    const c = await newCustomer(stack, 'twilio', { welcome_message: 'Hi!' });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    stack.llm.fail({ kind: 'status', status: 500, times: 2 });
    const before = stack.llm.requests.length;
    await far.say('saturday-hours');
    await agentSpeaks(far, far.heardBytes());
    expect(stack.llm.requests.length - before).toBe(2);
    stack.llm.reply({ text: 'We open at nine.' });
    await far.say('repeat-please');
    await agentSpeaks(far, far.heardBytes());
    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(done.ended_reason).toBe('caller_hangup');
    expect(done.transcript.split('\n')).toEqual([
      'Agent: Hi!',
      'Caller: What time do you open on Saturday?',
      `Agent: ${APOLOGY}`,
      'Caller: Actually, wait, can you repeat that please?',
      'Agent: We open at nine.',
    ]);
  }, 40_000);

  it('a transcription that finds no words says fallback_message', async () => {
    const c = await newCustomer(stack, 'twilio', { welcome_message: 'Hi!', fallback_message: 'Sorry, could you say that again?' });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const llmBefore = stack.llm.requests.length;
    await far.say('saturday-hours', '');
    await agentSpeaks(far, far.heardBytes());
    expect(stack.llm.requests.length).toBe(llmBefore);
    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(done.transcript).toBe('Agent: Hi!\nAgent: Sorry, could you say that again?');
  }, 30_000);

  it('speech synthesis: retried once, then the call ends with provider_error rather than silence', async () => {
    const c = await newCustomer(stack, 'telnyx', { welcome_message: 'Hi!' });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    stack.tts.fail({ kind: 'status', status: 503, times: 2 });
    stack.llm.reply({ text: 'We open at nine.' });
    await far.say('saturday-hours');
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed', 15_000, 'the call to end');
    expect(done.ended_reason).toBe('provider_error');
    expect(done.transcript).toBe('Agent: Hi!\nCaller: What time do you open on Saturday?');
  }, 30_000);

  it('speech recognition lost for good: an apology, then provider_error', async () => {
    const c = await newCustomer(stack, 'twilio', { welcome_message: 'Hi!' });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    // Every reconnection is refused, then the live socket drops.
    stack.stt.fail('unavailable', 20);
    stack.stt.fail('drop');
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed', 20_000, 'the call to end');
    stack.stt.recover();
    expect(done.ended_reason).toBe('provider_error');
    expect(done.transcript).toBe(`Agent: Hi!\nAgent: ${APOLOGY}`);
  }, 30_000);
});

describe('no provider configured', () => {
  it('the service runs, /readyz says which are missing, and a call ends at once with provider_not_configured', async () => {
    const bare = await startCallStack({ MEDIA_ENGINE: 'agent' });
    try {
      const ready = await bare.server.request('GET', '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.providers).toMatchObject({ llm: { configured: false }, stt: { configured: false }, tts: { configured: false } });
      const c = await newCustomer(bare, 'twilio');
      const call = await bare.sims.twilio.placeInboundCall({ from: nextNumber(), to: c.number });
      const done = await recordWhere(bare, c, call.callSid, (r) => r.call_status === 'completed', 10_000, 'the call to end');
      expect(done.ended_reason).toBe('provider_not_configured');
      expect(done.duration_ms).toBeLessThan(3000);
    } finally {
      await bare.close();
    }
  }, 30_000);
});
