// Wire-accurate simulator of carrier A's (Twilio) REST API 2010-04-01 for tests:
// Basic auth as the carrier checks it, form-encoded requests, JSON answers with
// the carrier's paging envelope, RFC 2822 dates and error bodies
// {code, message, more_info, status}. State lives in TwilioState; routes are a
// table: the number routes here, the call routes and the carrier's call behaviour
// (callbacks, TwiML, media streams) in twilio-calls.ts, messaging (SMS) in twilio-messages.ts.

import type { FarEndAudio } from './far-end-playback.ts';
import { randomBytes } from 'node:crypto';
import { paramsToRecord, startSimServer, type RecordedRequest, type SimChaos, type SimClock, type SimFault, type SimResponse } from './sim-http.ts';
import {
  TwilioCalls,
  type TwilioCallsOptions,
  type TwilioInboundCall,
  type TwilioScenario,
  type TwilioScenarioName,
  type TwilioSimCall,
  type TwilioSimCallStatus,
} from './twilio-calls.ts';
import { TwilioMessages, type TwilioMessagesOptions } from './twilio-messages.ts';
import type { TwilioSimWebhook } from './twilio-webhooks.ts';

export type TwilioSimForm = Record<string, string | string[]>;
export type TwilioSimRequest = RecordedRequest<TwilioSimForm>;

/** An IncomingPhoneNumber exactly as the API renders it. */
export interface TwilioSimNumber {
  sid: string;
  account_sid: string;
  phone_number: string;
  friendly_name: string;
  voice_url: string;
  voice_method: string;
  voice_fallback_url: string;
  voice_fallback_method: string;
  voice_application_sid: string;
  sms_url: string;
  sms_method: string;
  sms_fallback_url: string;
  sms_fallback_method: string;
  sms_application_sid: string;
  status_callback: string;
  status_callback_method: string;
  trunk_sid: string | null;
  date_created: string;
  date_updated: string;
  [field: string]: unknown;
}

/** `prefix` + 32 lowercase hex, the carrier's 34-character SID shape. */
export function twilioSid(prefix: string): string {
  return prefix + randomBytes(16).toString('hex');
}

/** RFC 2822 as the carrier writes it: `Tue, 31 Aug 2010 20:36:28 +0000`. */
export function rfc2822(ms: number = Date.now()): string {
  return new Date(ms).toUTCString().replace('GMT', '+0000');
}

export function twilioError(status: number, code: number, message: string): SimResponse {
  return { status, body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status } };
}

export class TwilioState {
  readonly accounts = new Map<string, { authToken: string }>();
  readonly numbers = new Map<string, TwilioSimNumber>();

  addAccount(accountSid: string, authToken: string): void {
    this.accounts.set(accountSid, { authToken });
  }

  addNumber(accountSid: string, e164: string): string {
    if (!this.accounts.has(accountSid)) throw new Error(`twilio sim: unknown account ${accountSid}`);
    const sid = twilioSid('PN');
    const now = rfc2822();
    this.numbers.set(sid, {
      sid,
      account_sid: accountSid,
      phone_number: e164,
      friendly_name: friendlyName(e164),
      voice_url: '',
      voice_method: 'POST',
      voice_fallback_url: '',
      voice_fallback_method: 'POST',
      voice_application_sid: '',
      voice_caller_id_lookup: false,
      voice_receive_mode: 'voice',
      sms_url: '',
      sms_method: 'POST',
      sms_fallback_url: '',
      sms_fallback_method: 'POST',
      sms_application_sid: '',
      status_callback: '',
      status_callback_method: 'POST',
      trunk_sid: null,
      api_version: '2010-04-01',
      address_requirements: 'none',
      address_sid: null,
      identity_sid: null,
      bundle_sid: null,
      beta: false,
      origin: 'twilio',
      status: 'in-use',
      capabilities: { voice: true, sms: true, mms: true, fax: false },
      emergency_status: 'Inactive',
      emergency_address_sid: null,
      emergency_address_status: 'unregistered',
      date_created: now,
      date_updated: now,
      uri: `/2010-04-01/Accounts/${accountSid}/IncomingPhoneNumbers/${sid}.json`,
      subresource_uris: {
        assigned_add_ons: `/2010-04-01/Accounts/${accountSid}/IncomingPhoneNumbers/${sid}/AssignedAddOns.json`,
      },
    });
    return sid;
  }
}

