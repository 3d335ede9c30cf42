// Agents: create, list, get, update (PATCH, and PUT with the same partial meaning) and
// delete. Field rules and codes live in agent-schema.ts; this file adds the rules that
// span fields or need the stored agent (voicemail message) and the account scoping.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { created, defineRoute, ok, type Method } from '../route.ts';
import { page, pagination, queryBool } from '../schemas.ts';
import { newPrefixedId, newUuid } from '../../storage/ids.ts';
import { AGENT_DEFAULTS, type Agent, type AgentConfig } from '../../storage/agents.ts';
import type { AppDeps } from '../deps.ts';
import {
  AGENT_FIELD_CODES,
  READ_ONLY_FIELDS,
  agentFieldsSchema,
  agentSummaryView,
  agentView,
  viewAgent,
  viewAgentSummary,
} from './agent-schema.ts';

const listQuery = z.object({
  ...pagination,
  is_active: queryBool().optional().meta({ description: '`true` or `false`: only active or only inactive agents.' }),
});

const BODY_ERRORS = [
  'invalid_request',
  'prompt_too_long',
  'invalid_voice_id',
  'invalid_language',
  'deprecated_field',
  'invalid_recording_source',
  'voicemail_message_required',
  'invalid_timezone',
  'invalid_url',
  'invalid_phone_format',
] as const;

const BODY_RULES =
  'Types are strict (`"10"` for an integer is `invalid_request`); unknown fields are `invalid_request` naming the field; ' +
  '`twilio_account_sid`/`twilio_auth_token` are `deprecated_field` whatever their value. ' +
  'A nullable text field sent as "" or null reads back as null. `speaking_rate` outside 0.5 to 1.5 is clamped, not rejected. ' +
  'Non-nullable fields (name, system_prompt, welcome_message, fallback_message, voice_id, language and the numbers and switches) cannot be set to null. ' +
  '`voicemail_leave_enabled: true` needs a non-blank `voicemail_message`, sent with it or already stored.';

const configOf = (a: Agent): AgentConfig => {
  const { id: _i, agent_id: _a, account_id: _c, api_key_id: _k, created_at: _t, updated_at: _u, ...config } = a;
  return config;
};

/** The rule that spans two fields, checked on the agent as it would be stored. */
function checkVoicemail(next: AgentConfig): void {
  if (next.voicemail_leave_enabled && (next.voicemail_message ?? '').trim() === '') {
    throw new ApiError(
      'voicemail_message_required',
      'voicemail_leave_enabled needs a non-empty voicemail_message: send the message in the same request, or turn voicemail_leave_enabled off first.',
      { field: 'voicemail_message' },
    );
  }
}

export function agentRoutes({ storage, clock, config }: AppDeps) {
  const body = agentFieldsSchema({ allowPrivateTargets: config.allowPrivateNetworkTargets });
  const notFound = (): ApiError => new ApiError('agent_not_found');

  const update = (method: Method) =>
    defineRoute({
      method,
      path: '/v1/agents/{agent_id}',
      summary: method === 'PATCH' ? 'Update an agent (only the fields sent change)' : 'Update an agent (same partial semantics as PATCH)',
      tag: 'Agents',
      body,
      ignoreFields: READ_ONLY_FIELDS,
      fieldCodes: AGENT_FIELD_CODES,
      responses: {
        200: {
          description:
            'The updated agent. Only the fields in the body change; PUT is accepted with exactly the same partial meaning. ' +
            'The read-only fields id, agent_id, api_key_id, created_at and updated_at are ignored, so a fetched agent can be sent back. ' +
            BODY_RULES,
          schema: agentView,
        },
      },
      errors: ['agent_not_found', ...BODY_ERRORS],
      handler: ({ auth, params, body: patch }) => {
        const accountId = auth!.accountId;
        const agentId = params['agent_id']!;
        const current = storage.agents.get(accountId, agentId);
        if (!current) throw notFound();
        const next: AgentConfig = { ...configOf(current), ...patch };
        checkVoicemail(next);
        return ok(viewAgent(storage.agents.update(accountId, agentId, next, clock())!));
      },
    });

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/agents',
      summary: 'Create an agent',
      tag: 'Agents',
      body,
      fieldCodes: AGENT_FIELD_CODES,
      responses: {
        201: {
          description: 'The full agent, every field not sent at its default. ' + BODY_RULES,
          schema: agentView,
        },
      },
      errors: [...BODY_ERRORS],
      handler: ({ auth, body: fields }) => {
        const next: AgentConfig = { ...structuredClone(AGENT_DEFAULTS), ...fields };
        checkVoicemail(next);
        const agent = storage.agents.create({
          id: newUuid(),
          agentId: newPrefixedId('agent'),
          accountId: auth!.accountId,
          apiKeyId: auth!.keyId,
          config: next,
          now: clock(),
        });
        return created(viewAgent(agent));
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/agents',
      summary: "List the account's agents, newest first",
      tag: 'Agents',
      query: listQuery,
      responses: {
        200: {
          description: 'A page of agents sorted by created_at descending; `count` is the total matching the filter, not the page size. `limit` above 100 is clamped to 100.',
          schema: z.object({
            agents: z.array(agentSummaryView),
            count: z.number().int().meta({ description: 'Agents matching the filter, across all pages.' }),
            limit: z.number().int(),
            offset: z.number().int(),
          }),
        },
      },
      errors: ['invalid_request'],
      handler: ({ auth, query }) => {
        const { limit, offset } = page(query);
        const { agents, total } = storage.agents.list(auth!.accountId, { isActive: query.is_active, limit, offset });
        return ok({ agents: agents.map(viewAgentSummary), count: total, limit, offset });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/agents/{agent_id}',
      summary: 'Get an agent',
      tag: 'Agents',
      responses: { 200: { description: 'The full agent.', schema: agentView } },
      errors: ['agent_not_found'],
      handler: ({ auth, params }) => {
        const agent = storage.agents.get(auth!.accountId, params['agent_id']!);
        if (!agent) throw notFound();
        return ok(viewAgent(agent));
      },
    }),
    update('PATCH'),
    update('PUT'),
    defineRoute({
      method: 'DELETE',
      path: '/v1/agents/{agent_id}',
      summary: 'Delete an agent',
      tag: 'Agents',
      responses: {
        200: {
          description:
            'The agent is gone: later requests with its id answer 404 `agent_not_found`. Its phone numbers stay on the account with `agent_id: null` ' +
            '(orphaned: they stop routing calls until reassigned); calls in progress finish; call history keeps the agent id.',
          schema: z.object({ agent_id: z.string(), deleted: z.literal(true) }),
        },
      },
      errors: ['agent_not_found'],
      handler: ({ auth, params }) => {
        const agentId = params['agent_id']!;
        if (!storage.agents.delete(auth!.accountId, agentId)) throw notFound();
        return ok({ agent_id: agentId, deleted: true });
      },
    }),
  ];
}
