// POST /v1/calls/outbound: one outbound call, placed by the calls kind's one operation
// (actors/calls/place-outbound-call.ts: the checks in api.md's order, the dialing number,
// a slot or the queue, the commit before the dial, the dial's outcome). This route keeps
// only HTTP: the body's schema, the error envelope, and the answer stored under the
// request's Idempotency-Key inside the commit that creates the call, so a retry after a
// crash never dials again. The dial has three outcomes: accepted (201), rejected (502
// outbound_failed, the call recorded failed), unknown (502 outbound_failed with
// details.outcome "unknown" and details.call_id: the call is reconciled with the carrier,
// never redialed).
import { ApiError, referenceError } from '../errors.ts';
import { created, defineRoute } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { outboundBody, outboundCreated, outboundFieldCodes } from './call-schema.ts';
import { placeOutboundCall, type PlacementRefusal } from '../../actors/calls/place-outbound-call.ts';

/** What the carrier said, for `details.carrier_error` (never our stack or internals). */
function carrierErrorView(e: Record<string, unknown>): Record<string, unknown> {
  const pick = (k: string) => (e[k] === undefined ? null : e[k]);
  return { carrier: pick('carrier'), status: pick('status'), code: pick('code'), message: pick('message'), response: pick('carrierError') };
}

/** A refusal of the calls kind as the API's error: the agent in the body is a reference (400). */
function refusalError(r: PlacementRefusal): ApiError {
  if (r.code === 'agent_not_found') return referenceError('agent_not_found', r.field, r.message);
  if (r.code === 'agent_inactive') return new ApiError('invalid_request', r.message, { field: r.field });
  return new ApiError(r.code, r.message, { field: r.field });
}

const unknownError = (callId: string, carrierError: Record<string, unknown>) =>
  new ApiError(
    'outbound_failed',
    `The carrier's answer to the dial was lost, so it is not known yet whether the call was placed. It will not be dialed again: the service asks the carrier and the call record (GET /v1/calls/${callId}) ends saying what the carrier did.`,
    { outcome: 'unknown', call_id: callId, carrier_error: carrierErrorView(carrierError) },
  );

export function outboundRoutes({ storage, clock, calls }: AppDeps) {
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
        const view = (callId: string, status: 'initiated' | 'queued', from: string) => created({ call_id: callId, status, to: body.to_number, from });
        const placed = await placeOutboundCall(
          { storage, calls, clock },
          {
            accountId: auth!.accountId,
            agentId: body.agent_id,
            toNumber: body.to_number,
            fromNumber: body.from_number,
            prompt: body.prompt,
            dynamicVars: body.dynamic_vars,
            campaignId: body.campaign_id ?? null,
          },
          {
            // In the call's first commit: a queued call's answer is final; a dialed one's is
            // "unknown" until the dial settles, so a retry after a crash never dials again.
            inCommit: ({ callId, placement, from }) => {
              if (!idempotency) return;
              if (placement === 'queued') {
                const answer = view(callId, 'queued', from);
                idempotency.store(answer.status, answer.body);
              } else idempotency.store(502, unknownError(callId, { outcome: 'unknown' }).toBody());
            },
          },
        );
        if (placed.kind === 'refused') throw refusalError(placed);
        if (placed.kind === 'queued') return view(placed.callId, 'queued', placed.from);
        if (placed.kind === 'accepted') return view(placed.carrierCallId, 'initiated', placed.from);
        if (placed.kind === 'unknown') throw unknownError(placed.callId, placed.carrierError);
        const e = placed.carrierError;
        const reason = typeof e['message'] === 'string' ? e['message'] : 'no reason given';
        throw new ApiError('outbound_failed', `The carrier did not place the call: ${reason}`, { outcome: 'rejected', call_id: placed.callId, carrier_error: carrierErrorView(e) });
      },
    }),
  ];
}
