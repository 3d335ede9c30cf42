// Carrier A (Twilio) REST client, API version 2010-04-01 (carriers.md §1): HTTP
// Basic AccountSid:AuthToken, form-encoded bodies, JSON answers, errors
// {code, message, more_info, status}. `baseUrl` is the host root, e.g.
// https://api.twilio.com (TWILIO_API_BASE); paths start with /2010-04-01.
// Numbers, then calls (create, hang up, fetch, list), then messages (send, list).

import { DEFAULT_CARRIER_TIMEOUT_MS, carrierFetch, joinUrl } from './carrier-http.ts';
import { CarrierUnreachableError } from './errors.ts';

export interface TwilioRestOptions {
  baseUrl: string;
  accountSid: string;
  authToken: string;
  timeoutMs?: number;
}

/** An IncomingPhoneNumber resource; the fields the service relies on, the rest as sent. */
export interface TwilioIncomingNumber {
  sid: string;
  account_sid: string;
  phone_number: string;
  voice_url: string | null;
  voice_method: string | null;
  sms_url: string | null;
  sms_method: string | null;
  status_callback: string | null;
  voice_application_sid: string | null;
  trunk_sid: string | null;
  [field: string]: unknown;
}

export interface TwilioNumberUpdate {
  voiceUrl: string;
  smsUrl: string;
  statusCallback?: string;
}

/** The call progress events a status callback can be asked for. */
export type TwilioCallEvent = 'initiated' | 'ringing' | 'answered' | 'completed';

/** `POST …/Calls.json` parameters, named as on the wire (carriers.md §1). */
export interface TwilioCreateCall {
  To: string;
  From: string;
  /** Fetched (POST) when the call is answered; answers TwiML. */
  Url: string;
  StatusCallback: string;
  /** Sent as one `StatusCallbackEvent` parameter per event. */
  StatusCallbackEvent: readonly TwilioCallEvent[];
  MachineDetection?: 'Enable' | 'DetectMessageEnd';
  AsyncAmd?: boolean;
  AsyncAmdStatusCallback?: string;
  /** Seconds; the carrier ends the call after this long connected. */
  TimeLimit: number;
  /** Seconds to let it ring (carrier default 60). */
  Timeout?: number;
}

/** A Call resource; the fields the service relies on, the rest as sent. `status` never says `initiated`. */
export interface TwilioCall {
  sid: string;
  account_sid: string;
  to: string;
  from: string;
  status: string;
  direction: string | null;
  answered_by: string | null;
  /** Connected seconds as a string, null until the call ends. */
  duration: string | null;
  /** RFC 2822. */
  date_created?: string | null;
  /** RFC 2822: when the carrier dialed it; null while it waits in the carrier's queue. */
  start_time?: string | null;
  /** RFC 2822: when it ended; null while it lasts. */
  end_time?: string | null;
  [field: string]: unknown;
}

/** `GET …/Calls.json` filters (carriers.md §1), named for what they do. */
export interface TwilioCallFilter {
  To?: string;
  From?: string;
  /** One call status (queued, ringing, in-progress, completed, …). */
  Status?: string;
  /** Sent as `StartTime>=YYYY-MM-DD` (UTC day): calls that started on or after that midnight. */
  StartedOnOrAfter?: string;
  /** The calls a call's `<Dial>` placed (its child legs). */
  ParentCallSid?: string;
}

/** `POST …/Messages.json` parameters, named as on the wire (carriers.md §1). */
export interface TwilioCreateMessage {
  To: string;
  From: string;
  Body: string;
  /** Status callbacks (sent, delivered, undelivered, failed) are POSTed here. */
  StatusCallback?: string;
}

/** A Message resource; the fields the service relies on, the rest as sent. */
export interface TwilioMessage {
  sid: string;
  to: string;
  from: string;
  status: string;
  direction?: string | null;
  /** RFC 2822. */
  date_created?: string | null;
  error_code?: number | string | null;
  [field: string]: unknown;
}

