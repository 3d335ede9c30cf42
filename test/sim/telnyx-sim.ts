// Wire-accurate simulator of carrier B's (Telnyx) REST API v2 for tests: Bearer
// API keys, JSON bodies, answers wrapped in {data} (lists add {meta}), errors
// {errors:[{code,title,detail,source?,meta}]}. Each API key is one carrier
// account, with its own Ed25519 key that signs its webhooks (`publicKeyOf`), unless
// it was added as a further key of an existing account (`sameAccountAs`: the carrier
// lets an account make several API keys, all seeing the same resources and sharing
// its signing key); another account's resources are 404 like unknown ones. baseUrl
// is the host root; every route starts with /v2/. Routes are a table: numbers here,
// Call Control in telnyx-calls.ts (dial scenarios, inbound calls, signed webhooks, the
// media stream client), messaging (SMS) in telnyx-messages.ts.

import type { FarEndAudio } from './far-end-playback.ts';
import { randomInt, randomUUID } from 'node:crypto';
import { generateTelnyxKeyPair, type TelnyxKeyPair } from '../../voice/carriers/telnyx-signature.ts';
import { startSimServer, type RecordedRequest, type SimChaos, type SimClock, type SimFault, type SimResponse } from './sim-http.ts';
import { TelnyxMessages, type TelnyxMessagesOptions } from './telnyx-messages.ts';
import { TelnyxCalls, type InboundCallRequest, type SimCall, type SimWebhook, type TelnyxCallHandle, type TelnyxCallsOptions, type TelnyxScenario } from './telnyx-calls.ts';

export type { InboundCallRequest, SimCall, SimWebhook, TelnyxCallHandle, TelnyxScenario } from './telnyx-calls.ts';

export type TelnyxSimRequest = RecordedRequest<unknown>;
export type TelnyxRecord = Record<string, unknown> & { id: string };

export function telnyxError(status: number, code: string, title: string, detail: string, pointer?: string): SimResponse {
  const error = {
    code,
    title,
    detail,
    ...(pointer === undefined ? {} : { source: { pointer } }),
    meta: { url: `https://developers.telnyx.com/docs/overview/errors/${code}` },
  };
  return { status, body: { errors: [error] } };
}

const notFound = () => telnyxError(404, '10005', 'Resource not found', 'The requested resource or URL could not be found.');

/** The carrier's int64 ids travel as decimal strings. */
export function telnyxId(): string {
  return String(randomInt(1, 10)) + Array.from({ length: 18 }, () => randomInt(0, 10)).join('');
}

export class TelnyxState {
  readonly apiKeys = new Set<string>();
  readonly numbers = new Map<string, TelnyxRecord>();
  readonly callControlApplications = new Map<string, TelnyxRecord>();
  readonly messagingProfiles = new Map<string, TelnyxRecord>();
  /** The signing key of each API key: its account's, made with the account's first key. */
  readonly keyPairs = new Map<string, TelnyxKeyPair>();
  // Which API key (account) owns each record; kept off the records so they stay wire-shaped.
  private readonly owners = new WeakMap<object, string>();
  // The carrier account of each API key, named by the account's first key.
  private readonly accountOfKey = new Map<string, string>();

  /**
   * A new API key: a new carrier account, or with `sameAccountAs` one more key of that
   * key's account. `keyPair` fixes a new account's signing key (default: generated).
   */
  addApiKey(apiKey: string, opts: { sameAccountAs?: string; keyPair?: TelnyxKeyPair } = {}): void {
    const account = opts.sameAccountAs === undefined ? (this.accountOfKey.get(apiKey) ?? apiKey) : this.accountOfKey.get(opts.sameAccountAs);
    if (account === undefined) throw new Error('telnyx sim: sameAccountAs names an unknown API key');
    this.apiKeys.add(apiKey);
    this.accountOfKey.set(apiKey, account);
    const pair = this.keyPairs.get(account) ?? opts.keyPair ?? generateTelnyxKeyPair();
    this.keyPairs.set(account, pair);
    this.keyPairs.set(apiKey, pair);
  }

  /** True when both API keys belong to one carrier account. */
  sameAccount(a: string, b: string): boolean {
    const account = this.accountOfKey.get(a);
    return account !== undefined && account === this.accountOfKey.get(b);
  }

  owns(apiKey: string, record: object | undefined): record is TelnyxRecord {
    const owner = record === undefined ? undefined : this.owners.get(record);
    return owner !== undefined && this.sameAccount(owner, apiKey);
  }

