// api.md's Booking object as the call record and `call.completed` show it (issue 9): one
// calendar change the conversation made through the number's CRM.
import { z } from 'zod';

export const bookingView = z
  .object({
    action: z.enum(['created', 'rescheduled', 'cancelled']),
    booking_uid: z.string().meta({ description: "The calendar's reference (the CRM's event id); the same across reschedule and cancel." }),
    start: z.string().optional().meta({ description: 'ISO 8601 with the offset of `timezone`; present for created and rescheduled, omitted for cancelled.' }),
    attendee_name: z.string().optional().meta({ description: "The caller's name, when captured." }),
    attendee_email: z.string().optional().meta({ description: 'The email the booking is under, when captured.' }),
    service: z.string().optional().meta({ description: 'The appointment type, when known.' }),
    timezone: z.string().meta({ description: 'IANA time zone of the conversation (the agent\'s `timezone`, UTC when unset).' }),
  })
  .meta({ description: "A Booking object (api.md): one calendar change the conversation made." });

export type BookingView = z.infer<typeof bookingView>;
