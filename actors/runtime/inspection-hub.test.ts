// The live view's redaction rule (an allowlist, issue 18) on the shapes that carry
// personal data (a booking, a caller's context, a transcript line), held against every
// field of every call event schema so the list and the schemas cannot drift apart
// silently; and the hub's cost rule (redact once per event, only when someone watches).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callEventSchema } from '../../machines/call-events.ts';
import { campaignEventSchema } from '../../machines/batch-campaign-events.ts';
import { createInspectionHub, REDACTED, redactEvent } from './inspection-hub.ts';

const redact = (e: { type: string } & Record<string, unknown>) => redactEvent('call', e);

describe('redactEvent', () => {
  it('redacts every field of a booking, the booking whole', () => {
    const event = {
      type: 'CONVERSATION.BOOKING',
      at: 5,
      booking: { action: 'created', booking_uid: 'bk_1', start: '2027-03-02T09:00:00-05:00', attendee_name: 'Dana Reyes', attendee_email: 'dana@example.org', service: 'Cleaning for Dana Reyes', timezone: 'America/New_York' },
    };
    expect(redact(event)).toEqual({ type: 'CONVERSATION.BOOKING', at: 5, booking: REDACTED });
    // Spread flat by some later publisher, the same fields are redacted one by one.
    expect(redact({ type: 'X', ...event.booking })).toEqual({
      type: 'X',
      action: REDACTED,
      booking_uid: REDACTED,
      start: REDACTED,
      attendee_name: REDACTED,
      attendee_email: REDACTED,
      service: REDACTED,
      timezone: REDACTED,
    });
  });

  it('redacts a caller’s context, its engine fields and any custom field', () => {
    const context = { name: 'Dana Reyes', email: 'dana@example.org', phone: '+44 20 7946 0018', location: 'Wexford', reference_id: 'REF-1', preference: 'mornings', last_call: { summary: 'x' }, open_item: 'call back', favourite_colour: 'teal' };
    expect(redact({ type: 'CALLER.KNOWN', at: 1, context })).toEqual({ type: 'CALLER.KNOWN', at: 1, context: REDACTED });
    const flat = redact({ type: 'CALLER.KNOWN', ...context });
    expect(Object.entries(flat).filter(([k]) => k !== 'type').every(([, v]) => v === REDACTED)).toBe(true);
  });

  it('keeps who spoke and when of a transcript line, never the words', () => {
    expect(redact({ type: 'CONVERSATION.LINE', at: 7, speaker: 'caller', text: 'My name is Dana', latencyMs: 420 })).toEqual({ type: 'CONVERSATION.LINE', at: 7, speaker: 'caller', text: REDACTED, latencyMs: 420 });
    expect(redact({ type: 'WORDS', text: 'zephyr', final: true, endOfTurn: false })).toEqual({ type: 'WORDS', text: REDACTED, final: true, endOfTurn: false });
    expect(redact({ type: 'TOOL.CALLS', calls: [{ id: 'c1', name: 'book_appointment', arguments: '{"name":"Dana"}' }] })).toEqual({ type: 'TOOL.CALLS', calls: REDACTED });
  });

  it('keeps a listed key only with its kind of value', () => {
    expect(redact({ type: 'TIMER', at: 1, name: 'give_up' })).toEqual({ type: 'TIMER', at: 1, name: 'give_up' });
    expect(redact({ type: 'TIMER', at: '2027-01-01', name: 'Dana' })).toEqual({ type: 'TIMER', at: REDACTED, name: REDACTED });
    expect(redact({ type: 'T', carrierCallId: '+14155550111' })).toEqual({ type: 'T', carrierCallId: REDACTED });
    expect(redact({ type: 'T', carrierCallId: '14155550111' })).toEqual({ type: 'T', carrierCallId: REDACTED });
    expect(redact({ type: 'T', carrierCallId: 'v3:AbC-12_x' })).toEqual({ type: 'T', carrierCallId: 'v3:AbC-12_x' });
    expect(redact({ type: 'T', answered: 'yes', reason: { text: 'x' } })).toEqual({ type: 'T', answered: REDACTED, reason: REDACTED });
    // Inherited names are not on the list.
    expect(redact({ type: 'T', constructor: 'Dana', toString: 'Dana' })).toEqual({ type: 'T', constructor: REDACTED, toString: REDACTED });
  });

  it('keeps a type that reads as an event type, and nothing else in its place', () => {
    expect(redact({ type: 'xstate.init' }).type).toBe('xstate.init');
    expect(redact({ type: 'Dana Reyes said hi' }).type).toBe(REDACTED);
    expect(redact({ type: '+14155550111' }).type).toBe(REDACTED);
    expect(redact({ type: 42 as unknown as string }).type).toBe(REDACTED);
  });

  it('is idempotent: the supervisor redacts, then the hub again', () => {
    const e = { type: 'CARRIER.ENDED', at: 9, status: 'completed', hangupSource: 'caller', durationSec: 3, carrierCallId: 'CAabc123', booking: { a: 1 }, whisper: null };
    const once = redact(e);
    expect(redact(once)).toEqual(once);
  });
});

