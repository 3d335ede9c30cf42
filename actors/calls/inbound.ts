// Routing of a call to one of our numbers, the same for both carriers: refused when
// the number has no agent, its agent is inactive or the number does not take calls
// (recorded failed/failed); otherwise the pre-call gate is asked when one is configured
// (actors/calls/precall-gate.ts, at most 3 s): `reject` refuses the call (recorded
// canceled/precall_rejected), `transfer` hands it to the number given without the agent
// (recorded completed/transferred, nothing charged); then refused busy over the account's
// concurrency limit (recorded busy/concurrency_limit), otherwise answered: a call actor
// starts in in-progress, with the gate's prompt for this call, and its media stream is
// expected with a one-time token. The gate's decision is written with the call's row.
//
// Crash safety adds nothing new: the gate's decision lives only in memory until the row
// is written, so a process that dies mid-gate leaves no trace of the call; the carrier
// then does what it does with an unanswered webhook (carrier A ends the call, carrier B
// sends call.initiated again and the call is routed afresh, gate included).
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { CallRow } from '../../storage/calls.ts';
import type { PhoneNumberRow, Provider } from '../../storage/phone-numbers.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import type { CallSystem } from './call-system.ts';
import { newMediaToken } from './call-system.ts';
import type { PrecallCall, PrecallDecision, PrecallGate, PrecallRecord } from './precall-gate.ts';

export type InboundDecision =
  | { kind: 'answer'; callId: string; mediaToken: string }
  | { kind: 'reject'; why: 'orphaned' | 'agent_inactive' | 'inbound_disabled' | 'precall' }
  | { kind: 'busy' }
  /** The pre-call gate handed the call to `to`; `callId` is our internal id (carrier B's command id). */
  | { kind: 'transfer'; callId: string; to: string };

export interface IncomingCall {
  number: PhoneNumberRow;
  provider: Provider;
  carrierCallId: string;
  from: string;
  to: string;
  at: number;
}

export interface InboundOptions {
  /** The pre-call gate; without it every call is routed as if none were configured. */
  gate?: PrecallGate;
  log?: Logger;
  /** The time of decisions made after the gate answered (default: the webhook's `at`). */
  clock?: () => number;
}

// One routing per carrier call at a time: a webhook repeated while the gate is still
// waiting gets the same decision instead of a second actor.
const inFlight = new WeakMap<CallSystem, Map<string, Promise<InboundDecision>>>();

export function routeInbound(system: CallSystem, storage: Storage, call: IncomingCall, opts: InboundOptions = {}): Promise<InboundDecision> {
  let flights = inFlight.get(system);
  if (!flights) inFlight.set(system, (flights = new Map()));
  const key = `${call.provider}:${call.carrierCallId}`;
  const running = flights.get(key);
  if (running) return running;
  const decided = decide(system, storage, call, opts).finally(() => flights.delete(key));
  flights.set(key, decided);
  return decided;
}

/** A repeated webhook for a call we already decided on gets the same answer. */
function repeatedAnswer(system: CallSystem, existing: CallRow): InboundDecision {
  const id = existing.internal_id;
  if (id !== null && system.isLive(id)) return { kind: 'answer', callId: id, mediaToken: system.mediaTokenOf(id) };
  if (existing.ended_reason === 'concurrency_limit') return { kind: 'busy' };
  if (existing.ended_reason === 'precall_rejected') return { kind: 'reject', why: 'precall' };
  const precall = existing.precall === null ? null : (JSON.parse(existing.precall) as PrecallRecord);
  if (existing.ended_reason === 'transferred' && id !== null && precall?.transfer_number) return { kind: 'transfer', callId: id, to: precall.transfer_number };
  return { kind: 'reject', why: 'orphaned' };
}