/** What a route handler sees: the authenticated account and the path captures after it. */
export interface TwilioRouteContext {
  state: TwilioState;
  req: TwilioSimRequest;
  accountSid: string;
  params: string[];
}

export interface TwilioRoute {
  method: 'GET' | 'POST' | 'DELETE';
  /** Matched against the path below /2010-04-01/Accounts/{AccountSid}. */
  pattern: RegExp;
  handle(ctx: TwilioRouteContext): SimResponse;
}

// Form parameters of a number update and the resource fields they set.
const NUMBER_UPDATE_FIELDS: Record<string, string> = {
  FriendlyName: 'friendly_name',
  VoiceUrl: 'voice_url',
  VoiceMethod: 'voice_method',
  VoiceFallbackUrl: 'voice_fallback_url',
  VoiceFallbackMethod: 'voice_fallback_method',
  VoiceApplicationSid: 'voice_application_sid',
  SmsUrl: 'sms_url',
  SmsMethod: 'sms_method',
  SmsFallbackUrl: 'sms_fallback_url',
  SmsFallbackMethod: 'sms_fallback_method',
  SmsApplicationSid: 'sms_application_sid',
  StatusCallback: 'status_callback',
  StatusCallbackMethod: 'status_callback_method',
  TrunkSid: 'trunk_sid',
};

export const numberRoutes: TwilioRoute[] = [
  {
    method: 'GET',
    pattern: /^\/IncomingPhoneNumbers\.json$/,
    handle: ({ state, req, accountSid }) => {
      const phone = first(req.query.PhoneNumber);
      const friendly = first(req.query.FriendlyName);
      const items = [...state.numbers.values()].filter(
        (n) =>
          n.account_sid === accountSid &&
          (phone === undefined || partialMatch(n.phone_number, phone)) &&
          (friendly === undefined || n.friendly_name === friendly),
      );
      return { status: 200, body: page('incoming_phone_numbers', req, items) };
    },
  },
  {
    method: 'GET',
    pattern: /^\/IncomingPhoneNumbers\/(PN[0-9a-fA-F]{32})\.json$/,
    handle: ({ state, req, accountSid, params }) => {
      const n = state.numbers.get(params[0] ?? '');
      return n && n.account_sid === accountSid ? { status: 200, body: n } : notFound(req.path);
    },
  },
  {
    method: 'POST',
    pattern: /^\/IncomingPhoneNumbers\/(PN[0-9a-fA-F]{32})\.json$/,
    handle: ({ state, req, accountSid, params }) => {
      const n = state.numbers.get(params[0] ?? '');
      if (!n || n.account_sid !== accountSid) return notFound(req.path);
      // Unknown parameters are ignored, as the carrier does.
      for (const [param, field] of Object.entries(NUMBER_UPDATE_FIELDS)) {
        const value = first(req.body[param]);
        if (value !== undefined) n[field] = value;
      }
      n.date_updated = rfc2822();
      return { status: 200, body: n };
    },
  },
];

