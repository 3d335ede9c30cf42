// The events of a call transfer, part of the call machine's one event union
// (call-events.ts). The conversation engine asks for a transfer; the transfer effects
// (actors/calls/transfer-effects.ts) and the carriers' webhooks about the target's leg
// answer. Every event after the request names the transfer `attempt` it is about: a
// call may try again after a failed transfer, and a late webhook of an earlier attempt
// must not move the current one.
import { z } from 'zod';

const at = z.number().int().nonnegative();
const attempt = z.number().int().positive();

/** Why a transfer did not reach the person: the carrier's word for the target's leg. */
export const TRANSFER_FAILURES = ['busy', 'no-answer', 'rejected', 'failed'] as const;
export type TransferFailure = (typeof TRANSFER_FAILURES)[number];

export const TRANSFER_MODES = ['cold', 'warm'] as const;

/** How long the target rings before the transfer counts as unanswered (carrier A `<Dial timeout>`, carrier B `timeout_secs`). */
export const TRANSFER_RING_SECONDS = 30;
export type TransferMode = (typeof TRANSFER_MODES)[number];

/** E.164: the engine validated the number (libphonenumber-js); the machine only keeps it. */
const e164 = z.string().regex(/^\+[1-9]\d{6,14}$/);

export const transferEventSchemas = [
  /**
   * The conversation asks to hand the caller to `to` (its last words have played). Warm
   * transfers carry the whisper the person who answers hears first (never empty).
   */
  z.object({ type: z.literal('TRANSFER.REQUESTED'), at, to: e164, mode: z.enum(TRANSFER_MODES), whisper: z.string().min(1).max(2000).nullable() }),
  /** The carrier took the transfer request (placeTransfer), or a check found the target's leg still ringing. */
  z.object({ type: z.literal('TRANSFER.PLACED'), at, attempt, legId: z.string().min(1).optional() }),
  /** The transfer request's answer was lost (timeout, reset): it is checked with the carrier, never sent again. */
  z.object({ type: z.literal('TRANSFER.UNKNOWN'), at, attempt }),
  /** The target answered (carrier B: its leg's call.answered); a warm transfer whispers to it now. */
  z.object({ type: z.literal('TRANSFER.ANSWERED'), at, attempt, legId: z.string().min(1).optional() }),
  /** Carrier B: the whisper was spoken to the target (call.speak.ended); the legs are bridged next. */
  z.object({ type: z.literal('TRANSFER.WHISPERED'), at, attempt }),
  /** The handoff: the caller is connected to the target. `at` is when (the meter stops there). */
  z.object({ type: z.literal('TRANSFER.CONNECTED'), at, attempt }),
  /**
   * The target was busy, did not answer, declined or could not be reached: the caller
   * goes back to the agent. `mediaBack`: the caller's media stream is being opened
   * again by the same webhook's answer (carrier A's `<Dial action>` answers with a new stream).
   */
  z.object({ type: z.literal('TRANSFER.FAILED'), at, attempt, reason: z.enum(TRANSFER_FAILURES), mediaBack: z.boolean().optional() }),
  /** A transfer step the carrier acknowledged (whisper, bridge, media released): records the intent's outcome. */
  z.object({ type: z.literal('TRANSFER.SENT'), at, attempt }),
] as const;
