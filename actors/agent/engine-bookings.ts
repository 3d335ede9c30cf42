// The booking tools of one call's conversation (issue 9), run in-process beside the
// HTTP tools (actors/agent/engine-tools.ts hands them the model's calls): free slots, book,
// reschedule and cancel through the number's CRM calendar (voice/providers/crm-calendar.ts).
// Each change that the CRM accepted becomes a Booking object (api.md) reported to the
// call's actor, so it is durable and lands on the call record in order.
//
// With require_booking_confirmation a change is not made when the model asks: the
// engine proposes it (machines/booking-confirmation.ts), says the read-back itself as
// its next reply, and only a clear yes in the caller's next turn lets the change run (as
// a tool call of its own, `authorize`d here); anything else is told to the model.
import { confirmationStep, NO_CONFIRMATION, type ConfirmationDecision, type ConfirmationState } from '../../machines/booking-confirmation.ts';
import type { ToolCall } from '../../machines/conversation.ts';
import {
  BOOKING_TOOL_NAMES,
  BOOKING_TOOLS,
  MAX_SLOTS_SHOWN,
  parseAction,
  parseFind,
  readBack,
  spokenTime,
  type Booking,
  type BookingAction,
} from '../../voice/conversation/booking-tools.ts';
import { CrmError, type CrmCalendarClient } from '../../voice/providers/crm-calendar.ts';

/** What a call needs to book (from its number's CRM integration and its agent). */
export interface BookingSetup {
  locationId: string;
  calendarId: string;
  /** The private integration token (opened from its sealed form; never logged). */
  token: string;
  /** IANA zone the model and the caller talk in. */
  timezone: string;
  /** require_booking_confirmation (the number's override first, null inherits the agent's). */
  confirm: boolean;
  /** The far end's number: the contact a booking is made under. */
  callerPhone: string;
}

export type LocalToolOutcome = { ok: true; result: string } | { ok: false; error: string };

export interface EngineBookingsDeps {
  setup: BookingSetup;
  client: CrmCalendarClient;
  /** A change the CRM accepted (to the call's actor: durable, in order). */
  record(booking: Booking): void;
}

export interface EngineBookings {
  handles(name: string): boolean;
  run(call: ToolCall, signal: AbortSignal): Promise<LocalToolOutcome>;
  /** The caller's turn ended with these words: their answer to a read-back, if one is pending. */
  onCallerLine(text: string): void;
  /** The read-back to say as the next reply, if one is due (marked said). */
  takeReadBack(): string | null;
  /** The decision on the caller's last answer, once. */
  takeDecision(): ConfirmationDecision<{ name: string; arguments: string }> | null;
  /** Lets the call with this id make its change without another read-back (a confirmed one). */
  authorize(id: string): void;
}

interface Known {
  start?: string;
  attendee_name?: string;
  attendee_email?: string;
  service?: string;
}

