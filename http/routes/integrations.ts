// The per-number integrations (primary and second webhook, workflow automation,
// pre-call, CRM) and the per-agent pre-call hook: PUT/GET/DELETE each, generated from
// one table so every kind answers alike. Custom functions and the webhook secret are
// in their own files and registered from here.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, ok, type RouteDef } from '../route.ts';
import type { FieldCodes } from '../validation.ts';
import type { AppDeps } from '../deps.ts';
import type { IntegrationKind, IntegrationTarget } from '../../storage/integrations.ts';
import { assertSafeUrls, deletedAgent, deletedNumber, isSet, requiredText, targetUrl, URL_RULES, urlFieldCodes } from './integration-schemas.ts';
import { customFunctionRoutes } from './custom-functions.ts';
import { webhookSecretRoutes } from './webhook-secret.ts';
import { webhookDeliveryRoutes } from './webhook-deliveries.ts';

type Config = Record<string, unknown>;

interface KindDef<B> {
  kind: IntegrationKind;
  /** The path segment; `automation` and `crm` are neutral words for third-party services. */
  segment: string;
  on: 'number' | 'agent';
  /** "the primary webhook", for summaries. */
  label: string;
  body: z.ZodType<B>;
  fieldCodes?: FieldCodes;
  putNote: string;
  /** The URL fields of a body that must pass the target checks. */
  urls(body: B): Array<[string, string]>;
  /** What is stored: plain settings, and a token to seal (never returned). */
  store(body: B): { config: Config; secret: string | null };
  /** Response fields besides the target and is_set; `config` null when unset. */
  fields: Record<string, z.ZodType>;
  view(config: Config | null): Record<string, unknown>;
}

const kindDef = <B>(d: KindDef<B>): KindDef<B> => d;
const text = (c: Config | null, key: string): string | null => (typeof c?.[key] === 'string' ? (c[key] as string) : null);
/** An automation URL sent as null or "" is not set (and reads back null). */
const given = (u: string | null | undefined): u is string => typeof u === 'string' && u !== '';

const urlBody = (description: string) => z.object({ url: targetUrl(description) }).strict();

/** What the pre-call URL is sent and must answer (contract.md 9; README "Pre-call gate"). */
const PRECALL_PROTOCOL =
  'Before the agent answers an inbound call the URL is POSTed `{event:"call.precall", call_id, agent_id, from, to, direction:"inbound", caller:{…the caller context record…}}`, ' +
  'signed like webhook deliveries (webhook-id, webhook-timestamp, webhook-signature with the account secret), and must answer within 3 s with JSON ' +
  '`{action:"allow"|"reject"|"transfer", transfer_number?, custom_prompt?, dynamic_vars?}` (at most 32 KB): `reject` refuses the call at the carrier ' +
  '(ended_reason precall_rejected), `transfer` hands it to `transfer_number` (E.164) without the agent (ended_reason transferred), `allow` lets the agent answer, ' +
  'with `custom_prompt` (`{name}` filled from `dynamic_vars`; other variables listed) added to this call’s prompt. No answer in 3 s, a non-2xx, ' +
  'a refused address or an answer that is not valid lets the call through. The decision is on the call record as `precall`.';

const precall = (on: 'number' | 'agent') =>
  kindDef({
    kind: 'precall',
    segment: 'precall',
    on,
    label: on === 'number' ? "the number's pre-call webhook" : "the agent's pre-call webhook",
    body: urlBody('Called before the AI answers; it may allow, reject or transfer the call (3 s to answer, else the call goes through).'),
    fieldCodes: urlFieldCodes('url'),
    putNote:
      (on === 'number'
        ? "A number's pre-call URL takes precedence over its agent's. "
        : 'Used for calls on numbers of this agent that have no pre-call URL of their own. ') + PRECALL_PROTOCOL,
    urls: (b) => [['url', b.url]],
    store: (b) => ({ config: { url: b.url }, secret: null }),
    fields: { url: z.string().nullable().meta({ description: 'The pre-call URL in full; null when unset.' }) },
    view: (c) => ({ url: text(c, 'url') }),
  });

