// What an SMS campaign actor accepts and starts from, as zod schemas: the API, the
// scheduler's durable `due` deadline, the outcomes of the campaign's own `send` effect and
// the runtime's restore all parse into these before they reach the actor. Every event
// carries `at` (epoch ms): the machine never reads a clock.
import { z } from 'zod';

const at = z.number().int().nonnegative();
const seq = z.number().int().nonnegative();

/** How the `send` effect's message fared at the carrier, as the campaign counts it. */
export const SMS_SEND_OUTCOMES = ['accepted', 'failed'] as const;

export const smsCampaignEventSchema = z.discriminatedUnion('type', [
  /** POST …/launch: a draft or scheduled campaign with at least one recipient runs now. */
  z.object({ type: z.literal('LAUNCH'), at }),
  /** The durable deadline of `scheduled_at`: the campaign is due. */
  z.object({ type: z.literal('DUE'), at }),
  /**
   * PATCH of a draft or scheduled campaign: the recipients replaced (their new count) and/or
   * a new `scheduled_at`. Edits the machine has no part in (`context_prompt`, the body) never
   * reach it; a running or finished campaign ignores this (the API refuses with campaign_not_editable).
   */
  z.object({ type: z.literal('PATCH'), at, total: z.number().int().nonnegative().optional(), scheduledAt: at.nullable().optional() }),
  /** DELETE …: nothing more is sent. */
  z.object({ type: z.literal('CANCEL'), at }),
  /**
   * The `send` effect's outcome for recipient `seq`: accepted by the carrier, or failed
   * (refused by the carrier, the recipient unsubscribed from the sending number, undeliverable).
   */
  z.object({ type: z.literal('SENT'), at, seq, outcome: z.enum(SMS_SEND_OUTCOMES) }),
  /** The `send` effect found recipient `seq` not to be sent (not pending any more): nothing to count as sent or failed. */
  z.object({ type: z.literal('SKIPPED'), at, seq }),
  /** The campaign came back after a restart. */
  z.object({ type: z.literal('RESTORED'), at }),
]);
export type SmsCampaignEvent = z.infer<typeof smsCampaignEventSchema>;

export const smsCampaignInputSchema = z.object({
  id: z.string(),
  accountId: z.string(),
  /** Valid recipients, sent in `seq` order 0 … total - 1. */
  total: z.number().int().nonnegative(),
  /** `draft`: nothing is sent until launch (contract §8); `schedule`: at `scheduledAt`; `now`: at once. */
  scheduleType: z.enum(['now', 'schedule', 'draft']),
  /** When a scheduled campaign is due (epoch ms); null for `now` (and a draft without a date). */
  scheduledAt: at.nullable(),
  createdAt: at,
});
export type SmsCampaignInput = z.infer<typeof smsCampaignInputSchema>;
