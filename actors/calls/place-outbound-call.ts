// The one way an outbound call is placed, whoever asks (the outbound route today, a batch
// campaign's recipient next): the same rules pick the dialing number, check its
// credentials, take a slot or queue, start the call's actor and wait for the dial's
// outcome. Checks run in api.md's order, stopping at the first refusal: the agent is the
// account's and active, the dialing number (from_number if given, else the agent's oldest
// outbound-enabled number, else the legacy number stored on an agent with no number
// rows), its carrier credentials. Then a slot: free → dialed now; taken → created queued
// and dialed when a slot frees. Either way the call's row, snapshot and dial intent are
// committed before the dial leaves, together with whatever the caller writes in that
// same commit (`inCommit`: the route's provisional idempotent answer, a campaign's
// recipient row), so a retry after a crash never dials again. The dial has three
// outcomes: accepted, rejected (the call recorded failed), unknown (the call is
// reconciled with the carrier, never redialed).
import type { Agent } from '../../storage/agents.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import type { Storage } from '../../storage/index.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import type { CallInput } from '../../machines/call-events.ts';
import type { PLACEMENT_REFUSALS } from '../../machines/batch-campaign-events.ts';
import { fillPrompt } from '../../voice/conversation/fill-prompt.ts';
import type { CallSystem } from './call-system.ts';

export interface OutboundRequest {
  accountId: string;
  agentId: string;
  /** E.164, already validated. */
  toNumber: string;
  fromNumber?: string | undefined;
  /** This call's prompt; `{name}` is filled from `dynamicVars`. */
  prompt: string;
  dynamicVars?: Readonly<Record<string, string>> | undefined;
  campaignId?: string | null | undefined;
  /**
   * The call's id, chosen by a caller that must recognise its own call after a restart (a
   * campaign derives it from its placing intent); a fresh random id otherwise.
   */
  callId?: string | undefined;
}

/** Why a call was not placed at all: nothing was written. `field` names the request's field at fault. */
export type PlacementRefusal = {
  kind: 'refused';
  code: (typeof PLACEMENT_REFUSALS)[number];
  field: 'agent_id' | 'from_number';
  message: string;
};

export type PlacementOutcome =
  | PlacementRefusal
  /** The carrier accepted the dial: `carrierCallId` is its call id. */
  | { kind: 'accepted'; callId: string; carrierCallId: string; from: string; to: string }
  /** The account is at its concurrency limit: the call is dialed when a slot frees (first in, first out). */
  | { kind: 'queued'; callId: string; from: string; to: string }
  /** The carrier refused the dial; the call is recorded failed. */
  | { kind: 'rejected'; callId: string; carrierError: Record<string, unknown> }
  /** The carrier's answer was lost: never dialed again, the call is reconciled with the carrier. */
  | { kind: 'unknown'; callId: string; carrierError: Record<string, unknown> };

export interface PlacementHooks {
  /**
   * Writes of the caller's, made inside the commit that creates the call (before any dial
   * leaves): `placement` says whether the call is dialed now or waits in the queue.
   */
  inCommit?: (call: { callId: string; placement: 'dialing' | 'queued'; from: string; to: string }) => void;
}

export interface OutboundPlacerDeps {
  storage: Pick<Storage, 'agents' | 'numbers'>;
  calls: Pick<CallSystem, 'concurrency' | 'start' | 'dialOutcome'>;
  clock: () => number;
}

const refuse = (code: PlacementRefusal['code'], field: PlacementRefusal['field'], message: string): PlacementRefusal => ({ kind: 'refused', code, field, message });

