// The events a call actor accepts, as one zod union: carrier webhooks, the media
// stream, the supervisor and the API all parse into these before `actor.send`. Every
// event that depends on time carries `at` (epoch ms): the machine never reads a clock.
import { z } from 'zod';
import { transferEventSchemas } from './transfer-events.ts';

export const FINAL_CALL_STATUSES = ['completed', 'busy', 'no-answer', 'failed', 'canceled'] as const;
export type FinalCallStatus = (typeof FINAL_CALL_STATUSES)[number];

export const CALL_STATUSES = ['queued', 'initiated', 'ringing', 'in-progress', ...FINAL_CALL_STATUSES] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

/**
 * api.md's ended reasons, plus three honest infrastructure endings: `media_lost` (the
 * call's media died with the process), `provider_not_configured` (no speech or model
 * provider is configured, so nobody could talk) and `provider_error` (a provider failed
 * mid-call and retrying did not help). `precall_rejected` is an inbound call the customer's pre-call
 * webhook answered `reject` (recorded by the inbound router; no actor ever runs it).
 */
export const ENDED_REASONS = [
  'completed',
  'transferred',
  'voicemail_detected',
  'silence_timeout',
  'ivr_timeout',
  'max_duration_reached',
  'caller_hangup',
  'callee_hangup',
  'busy',
  'failed',
  'no-answer',
  'canceled',
  'concurrency_limit',
  'agent_hangup',
  'media_lost',
  'provider_not_configured',
  'provider_error',
  'precall_rejected',
] as const;
export type EndedReason = (typeof ENDED_REASONS)[number];

/** Why the service itself ends a call. */
export const HANGUP_REASONS = [
  'agent_hangup',
  'silence_timeout',
  'max_duration_reached',
  'voicemail_detected',
  'canceled',
  'transferred',
  'provider_not_configured',
  'provider_error',
] as const;
export type HangupReason = (typeof HANGUP_REASONS)[number];

const at = z.number().int().nonnegative();