/** Form parameters; an array repeats the key (e.g. StatusCallbackEvent). */
export type TwilioForm = Record<string, string | readonly string[] | undefined>;

export interface TwilioRest {
  readonly accountSid: string;
  /** The account's number with exactly this E.164 value, or null when the account has none. */
  findIncomingNumber(e164: string): Promise<TwilioIncomingNumber | null>;
  /** Points the number's voice and SMS webhooks at the given URLs (both POST). */
  updateIncomingNumber(numberSid: string, update: TwilioNumberUpdate): Promise<TwilioIncomingNumber>;
  /**
   * Places a call (201). A refusal, e.g. code 21211 for an invalid `To`, is a
   * CarrierRequestError. `timeoutMs` overrides the client's timeout for this request.
   */
  createCall(params: TwilioCreateCall, opts?: { timeoutMs?: number }): Promise<TwilioCall>;
  /**
   * Hangs up (`completed`) or cancels a call not yet answered (`canceled`). A call the
   * carrier no longer has answers 404 with code 20404, thrown as a CarrierRequestError.
   */
  updateCall(callSid: string, update: { Status: 'completed' | 'canceled' }): Promise<TwilioCall>;
  /**
   * Replaces the live call's TwiML (a transfer's `<Dial>`): the running document, and
   * its media stream, end first. A call not in progress is refused (code 21220).
   */
  updateCall(callSid: string, update: { Twiml: string }): Promise<TwilioCall>;
  fetchCall(callSid: string): Promise<TwilioCall>;
  /**
   * Every call matching the filter, following `next_page_uri` (at most `maxPages` pages of
   * `pageSize` (default 10 of 1000); more is an error rather than a silently partial answer).
   */
  listCalls(filter: TwilioCallFilter, opts?: { maxPages?: number; pageSize?: number }): Promise<TwilioCall[]>;
  /**
   * Starts recording a live call (`POST …/Calls/{Sid}/Recordings.json`); the recording
   * status callback says when its file is ready. Answers the recording's sid.
   */
  startRecording(callSid: string, opts: { statusCallback: string }): Promise<string>;
  /** Sends an SMS (201 `queued`). A refusal (e.g. 30034, an unregistered US sender) is a CarrierRequestError. */
  createMessage(params: TwilioCreateMessage): Promise<TwilioMessage>;
  /**
   * Messages from `From` to `To` (newest first), those sent on or after the UTC day of
   * `SentOnOrAfter` (`DateSent>=YYYY-MM-DD`), following `next_page_uri` (at most
   * `maxPages` pages; more is an error rather than a partial answer).
   */
  listMessages(filter: { To: string; From: string; SentOnOrAfter: string }, opts?: { maxPages?: number; pageSize?: number }): Promise<TwilioMessage[]>;
  fetchMessage(sid: string): Promise<TwilioMessage>;
}

