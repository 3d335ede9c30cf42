// Web calls (POST /v1/web-calls): a person in a browser calls an agent, with no carrier
// in between. The call is an ordinary call actor (machines/call.ts) whose provider is
// `web`: it takes one of the account's concurrency slots at once (there is no queue: a
// person is waiting in front of the page), starts in `connecting`, is answered when the
// browser's websocket presents the one-time access token (http/web-media-ws.ts) and ends
// when that socket closes or the agent hangs up. Everything else (transcript, recording,
// analysis, billing, webhooks) is what any call gets.
//
// The access token is the call's media token (the `calls.media_token` column, cleared as
// it is claimed, so it opens one socket only) and expires `connectBy`: the same instant is
// the machine's deadline, so a call nobody connects to ends `no-answer` and frees its slot.
import type { Storage } from '../../storage/index.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import { newPrefixedId, randomBase62 } from '../../storage/ids.ts';
import type { CallSystem } from './call-system.ts';

/** What a web call's record shows where a phone call has a phone number (from_number, and to_number when called by agent). */
export const WEB_PARTY = 'web';
/** Default lifetime of a web call's access token (WEB_CALL_TOKEN_TTL_SECONDS). */
export const DEFAULT_WEB_TOKEN_TTL_MS = 60_000;

/** An access token: `wct_` and 40 base62 characters (238 bits). */
export const newWebCallToken = (): string => `wct_${randomBase62(40)}`;

export type WebCallTarget = { agentId: string } | { phoneNumber: string };

export type WebCallRefusal =
  | { code: 'agent_not_found'; field: 'agent_id'; message: string }
  | { code: 'number_not_found'; field: 'phone_number'; message: string }
  | { code: 'invalid_request'; field: 'agent_id' | 'phone_number'; message: string }
  | { code: 'concurrent_call_limit'; message: string };

export type WebCallResult = { ok: true; callId: string; accessToken: string; expiresAt: number } | { ok: false; refusal: WebCallRefusal };

export interface WebCallDeps {
  storage: Storage;
  calls: CallSystem;
  clock: () => number;
  tokenTtlMs: number;
}

/**
 * Creates a web call: the agent (named, or the number's), a free concurrency slot, then
 * the call actor and its row with the access token, committed before the answer.
 */
export function startWebCall(deps: WebCallDeps, accountId: string, target: WebCallTarget): WebCallResult {
  const { storage, calls } = deps;
  let number: PhoneNumberRow | null = null;
  let agentId: string;
  if ('phoneNumber' in target) {
    number = storage.numbers.get(accountId, target.phoneNumber) ?? null;
    if (!number) return refuse({ code: 'number_not_found', field: 'phone_number', message: 'No phone number like this on your account.' });
    if (number.agent_id === null) return refuse({ code: 'invalid_request', field: 'phone_number', message: 'This number has no agent to answer a web call.' });
    agentId = number.agent_id;
  } else agentId = target.agentId;
  const agent = storage.agents.get(accountId, agentId);
  if (!agent) {
    // A number's agent is the account's own: only a named agent can be unknown.
    if (number) return refuse({ code: 'invalid_request', field: 'phone_number', message: 'This number has no agent to answer a web call.' });
    return refuse({ code: 'agent_not_found', field: 'agent_id', message: 'No agent with this id on your account.' });
  }
  if (!agent.is_active) return refuse({ code: 'invalid_request', field: number ? 'phone_number' : 'agent_id', message: 'The agent is inactive; activate it to take web calls.' });

  const id = newPrefixedId('call');
  if (!calls.concurrency.tryAcquire(accountId, id)) {
    return refuse({ code: 'concurrent_call_limit', message: 'The account is at its concurrent call limit; a web call needs a free slot (web calls are not queued).' });
  }
  const now = deps.clock();
  const expiresAt = now + deps.tokenTtlMs;
  const accessToken = newWebCallToken();
  try {
    calls.start(
      {
        id,
        accountId,
        agentId: agent.agent_id,
        direction: 'inbound',
        provider: 'web',
        phoneNumber: number?.phone_number ?? '',
        from: WEB_PARTY,
        to: number?.phone_number ?? WEB_PARTY,
        carrierCallId: null,
        amdEnabled: false,
        maxDurationSec: agent.max_call_duration_seconds,
        campaignId: null,
        queued: false,
        createdAt: now,
        connectBy: expiresAt,
      },
      { mediaToken: accessToken },
    );
  } catch (err) {
    calls.concurrency.release(accountId, id);
    throw err;
  }
  return { ok: true, callId: id, accessToken, expiresAt };
}

const refuse = (refusal: WebCallRefusal): WebCallResult => ({ ok: false, refusal });