export interface TwilioSim {
  baseUrl: string;
  state: TwilioState;
  /** Numbers by PN sid, as the API renders them (updates show here). */
  numbers: Map<string, TwilioSimNumber>;
  /** REST requests received, in order. */
  requests: TwilioSimRequest[];
  /** Calls by CA sid, outbound and inbound, live and ended. */
  calls: Map<string, TwilioSimCall>;
  /** Messaging (SMS): sends, status callbacks, incoming texts, outcomes (twilio-messages.ts). */
  messages: TwilioMessages;
  /** Every webhook the sim sent (status, voice, amd), with the answer it got. */
  webhooks: TwilioSimWebhook[];
  /** What went wrong in the background: undeliverable webhooks, refused streams, bad TwiML. */
  errors: string[];
  addAccount(accountSid: string, authToken: string): void;
  addNumber(accountSid: string, e164: string): string;
  /** Calls placed to `to` from now on play this scenario (default `answer`). */
  scenario(to: string, scenario: TwilioScenarioName | TwilioScenario): void;
  /** Sends webhooks (calls' and messages') and media for URLs under `publicBaseUrl` to `localBaseUrl` (signatures keep the public URL). */
  route(publicBaseUrl: string, localBaseUrl: string): void;
  /** The far end hangs up (a call not yet answered is canceled). */
  hangup(callSid: string): Promise<TwilioSimCallStatus>;
  /** Rings one of the account's numbers and follows the service's TwiML. */
  placeInboundCall(opts: { from: string; to: string; accountSid?: string; audio?: FarEndAudio }): Promise<TwilioInboundCall>;
  /**
   * Misbehaves on the next matching request(s) (sim-http.ts): `{status}`, `{delayMs}`,
   * `{drop: true}` (call created, answer lost), `{reset: true}` (nothing created);
   * `match: 'dial' | 'hangup' | 'lookup' | 'message'` or a method/path pattern limits it.
   */
  fail(fault: SimFault<TwilioSimForm>): void;
  /**
   * Random faults with a seeded PRNG; without `match` it applies to dials, each drawn from
   * (seed, To number, n-th dial to it), whatever order they arrive in (`match: 'message'`
   * without `keyBy`: sends, keyed by their To the same way). null turns it off.
   */
  chaos(chaos: SimChaos<TwilioSimForm> | null): void;
  /** The carrier's clock: call times on the resources and the list's date filters follow it. */
  clock: SimClock;
  /** Moves the carrier's clock forward by `ms`. */
  advanceClock(ms: number): void;
  /** Outbound calls the carrier placed to `to` (exactly one per request is what a careful client achieves). */
  placedTo(to: string): number;
  /** Outbound calls placed, by `To` number. */
  placedCounts(): Map<string, number>;
  /** Dial requests received (to `to` when given), placed or not, each with the fault it met. */
  dialRequests(to?: string): TwilioSimRequest[];
  close(): Promise<void>;
}

export interface TwilioSimOptions extends TwilioCallsOptions, TwilioMessagesOptions {
  /** Routes served after the number and call routes (e.g. messages). */
  extraRoutes?: TwilioRoute[];
  /** Fixed port for `npm run sim`; tests use a free one. */
  port?: number;
}

export async function startTwilioSim(opts: TwilioSimOptions = {}): Promise<TwilioSim> {
  const state = new TwilioState();
  const calls = new TwilioCalls(state, opts);
  const messages = new TwilioMessages(state, calls.clock, opts);
  const routes = [...numberRoutes, ...calls.routes(), ...messages.routes(), ...(opts.extraRoutes ?? [])];
  const server = await startSimServer<TwilioSimForm>(parseForm, (req) => dispatch(state, routes, req), opts.port ?? 0, TWILIO_ENDPOINTS);
  calls.apiBase = server.baseUrl;
  messages.requestLog = server.requests;
  const byTo = (r: TwilioSimRequest) => first(r.body.To) ?? '';
  return {
    baseUrl: server.baseUrl,
    state,
    numbers: state.numbers,
    requests: server.requests,
    calls: calls.calls,
    messages,
    webhooks: calls.webhooks,
    errors: calls.errors,
    addAccount: (sid, token) => state.addAccount(sid, token),
    addNumber: (sid, e164) => state.addNumber(sid, e164),
    scenario: (to, scenario) => calls.scenario(to, scenario),
    route: (publicBaseUrl, localBaseUrl) => {
      calls.route(publicBaseUrl, localBaseUrl);
      messages.route(publicBaseUrl, localBaseUrl);
    },
    hangup: (callSid) => calls.hangup(callSid),
    placeInboundCall: (o) => calls.placeInboundCall(o),
    fail: (fault) => server.fail(fault),
    // Dials by default, each dial's draw keyed by its To number (arrival order does not matter); sends likewise.
    chaos: (chaos) =>
      server.chaos(chaos === null ? null : chaos.match === undefined ? { match: 'dial', keyBy: byTo, ...chaos } : chaos.match === 'message' ? { keyBy: byTo, ...chaos } : chaos),
    clock: calls.clock,
    advanceClock: (ms) => calls.clock.advance(ms),
    placedTo: (to) => calls.placedTo(to),
    placedCounts: () => calls.placedCounts(),
    dialRequests: (to) => server.requests.filter((r) => TWILIO_ENDPOINTS.dial(r) && (to === undefined || first(r.body.To) === to)),
    async close() {
      await Promise.all([calls.close(), messages.close()]);
      await server.close();
    },
  };
}

const ACCOUNT_PATH = '^/2010-04-01/Accounts/[^/]+';
const CALLS = new RegExp(`${ACCOUNT_PATH}/Calls\\.json$`);
const CALL = new RegExp(`${ACCOUNT_PATH}/Calls/[^/]+\\.json$`);
const MESSAGES = new RegExp(`${ACCOUNT_PATH}/Messages\\.json$`);