export const callEventSchema = z.discriminatedUnion('type', [
  /** The account has a free concurrency slot for this queued outbound call. */
  z.object({ type: z.literal('SLOT.GRANTED'), at }),
  /** The carrier accepted the dial request. */
  z.object({ type: z.literal('DIAL.ACCEPTED'), at, carrierCallId: z.string().min(1) }),
  /** The carrier refused the dial request or could not be reached. */
  z.object({ type: z.literal('DIAL.REJECTED'), at, carrierError: z.record(z.string(), z.unknown()) }),
  /** Carrier progress. `carrierCallId` is present when the webhook carries it. */
  z.object({ type: z.literal('CARRIER.RINGING'), at, carrierCallId: z.string().optional() }),
  z.object({ type: z.literal('CARRIER.ANSWERED'), at, carrierCallId: z.string().optional() }),
  /** Answering-machine detection result (carrier A AnsweredBy, carrier B machine.detection.ended). */
  z.object({ type: z.literal('CARRIER.AMD'), at, result: z.enum(['human', 'machine', 'fax', 'unknown']), carrierCallId: z.string().optional() }),
  /** The carrier says the call is over, with its final status. */
  z.object({
    type: z.literal('CARRIER.ENDED'),
    at,
    status: z.enum(FINAL_CALL_STATUSES),
    /** Who hung up, when the carrier says (carrier B hangup_source; carrier A does not tell). */
    hangupSource: z.enum(['caller', 'callee', 'unknown']).optional(),
    /** The carrier's connected duration in seconds, when given. */
    durationSec: z.number().nonnegative().optional(),
    /** The carrier's id of the call: it may end before the dial's own answer arrives. */
    carrierCallId: z.string().optional(),
  }),
  /** The bidirectional media stream opened / closed. */
  z.object({ type: z.literal('MEDIA.STARTED'), at }),
  z.object({ type: z.literal('MEDIA.STOPPED'), at }),
  z.object({ type: z.literal('DTMF'), at, digit: z.string().regex(/^[0-9A-D*#]$/) }),
  /** The service decides to end the call (API cancel, engine, timers). The machine asks the carrier to hang up. */
  z.object({ type: z.literal('HANGUP.REQUESTED'), at, reason: z.enum(HANGUP_REASONS) }),
  /** The hang-up effect finished (the carrier confirmed, or the call was already gone). */
  z.object({
    type: z.literal('HANGUP.DONE'),
    at,
    /** What the carrier says of the call once it is hung up, when it could be asked: its final word wins. */
    carrierStatus: z.enum([...FINAL_CALL_STATUSES, 'active', 'unknown']).optional(),
    endedAt: at.optional(),
    durationSec: z.number().nonnegative().optional(),
  }),
  /**
   * What the carrier says of a call we asked it about: after a restart (its media died
   * with the process: `active` means we hang up, media_lost) or because the call went
   * quiet past its state's deadline (`active` means it goes on). `endedAt` and
   * `durationSec` are the carrier's own, so a call that ended while we were down is
   * billed to its real end.
   */
  z.object({
    type: z.literal('RECONCILED'),
    at,
    carrierStatus: z.enum([...FINAL_CALL_STATUSES, 'active', 'unknown']),
    /** The carrier says the far end answered (a live call that is past ringing). */
    answered: z.boolean().optional(),
    endedAt: at.optional(),
    durationSec: z.number().nonnegative().optional(),
  }),
  /** The dial's answer never came (timeout, reset, crash): the carrier may or may not have the call. */
  z.object({ type: z.literal('DIAL.UNKNOWN'), at, carrierError: z.record(z.string(), z.unknown()).optional() }),
  /** Reconciling an unknown dial: the carrier has the call. */
  z.object({
    type: z.literal('DIAL.FOUND'),
    at,
    carrierCallId: z.string().min(1),
    carrierStatus: z.enum([...FINAL_CALL_STATUSES, 'active', 'unknown']),
    answered: z.boolean().optional(),
    endedAt: at.optional(),
    durationSec: z.number().nonnegative().optional(),
  }),
  /** Reconciling an unknown dial: the carrier has no such call; it was never placed. */
  z.object({ type: z.literal('DIAL.NOT_FOUND'), at }),
  /** The carrier could not be asked (reconciliation or hang-up); the machine retries on a timer. */
  z.object({ type: z.literal('CARRIER.UNREACHABLE'), at }),
  /** A durable deadline of the machine's own came due (see the TIMERS list). */
  z.object({ type: z.literal('TIMER'), at, name: z.enum(['queue_check', 'stale', 'retry', 'give_up', 'transfer']) }),
  /** The actor came back after a restart; calls whose media died with the process ask the carrier. */
  z.object({ type: z.literal('RESTORED'), at }),
  /**
   * A line of the conversation is final (the conversation engine): the caller's words,
   * or what the caller heard of the agent's reply. An agent line carries the turn's
   * latency, from the caller's end of speech to the reply's first audio frame sent.
   */
  z.object({
    type: z.literal('CONVERSATION.LINE'),
    at,
    speaker: z.enum(['agent', 'caller']),
    text: z.string().min(1).max(20_000),
    latencyMs: z.number().nonnegative().optional(),
  }),
  /**
   * A calendar change the conversation made through the number's CRM (api.md's Booking
   * object): appended to the call record's `bookings`, in order.
   */
  z.object({
    type: z.literal('CONVERSATION.BOOKING'),
    at,
    booking: z.object({
      action: z.enum(['created', 'rescheduled', 'cancelled']),
      booking_uid: z.string().min(1).max(200),
      start: z.string().max(40).optional(),
      attendee_name: z.string().max(200).optional(),
      attendee_email: z.string().max(254).optional(),
      service: z.string().max(200).optional(),
      timezone: z.string().min(1).max(64),
    }),
  }),
  /** Post-call work (recording, analysis, webhooks) finished; later issues fill it in. */
  z.object({ type: z.literal('POSTCALL.DONE'), at }),
  ...transferEventSchemas,
]);

export type CallEvent = z.infer<typeof callEventSchema>;
export type CallEventType = CallEvent['type'];

/** What a call actor starts from. Plain JSON: it is persisted in every snapshot. */
export const callInputSchema = z.object({
  /** Internal id, `call_…`: the actor id and the id in carrier webhook URLs. Never changes. */
  id: z.string(),
  accountId: z.string(),
  agentId: z.string().nullable(),
  /** A web call is `inbound`: the person in the browser calls the agent. */
  direction: z.enum(['inbound', 'outbound']),
  /**
   * The call's media provider: a carrier, or `web` for a browser's web call (POST
   * /v1/web-calls): no carrier leg, its media on the browser websocket, answered when
   * that socket connects, ended when it closes.
   */
  provider: z.enum(['twilio', 'telnyx', 'web']),
  /** The account's own number on the call (from outbound, to inbound). */
  phoneNumber: z.string(),
  from: z.string(),
  to: z.string(),
  /** Known from the start for inbound calls; outbound calls learn it from DIAL.ACCEPTED. */
  carrierCallId: z.string().nullable(),
  amdEnabled: z.boolean(),
  maxDurationSec: z.number().int().positive(),
  campaignId: z.string().nullable(),
  /** Outbound only: start in `queued` (no free slot) instead of dialing at once. */
  queued: z.boolean(),
  createdAt: at,
  /** Web calls: the browser must connect by then (its one-time access token's expiry), or the call ends `no-answer`. */
  connectBy: at.optional(),
});
export type CallInput = z.infer<typeof callInputSchema>;
