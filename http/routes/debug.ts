// The live machine view (issue 7): `GET /v1/debug/actors` lists the account's live
// actors; `GET /debug` serves the page that watches them through the websocket
// `GET /v1/debug/actors/ws` (http/debug-ws.ts, outside the route table: uWS upgrades
// it before the pipeline). Everything comes from the supervisor's inspection hub, which
// scopes by account and redacts.
import { z } from 'zod';
import { defineRoute, ok } from '../route.ts';
import { isoTime } from '../schemas.ts';
import type { ActorView } from '../../actors/runtime/inspection.ts';
import type { AppDeps } from '../deps.ts';
import { DEBUG_PAGE_HEADERS, DEBUG_PAGE_HTML } from '../debug-page.ts';

const stateValue = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .meta({ description: 'XState state value: a state name (`"ringing"`), or an object for nested states (`{"in-progress": "listening"}`).' });

const redactedEvent = z
  .object({ type: z.string() })
  .catchall(z.unknown())
  .meta({
    description:
      'An event as the machine took it, with only structural values shown (its `type`, times, durations, flags, enumerated statuses, reasons and timer names, the carrier\'s call and leg ids); every other value, and every object or list (a booking, the caller\'s context, a transcript line, a carrier error), is `"[redacted]"`.',
  });

export const actorListItemSchema = z.object({
  kind: z.string().meta({ description: 'The actor kind, e.g. `call`.' }),
  id: z.string().meta({ description: 'The actor id (a call’s internal id, `call_…`).' }),
  value: stateValue,
  tags: z.array(z.string()).meta({ description: 'The state’s tags, sorted.' }),
  status: z.enum(['active', 'done', 'error', 'stopped']).meta({ description: 'XState’s actor status; the list holds live (`active`) actors.' }),
  last_event: redactedEvent.nullable().meta({ description: 'The last event the actor took (redacted); null for an actor that has taken none since it started.' }),
  counters: z
    .record(z.string(), z.number())
    .nullable()
    .meta({
      description:
        'The kind’s counts, null for kinds that show none (calls). A batch campaign: `total` recipients, `waiting` (not yet placed), `placing` (being placed now), ' +
        '`placed` (calls placed) and `ended` (calls ended), `in_use` (calls of the campaign up or being placed) against `max_concurrent`.',
    }),
  updated_at: z.string().meta({ format: 'date-time', description: 'When the actor last changed.' }),
});

export type ActorListItem = z.infer<typeof actorListItemSchema>;

export const actorListItem = (v: ActorView): ActorListItem => ({
  kind: v.kind,
  id: v.id,
  value: v.value as ActorListItem['value'],
  tags: v.tags,
  status: v.status as ActorListItem['status'],
  last_event: v.lastEvent,
  counters: v.counters,
  updated_at: isoTime(v.updatedAt),
});

const LIST_DESCRIPTION =
  'The account’s live actors (calls being dialed, ringing, on the line or finishing), oldest first, each with its current state, tags and ' +
  'last event. Only structural values are shown; everything else (phone numbers, key presses, prompts, transcripts, bookings, caller context, carrier errors) is redacted. The same list, then every transition as it happens, ' +
  'streams on the websocket `GET /v1/debug/actors/ws` (authenticate with `Authorization: Bearer KEY_ID:KEY_SECRET`, or from a browser ' +
  'by offering the subprotocol `bearer.KEY_ID.KEY_SECRET`); the page `GET /debug` renders it. A viewer that stops reading is disconnected ' +
  'with close code 1013 once 256 KiB wait for it.';

export function debugRoutes(deps: AppDeps) {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/debug/actors',
      summary: 'List live actors (the live machine view)',
      tag: 'Debug',
      responses: {
        200: {
          description: LIST_DESCRIPTION,
          schema: z.object({ actors: z.array(actorListItemSchema), count: z.number().int() }),
        },
      },
      errors: [],
      handler: ({ auth }) => {
        const actors = deps.inspection.list(auth!.accountId).map(actorListItem);
        return ok({ actors, count: actors.length });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/debug',
      summary: 'The live machine view page',
      tag: 'Debug',
      auth: 'none',
      responses: {
        200: {
          description:
            'An HTML page that asks for an API key (kept in the tab’s sessionStorage), opens `GET /v1/debug/actors/ws` and shows each live actor’s state, tags and transitions as they happen.',
        },
      },
      errors: [],
      handler: () => ({ status: 200, body: DEBUG_PAGE_HTML, contentType: 'text/html; charset=utf-8', headers: DEBUG_PAGE_HEADERS }),
    }),
  ];
}
