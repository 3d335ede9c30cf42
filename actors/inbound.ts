// Routing of a call to one of our numbers, the same for both carriers: refused when
// the number has no agent, its agent is inactive or the number does not take calls
// (recorded failed/failed), refused busy over the account's concurrency limit
// (recorded busy/concurrency_limit), otherwise answered: a call actor starts in
// in-progress and its media stream is expected with a one-time token.
import type { Storage } from '../storage/index.ts';
import type { PhoneNumberRow, Provider } from '../storage/phone-numbers.ts';
import { newPrefixedId } from '../storage/ids.ts';
import type { CallSystem } from './system.ts';
import { newMediaToken } from './system.ts';

export type InboundDecision =
  | { kind: 'answer'; callId: string; mediaToken: string }
  | { kind: 'reject'; why: 'orphaned' | 'agent_inactive' | 'inbound_disabled' }
  | { kind: 'busy' };

export interface IncomingCall {
  number: PhoneNumberRow;
  provider: Provider;
  carrierCallId: string;
  from: string;
  to: string;
  at: number;
}

export function routeInbound(system: CallSystem, storage: Storage, call: IncomingCall): InboundDecision {
  const { number, at } = call;
  const accountId = number.account_id;

  // A repeated webhook for a call we already decided on gets the same answer.
  const existing = storage.calls.getByCarrierCallId(accountId, call.carrierCallId);
  if (existing) {
    const id = existing.internal_id;
    if (id !== null && system.isLive(id)) return { kind: 'answer', callId: id, mediaToken: system.mediaTokenOf(id) };
    return existing.ended_reason === 'concurrency_limit' ? { kind: 'busy' } : { kind: 'reject', why: 'orphaned' };
  }

  const agent = number.agent_id === null ? undefined : storage.agents.get(accountId, number.agent_id);
  const refusal: InboundDecision | null = !agent
    ? { kind: 'reject', why: 'orphaned' }
    : !agent.is_active
      ? { kind: 'reject', why: 'agent_inactive' }
      : number.inbound_enabled !== 1
        ? { kind: 'reject', why: 'inbound_disabled' }
        : null;
  const id = newPrefixedId('call');
  if (refusal === null && system.concurrency.tryAcquire(accountId, id)) {
    const mediaToken = newMediaToken();
    try {
      system.start(
        {
          id,
          accountId,
          agentId: agent!.agent_id,
          direction: 'inbound',
          provider: call.provider,
          phoneNumber: number.phone_number,
          from: call.from,
          to: call.to,
          carrierCallId: call.carrierCallId,
          amdEnabled: false,
          maxDurationSec: agent!.max_call_duration_seconds,
          campaignId: null,
          queued: false,
          createdAt: at,
        },
        { mediaToken },
      );
    } catch (err) {
      system.concurrency.release(accountId, id);
      throw err;
    }
    return { kind: 'answer', callId: id, mediaToken };
  }

  const decision: InboundDecision = refusal ?? { kind: 'busy' };
  const busy = decision.kind === 'busy';
  storage.calls.save({
    internalId: id,
    callId: call.carrierCallId,
    accountId,
    agentId: number.agent_id,
    direction: 'inbound',
    callStatus: busy ? 'busy' : 'failed',
    fromNumber: call.from,
    toNumber: call.to,
    phoneNumber: number.phone_number,
    provider: call.provider,
    carrierCallId: call.carrierCallId,
    startedAt: null,
    endedAt: at,
    durationMs: 0,
    endedReason: busy ? 'concurrency_limit' : 'failed',
    chargedMinutes: 0,
    campaignId: null,
    voicemailDetected: false,
    transcript: null,
    avgLatencyMs: null,
    createdAt: at,
    updatedAt: at,
  });
  return decision;
}
