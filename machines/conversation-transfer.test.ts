// The conversation's side of a transfer (machines/conversation.ts `transferring`): the
// model's transfer tool call takes effect once the agent's last words have played; the
// caller then holds, unanswered and without a silence hang-up; a failed transfer gives
// the floor back to the agent, who says so; a caller who interrupts the announcement
// keeps the call with the agent. A real actor of the machine on XState's simulated clock,
// its effects recorded, its snapshot taken through JSON at the hold.
import { createActor, SimulatedClock } from 'xstate';
import { describe, expect, it } from 'vitest';
import { conversationMachine, type ConversationEvent, type ConversationInput, type ReplyRequest, type TranscriptLine } from './conversation.ts';

const INPUT: ConversationInput = {
  aiSpeaksFirst: true,
  pickupDelayMs: 10_000,
  eagernessMs: 200,
  interruptMs: 650,
  silenceHangupMs: 30_000,
  resumeAfterMs: 2_000,
};

function start(snapshot?: unknown) {
  const clock = new SimulatedClock();
  const replies: ReplyRequest['kind'][] = [];
  const transfers: (readonly TranscriptLine[])[] = [];
  const hangups: string[] = [];
  const actor = createActor(
    conversationMachine.provide({
      actions: {
        startReply: (_, p: ReplyRequest) => void replies.push(p.kind),
        requestTransfer: (_, p: { lines: readonly TranscriptLine[] }) => void transfers.push(p.lines),
        requestHangup: (_, p: { reason: string }) => void hangups.push(p.reason),
      },
    }),
    { input: INPUT, clock, ...(snapshot ? { snapshot: snapshot as never } : {}) },
  );
  actor.start();
  const send = (e: ConversationEvent) => actor.send(e);
  const say = (text: string) => {
    send({ type: 'SPEECH.START' });
    clock.increment(800);
    send({ type: 'SPEECH.END' });
    send({ type: 'WORDS', text, final: true, endOfTurn: true });
    clock.increment(INPUT.eagernessMs);
  };
  return { actor, clock, send, say, replies, transfers, hangups };
}

/** Greeted; the caller asked for a person; the model's answer announces the transfer and calls the tool. */
function announcing() {
  const c = start();
  c.send({ type: 'REPLY.AUDIO' });
  c.send({ type: 'REPLY.ENDED', heard: 'Hello, Acme.', complete: true });
  c.say('Can I talk to a person?');
  expect(c.replies).toEqual(['greeting', 'answer']);
  c.send({ type: 'TRANSFER' });
  c.send({ type: 'REPLY.AUDIO' });
  return c;
}

describe('a transfer in the conversation', () => {
  it('starts once the announcement has played; the caller then holds, unanswered, with no silence hang-up', () => {
    const c = announcing();
    expect(c.transfers).toEqual([]);
    c.send({ type: 'REPLY.ENDED', heard: 'Transferring you now.', complete: true });
    expect(c.actor.getSnapshot().value).toBe('transferring');
    expect(c.transfers).toEqual([
      [
        { speaker: 'agent', text: 'Hello, Acme.' },
        { speaker: 'caller', text: 'Can I talk to a person?' },
        { speaker: 'agent', text: 'Transferring you now.' },
      ],
    ]);
    c.say('Hello? Are you still there?');
    c.clock.increment(120_000);
    expect(c.replies).toEqual(['greeting', 'answer']);
    expect(c.hangups).toEqual([]);
    expect(c.actor.getSnapshot().value).toBe('transferring');
  });

  it('a failed transfer hands the floor back: the agent says so, and the conversation goes on', () => {
    const c = announcing();
    c.send({ type: 'REPLY.ENDED', heard: 'Transferring you now.', complete: true });
    c.send({ type: 'TRANSFER.FAILED' });
    expect(c.replies.at(-1)).toBe('transfer_failed');
    c.send({ type: 'REPLY.AUDIO' });
    c.send({ type: 'REPLY.ENDED', heard: 'Sorry, the line is busy.', complete: true });
    expect(c.actor.getSnapshot().value).toEqual({ listening: 'idle' });
    c.say('Okay, then book me a table.');
    expect(c.replies.at(-1)).toBe('answer');
    expect(c.transfers).toHaveLength(1);
  });

  it('a tool call with nothing to say transfers at once', () => {
    const c = start();
    c.send({ type: 'REPLY.AUDIO' });
    c.send({ type: 'REPLY.ENDED', heard: 'Hello.', complete: true });
    c.say('Put me through.');
    c.send({ type: 'TRANSFER' });
    c.send({ type: 'REPLY.ENDED', heard: '', complete: true });
    expect(c.actor.getSnapshot().value).toBe('transferring');
  });

  it('a caller who interrupts the announcement stays with the agent', () => {
    const c = announcing();
    c.send({ type: 'SPEECH.START' });
    c.clock.increment(INPUT.interruptMs);
    c.send({ type: 'WORDS', text: 'wait, actually never mind', final: true, endOfTurn: false });
    c.send({ type: 'REPLY.ENDED', heard: 'Transferring', complete: false });
    c.send({ type: 'SPEECH.END' });
    c.clock.increment(INPUT.eagernessMs);
    expect(c.transfers).toEqual([]);
    expect(c.replies.at(-1)).toBe('answer');
  });

  it('the hold survives a JSON round trip of the snapshot', () => {
    const c = announcing();
    c.send({ type: 'REPLY.ENDED', heard: 'Transferring you now.', complete: true });
    const stored = JSON.parse(JSON.stringify(c.actor.getPersistedSnapshot()));
    c.actor.stop();
    const back = start(stored);
    expect(back.actor.getSnapshot().value).toBe('transferring');
    expect(back.transfers).toEqual([]);
    back.send({ type: 'TRANSFER.FAILED' });
    expect(back.replies).toEqual(['transfer_failed']);
  });
});