async function decide(system: CallSystem, storage: Storage, call: IncomingCall, opts: InboundOptions): Promise<InboundDecision> {
  const { number, at } = call;
  const accountId = number.account_id;

  const existing = storage.calls.getByCarrierCallId(accountId, call.carrierCallId);
  if (existing) return repeatedAnswer(system, existing);

  const agent = number.agent_id === null ? undefined : storage.agents.get(accountId, number.agent_id);
  const refusal: InboundDecision | null = !agent
    ? { kind: 'reject', why: 'orphaned' }
    : !agent.is_active
      ? { kind: 'reject', why: 'agent_inactive' }
      : number.inbound_enabled !== 1
        ? { kind: 'reject', why: 'inbound_disabled' }
        : null;
  const id = newPrefixedId('call');
  /** Writes the row of a call that ends here, never reaching an agent, with the gate's decision. */
  const recordEnded = (how: { status: string; reason: string; connectedAt: number | null }, decidedAt: number, precall: PrecallDecision | null) =>
    storage.tx(() => {
      storage.calls.save({
        internalId: id,
        callId: call.carrierCallId,
        accountId,
        agentId: number.agent_id,
        direction: 'inbound',
        callStatus: how.status,
        fromNumber: call.from,
        toNumber: call.to,
        phoneNumber: number.phone_number,
        provider: call.provider,
        carrierCallId: call.carrierCallId,
        startedAt: how.connectedAt,
        endedAt: decidedAt,
        durationMs: 0,
        endedReason: how.reason,
        chargedMinutes: 0,
        campaignId: null,
        voicemailDetected: false,
        transcript: null,
        avgLatencyMs: null,
        createdAt: at,
        updatedAt: decidedAt,
      });
      if (precall) storage.calls.setPrecall(accountId, id, JSON.stringify(precall.record));
      // Nobody spoke, so there is nothing to analyse (and no call.completed: no agent answered).
      storage.analysis.recordOutcome(accountId, id, { status: 'done', fields: null }, decidedAt);
    });

  if (refusal !== null) {
    recordEnded({ status: 'failed', reason: 'failed', connectedAt: null }, at, null);
    return refusal;
  }

  const precall = await askGate(opts, { accountId, agentId: agent!.agent_id, phoneNumber: number.phone_number, carrierCallId: call.carrierCallId, from: call.from, to: call.to });
  const now = precall === null ? at : (opts.clock?.() ?? at);

  if (precall?.record.action === 'reject') {
    recordEnded({ status: 'canceled', reason: 'precall_rejected', connectedAt: null }, now, precall);
    return { kind: 'reject', why: 'precall' };
  }
  if (precall?.record.action === 'transfer' && precall.record.transfer_number !== null) {
    // Handed off at once: connected to the agent for no time, so nothing is charged.
    recordEnded({ status: 'completed', reason: 'transferred', connectedAt: now }, now, precall);
    return { kind: 'transfer', callId: id, to: precall.record.transfer_number };
  }

  if (system.concurrency.tryAcquire(accountId, id)) {
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
        {
          mediaToken,
          // The gate's custom_prompt/dynamic_vars: this call's prompt, sealed like an outbound call's.
          ...(precall?.prompt ? { prompt: precall.prompt } : {}),
          ...(precall ? { extra: () => storage.calls.setPrecall(accountId, id, JSON.stringify(precall.record)) } : {}),
        },
      );
    } catch (err) {
      system.concurrency.release(accountId, id);
      throw err;
    }
    return { kind: 'answer', callId: id, mediaToken };
  }

  recordEnded({ status: 'busy', reason: 'concurrency_limit', connectedAt: null }, now, precall);
  return { kind: 'busy' };
}

async function askGate(opts: InboundOptions, call: PrecallCall): Promise<PrecallDecision | null> {
  if (!opts.gate) return null;
  try {
    return await opts.gate(call, opts.log ?? silentLog);
  } catch (err) {
    // The gate's own failures are answered inside it; anything else must not hold the call.
    opts.log?.error({ err, call_id: call.carrierCallId }, 'pre-call gate failed; the call goes through');
    return null;
  }
}

const noop = () => {};
const silentLog = { warn: noop, error: noop, info: noop, debug: noop } as unknown as Logger;