/** A field's schema without its optional / nullable wrappers. */
function bare(s: z.ZodType): z.ZodType {
  let t = s;
  while (t instanceof z.ZodOptional || t instanceof z.ZodNullable) t = t.unwrap() as z.ZodType;
  return t;
}

// What each kind of field of a call event must show as. Numbers and booleans must be
// listed on purpose (a new one fails here until someone decides); free strings, objects
// and records are redacted whatever they are called; enumerations show all their words.
const SHOWN_STRINGS = new Set(['carrierCallId', 'legId', 'callId']);

describe.each([
  ['call', callEventSchema],
  ['batch campaign', campaignEventSchema],
])('every field of every %s event', (_kind, schema) => {
  const options = (schema as unknown as { options: z.ZodObject[] }).options;

  it.each(options.map((o) => [(o.shape['type'] as z.ZodLiteral<string>).value, o] as const))('%s', (type, option) => {
    for (const [key, field] of Object.entries(option.shape)) {
      if (key === 'type') continue;
      const t = bare(field as z.ZodType);
      const seen = (value: unknown) => redact({ type, [key]: value })[key];
      if (t instanceof z.ZodEnum) {
        for (const word of t.options) expect(seen(word), `${type}.${key} = ${String(word)}`).toBe(word);
        expect(seen('Dana Reyes'), `${type}.${key}`).toBe(REDACTED);
      } else if (t instanceof z.ZodNumber) {
        expect(seen(1_800_000_000_000), `${type}.${key}: a number, to list`).toBe(1_800_000_000_000);
      } else if (t instanceof z.ZodBoolean) {
        expect(seen(true), `${type}.${key}: a flag, to list`).toBe(true);
      } else if (t instanceof z.ZodString) {
        expect(seen('Dana Reyes +14155550111'), `${type}.${key}: free text`).toBe(REDACTED);
        if (SHOWN_STRINGS.has(key)) expect(seen('CA0123456789abcdef'), `${type}.${key}: a carrier id`).toBe('CA0123456789abcdef');
        else expect(seen('CA0123456789abcdef'), `${type}.${key}`).toBe(REDACTED);
      } else {
        expect(seen({ name: 'Dana' }), `${type}.${key}: structured`).toBe(REDACTED);
      }
    }
  });
});

describe('the hub', () => {
  /** An event that counts how often its fields are listed (redaction lists them once). */
  function counted(): { event: { type: string }; reads: () => number } {
    let reads = 0;
    const event = new Proxy({ type: 'CONVERSATION.LINE', at: 1, speaker: 'caller', text: 'Dana' }, {
      ownKeys(target) {
        reads++;
        return Reflect.ownKeys(target);
      },
    });
    return { event, reads: () => reads };
  }

  it('redacts nothing when nobody of the account watches, and once per event for any number of viewers', () => {
    const hub = createInspectionHub();
    const quiet = counted();
    hub.publish('acct_1', { type: '@xstate.event', kind: 'call', actorId: 'call_1', seq: 1, at: 1, event: quiet.event });
    expect(quiet.reads()).toBe(0);

    const got: unknown[] = [];
    hub.subscribe('acct_1', (e) => got.push(e));
    hub.subscribe('acct_1', (e) => got.push(e));
    hub.subscribe('acct_2', () => {
      throw new Error('another account’s viewer must not hear it');
    });
    const watched = counted();
    hub.publish('acct_1', { type: '@xstate.event', kind: 'call', actorId: 'call_1', seq: 2, at: 1, event: watched.event });
    expect(watched.reads()).toBe(1);
    expect(got).toHaveLength(2);
    expect(got[0]).toBe(got[1]);
    expect(got[0]).toMatchObject({ event: { type: 'CONVERSATION.LINE', speaker: 'caller', text: REDACTED } });
    expect(hub.listenerErrors()).toBe(0);
  });
});
