// The call machine for a browser's web call (provider `web`, no carrier leg): it waits
// for its browser until the access token expires, is answered when the socket starts,
// ends caller_hangup when the socket stops, hangs up without a carrier on the service's
// word, ends media_lost when restored on the line, and holds its slot throughout.
import { describe, expect, it } from 'vitest';
import { CALL_TAGS } from './call.ts';
import { CallDriver, T0, callInput } from '../test/model/call-driver.ts';

const webInput = (over = {}) =>
  callInput({ direction: 'inbound', provider: 'web', phoneNumber: '', from: 'web', to: 'web', connectBy: T0 + 60_000, ...over });

describe('a web call', () => {
  it('waits for its browser, holding its slot, with the token expiry as its deadline', () => {
    const c = CallDriver.start(webInput());
    expect(c.value).toBe('awaiting-browser');
    expect(c.ctx.callStatus).toBe('initiated');
    expect(c.ctx.startedAt).toBeNull();
    expect(c.hasTag(CALL_TAGS.holdsSlot)).toBe(true);
    expect(c.armed()).toEqual({ stale: T0 + 60_000 });
    expect(c.pending()).toEqual([]);
  });

  it('is answered when the browser connects, and ends caller_hangup when it hangs up, billed from the connect', () => {
    const c = CallDriver.start(webInput());
    c.send({ type: 'MEDIA.STARTED', at: T0 + 2_000 });
    expect(c.ctx.callStatus).toBe('in-progress');
    expect(c.ctx.startedAt).toBe(T0 + 2_000);
    expect(c.armed().stale).toBeDefined();
    c.send({ type: 'CONVERSATION.LINE', at: T0 + 3_000, speaker: 'agent', text: 'Hello!' });
    c.send({ type: 'MEDIA.STOPPED', at: T0 + 63_500 });
    expect(c.finished).toBe(true);
    expect(c.ctx).toMatchObject({ callStatus: 'completed', endedReason: 'caller_hangup', endedAt: T0 + 63_500, transcript: 'Agent: Hello!' });
    expect(c.slot).toMatchObject({ held: false, strayReleases: 0 });
    // No carrier was dialed, asked or hung up.
    expect(c.issued).toMatchObject({ dial: 0, findDial: 0, hangup: 0 });
  });

  it('ends no-answer when nobody connects before the token expires', () => {
    const c = CallDriver.start(webInput());
    c.fire('stale');
    expect(c.ctx).toMatchObject({ callStatus: 'no-answer', endedReason: 'no-answer', startedAt: null, endedAt: T0 + 60_000 });
    expect(c.slot.held).toBe(false);
  });

  it('ends on the agent’s word through a hang-up that needs no carrier', () => {
    const c = CallDriver.start(webInput());
    c.send({ type: 'MEDIA.STARTED', at: T0 + 1_000 });
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 30_000, reason: 'agent_hangup' });
    expect(c.value).toBe('hanging-up');
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 30_001 });
    expect(c.ctx).toMatchObject({ callStatus: 'completed', endedReason: 'agent_hangup', endedAt: T0 + 30_000 });
    // The socket closing afterwards changes nothing.
    c.send({ type: 'MEDIA.STOPPED', at: T0 + 30_010 });
    expect(c.ctx.endedReason).toBe('agent_hangup');
  });

  it('is canceled when ended before its browser connected', () => {
    const c = CallDriver.start(webInput());
    c.send({ type: 'HANGUP.REQUESTED', at: T0 + 5_000, reason: 'canceled' });
    expect(c.ctx).toMatchObject({ callStatus: 'canceled', endedReason: 'canceled', startedAt: null });
    expect(c.armed()).toEqual({ stale: expect.any(Number) });
  });

  it('restored while waiting, still waits until the same expiry', () => {
    const c = CallDriver.start(webInput());
    c.restart(T0 + 10_000);
    expect(c.value).toBe('awaiting-browser');
    expect(c.slot.held).toBe(true);
    expect(c.armed()).toEqual({ stale: T0 + 60_000 });
  });

  it('restored on the line, ends media_lost (its media died with the process)', () => {
    const c = CallDriver.start(webInput());
    c.send({ type: 'MEDIA.STARTED', at: T0 + 1_000 });
    c.restart(T0 + 20_000);
    expect(c.value).toBe('hanging-up');
    c.settle('hangup', { type: 'HANGUP.DONE', at: T0 + 20_001 });
    expect(c.ctx).toMatchObject({ callStatus: 'completed', endedReason: 'media_lost', endedAt: T0 + 20_000 });
  });

  it('a carrier call ignores media stopping (its carrier ends it)', () => {
    const c = CallDriver.start(callInput({ direction: 'inbound', carrierCallId: 'CA_1' }));
    c.send({ type: 'MEDIA.STOPPED', at: T0 + 1_000 });
    expect(c.finished).toBe(false);
  });
});