/** The endpoints faults can be limited to (sim-http.ts SimEndpoint). */
export const TWILIO_ENDPOINTS = {
  dial: (r: TwilioSimRequest) => r.method === 'POST' && CALLS.test(r.path),
  hangup: (r: TwilioSimRequest) => r.method === 'POST' && CALL.test(r.path),
  lookup: (r: TwilioSimRequest) => r.method === 'GET' && (CALLS.test(r.path) || CALL.test(r.path)),
  message: (r: TwilioSimRequest) => r.method === 'POST' && MESSAGES.test(r.path),
};

function dispatch(state: TwilioState, routes: TwilioRoute[], req: TwilioSimRequest): SimResponse {
  const m = /^\/2010-04-01\/Accounts\/([^/]+?)(\/.*|\.json)$/.exec(req.path);
  if (!m) return notFound(req.path);
  const authenticated = authenticate(state, req.headers.authorization);
  // Another account's path with valid credentials is refused as an auth failure (20003).
  if (authenticated === null || authenticated !== decodeURIComponent(m[1] ?? '')) {
    return { ...twilioError(401, 20003, 'Authenticate'), headers: { 'www-authenticate': 'Basic realm="Twilio API"' } };
  }
  const rest = m[2] ?? '';
  let pathKnown = false;
  for (const route of routes) {
    const match = route.pattern.exec(rest);
    if (!match) continue;
    pathKnown = true;
    if (route.method !== req.method) continue;
    return route.handle({ state, req, accountSid: authenticated, params: match.slice(1) });
  }
  return pathKnown ? twilioError(405, 20004, 'Method not allowed') : notFound(req.path);
}

function authenticate(state: TwilioState, header: string | undefined): string | null {
  const m = /^Basic\s+(\S+)$/i.exec(header ?? '');
  if (!m?.[1]) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const user = decoded.slice(0, colon);
  const account = state.accounts.get(user);
  return account && account.authToken === decoded.slice(colon + 1) ? user : null;
}

function notFound(path: string): SimResponse {
  return twilioError(404, 20404, `The requested resource ${path} was not found`);
}

function parseForm(raw: string, contentType: string | undefined): TwilioSimForm {
  if (!contentType?.startsWith('application/x-www-form-urlencoded')) return {};
  return paramsToRecord(new URLSearchParams(raw));
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

// The carrier's PhoneNumber filter matches partial numbers, `*` standing for any digit.
function partialMatch(e164: string, pattern: string): boolean {
  const wanted = pattern.replace(/[^\d*]/g, '');
  if (wanted === '') return false;
  const re = new RegExp(wanted.replace(/\*/g, '\\d'));
  return re.test(e164.replace(/\D/g, ''));
}

// The list envelope: `page`, `page_size`, `start`, `end` and the *_uri members.
export function page(key: string, req: TwilioSimRequest, all: unknown[]): Record<string, unknown> {
  const size = clamp(Number(first(req.query.PageSize) ?? 50), 1, 1000);
  const num = Math.max(0, Math.floor(Number(first(req.query.Page) ?? 0)) || 0);
  const items = all.slice(num * size, num * size + size);
  const uriFor = (p: number) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query)) if (k !== 'Page' && k !== 'PageSize' && k !== 'PageToken') q.set(k, first(v) ?? '');
    q.set('PageSize', String(size));
    q.set('Page', String(p));
    return `${req.path}?${q.toString()}`;
  };
  const start = num * size;
  return {
    [key]: items,
    page: num,
    page_size: size,
    start,
    end: items.length > 0 ? start + items.length - 1 : start,
    uri: uriFor(num),
    first_page_uri: uriFor(0),
    next_page_uri: (num + 1) * size < all.length ? uriFor(num + 1) : null,
    previous_page_uri: num > 0 ? uriFor(num - 1) : null,
  };
}

function clamp(n: number, lo: number, hi: number): number {
  return Number.isFinite(n) ? Math.min(hi, Math.max(lo, Math.floor(n))) : lo;
}

function friendlyName(e164: string): string {
  const us = /^\+1(\d{3})(\d{3})(\d{4})$/.exec(e164);
  return us ? `(${us[1]}) ${us[2]}-${us[3]}` : e164;
}