  addConnection(apiKey: string, id: string = telnyxId()): string {
    const now = new Date().toISOString();
    this.own(apiKey, this.callControlApplications, {
      id,
      record_type: 'call_control_application',
      application_name: `app-${id}`,
      active: true,
      anchorsite_override: 'Latency',
      dtmf_type: 'RFC 2833',
      first_command_timeout: false,
      first_command_timeout_secs: 30,
      inbound: { channel_limit: null, shaken_stir_enabled: false, sip_subdomain: null, sip_subdomain_receive_settings: 'from_anyone' },
      outbound: { channel_limit: null, outbound_voice_profile_id: null },
      webhook_api_version: '1',
      webhook_event_url: 'https://example.com/webhooks',
      webhook_event_failover_url: '',
      webhook_timeout_secs: null,
      created_at: now,
      updated_at: now,
    });
    return id;
  }

  addMessagingProfile(apiKey: string, id: string = randomUUID()): string {
    const now = new Date().toISOString();
    this.own(apiKey, this.messagingProfiles, {
      id,
      record_type: 'messaging_profile',
      name: `profile-${id.slice(0, 8)}`,
      enabled: true,
      webhook_url: null,
      webhook_failover_url: null,
      webhook_api_version: '2',
      whitelisted_destinations: ['US'],
      number_pool_settings: null,
      url_shortener_settings: null,
      created_at: now,
      updated_at: now,
    });
    return id;
  }

  /** Adds a number; a connection or messaging profile named but not yet present is created. */
  addNumber(apiKey: string, e164: string, opts: { connectionId?: string; messagingProfileId?: string } = {}): string {
    const { connectionId = null, messagingProfileId = null } = opts;
    if (connectionId !== null && !this.callControlApplications.has(connectionId)) this.addConnection(apiKey, connectionId);
    if (messagingProfileId !== null && !this.messagingProfiles.has(messagingProfileId)) this.addMessagingProfile(apiKey, messagingProfileId);
    const id = telnyxId();
    const now = new Date().toISOString();
    this.own(apiKey, this.numbers, {
      id,
      record_type: 'phone_number',
      phone_number: e164,
      status: 'active',
      phone_number_type: 'local',
      tags: [],
      connection_id: connectionId,
      connection_name: connectionId === null ? null : this.callControlApplications.get(connectionId)?.application_name,
      messaging_profile_id: messagingProfileId,
      messaging_profile_name: messagingProfileId === null ? null : this.messagingProfiles.get(messagingProfileId)?.name,
      external_pin: null,
      customer_reference: null,
      billing_group_id: null,
      emergency_enabled: false,
      emergency_address_id: null,
      call_forwarding_enabled: true,
      cnam_listing_enabled: false,
      caller_id_name_enabled: false,
      call_recording_enabled: false,
      t38_fax_gateway_enabled: false,
      hd_voice_enabled: false,
      deletion_lock_enabled: false,
      purchased_at: now,
      created_at: now,
      updated_at: now,
    });
    return id;
  }

  private own(apiKey: string, map: Map<string, TelnyxRecord>, record: TelnyxRecord): void {
    if (!this.apiKeys.has(apiKey)) throw new Error('telnyx sim: unknown API key');
    map.set(record.id, record);
    this.owners.set(record, apiKey);
  }
}

export interface TelnyxRouteContext {
  state: TelnyxState;
  req: TelnyxSimRequest;
  apiKey: string;
  params: string[];
}

export interface TelnyxRoute {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  pattern: RegExp;
  handle(ctx: TelnyxRouteContext): SimResponse;
}

// A GET and a PATCH per resource; `patch` validates and applies the body, or answers an error.
function resource(
  prefix: string,
  map: (s: TelnyxState) => Map<string, TelnyxRecord>,
  patch: (ctx: TelnyxRouteContext, record: TelnyxRecord, body: Record<string, unknown>) => SimResponse | void,
): TelnyxRoute[] {
  const pattern = new RegExp(`^/v2/${prefix}/([^/]+)$`);
  const find = (ctx: TelnyxRouteContext) => {
    const record = map(ctx.state).get(decodeURIComponent(ctx.params[0] ?? ''));
    return ctx.state.owns(ctx.apiKey, record) ? record : undefined;
  };
  return [
    { method: 'GET', pattern, handle: (ctx) => { const r = find(ctx); return r ? { status: 200, body: { data: r } } : notFound(); } },
    {
      method: 'PATCH',
      pattern,
      handle: (ctx) => {
        const record = find(ctx);
        if (!record) return notFound();
        const body = ctx.req.body;
        if (typeof body !== 'object' || body === null || Array.isArray(body)) {
          return telnyxError(400, '10015', 'Bad Request', 'The request failed because it was not well-formed.');
        }
        const refused = patch(ctx, record, body as Record<string, unknown>);
        if (refused) return refused;
        record.updated_at = new Date().toISOString();
        return { status: 200, body: { data: record } };
      },
    },
  ];
}

