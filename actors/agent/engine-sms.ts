// Texts during one call (issue 21), for an agent with incall_sms_enabled: the model's
// `send_sms` tool, run in-process beside the HTTP and booking tools, and the
// confirmation text of each booking made or moved on the call. Both go to the person on
// the call (the far end) from the call's number, through the SMS system's paced sender
// (`CallTexts`). Without the setting the call has no setup here: no tool is offered and
// nothing is ever texted, whatever the prompt says.
import type { ToolCall } from '../../machines/conversation.ts';
import type { Booking } from '../../voice/conversation/booking-tools.ts';
import { bookingConfirmationText, MAX_TEXTS_PER_CALL, parseSmsArgs, SEND_SMS_TOOL } from '../../voice/conversation/sms-tool.ts';
import type { LocalTools } from './engine-tools.ts';

/** What a call texts with (conversation-setup.ts): null unless the agent has incall_sms_enabled. */
export interface CallSmsSetup {
  accountId: string;
  /** The call's number: texts go from it. */
  phoneNumber: string;
  /** The far end: the caller on inbound calls, the called number on outbound ones. */
  to: string;
  agentId: string | null;
  /** The call's public id, kept on the text. */
  callId: string;
}

export type CallTextOutcome = { ok: true; messageId: string } | { ok: false; error: string };

/** Queues a text of a call (actors/agent/call-texts.ts over the SMS system). Never throws. */
export interface CallTexts {
  send(m: CallSmsSetup & { body: string; origin: 'call' | 'booking' }): CallTextOutcome;
}

export interface EngineSms extends LocalTools {
  /** A booking the CRM accepted on this call: created and rescheduled ones are confirmed by text. */
  onBooking(booking: Booking): void;
}

export function createEngineSms(deps: { setup: CallSmsSetup; texts: CallTexts }): EngineSms {
  const { setup, texts } = deps;
  let sent = 0;
  return {
    handles: (name) => name === SEND_SMS_TOOL,

    async run(call: ToolCall) {
      const args = parseSmsArgs(call.arguments);
      if (!args.ok) return { ok: false, error: args.error };
      if (sent >= MAX_TEXTS_PER_CALL) return { ok: false, error: `${MAX_TEXTS_PER_CALL} texts were already sent on this call; do not send more, give any other details aloud` };
      const outcome = texts.send({ ...setup, body: args.body, origin: 'call' });
      if (!outcome.ok) return { ok: false, error: outcome.error };
      sent++;
      return { ok: true, result: JSON.stringify({ status: 'queued', message_id: outcome.messageId }) };
    },

    onBooking(booking) {
      const body = bookingConfirmationText(booking);
      // A refused confirmation (the person opted out) is logged by CallTexts; the call goes on.
      if (body !== null) texts.send({ ...setup, body, origin: 'booking' });
    },
  };
}