export function createTwilioRest(opts: TwilioRestOptions): TwilioRest {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_CARRIER_TIMEOUT_MS;
  const authorization = 'Basic ' + Buffer.from(`${opts.accountSid}:${opts.authToken}`).toString('base64');
  const accountPath = `/2010-04-01/Accounts/${encodeURIComponent(opts.accountSid)}`;

  // `path` is relative to the account (starts with a slash); GET/DELETE params go in the query.
  async function request(method: 'GET' | 'POST' | 'DELETE', path: string, params: TwilioForm = {}, timeout = timeoutMs): Promise<unknown> {
    const encoded = encodeForm(params);
    const hasBody = method === 'POST';
    const query = !hasBody && encoded ? `?${encoded}` : '';
    return send(method, accountPath + path + query, hasBody ? encoded : undefined, timeout);
  }

  // `rootPath` starts at the host root (/2010-04-01/…), as the carrier's *_uri members do.
  async function send(method: 'GET' | 'POST' | 'DELETE', rootPath: string, body: string | undefined, timeout: number): Promise<unknown> {
    const hasBody = body !== undefined;
    return carrierFetch({
      carrier: 'twilio',
      method,
      url: joinUrl(opts.baseUrl, rootPath),
      headers: {
        authorization,
        accept: 'application/json',
        ...(hasBody ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(hasBody ? { body } : {}),
      timeoutMs: timeout,
      describeError,
    });
  }

  return {
    accountSid: opts.accountSid,

    async findIncomingNumber(e164) {
      const page = await request('GET', '/IncomingPhoneNumbers.json', { PhoneNumber: e164 });
      const items = (page as { incoming_phone_numbers?: unknown } | null)?.incoming_phone_numbers;
      if (!Array.isArray(items)) {
        throw new CarrierUnreachableError('twilio', 'twilio number list has no incoming_phone_numbers array', 200);
      }
      // PhoneNumber is a partial-match filter at the carrier; only an exact match counts.
      const match = items.find((n): n is TwilioIncomingNumber => isIncomingNumber(n) && n.phone_number === e164);
      return match ?? null;
    },

    async updateIncomingNumber(numberSid, update) {
      const body = await request('POST', `/IncomingPhoneNumbers/${encodeURIComponent(numberSid)}.json`, {
        VoiceUrl: update.voiceUrl,
        VoiceMethod: 'POST',
        SmsUrl: update.smsUrl,
        SmsMethod: 'POST',
        StatusCallback: update.statusCallback,
      });
      if (!isIncomingNumber(body)) throw new CarrierUnreachableError('twilio', 'twilio number update answered without a resource', 200);
      return body;
    },

    async createCall(params, callOpts = {}) {
      const body = await request('POST', '/Calls.json', {
        To: params.To,
        From: params.From,
        Url: params.Url,
        StatusCallback: params.StatusCallback,
        StatusCallbackEvent: params.StatusCallbackEvent,
        MachineDetection: params.MachineDetection,
        AsyncAmd: params.AsyncAmd === undefined ? undefined : String(params.AsyncAmd),
        AsyncAmdStatusCallback: params.AsyncAmdStatusCallback,
        TimeLimit: String(params.TimeLimit),
        Timeout: params.Timeout === undefined ? undefined : String(params.Timeout),
      }, callOpts.timeoutMs ?? timeoutMs);
      return asCall(body, 'call creation');
    },

    async updateCall(callSid: string, update: { Status: 'completed' | 'canceled' } | { Twiml: string }) {
      const body = await request('POST', `/Calls/${encodeURIComponent(callSid)}.json`, 'Twiml' in update ? { Twiml: update.Twiml } : { Status: update.Status });
      return asCall(body, 'call update');
    },

    async startRecording(callSid, recOpts) {
      const body = await request('POST', `/Calls/${encodeURIComponent(callSid)}/Recordings.json`, {
        RecordingStatusCallback: recOpts.statusCallback,
        RecordingStatusCallbackMethod: 'POST',
        RecordingStatusCallbackEvent: 'completed',
        RecordingChannels: 'mono',
      });
      const sid = (body as { sid?: unknown } | null)?.sid;
      if (typeof sid !== 'string') throw new CarrierUnreachableError('twilio', 'twilio recording start answered without a sid', 200);
      return sid;
    },

    async createMessage(params) {
      const body = await request('POST', '/Messages.json', { To: params.To, From: params.From, Body: params.Body, StatusCallback: params.StatusCallback });
      return asMessage(body, 'message creation');
    },

    async fetchMessage(sid) {
      return asMessage(await request('GET', `/Messages/${encodeURIComponent(sid)}.json`), 'message fetch');
    },

    async listMessages(filter, listOpts = {}) {
      const maxPages = listOpts.maxPages ?? 5;
      const query = encodeForm({ To: filter.To, From: filter.From, 'DateSent>': filter.SentOnOrAfter, PageSize: String(listOpts.pageSize ?? 1000) });
      const messages: TwilioMessage[] = [];
      let next: string | null = `${accountPath}/Messages.json?${query}`;
      for (let page = 0; next !== null; page++) {
        if (page === maxPages) throw new CarrierUnreachableError('twilio', `twilio message list has more than ${maxPages} pages; refusing a partial answer`, 200);
        const body = (await send('GET', next, undefined, timeoutMs)) as { messages?: unknown; next_page_uri?: unknown } | null;
        if (!Array.isArray(body?.messages)) throw new CarrierUnreachableError('twilio', 'twilio message list has no messages array', 200);
        for (const m of body.messages) messages.push(asMessage(m, 'message list'));
        const uri = body.next_page_uri;
        next = typeof uri === 'string' && uri.startsWith(`${accountPath}/Messages.json?`) ? uri : null;
      }
      return messages;
    },

    async fetchCall(callSid) {
      return asCall(await request('GET', `/Calls/${encodeURIComponent(callSid)}.json`), 'call fetch');
    },

    async listCalls(filter, listOpts = {}) {
      const maxPages = listOpts.maxPages ?? 10;
      const query = encodeForm({
        To: filter.To,
        From: filter.From,
        Status: filter.Status,
        ParentCallSid: filter.ParentCallSid,
        // The carrier's inequality filters are the parameter name plus `>`/`<`: `StartTime>=…`.
        'StartTime>': filter.StartedOnOrAfter,
        PageSize: String(listOpts.pageSize ?? 1000),
      });
      const calls: TwilioCall[] = [];
      let next: string | null = `${accountPath}/Calls.json?${query}`;
      for (let page = 0; next !== null; page++) {
        if (page === maxPages) {
          throw new CarrierUnreachableError('twilio', `twilio call list has more than ${maxPages} pages; refusing a partial answer`, 200);
        }
        const body = (await send('GET', next, undefined, timeoutMs)) as { calls?: unknown; next_page_uri?: unknown } | null;
        if (!Array.isArray(body?.calls)) throw new CarrierUnreachableError('twilio', 'twilio call list has no calls array', 200);
        for (const c of body.calls) calls.push(asCall(c, 'call list'));
        const uri = body.next_page_uri;
        // Only pages of this account's list are followed, whatever the answer says.
        next = typeof uri === 'string' && uri.startsWith(`${accountPath}/Calls.json?`) ? uri : null;
      }
      return calls;
    },
  };
}

function encodeForm(params: TwilioForm): string {
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (typeof value === 'string') form.append(key, value);
    else for (const v of value) form.append(key, v);
  }
  return form.toString();
}

function describeError(body: unknown): { code: number | string | null; message: string | null } {
  if (typeof body !== 'object' || body === null) return { code: null, message: null };
  const { code, message } = body as { code?: unknown; message?: unknown };
  return {
    code: typeof code === 'number' || typeof code === 'string' ? code : null,
    message: typeof message === 'string' ? message : null,
  };
}

function asCall(body: unknown, what: string): TwilioCall {
  const v = body as { sid?: unknown; status?: unknown } | null;
  if (typeof v !== 'object' || v === null || typeof v.sid !== 'string' || typeof v.status !== 'string') {
    throw new CarrierUnreachableError('twilio', `twilio ${what} answered without a call resource`, 200);
  }
  return body as TwilioCall;
}

function asMessage(body: unknown, what: string): TwilioMessage {
  const v = body as { sid?: unknown; status?: unknown } | null;
  if (typeof v !== 'object' || v === null || typeof v.sid !== 'string' || typeof v.status !== 'string') {
    throw new CarrierUnreachableError('twilio', `twilio ${what} answered without a message resource`, 200);
  }
  return body as TwilioMessage;
}

function isIncomingNumber(value: unknown): value is TwilioIncomingNumber {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { sid?: unknown; phone_number?: unknown };
  return typeof v.sid === 'string' && typeof v.phone_number === 'string';
}
