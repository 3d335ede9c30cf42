// What a batch campaign actor accepts and starts from (issue 20), as zod schemas: the API,
// the scheduler's durable deadlines, the campaign's own effect outcomes and the calls it
// placed (through their last commit) all parse into these before they reach the actor.
// Every event carries `at` (epoch ms): the machine never reads a clock.
import { z } from 'zod';
import { WEEKDAYS } from './calling-window.ts';

// The window's rules, for the HTTP layer (it may import the machines' *-events.ts schemas, not the machines).
export { isLocalDate, isValidTimeZone, resolveWindowZone, scheduledDateDue, windowProblem, WEEKDAYS, type CallingWindow, type Weekday } from './calling-window.ts';

const at = z.number().int().nonnegative();
const seq = z.number().int().nonnegative();

/** Why the calls kind may refuse to place a call at all (actors/calls/place-outbound-call.ts): the campaign cannot run. */
export const PLACEMENT_REFUSALS = ['agent_not_found', 'agent_inactive', 'from_number_not_found', 'agent_missing_phone_number', 'agent_missing_carrier_credentials'] as const;

/**
 * Why a campaign cannot run: the calls kind's refusals, and its own: its sealed prompt or
 * recipients cannot be opened (the service was started with another SECRETS_KEY).
 */
export const CAMPAIGN_REFUSALS = [...PLACEMENT_REFUSALS, 'campaign_unreadable'] as const;

/** How a call placed for a recipient ended, as the campaign counts it. */
export const RECIPIENT_ENDINGS = ['completed', 'voicemail', 'failed'] as const;

export const campaignEventSchema = z.discriminatedUnion('type', [
  /** POST …/launch: a scheduled campaign runs now. */
  z.object({ type: z.literal('LAUNCH'), at }),
  /** DELETE …: no new dial; calls already placed finish. */
  z.object({ type: z.literal('CANCEL'), at }),
  /** The durable deadline of `scheduled_date`: the campaign is due. */
  z.object({ type: z.literal('DUE'), at }),
  /** The durable deadlines of the calling window. */
  z.object({ type: z.literal('WINDOW.OPEN'), at }),
  z.object({ type: z.literal('WINDOW.CLOSE'), at }),
  /** The `place` effect placed recipient `seq`'s call (its id is the call's internal id). */
  z.object({ type: z.literal('PLACED'), at, seq, callId: z.string(), outcome: z.enum(['accepted', 'queued', 'rejected', 'unknown']) }),
  /** The `place` effect did not place recipient `seq` now (no free slot, or the window just closed): it goes back in line. */
  z.object({ type: z.literal('DEFERRED'), at, seq, reason: z.enum(['no_slot', 'window_closed']) }),
  /** The `place` effect found recipient `seq` not pending any more (cancelled meanwhile): nothing to count. */
  z.object({ type: z.literal('SKIPPED'), at, seq }),
  /** The calls kind refused to place at all (no carrier credentials, the agent gone): the campaign cannot run. */
  z.object({ type: z.literal('REFUSED'), at, seq, code: z.enum(CAMPAIGN_REFUSALS), message: z.string() }),
  /** A call the campaign placed ended (delivered durably from the call's last commit). */
  z.object({ type: z.literal('CALL.ENDED'), at, callId: z.string(), ending: z.enum(RECIPIENT_ENDINGS) }),
  /**
   * A call the campaign placed ended without ever being placed at the carrier (its dial's
   * answer was lost, the carrier has no such call): recipient `seq` was never dialed and
   * goes back in line (delivered durably from the call's last commit).
   */
  z.object({ type: z.literal('CALL.NEVER_PLACED'), at, callId: z.string(), seq }),
  /** A waiting-for-a-slot pause is over: try again. */
  z.object({ type: z.literal('RETRY'), at }),
  /** The campaign came back after a restart. */
  z.object({ type: z.literal('RESTORED'), at }),
]);
export type CampaignEvent = z.infer<typeof campaignEventSchema>;

export const campaignInputSchema = z.object({
  id: z.string(),
  accountId: z.string(),
  /** Valid recipients, placed in `seq` order 0 … total - 1. */
  total: z.number().int().nonnegative(),
  /** Calls of this campaign up at once at most (max_concurrent, or the account's limit at creation). */
  maxConcurrent: z.number().int().positive(),
  scheduleType: z.enum(['now', 'schedule']),
  /** When the campaign is due (scheduled_date's start in the window's zone); null for `now`. */
  dueAt: z.number().int().nonnegative().nullable(),
  window: z.object({
    startMinutes: z.number().int().nullable(),
    endMinutes: z.number().int().nullable(),
    days: z.array(z.enum(WEEKDAYS)).nullable(),
    timezone: z.string(),
  }),
  createdAt: at,
});
export type CampaignInput = z.infer<typeof campaignInputSchema>;
