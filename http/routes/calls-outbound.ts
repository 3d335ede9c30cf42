// POST /v1/calls/outbound: one outbound call. Checks run in api.md's order, stopping at
// the first failure: (1) agent_id, to_number, prompt present, prompt not blank; (2)
// to_number E.164 (both in the body schema); (3) the agent is the account's; (4) the
// dialing number; (5) its carrier credentials. Then a slot: free → dialed now; taken →
// created queued and dialed when a slot frees. Either way the call's row, snapshot and
// dial intent are committed before the dial leaves, together with a provisional answer
// under the request's Idempotency-Key, so a retry after a crash never dials again. The
// dial has three outcomes: accepted (201), rejected (502 outbound_failed, the call
// recorded failed), unknown (502 outbound_failed with details.outcome "unknown" and
// details.call_id: the call is reconciled with the carrier, never redialed).
import { ApiError, referenceError } from '../errors.ts';
import { created, defineRoute } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import type { Agent } from '../../storage/agents.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import type { CallInput } from '../../machines/call-events.ts';
import { outboundBody, outboundCreated, outboundFieldCodes } from './call-schema.ts';
import { fillPrompt } from '../../voice/conversation/fill-prompt.ts';

/** What the carrier said, for `details.carrier_error` (never our stack or internals). */
function carrierErrorView(e: Record<string, unknown>): Record<string, unknown> {
  const pick = (k: string) => (e[k] === undefined ? null : e[k]);
  return { carrier: pick('carrier'), status: pick('status'), code: pick('code'), message: pick('message'), response: pick('carrierError') };
}