const KINDS = [
  kindDef({
    kind: 'webhook',
    segment: 'webhook',
    on: 'number',
    label: "the number's primary webhook",
    body: urlBody('Receives call.started and call.completed for every call on the number.'),
    fieldCodes: urlFieldCodes('url'),
    putNote: 'Receives call.started and call.completed, signed with the account webhook secret.',
    urls: (b) => [['url', b.url]],
    store: (b) => ({ config: { url: b.url }, secret: null }),
    fields: { webhook_url: z.string().nullable().meta({ description: 'The URL in full.' }) },
    view: (c) => ({ webhook_url: text(c, 'url') }),
  }),
  kindDef({
    kind: 'webhook2',
    segment: 'webhook2',
    on: 'number',
    label: "the number's second webhook",
    body: urlBody('A second receiver of the same events as the primary webhook.'),
    fieldCodes: urlFieldCodes('url'),
    putNote: 'Receives the same payloads as the primary webhook; with only one of them set, only that one fires.',
    urls: (b) => [['url', b.url]],
    store: (b) => ({ config: { url: b.url }, secret: null }),
    fields: { webhook_url_2: z.string().nullable().meta({ description: 'The URL in full.' }) },
    view: (c) => ({ webhook_url_2: text(c, 'url') }),
  }),
  kindDef({
    kind: 'automation',
    segment: 'automation',
    on: 'number',
    label: "the number's workflow-automation hooks",
    body: z
      .object({
        post_call_url: targetUrl('Receives the call data after the call.').nullable().optional(),
        in_call_url: targetUrl(
          'Offered to the model as the tool `automation_webhook` (arguments `request`, `details`) mid-call; the service POSTs `{call_id, agent_id, name, arguments}`, ' +
            'signed like webhooks, and the AI waits for its JSON answer (10 s, 32 KB).',
        )
          .nullable()
          .optional(),
      })
      .strict()
      .superRefine((b, ctx) => {
        if (!given(b.post_call_url) && !given(b.in_call_url)) {
          ctx.addIssue({ code: 'custom', path: ['post_call_url'], message: 'set post_call_url, in_call_url or both' });
        }
      }),
    fieldCodes: { ...urlFieldCodes('in_call_url'), post_call_url: { too_big: 'invalid_url', custom: 'missing_field' } },
    putNote: 'At least one of post_call_url and in_call_url (missing_field otherwise). PUT replaces both: one left out, null or "" is cleared and reads back null.',
    urls: (b) => {
      const out: Array<[string, string]> = [];
      if (given(b.post_call_url)) out.push(['post_call_url', b.post_call_url]);
      if (given(b.in_call_url)) out.push(['in_call_url', b.in_call_url]);
      return out;
    },
    store: (b) => ({
      config: { post_call_url: given(b.post_call_url) ? b.post_call_url : null, in_call_url: given(b.in_call_url) ? b.in_call_url : null },
      secret: null,
    }),
    fields: {
      post_call_url: z.string().nullable().meta({ description: 'Receives the call data after the call; null when unset.' }),
      in_call_url: z.string().nullable().meta({ description: 'Offered to the model as a tool mid-call; null when unset.' }),
    },
    view: (c) => ({ post_call_url: text(c, 'post_call_url'), in_call_url: text(c, 'in_call_url') }),
  }),
  precall('number'),
  precall('agent'),
  kindDef({
    kind: 'crm',
    segment: 'crm',
    on: 'number',
    label: "the number's CRM connection",
    body: z
      .object({
        pit: requiredText(4096, 'Private integration token of the CRM. Stored encrypted; never returned.'),
        location_id: requiredText(256, 'The CRM location (sub-account) the bookings go to.'),
        calendar_id: z.string().max(256).nullable().optional().meta({ description: 'The calendar to book into; null or left out for the location default.' }),
      })
      .strict(),
    fieldCodes: { pit: { custom: 'missing_field' }, location_id: { custom: 'missing_field' } },
    putNote: 'pit and location_id are required (blank counts as missing). The token is stored encrypted and never returned, not even here.',
    urls: () => [],
    store: (b) => ({
      config: { location_id: b.location_id, calendar_id: b.calendar_id ? b.calendar_id : null },
      secret: b.pit,
    }),
    fields: {
      location_id: z.string().nullable().meta({ description: 'The CRM location the bookings go to.' }),
      calendar_id: z.string().nullable().meta({ description: 'The calendar booked into; null for the location default.' }),
    },
    view: (c) => ({ location_id: text(c, 'location_id'), calendar_id: text(c, 'calendar_id') }),
  }),
];