function copy(record: TelnyxRecord, body: Record<string, unknown>, fields: string[]): void {
  for (const f of fields) if (f in body) record[f] = body[f];
}

const missing = (field: string) =>
  telnyxError(422, '10004', 'Missing required parameter', `The '${field}' parameter is required.`, `/${field}`);
const invalid = (field: string, detail: string) => telnyxError(422, '10015', 'Bad Request', detail, `/${field}`);

export const numberRoutes: TelnyxRoute[] = [
  {
    method: 'GET',
    pattern: /^\/v2\/phone_numbers$/,
    handle: ({ state, req, apiKey }) => {
      const q = (k: string) => { const v = req.query[k]; return Array.isArray(v) ? v[0] : v; };
      const phone = q('filter[phone_number]');
      const connection = q('filter[connection_id]');
      const all = [...state.numbers.values()].filter(
        (n) =>
          state.owns(apiKey, n) &&
          // Digits only, at least three, matched anywhere; other characters match nothing.
          (phone === undefined || (/^\d{3,}$/.test(phone) && String(n.phone_number).replace(/\D/g, '').includes(phone))) &&
          (connection === undefined || n.connection_id === connection),
      );
      const size = Math.min(250, Math.max(1, Number(q('page[size]') ?? 20) || 20));
      const pageNumber = Math.max(1, Number(q('page[number]') ?? 1) || 1);
      const data = all.slice((pageNumber - 1) * size, pageNumber * size);
      const meta = { page_number: pageNumber, page_size: size, total_pages: Math.ceil(all.length / size), total_results: all.length };
      return { status: 200, body: { data, meta } };
    },
  },
  ...resource('phone_numbers', (s) => s.numbers, ({ state, apiKey }, n, body) => {
    if ('connection_id' in body) {
      const id = body.connection_id;
      const app = typeof id === 'string' ? state.callControlApplications.get(id) : undefined;
      if (id !== null && id !== '' && !state.owns(apiKey, app)) {
        return telnyxError(422, '10017', 'Associated resource does not exist', 'The connection_id does not exist.', '/connection_id');
      }
      n.connection_id = id === '' ? null : id;
      n.connection_name = app?.application_name ?? null;
    }
    copy(n, body, ['tags', 'external_pin', 'customer_reference', 'billing_group_id', 'hd_voice_enabled']);
  }),
  // The carrier's OpenAPI requires application_name and webhook_event_url on this PATCH.
  ...resource('call_control_applications', (s) => s.callControlApplications, (_ctx, app, body) => {
    if (typeof body.application_name !== 'string' || body.application_name === '') return missing('application_name');
    if (typeof body.webhook_event_url !== 'string' || !/^https?:\/\//.test(body.webhook_event_url)) return missing('webhook_event_url');
    if ('webhook_api_version' in body && !['1', '2'].includes(String(body.webhook_api_version))) {
      return invalid('webhook_api_version', "webhook_api_version must be '1' or '2'.");
    }
    copy(app, body, [
      'application_name', 'webhook_event_url', 'webhook_event_failover_url', 'webhook_api_version', 'webhook_timeout_secs',
      'active', 'anchorsite_override', 'dtmf_type', 'first_command_timeout', 'first_command_timeout_secs',
    ]);
  }),
  ...resource('messaging_profiles', (s) => s.messagingProfiles, (_ctx, profile, body) => {
    if ('webhook_api_version' in body && !['1', '2', '2010-04-01'].includes(String(body.webhook_api_version))) {
      return invalid('webhook_api_version', "webhook_api_version must be '1', '2' or '2010-04-01'.");
    }
    copy(profile, body, ['name', 'enabled', 'webhook_url', 'webhook_failover_url', 'webhook_api_version', 'whitelisted_destinations']);
  }),
];

export interface TelnyxSim {
  baseUrl: string;
  state: TelnyxState;
  numbers: Map<string, TelnyxRecord>;
  callControlApplications: Map<string, TelnyxRecord>;
  messagingProfiles: Map<string, TelnyxRecord>;
  requests: TelnyxSimRequest[];
  /** A new carrier account, or with `sameAccountAs` a further API key of an existing one. */
  addApiKey(apiKey: string, opts?: { sameAccountAs?: string; keyPair?: TelnyxKeyPair }): void;
  addNumber(apiKey: string, e164: string, opts?: { connectionId?: string; messagingProfileId?: string }): string;
  addConnection(apiKey: string, id?: string): string;
  addMessagingProfile(apiKey: string, id?: string): string;
  /** The account's webhook public key: base64 of 32 raw bytes, as the carrier portal shows it. */
  publicKeyOf(apiKey: string): string;
  /** Call Control: every call, every webhook delivery, scenarios, redirects (telnyx-calls.ts). */
  calls: TelnyxCalls;
  /** Messaging (SMS): sends, message events, incoming texts, outcomes, detail records (telnyx-messages.ts). */
  messages: TelnyxMessages;
  /** Outbound calls to `to` play `scenario` (default `answer`). */
  setScenario(to: string, scenario: TelnyxScenario): void;
  /** A handle on a call by call_control_id: wait for its webhooks and its media stream. */
  call(callControlId: string): TelnyxCallHandle;
  /** The far end hangs up; resolves once call.hangup has been delivered. */
  hangup(callControlId: string): Promise<void>;
  /** Rings one of the account's numbers; resolves once call.initiated has been delivered. */
  placeInboundCall(req: InboundCallRequest): Promise<TelnyxCallHandle>;
  /** Who answers outbound calls to `to` speaks with this voice on the media stream. */
  voiceFor(to: string, audio: FarEndAudio): void;
  /** Delivers webhooks (calls' and messages') and media for URLs on `publicBase`'s host to `actualBase`. */
  redirect(publicBase: string, actualBase: string): void;
  /**
   * Misbehaves on the next matching request(s) (sim-http.ts): `{status}`, `{delayMs}`,
   * `{drop: true}` (call created, answer lost), `{reset: true}` (nothing created);
   * `match: 'dial' | 'hangup' | 'lookup' | 'message'` or a method/path pattern limits it.
   */
  fail(fault: SimFault): void;
  /**
   * Random faults with a seeded PRNG; without `match` it applies to dials, each drawn from
   * (seed, To number, n-th dial to it), whatever order they arrive in (`match: 'message'`
   * without `keyBy`: sends, keyed by their `to` the same way). null turns it off.
   */
  chaos(chaos: SimChaos | null): void;
  /** The carrier's clock: command_id memory (60 s), record retention (10 min), call times. */
  clock: SimClock;
  /** Moves the carrier's clock forward by `ms`. */
  advanceClock(ms: number): void;
  /** Outbound calls the carrier placed to `to` (a dial de-duplicated by command_id places none). */
  placedTo(to: string): number;
  /** Outbound calls placed, by `to` number. */
  placedCounts(): Map<string, number>;
  /** Dial requests received (to `to` when given), placed or not, each with the fault it met. */
  dialRequests(to?: string): TelnyxSimRequest[];
  close(): Promise<void>;
}

export interface TelnyxSimOptions extends TelnyxCallsOptions, TelnyxMessagesOptions {
  port?: number;
  /**
   * A certificate (test/sim/webhook-receiver.ts makeTestCa) for the carrier's file host:
   * recordings are then served over https from a host of their own, as the real
   * carrier's pre-signed links are. Without it they are linked on the http API base.
   */
  recordingTls?: { cert: string; key: string };
}

export async function startTelnyxSim(routes: TelnyxRoute[] = numberRoutes, opts: TelnyxSimOptions = {}): Promise<TelnyxSim> {
  const state = new TelnyxState();
  const calls = new TelnyxCalls(state, opts);
  const messages = new TelnyxMessages(state, calls.clock, opts);
  const all = [...routes, ...calls.routes(), ...messages.routes()];
  const server = await startSimServer<unknown>(parseJson, (req) => dispatch(state, all, req, calls), opts.port ?? 0, TELNYX_ENDPOINTS);
  calls.apiBase = server.baseUrl;
  messages.requestLog = server.requests;
  const byTo = (r: TelnyxSimRequest) => String((r.body as { to?: unknown } | undefined)?.to ?? '');
  // The file host records its requests beside the API's, so faults and counts see both.
  const files = opts.recordingTls
    ? await startSimServer<unknown>(parseJson, (req) => recordingOnly(req, calls), 0, {}, opts.recordingTls)
    : null;
  if (files) calls.recordingBase = files.baseUrl;
  return {
    baseUrl: server.baseUrl,
    state,
    numbers: state.numbers,
    callControlApplications: state.callControlApplications,
    messagingProfiles: state.messagingProfiles,
    requests: server.requests,
    addApiKey: (k, opts) => state.addApiKey(k, opts),
    addNumber: (k, e164, opts) => state.addNumber(k, e164, opts),
    addConnection: (k, id) => state.addConnection(k, id),
    addMessagingProfile: (k, id) => state.addMessagingProfile(k, id),
    publicKeyOf(apiKey) {
      const pair = state.keyPairs.get(apiKey);
      if (!pair) throw new Error('telnyx sim: unknown API key');
      return pair.publicKey;
    },
    calls,
    messages,
    setScenario: (to, scenario) => calls.setScenario(to, scenario),
    call: (id) => calls.handle(id),
    hangup: (id) => calls.handle(id).hangup(),
    placeInboundCall: (req) => calls.placeInboundCall(req),
    voiceFor: (to, audio) => calls.voiceFor(to, audio),
    redirect: (publicBase, actualBase) => {
      calls.redirect(publicBase, actualBase);
      messages.redirect(publicBase, actualBase);
    },
    fail: (fault) => server.fail(fault),
    // Dials by default, each dial's draw keyed by its To number (arrival order does not matter); sends likewise.
    chaos: (chaos) =>
      server.chaos(chaos === null ? null : chaos.match === undefined ? { match: 'dial', keyBy: byTo, ...chaos } : chaos.match === 'message' ? { keyBy: byTo, ...chaos } : chaos),
    clock: calls.clock,
    advanceClock: (ms) => calls.clock.advance(ms),
    placedTo: (to) => calls.placedTo(to),
    placedCounts: () => calls.placedCounts(),
    dialRequests: (to) =>
      server.requests.filter((r) => TELNYX_ENDPOINTS.dial(r) && (to === undefined || (r.body as { to?: unknown } | undefined)?.to === to)),
    async close() {
      await Promise.all([calls.close(), messages.close()]);
      await Promise.all([server.close(), files?.close()]);
    },
  };
}

/** The file host: pre-signed recording links and nothing else. */
function recordingOnly(req: TelnyxSimRequest, calls: TelnyxCalls): SimResponse {
  const file = /^\/sim-recordings\/([0-9a-f]{32})\.mp3$/.exec(req.path);
  return file && req.method === 'GET' ? calls.recordingFile(file[1] ?? '') : notFound();
}

/** The endpoints faults can be limited to (sim-http.ts SimEndpoint). */
export const TELNYX_ENDPOINTS = {
  dial: (r: TelnyxSimRequest) => r.method === 'POST' && r.path === '/v2/calls',
  hangup: (r: TelnyxSimRequest) => r.method === 'POST' && /^\/v2\/calls\/[^/]+\/actions\/hangup$/.test(r.path),
  lookup: (r: TelnyxSimRequest) =>
    r.method === 'GET' && (/^\/v2\/calls\/[^/]+$/.test(r.path) || /^\/v2\/connections\/[^/]+\/active_calls$/.test(r.path) || r.path === '/v2/call_events'),
  message: (r: TelnyxSimRequest) => r.method === 'POST' && r.path === '/v2/messages',
};

function dispatch(state: TelnyxState, routes: TelnyxRoute[], req: TelnyxSimRequest, calls: TelnyxCalls): SimResponse {
  // Recording files are pre-signed links (S3 at the carrier): no API key.
  const file = /^\/sim-recordings\/([0-9a-f]{32})\.mp3$/.exec(req.path);
  if (file && req.method === 'GET') return calls.recordingFile(file[1] ?? '');
  const key = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (key === undefined || !state.apiKeys.has(key)) {
    return telnyxError(401, '10009', 'Authentication failed', 'The required authentication headers were either invalid or not included in the request.');
  }
  for (const route of routes) {
    const match = route.pattern.exec(req.path);
    if (match && route.method === req.method) return route.handle({ state, req, apiKey: key, params: match.slice(1) });
  }
  return notFound();
}

function parseJson(raw: string): unknown {
  if (raw === '') return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}
