// What the batch campaign suites read from the carrier simulators, the judges of their
// claims: the call legs each carrier recorded, the dial requests that reached it, and the
// most calls up at one instant.
import { peakOverlap } from '../../bench/batch-plan.ts';
import type { CallStack, Provider } from './calls.ts';

/** A call leg as the carrier's simulator recorded it. */
export interface Leg {
  id: string;
  to: string;
  direction: 'outbound' | 'inbound';
  createdAt: number;
  endedAt: number | null;
  /** Answered and not ended: the far end is on the line. */
  up: boolean;
}

/** Every leg the carrier recorded, but those a transfer dialed (carrier A's `outbound-dial`). */
export function carrierLegs(stack: CallStack, provider: Provider): Leg[] {
  if (provider === 'twilio') {
    return [...stack.sims.twilio.calls.values()]
      .filter((c) => c.direction !== 'outbound-dial')
      .map((c) => ({ id: c.sid, to: c.to, direction: c.direction === 'inbound' ? 'inbound' : 'outbound', createdAt: c.createdAt, endedAt: c.endedAt, up: c.answeredAt !== null && c.endedAt === null }));
  }
  return [...stack.sims.telnyx.calls.calls.values()].map((c) => ({
    id: c.callControlId,
    to: c.to,
    direction: c.direction === 'incoming' ? 'inbound' : 'outbound',
    createdAt: c.startedAt,
    endedAt: c.endedAt,
    up: c.status === 'answered',
  }));
}

/** The carrier's calls to these numbers. */
export const campaignLegs = (stack: CallStack, provider: Provider, numbers: readonly string[]): Leg[] =>
  carrierLegs(stack, provider).filter((l) => l.direction === 'outbound' && numbers.includes(l.to));

/** Dial requests that reached the carrier for these numbers, placed or not. */
export function dialsTo(stack: CallStack, provider: Provider, numbers: readonly string[]): number {
  const sim = provider === 'twilio' ? stack.sims.twilio : stack.sims.telnyx;
  return numbers.reduce((n, to) => n + sim.dialRequests(to).length, 0);
}

/** The most calls up at one instant, by the simulator's record (a call not ended is still up). */
export const peakConcurrent = (calls: readonly { createdAt: number; endedAt: number | null }[]): number =>
  peakOverlap(calls.map((c) => ({ start: c.createdAt, end: c.endedAt })));