export function createEngineBookings(deps: EngineBookingsDeps): EngineBookings {
  const { setup, client } = deps;
  const zone = setup.timezone;
  let confirmation: ConfirmationState<{ name: string; arguments: string }> = NO_CONFIRMATION;
  let decision: ConfirmationDecision<{ name: string; arguments: string }> | null = null;
  let readBackText: string | null = null;
  const authorized = new Set<string>();
  /** Appointments booked or seen in this call, by booking_uid; the latest one is the default. */
  const known = new Map<string, Known>();
  let latest: string | null = null;
  let contactId: string | null = null;

  const json = (v: unknown): LocalToolOutcome => ({ ok: true, result: JSON.stringify(v) });

  function failure(err: unknown, doing: string): LocalToolOutcome {
    if (!(err instanceof CrmError)) return { ok: false, error: `the calendar could not ${doing}` };
    if (err.kind === 'slot_taken') return { ok: false, error: 'that time is no longer free; find free slots again and offer the caller another time' };
    if (err.kind === 'not_found') return { ok: false, error: `the calendar could not ${doing}: the appointment was not found` };
    const again = err.retryable ? ' (trying once more in a moment may work)' : ' (trying again will not help; offer to have someone call back)';
    return { ok: false, error: `the calendar could not ${doing}: ${err.message}${again}` };
  }

  async function perform(action: BookingAction, signal: AbortSignal): Promise<LocalToolOutcome> {
    if (action.kind === 'book') {
      try {
        contactId ??= await client.upsertContact({
          locationId: setup.locationId,
          phone: setup.callerPhone,
          ...(action.name ? { name: action.name } : {}),
          ...(action.email ? { email: action.email } : {}),
          signal,
        });
        const event = await client.book({ calendarId: setup.calendarId, locationId: setup.locationId, contactId, startTime: action.start, ...(action.service ? { title: action.service } : {}), signal });
        const facts: Known = {
          start: action.start,
          ...(action.name ? { attendee_name: action.name } : {}),
          ...(action.email ? { attendee_email: action.email } : {}),
          ...(action.service ? { service: action.service } : {}),
        };
        known.set(event.id, facts);
        latest = event.id;
        deps.record({ action: 'created', booking_uid: event.id, ...facts, timezone: zone });
        return json({ status: 'booked', booking_uid: event.id, start: action.start, spoken: spokenTime(action.start, zone) });
      } catch (err) {
        return failure(err, 'book the appointment');
      }
    }
    const uid = action.bookingUid ?? latest;
    if (uid === null) return { ok: false, error: 'no appointment was booked in this call: ask the caller for the booking reference (booking_uid)' };
    const before = known.get(uid) ?? {};
    const { start: _s, ...rest } = before;
    if (action.kind === 'reschedule') {
      try {
        await client.reschedule({ eventId: uid, startTime: action.start, signal });
        known.set(uid, { ...before, start: action.start });
        latest = uid;
        deps.record({ action: 'rescheduled', booking_uid: uid, start: action.start, ...rest, timezone: zone });
        return json({ status: 'rescheduled', booking_uid: uid, start: action.start, spoken: spokenTime(action.start, zone) });
      } catch (err) {
        return failure(err, 'move the appointment');
      }
    }
    try {
      await client.cancel({ eventId: uid, signal });
      known.delete(uid);
      if (latest === uid) latest = null;
      deps.record({ action: 'cancelled', booking_uid: uid, ...rest, timezone: zone });
      return json({ status: 'cancelled', booking_uid: uid });
    } catch (err) {
      return failure(err, 'cancel the appointment');
    }
  }

  return {
    handles: (name) => BOOKING_TOOL_NAMES.has(name),

    async run(call, signal) {
      if (call.name === BOOKING_TOOLS.find) {
        const p = parseFind(call.arguments, zone);
        if (!p.ok) return { ok: false, error: p.error };
        try {
          const slots = await client.freeSlots({ calendarId: setup.calendarId, from: p.value.from, to: p.value.to, timezone: zone, signal });
          return json({ timezone: zone, slots: slots.slice(0, MAX_SLOTS_SHOWN).map((start) => ({ start, spoken: spokenTime(start, zone) })), more: slots.length > MAX_SLOTS_SHOWN });
        } catch (err) {
          return failure(err, 'list free times');
        }
      }
      const p = parseAction(call.name, call.arguments, zone);
      if (!p.ok) return { ok: false, error: p.error };
      if (setup.confirm && !authorized.delete(call.id)) {
        const current = p.value.kind === 'book' ? null : known.get(p.value.bookingUid ?? latest ?? '') ?? null;
        const text = readBack(p.value, zone, current);
        confirmation = confirmationStep(confirmation, { type: 'PROPOSED', proposal: { action: { name: call.name, arguments: call.arguments }, readBack: text } }).state;
        readBackText = text;
        return json({
          status: 'awaiting_confirmation',
          note: 'Nothing has been changed yet. The system is reading the details back to the caller now and makes the change only if they clearly say yes; you will be told the outcome. Do not say it is done.',
        });
      }
      return perform(p.value, signal);
    },

    onCallerLine(text) {
      const out = confirmationStep(confirmation, { type: 'CALLER', text });
      confirmation = out.state;
      readBackText = confirmation.readBackDue ? readBackText : null;
      if (out.decision.kind !== 'none') decision = out.decision;
    },

    takeReadBack() {
      if (!confirmation.readBackDue || readBackText === null) return null;
      confirmation = confirmationStep(confirmation, { type: 'READ_BACK' }).state;
      const text = readBackText;
      readBackText = null;
      return text;
    },

    takeDecision() {
      const d = decision;
      decision = null;
      return d;
    },

    authorize(id) {
      authorized.add(id);
    },
  };
}

/** What the model is told when the caller did not clearly confirm. */
export function notConfirmedNote(answer: 'no' | 'unclear', tool: string): string {
  const what = tool === BOOKING_TOOLS.cancel ? 'cancelled' : tool === BOOKING_TOOLS.reschedule ? 'moved' : 'booked';
  return answer === 'no'
    ? `The caller said no to the read-back: nothing was ${what}. Ask what they would like instead.`
    : `The caller's answer to the read-back was not a clear yes: nothing was ${what}. Ask again whether they want it, and call the tool again only if they do.`;
}