export function outboundRoutes({ storage, clock, calls }: AppDeps) {
  const numbers = storage.numbers;

  function dialingNumber(accountId: string, agent: Agent, fromNumber: string | undefined): PhoneNumberRow {
    // Newest first; the agent's numbers are few (a number belongs to one agent).
    const { rows } = numbers.list(accountId, { agentId: agent.agent_id, limit: 10_000, offset: 0 });
    if (fromNumber !== undefined) {
      const row = rows.find((r) => r.phone_number === fromNumber && r.outbound_enabled === 1);
      if (!row) {
        throw new ApiError('from_number_not_found', `from_number ${fromNumber} is not an outbound-enabled number of agent ${agent.agent_id} on your account.`, {
          field: 'from_number',
        });
      }
      return row;
    }
    const outbound = rows.filter((r) => r.outbound_enabled === 1);
    if (outbound.length > 0) return outbound[outbound.length - 1]!;
    // Legacy: an agent with no number rows at all dials from the single number stored on it.
    if (rows.length === 0 && agent.phone_number) {
      const legacy = numbers.get(accountId, agent.phone_number);
      if (!legacy) {
        throw new ApiError(
          'agent_missing_carrier_credentials',
          `The agent's phone_number ${agent.phone_number} has no carrier credentials: import it with POST /v1/phone-numbers.`,
          { field: 'agent_id' },
        );
      }
      if (legacy.outbound_enabled === 1) return legacy;
    }
    throw new ApiError('agent_missing_phone_number', `Agent ${agent.agent_id} has no outbound-enabled phone number; import one or enable outbound on one.`, {
      field: 'agent_id',
    });
  }

  function checkCredentials(row: PhoneNumberRow): void {
    try {
      const c = numbers.openCredentials(row);
      const complete = c.provider === 'twilio' ? c.account_sid !== '' && c.auth_token !== '' : c.api_key !== '' && c.connection_id !== '';
      if (complete) return;
    } catch {
      // Unreadable (e.g. SECRETS_KEY changed): as good as missing.
    }
    throw new ApiError('agent_missing_carrier_credentials', `The dialing number ${row.phone_number} has no usable carrier credentials; import it again with them.`, {
      field: 'from_number',
    });
  }

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/calls/outbound',
      summary: 'Place one outbound call',
      tag: 'Calls',
      async: true,
      storesProviderErrors: true,
      body: outboundBody,
      fieldCodes: outboundFieldCodes,
      responses: {
        201: {
          description:
            'Created. `status: "initiated"`: the carrier accepted the dial and `call_id` is its call id. `status: "queued"`: the account is at its ' +
            'concurrency limit; the call keeps this `call_…` id for life and is dialed when a slot frees (first in, first out). Checks, in order: ' +
            '(1) agent_id, to_number, prompt present and prompt not blank (missing_field); (2) to_number E.164 (invalid_phone_format); ' +
            "(3) the agent is yours (agent_not_found, 400) and active (invalid_request); (4) the dialing number: from_number if given, else the agent's " +
            'oldest outbound-enabled number, else the legacy number stored on an agent with no number rows (from_number_not_found, ' +
            'agent_missing_phone_number); (5) its carrier credentials (agent_missing_carrier_credentials); unknown fields (invalid_request). ' +
            'The prompt, with `{name}` replaced from dynamic_vars, is used for this call only: kept sealed (SECRETS_KEY) while the call is queued or live, erased when it ends, never returned. ' +
            'The call\'s record and its intent to dial are committed before the dial leaves. 502 `outbound_failed` has `details.outcome`: `rejected` (the carrier refused; ' +
            'the call is recorded failed) or `unknown` (the carrier\'s answer was lost: the call is never dialed again but reconciled with the carrier; follow `details.call_id`). ' +
            'Both are stored under the Idempotency-Key, so a retry never places a second call.',
          schema: outboundCreated,
        },
      },
      errors: ['missing_field', 'invalid_phone_format', 'from_number_not_found', 'agent_missing_phone_number', 'agent_missing_carrier_credentials', 'outbound_failed'],
      referenceErrors: ['agent_not_found'],
      handler: async ({ auth, body, idempotency }) => {
        const accountId = auth!.accountId;
        const agent = storage.agents.get(accountId, body.agent_id);
        if (!agent) throw referenceError('agent_not_found', 'agent_id', `No agent ${JSON.stringify(body.agent_id)} on your account.`);
        if (!agent.is_active) {
          throw new ApiError('invalid_request', `Agent ${agent.agent_id} is inactive (is_active false); activate it to place calls.`, { field: 'agent_id' });
        }
        const number = dialingNumber(accountId, agent, body.from_number);
        checkCredentials(number);

        const prompt = fillPrompt(body.prompt, body.dynamic_vars ?? {});
        const id = newPrefixedId('call');
        const input: CallInput = {
          id,
          accountId,
          agentId: agent.agent_id,
          direction: 'outbound',
          provider: number.provider,
          phoneNumber: number.phone_number,
          from: number.phone_number,
          to: body.to_number,
          carrierCallId: null,
          amdEnabled: agent.amd_enabled,
          maxDurationSec: agent.max_call_duration_seconds,
          campaignId: body.campaign_id ?? null,
          queued: false,
          createdAt: clock(),
        };
        const view = (callId: string, status: 'initiated' | 'queued') => created({ call_id: callId, status, to: input.to, from: input.from });
        const unknownError = (carrierError: Record<string, unknown>) =>
          new ApiError(
            'outbound_failed',
            `The carrier's answer to the dial was lost, so it is not known yet whether the call was placed. It will not be dialed again: the service asks the carrier and the call record (GET /v1/calls/${id}) ends saying what the carrier did.`,
            { outcome: 'unknown', call_id: id, carrier_error: carrierErrorView(carrierError) },
          );

        if (!calls.concurrency.tryAcquire(accountId, id)) {
          const answer = view(id, 'queued');
          calls.start({ ...input, queued: true }, { prompt, extra: () => idempotency?.store(answer.status, answer.body) });
          calls.concurrency.enqueue(accountId, id);
          return answer;
        }
        try {
          // Until the dial settles, a retry after a crash is answered "unknown" for this call.
          calls.start(input, { prompt, extra: () => idempotency?.store(502, unknownError({ outcome: 'unknown' }).toBody()) });
        } catch (err) {
          calls.concurrency.release(accountId, id);
          throw err;
        }
        const outcome = await calls.dialOutcome(id);
        if (outcome.outcome === 'unknown') throw unknownError(outcome.carrierError);
        if (outcome.outcome === 'rejected') {
          const e = outcome.carrierError;
          const reason = typeof e['message'] === 'string' ? e['message'] : 'no reason given';
          throw new ApiError('outbound_failed', `The carrier did not place the call: ${reason}`, { outcome: 'rejected', call_id: id, carrier_error: carrierErrorView(e) });
        }
        return view(outcome.carrierCallId, 'initiated');
      },
    }),
  ];
}
