// Texts during a call (issue 21, agent setting incall_sms_enabled): the `send_sms` tool
// the model is offered, its arguments checked, and the confirmation text a booking made
// or moved on the call becomes. Pure; the sending is actors/agent/engine-sms.ts.
import { z } from 'zod';
import type { LlmTool } from '../providers/llm.ts';
import type { Booking } from './booking-tools.ts';
import { SMS_MAX_CHARS } from './sms-prompt.ts';

export const SEND_SMS_TOOL = 'send_sms';

/** A model that loops on the tool must not flood the person's phone. */
export const MAX_TEXTS_PER_CALL = 5;

export function sendSmsToolDefinition(): LlmTool {
  return {
    type: 'function',
    function: {
      name: SEND_SMS_TOOL,
      description:
        'Send a text message (SMS) to the person on this call, from this phone line. Use it when the person agrees to get details by text ' +
        '(an address, a link, a reference, a summary). Write the whole message in plain text; tell the person it is on its way once the tool answers.',
      parameters: {
        type: 'object',
        properties: { body: { type: 'string', description: `The text message itself, plain text, at most ${SMS_MAX_CHARS} characters.` } },
        required: ['body'],
        additionalProperties: false,
      },
    },
  };
}

const smsArgs = z.object({ body: z.string().trim().min(1, 'the message is empty').max(SMS_MAX_CHARS, `at most ${SMS_MAX_CHARS} characters`) });

/** The model's arguments (JSON text) as the text to send, or an error the model can act on. */
export function parseSmsArgs(args: string): { ok: true; body: string } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = args.trim() === '' ? {} : JSON.parse(args);
  } catch {
    return { ok: false, error: 'the arguments were not a JSON object; call the tool again with {"body": "<the message>"}' };
  }
  const p = smsArgs.safeParse(raw);
  if (!p.success) return { ok: false, error: `invalid arguments: ${p.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ')}` };
  return { ok: true, body: p.data.body };
}

/** A time as a text says it in `timezone`: "Tuesday, March 2 at 9:00 AM EST". */
export function textTime(iso: string, timezone: string): string {
  const at = new Date(Date.parse(iso));
  const day = new Intl.DateTimeFormat('en-US', { timeZone: timezone, weekday: 'long', month: 'long', day: 'numeric' }).format(at);
  const time = new Intl.DateTimeFormat('en-US', { timeZone: timezone, hour: 'numeric', minute: '2-digit', timeZoneName: 'short' }).format(at);
  return `${day} at ${time}`;
}

/** The confirmation text of a booking made or moved on the call; null for one that has nothing to confirm (a cancellation). */
export function bookingConfirmationText(b: Booking): string | null {
  if ((b.action !== 'created' && b.action !== 'rescheduled') || !b.start) return null;
  const what = b.service ? `Your ${b.service} appointment` : 'Your appointment';
  const verb = b.action === 'created' ? 'is booked for' : 'has been moved to';
  return `${what} ${verb} ${textTime(b.start, b.timezone)}. Reference: ${b.booking_uid}.`;
}