/** The number an agent's outbound call is dialed from, or why there is none. */
function dialingNumber(numbers: Storage['numbers'], accountId: string, agent: Agent, fromNumber: string | undefined): PhoneNumberRow | PlacementRefusal {
  // Newest first; the agent's numbers are few (a number belongs to one agent).
  const { rows } = numbers.list(accountId, { agentId: agent.agent_id, limit: 10_000, offset: 0 });
  if (fromNumber !== undefined) {
    const row = rows.find((r) => r.phone_number === fromNumber && r.outbound_enabled === 1);
    return row ?? refuse('from_number_not_found', 'from_number', `from_number ${fromNumber} is not an outbound-enabled number of agent ${agent.agent_id} on your account.`);
  }
  const outbound = rows.filter((r) => r.outbound_enabled === 1);
  if (outbound.length > 0) return outbound[outbound.length - 1]!;
  // Legacy: an agent with no number rows at all dials from the single number stored on it.
  if (rows.length === 0 && agent.phone_number) {
    const legacy = numbers.get(accountId, agent.phone_number);
    if (!legacy) {
      return refuse('agent_missing_carrier_credentials', 'agent_id', `The agent's phone_number ${agent.phone_number} has no carrier credentials: import it with POST /v1/phone-numbers.`);
    }
    if (legacy.outbound_enabled === 1) return legacy;
  }
  return refuse('agent_missing_phone_number', 'agent_id', `Agent ${agent.agent_id} has no outbound-enabled phone number; import one or enable outbound on one.`);
}

/** Null when the number's carrier credentials are complete and readable. */
function credentialsProblem(numbers: Storage['numbers'], row: PhoneNumberRow): PlacementRefusal | null {
  try {
    const c = numbers.openCredentials(row);
    const complete = c.provider === 'twilio' ? c.account_sid !== '' && c.auth_token !== '' : c.api_key !== '' && c.connection_id !== '';
    if (complete) return null;
  } catch {
    // Unreadable (e.g. SECRETS_KEY changed): as good as missing.
  }
  return refuse('agent_missing_carrier_credentials', 'from_number', `The dialing number ${row.phone_number} has no usable carrier credentials; import it again with them.`);
}

/** Places one outbound call by the rules above; a refusal writes nothing. */
export async function placeOutboundCall(deps: OutboundPlacerDeps, req: OutboundRequest, hooks: PlacementHooks = {}): Promise<PlacementOutcome> {
  const { storage, calls, clock } = deps;
  const agent = storage.agents.get(req.accountId, req.agentId);
  if (!agent) return refuse('agent_not_found', 'agent_id', `No agent ${JSON.stringify(req.agentId)} on your account.`);
  if (!agent.is_active) return refuse('agent_inactive', 'agent_id', `Agent ${agent.agent_id} is inactive (is_active false); activate it to place calls.`);
  const number = dialingNumber(storage.numbers, req.accountId, agent, req.fromNumber);
  if ('kind' in number) return number;
  const credentials = credentialsProblem(storage.numbers, number);
  if (credentials) return credentials;

  const prompt = fillPrompt(req.prompt, req.dynamicVars ?? {});
  const callId = req.callId ?? newPrefixedId('call');
  const input: CallInput = {
    id: callId,
    accountId: req.accountId,
    agentId: agent.agent_id,
    direction: 'outbound',
    provider: number.provider,
    phoneNumber: number.phone_number,
    from: number.phone_number,
    to: req.toNumber,
    carrierCallId: null,
    amdEnabled: agent.amd_enabled,
    maxDurationSec: agent.max_call_duration_seconds,
    campaignId: req.campaignId ?? null,
    queued: false,
    createdAt: clock(),
  };
  const { accountId } = req;

  if (!calls.concurrency.tryAcquire(accountId, callId)) {
    calls.start({ ...input, queued: true }, { prompt, extra: () => hooks.inCommit?.({ callId, placement: 'queued', from: input.from, to: input.to }) });
    calls.concurrency.enqueue(accountId, callId);
    return { kind: 'queued', callId, from: input.from, to: input.to };
  }
  try {
    calls.start(input, { prompt, extra: () => hooks.inCommit?.({ callId, placement: 'dialing', from: input.from, to: input.to }) });
  } catch (err) {
    calls.concurrency.release(accountId, callId);
    throw err;
  }
  const outcome = await calls.dialOutcome(callId);
  if (outcome.outcome === 'accepted') return { kind: 'accepted', callId, carrierCallId: outcome.carrierCallId, from: input.from, to: input.to };
  return { kind: outcome.outcome, callId, carrierError: outcome.carrierError };
}
