// POST /v1/web-calls: a call from a browser to an agent (contract.md §4), placed by
// actors/calls/web-calls.ts; the browser then opens the media websocket
// (http/web-media-ws.ts) with the one-time access token answered here.
import { z } from 'zod';
import { ApiError, fieldError, referenceError } from '../errors.ts';
import { created, defineRoute } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { startWebCall, type WebCallRefusal } from '../../actors/calls/web-calls.ts';
import { WEB_MEDIA_PATH } from '../web-media-ws.ts';
import { WEB_SAMPLE_RATE } from '../../voice/media/web-session.ts';

const body = z
  .object({
    agent_id: z.string().min(1).max(200).optional().meta({ description: 'The agent to talk to (its own prompt, voice and settings; no number\'s). Send this or `phone_number`, not both.' }),
    phone_number: z.string().min(1).max(32).optional().meta({
      description: "One of your numbers, E.164: its agent answers with the number's `web_prompt` (in place of its `custom_prompt`) and its voice, speed, tools and webhooks. Send this or `agent_id`, not both.",
    }),
  })
  .strict();

const webCallCreated = z.object({
  call_id: z.string().meta({ description: 'The call\'s id, `call_…` for life (a web call has no carrier id): GET /v1/calls/{call_id}, and `call_id` in its webhooks.' }),
  websocket_url: z.string().meta({
    description: `Where the browser opens the call's media websocket: connect to \`websocket_url + "?access_token=" + access_token\` (wss when PUBLIC_BASE_URL is https). Audio is 16-bit little-endian mono PCM at ${WEB_SAMPLE_RATE} Hz in binary frames both ways; control messages are JSON text (README "Web calls").`,
  }),
  access_token: z.string().meta({
    description: 'One-time: it opens one websocket, once; a second socket with it is refused (403), as is one after `expires_at`. Not an API key: it opens this call only.',
  }),
  expires_at: z.string().meta({ description: 'ISO time the access token expires (WEB_CALL_TOKEN_TTL_SECONDS after creation, default 60 s). A call nobody connected to by then ends `no-answer` and frees its slot.' }),
});

function refusalError(r: WebCallRefusal): ApiError {
  if (r.code === 'agent_not_found' || r.code === 'number_not_found') return referenceError(r.code, r.field, r.message);
  if (r.code === 'concurrent_call_limit') return new ApiError('concurrent_call_limit', r.message);
  return fieldError('invalid_request', r.field, r.message);
}

/** The media websocket's URL on this service's public base: ws(s)://host/v1/web-calls/media. */
export function webSocketUrlOf(publicBaseUrl: string): string {
  return `${publicBaseUrl.replace(/^http/, 'ws').replace(/\/+$/, '')}${WEB_MEDIA_PATH}`;
}

export function webCallRoutes({ storage, clock, calls, config }: AppDeps) {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/web-calls',
      summary: 'Start a web call (talk to an agent from a browser)',
      tag: 'Calls',
      body,
      responses: {
        201: {
          description:
            'Created: a call waiting for its browser. Send `agent_id` (the agent\'s own prompt) or `phone_number` (the number\'s agent, with the number\'s `web_prompt`): ' +
            'neither is `missing_field`, both is `invalid_request`. An unknown agent or number is `agent_not_found` / `number_not_found` (400: references in the body); ' +
            'an inactive agent, or a number without an agent, is `invalid_request`. The call takes one of the account\'s concurrent call slots now, and holds it until it ends; ' +
            'at the limit the answer is 429 `concurrent_call_limit` (web calls are not queued: someone is waiting in front of the page). ' +
            'The call is answered when the browser connects to the websocket with the access token, and ends when the browser hangs up or closes it (`caller_hangup`), ' +
            'the agent ends it (`agent_hangup`), or a limit ends it (max duration, silence). A token nobody used by `expires_at` ends the call `no-answer`. ' +
            'The call record is like any call\'s: `direction: "inbound"` (the person called the agent), `channel: "web"`, `from_number: "web"`, `to_number` the number (or `"web"` when called by agent); ' +
            'it is transcribed, recorded when the agent (or number) has `record_call` (on the platform: a web call has no carrier to record it), analysed, billed by connected time (`charged_minutes`) ' +
            'and sent to the webhooks (`call.started`, `call.completed`, both with `channel: "web"`). No caller memory or CRM contact is kept for it (there is no phone number), and the transfer, SMS and keypad tools are not offered.',
          schema: webCallCreated,
        },
      },
      errors: ['missing_field', 'invalid_request', 'concurrent_call_limit'],
      referenceErrors: ['agent_not_found', 'number_not_found'],
      handler: ({ auth, body: b }) => {
        if (b.agent_id === undefined && b.phone_number === undefined) throw fieldError('missing_field', 'agent_id', 'Send agent_id (the agent to talk to) or phone_number (one of your numbers).');
        if (b.agent_id !== undefined && b.phone_number !== undefined) throw fieldError('invalid_request', 'phone_number', 'Send agent_id or phone_number, not both.');
        const placed = startWebCall(
          { storage, calls, clock, tokenTtlMs: config.webCallTokenTtlMs },
          auth!.accountId,
          b.phone_number !== undefined ? { phoneNumber: b.phone_number } : { agentId: b.agent_id! },
        );
        if (!placed.ok) throw refusalError(placed.refusal);
        return created({
          call_id: placed.callId,
          websocket_url: webSocketUrlOf(config.publicBaseUrl),
          access_token: placed.accessToken,
          expires_at: new Date(placed.expiresAt).toISOString(),
        });
      },
    }),
  ];
}