export function integrationRoutes(deps: AppDeps): RouteDef<any, any>[] {
  const { storage, clock, config } = deps;
  const repo = storage.integrations;
  const routes: RouteDef<any, any>[] = [];

  for (const def of KINDS as KindDef<any>[]) {
    const key = def.on === 'number' ? 'phone_number' : 'agent_id';
    const path = `/v1/integrations/${def.segment}/${def.on}/{${key}}`;
    const notFound = def.on === 'number' ? 'number_not_found' : 'agent_not_found';
    const target = (id: string): IntegrationTarget => (def.on === 'number' ? { phoneNumber: id } : { agentId: id });
    /** Foreign and missing targets are the same 404. */
    const assertOwned = (accountId: string, id: string): void => {
      const owned = def.on === 'number' ? repo.numberOwned(accountId, id) : repo.agentOwned(accountId, id);
      if (!owned) throw new ApiError(notFound);
    };
    const read = (accountId: string, id: string) => {
      const found = repo.get(accountId, def.kind, target(id));
      return { [key]: id, ...def.view(found ? found.config : null), is_set: found !== undefined };
    };
    const viewSchema = z.object({ [key]: z.string(), ...def.fields, is_set: isSet });
    const tag = 'Integrations';

    routes.push(
      defineRoute({
        method: 'PUT',
        path,
        summary: `Set ${def.label}`,
        tag,
        body: def.body,
        fieldCodes: def.fieldCodes,
        // A fetched setting can be sent back as it is.
        ignoreFields: [key, 'is_set'],
        async: true,
        responses: { 200: { description: `The setting as GET returns it. ${def.putNote} ${URL_RULES}`, schema: viewSchema } },
        errors: [notFound, 'invalid_url', 'missing_field', 'invalid_request'],
        handler: async ({ auth, params, body }) => {
          const accountId = auth!.accountId;
          const id = params[key]!;
          assertOwned(accountId, id);
          await assertSafeUrls(def.urls(body), config.allowPrivateNetworkTargets);
          const { config: settings, secret } = def.store(body);
          // The look-ups above awaited DNS; the target may have gone meanwhile.
          return ok(
            storage.tx(() => {
              assertOwned(accountId, id);
              repo.put(accountId, def.kind, target(id), settings, secret, clock());
              return read(accountId, id);
            }),
          );
        },
      }),
      defineRoute({
        method: 'GET',
        path,
        summary: `Get ${def.label}`,
        tag,
        responses: { 200: { description: 'The setting; when nothing is set, 200 with is_set false and null fields.', schema: viewSchema } },
        errors: [notFound],
        handler: ({ auth, params }) => {
          const id = params[key]!;
          assertOwned(auth!.accountId, id);
          return ok(read(auth!.accountId, id));
        },
      }),
      defineRoute({
        method: 'DELETE',
        path,
        summary: `Remove ${def.label}`,
        tag,
        responses: {
          200: {
            description: 'Removed. Idempotent: removing a setting that is not set also answers deleted:true.',
            schema: def.on === 'number' ? deletedNumber : deletedAgent,
          },
        },
        errors: [notFound],
        handler: ({ auth, params }) => {
          const id = params[key]!;
          assertOwned(auth!.accountId, id);
          repo.remove(auth!.accountId, def.kind, target(id));
          return ok({ [key]: id, deleted: true });
        },
      }),
    );
  }

  routes.push(...customFunctionRoutes(deps), ...webhookSecretRoutes(deps), ...webhookDeliveryRoutes(deps));
  return routes;
}
