// Carrier B (Telnyx) REST client, API v2 (carriers.md §5): Bearer API key, JSON
// bodies, answers wrapped in {data}, errors {errors:[{code,title,detail}]}.
// `baseUrl` is the host root, e.g. https://api.telnyx.com (TELNYX_API_BASE), and
// paths start with /v2/. A base that already ends in /v2 (the form the carrier's
// docs print) is accepted too, so either reading of the setting works.
// Numbers and webhooks come first, then Call Control (dial, answer, reject, hang up,
// status, a connection's active calls, a leg's event log), then messages (send, and
// the carrier's message detail records to reconcile a send whose answer was lost).

import { DEFAULT_CARRIER_TIMEOUT_MS, carrierFetch, joinUrl } from './carrier-http.ts';
import { CarrierUnreachableError } from './errors.ts';

export interface TelnyxRestOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs?: number;
}

/** A phone number record; the fields the service relies on, the rest as sent. */
export interface TelnyxNumber {
  id: string;
  phone_number: string;
  connection_id: string | null;
  messaging_profile_id: string | null;
  status: string;
  [field: string]: unknown;
}

/** `POST /v2/calls` (carriers.md §5): the fields this service sends. */
export interface TelnyxDialParams {
  /** The Call Control application that carries the call. */
  connection_id: string;
  to: string;
  from: string;
  /** Where this call's events go (instead of the application's webhook_event_url). */
  webhook_url: string;
  /** Base64; echoed in every event of the call. */
  client_state: string;
  /** The carrier ignores a second command with the same id (de-duplication). */
  command_id: string;
  /** Ring timeout (carrier default 30). */
  timeout_secs?: number;
  /** Hard cap on the call's length, enforced by the carrier. */
  time_limit_secs: number;
  stream_url: string;
  stream_track: TelnyxStreamTrack;
  stream_bidirectional_mode: 'rtp';
  stream_bidirectional_codec: 'PCMU';
  answering_machine_detection?: TelnyxAmdMode;
}

export type TelnyxStreamTrack = 'inbound_track' | 'outbound_track' | 'both_tracks';
export type TelnyxAmdMode = 'premium' | 'detect' | 'detect_beep' | 'detect_words' | 'greeting_end' | 'disabled';

/** The ids of a call; `call_control_id` is the one every command takes. */
export interface TelnyxCallIds {
  call_control_id: string;
  call_leg_id: string;
  call_session_id: string;
}

/** `actions/answer` with a bidirectional media stream. */
export interface TelnyxAnswerParams {
  stream_url: string;
  stream_track: TelnyxStreamTrack;
  stream_bidirectional_mode: 'rtp';
  stream_bidirectional_codec: 'PCMU';
  client_state: string;
  command_id: string;
}

export type TelnyxRejectCause = 'CALL_REJECTED' | 'USER_BUSY';

/** `actions/transfer`: hands the call to `to` (carrier default caller id when `from` is absent). */
export interface TelnyxTransferParams {
  to: string;
  from?: string;
  command_id: string;
  /** Seconds the new leg rings (carrier default 30). */
  timeout_secs?: number;
  /** Where the new leg's events go. */
  webhook_url?: string;
  /** Base64; echoed in the new leg's events (UNCONFIRMED whether the carrier also puts it on this leg's later events). */
  client_state?: string;
}

/** `POST /v2/calls` for a leg without a media stream (a warm transfer's target). */
export interface TelnyxLegParams {
  connection_id: string;
  to: string;
  from: string;
  webhook_url: string;
  client_state: string;
  command_id: string;
  timeout_secs: number;
  time_limit_secs?: number;
}

/** `actions/speak`: the carrier's text-to-speech on one leg only. */
export interface TelnyxSpeakParams {
  payload: string;
  /** `male`, `female` or a provider voice such as `Polly.Joanna`. */
  voice: string;
  language?: string;
  command_id: string;
}

/** `GET /v2/calls/{id}`: the fields the service relies on, the rest as sent. */
export interface TelnyxCallStatus extends TelnyxCallIds {
  is_alive: boolean;
  /** ISO 8601; null (or absent) while the call lasts. */
  end_time?: string | null;
  start_time?: string | null;
  /** Seconds since the call started (ringing included). */
  call_duration?: number | null;
  client_state?: string | null;
  [field: string]: unknown;
}

/** An item of `GET /v2/connections/{id}/active_calls`. */
export interface TelnyxActiveCall extends TelnyxCallIds {
  client_state: string | null;
  call_duration: number | null;
  record_type: string;
  [field: string]: unknown;
}

/**
 * An item of `GET /v2/call_events` (the carrier's "List call events", under Debugging):
 * the carrier's own log of a leg, one entry per webhook it sent (delivered or not) and
 * per command it took. developers.telnyx.com api-reference/debugging/list-call-events.
 */
export interface TelnyxCallEvent {
  call_leg_id: string;
  call_session_id?: string;
  /** ISO 8601: when it happened at the carrier. */
  event_timestamp: string;
  /** The webhook's event type (`call.answered`, `call.bridged`, …) or the command's name. */
  name: string;
  /** `webhook` or `command`. */
  type: string;
  [field: string]: unknown;
}

/** `POST /v2/messages` (carriers.md §5): the fields this service sends. */
export interface TelnyxSendMessage {
  from: string;
  to: string;
  text: string;
  /** message.sent / message.finalized go here instead of the messaging profile's URL. */
  webhook_url?: string;
}

/** A message detail record of `GET /v2/detail_records?filter[record_type]=messaging`: cli is the sender, cld the recipient. */
export interface TelnyxMessageRecord {
  uuid: string;
  cli: string;
  cld: string;
  direction?: string;
  status?: string;
  /** ISO 8601. */
  created_at: string;
  [field: string]: unknown;
}

export interface TelnyxRest {
  /** The account's number with exactly this E.164 value, or null when the account has none. */
  findNumber(e164: string): Promise<TelnyxNumber | null>;
  /** Routes the number's calls to a Call Control application (its "connection"). */
  setNumberConnection(numberId: string, connectionId: string): Promise<TelnyxNumber>;
  /** Sends the application's call events to `url`, in the v2 envelope. */
  setCallControlWebhook(connectionId: string, url: string): Promise<void>;
  /** Sends the messaging profile's SMS events to `url`, in the v2 envelope. */
  setMessagingWebhook(messagingProfileId: string, url: string): Promise<void>;
  /** Places an outbound call; events follow at `webhook_url`. `timeoutMs` overrides the client's for this request. */
  dial(params: TelnyxDialParams, opts?: { timeoutMs?: number }): Promise<TelnyxCallIds>;
  /** Answers an incoming call. */
  answer(callControlId: string, params: TelnyxAnswerParams): Promise<void>;
  /** Refuses an incoming call before it is answered. */
  reject(callControlId: string, cause: TelnyxRejectCause): Promise<void>;
  /** Hands the call to another number; this service has no part in it afterwards. */
  transfer(callControlId: string, params: TelnyxTransferParams): Promise<void>;
  /** Places a leg without a media stream (a warm transfer's target); events follow at `webhook_url`. */
  dialLeg(params: TelnyxLegParams): Promise<TelnyxCallIds>;
  /** Speaks on one leg; call.speak.started / call.speak.ended follow. */
  speak(callControlId: string, params: TelnyxSpeakParams): Promise<void>;
  /** Joins two live legs; call.bridged follows on each. */
  bridge(callControlId: string, params: { call_control_id: string; command_id: string }): Promise<void>;
  /** Starts the carrier's recording of the call; `call.recording.saved` follows after it ends, with the file's URLs. */
  recordStart(callControlId: string, params: { format: 'mp3' | 'wav'; channels: 'single' | 'dual'; command_id: string }): Promise<void>;
  /** Stops the call's media stream; the call goes on. */
  streamingStop(callControlId: string, params: { command_id: string }): Promise<void>;
  /** Ends the call. A call already over is a CarrierRequestError 422 code "90018". */
  hangup(callControlId: string, params: { command_id: string }): Promise<void>;
  /** The call's status; the carrier keeps it about 10 minutes after the end, then 404. */
  getCall(callControlId: string): Promise<TelnyxCallStatus>;
  /**
   * The live calls of a Call Control application (cursor-paged; every page is read, at
   * most `maxPages` of `pageSize` (default 20 of 250): more is an error rather than a
   * partial answer).
   */
  listActiveCalls(connectionId: string, opts?: { maxPages?: number; pageSize?: number }): Promise<TelnyxActiveCall[]>;
  /**
   * The carrier's log of one leg (`filter[leg_id]`: its call_leg_id), optionally of one
   * event `name`, oldest first: what happened on it even when its webhooks were lost (a
   * restart). Every page is read, at most `maxPages` (default 10) of `pageSize` (default
   * 250): more is an error rather than a partial answer. Only entries of that leg (and
   * name) are returned, whatever the carrier's filter did.
   */
  listCallEvents(callLegId: string, opts?: { name?: string; maxPages?: number; pageSize?: number }): Promise<TelnyxCallEvent[]>;
  /** Sends an SMS; answers the message's id. A refusal (e.g. "40010", a sender not registered for 10DLC) is a CarrierRequestError. */
  sendMessage(params: TelnyxSendMessage): Promise<{ id: string }>;
  /** One message as the carrier has it now: `to[0].status` and `errors` say how its delivery went. */
  getMessage(id: string): Promise<{ id: string; to?: { status?: unknown }[]; errors?: { code?: unknown; title?: unknown; detail?: unknown }[] }>;
  /**
   * The carrier's records of outbound messages from `cli` to `cld` created at or after
   * `since` (ISO 8601): every page, at most `maxPages` (default 5) of `pageSize` (default
   * 100); only records of that pair are returned, whatever the carrier's filter did.
   */
  listMessageRecords(filter: { cli: string; cld: string; since: string }, opts?: { maxPages?: number; pageSize?: number }): Promise<TelnyxMessageRecord[]>;
}

export function createTelnyxRest(opts: TelnyxRestOptions): TelnyxRest {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_CARRIER_TIMEOUT_MS;
  const root = opts.baseUrl.replace(/\/+$/, '').replace(/\/v2$/, '');
  const authorization = `Bearer ${opts.apiKey}`;

  // `path` starts with /v2/; resolves to the `data` member of the answer.
  async function request(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: object, timeout = timeoutMs): Promise<unknown> {
    return dataOf(method, path, await fetchAnswer(method, path, body, timeout));
  }

  async function fetchAnswer(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body: object | undefined, timeout: number): Promise<unknown> {
    return carrierFetch({
      carrier: 'telnyx',
      method,
      url: joinUrl(root, path),
      headers: {
        authorization,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      timeoutMs: timeout,
      describeError,
    });
  }

  function dataOf(method: string, path: string, answer: unknown): unknown {
    if (answer === null) return null;
    if (typeof answer !== 'object' || !('data' in answer)) {
      throw new CarrierUnreachableError('telnyx', `telnyx ${method} ${path.split('?')[0]} answered without data`, 200);
    }
    return answer.data;
  }

  async function fetchRecord(path: string): Promise<Record<string, unknown>> {
    const data = await request('GET', path);
    if (typeof data !== 'object' || data === null) {
      throw new CarrierUnreachableError('telnyx', `telnyx GET ${path} answered without a record`, 200);
    }
    return data as Record<string, unknown>;
  }

  const callPath = (id: string) => `/v2/calls/${encodeURIComponent(id)}`;

  // Commands answer {data:{result:"ok"}}; nothing else in the answer is needed.
  async function command(id: string, action: string, body: object): Promise<void> {
    await request('POST', `${callPath(id)}/actions/${action}`, body);
  }

  return {
    async findNumber(e164) {
      // The filter takes digits only ("non-numerical characters return nothing") and
      // matches partially, so the exact number is picked from what comes back.
      const digits = e164.replace(/\D/g, '');
      const query = new URLSearchParams({ 'filter[phone_number]': digits, 'page[size]': '250' });
      const data = await request('GET', `/v2/phone_numbers?${query.toString()}`);
      if (!Array.isArray(data)) {
        throw new CarrierUnreachableError('telnyx', 'telnyx number list answered without a data array', 200);
      }
      const match = data.find((n): n is TelnyxNumber => isTelnyxNumber(n) && n.phone_number === e164);
      return match ?? null;
    },

    async setNumberConnection(numberId, connectionId) {
      const data = await request('PATCH', `/v2/phone_numbers/${encodeURIComponent(numberId)}`, {
        connection_id: connectionId,
      });
      if (!isTelnyxNumber(data)) {
        throw new CarrierUnreachableError('telnyx', 'telnyx number update answered without a number', 200);
      }
      return data;
    },

    async setCallControlWebhook(connectionId, url) {
      // The carrier's OpenAPI marks application_name and webhook_event_url as required
      // on this PATCH, so the current name is read and sent back unchanged.
      const path = `/v2/call_control_applications/${encodeURIComponent(connectionId)}`;
      const app = await fetchRecord(path);
      const name = typeof app.application_name === 'string' ? app.application_name : undefined;
      await request('PATCH', path, {
        ...(name === undefined ? {} : { application_name: name }),
        webhook_event_url: url,
        webhook_api_version: '2',
      });
    },

    async setMessagingWebhook(messagingProfileId, url) {
      await request('PATCH', `/v2/messaging_profiles/${encodeURIComponent(messagingProfileId)}`, {
        webhook_url: url,
        webhook_api_version: '2',
      });
    },

    async dial(params, dialOpts = {}) {
      const data = await request('POST', '/v2/calls', params, dialOpts.timeoutMs ?? timeoutMs);
      if (!isCallIds(data)) throw new CarrierUnreachableError('telnyx', 'telnyx dial answered without call ids', 200);
      return { call_control_id: data.call_control_id, call_leg_id: data.call_leg_id, call_session_id: data.call_session_id };
    },

    answer: (id, params) => command(id, 'answer', params),
    reject: (id, cause) => command(id, 'reject', { cause }),
    transfer: (id, params) => command(id, 'transfer', params),
    recordStart: (id, params) => command(id, 'record_start', params),
    async dialLeg(params) {
      const data = await request('POST', '/v2/calls', params);
      if (!isCallIds(data)) throw new CarrierUnreachableError('telnyx', 'telnyx dial answered without call ids', 200);
      return { call_control_id: data.call_control_id, call_leg_id: data.call_leg_id, call_session_id: data.call_session_id };
    },
    speak: (id, params) => command(id, 'speak', params),
    bridge: (id, params) => command(id, 'bridge', params),
    streamingStop: (id, params) => command(id, 'streaming_stop', params),
    hangup: (id, params) => command(id, 'hangup', params),

    async getCall(id) {
      const data = await fetchRecord(callPath(id));
      if (!isCallIds(data) || typeof data.is_alive !== 'boolean') {
        throw new CarrierUnreachableError('telnyx', 'telnyx call status answered without is_alive', 200);
      }
      return data as TelnyxCallStatus;
    },

    async listActiveCalls(connectionId, listOpts = {}) {
      const maxPages = listOpts.maxPages ?? 20;
      const base = `/v2/connections/${encodeURIComponent(connectionId)}/active_calls`;
      const calls: TelnyxActiveCall[] = [];
      let after: string | null = null;
      for (let page = 0; ; page++) {
        if (page === maxPages) {
          throw new CarrierUnreachableError('telnyx', `telnyx active calls have more than ${maxPages} pages; refusing a partial answer`, 200);
        }
        const query = new URLSearchParams({ 'page[limit]': String(listOpts.pageSize ?? 250), ...(after === null ? {} : { 'page[after]': after }) });
        const path = `${base}?${query.toString()}`;
        const answer = (await fetchAnswer('GET', path, undefined, timeoutMs)) as { meta?: { cursors?: { after?: unknown }; next?: unknown } } | null;
        const data = dataOf('GET', path, answer);
        if (!Array.isArray(data)) throw new CarrierUnreachableError('telnyx', 'telnyx active calls answered without a data array', 200);
        for (const item of data) {
          if (!isCallIds(item)) throw new CarrierUnreachableError('telnyx', 'telnyx active call without call ids', 200);
          calls.push({ client_state: null, call_duration: null, record_type: 'call', ...item } as TelnyxActiveCall);
        }
        // A further page exists when the answer links one (`meta.next`) and names its cursor.
        const cursor = answer?.meta?.cursors?.after;
        if (data.length === 0 || typeof answer?.meta?.next !== 'string' || typeof cursor !== 'string' || cursor === '' || cursor === after) break;
        after = cursor;
      }
      return calls;
    },

    async listCallEvents(callLegId, listOpts = {}) {
      const maxPages = listOpts.maxPages ?? 10;
      const pageSize = listOpts.pageSize ?? 250;
      const events: TelnyxCallEvent[] = [];
      for (let page = 1; ; page++) {
        if (page > maxPages) {
          throw new CarrierUnreachableError('telnyx', `telnyx call events have more than ${maxPages} pages; refusing a partial answer`, 200);
        }
        const query = new URLSearchParams({
          'filter[leg_id]': callLegId,
          ...(listOpts.name === undefined ? {} : { 'filter[name]': listOpts.name }),
          'page[number]': String(page),
          'page[size]': String(pageSize),
        });
        const path = `/v2/call_events?${query.toString()}`;
        const answer = (await fetchAnswer('GET', path, undefined, timeoutMs)) as { meta?: { total_pages?: unknown } } | null;
        const data = dataOf('GET', path, answer);
        if (!Array.isArray(data)) throw new CarrierUnreachableError('telnyx', 'telnyx call events answered without a data array', 200);
        for (const item of data) {
          if (!isCallEvent(item)) throw new CarrierUnreachableError('telnyx', 'telnyx call event without a leg, name or time', 200);
          if (item.call_leg_id === callLegId && (listOpts.name === undefined || item.name === listOpts.name)) events.push(item);
        }
        const totalPages = answer?.meta?.total_pages;
        if (data.length < pageSize || typeof totalPages !== 'number' || page >= totalPages) break;
      }
      return events.sort((a, b) => Date.parse(a.event_timestamp) - Date.parse(b.event_timestamp));
    },

    async sendMessage(params) {
      const data = await request('POST', '/v2/messages', params);
      const id = (data as { id?: unknown } | null)?.id;
      if (typeof id !== 'string' || id === '') throw new CarrierUnreachableError('telnyx', 'telnyx message send answered without an id', 200);
      return { id };
    },

    async getMessage(id) {
      const data = await fetchRecord(`/v2/messages/${encodeURIComponent(id)}`);
      if (typeof data.id !== 'string') throw new CarrierUnreachableError('telnyx', 'telnyx message answered without an id', 200);
      return data as { id: string };
    },

    async listMessageRecords(filter, listOpts = {}) {
      const maxPages = listOpts.maxPages ?? 5;
      const pageSize = listOpts.pageSize ?? 100;
      const records: TelnyxMessageRecord[] = [];
      for (let page = 1; ; page++) {
        if (page > maxPages) throw new CarrierUnreachableError('telnyx', `telnyx message records have more than ${maxPages} pages; refusing a partial answer`, 200);
        const query = new URLSearchParams({
          'filter[record_type]': 'messaging',
          'filter[direction]': 'outbound',
          'filter[cli]': filter.cli,
          'filter[cld]': filter.cld,
          'filter[created_at][gte]': filter.since,
          'page[number]': String(page),
          'page[size]': String(pageSize),
          sort: '-created_at',
        });
        const path = `/v2/detail_records?${query.toString()}`;
        const answer = (await fetchAnswer('GET', path, undefined, timeoutMs)) as { meta?: { total_pages?: unknown } } | null;
        const data = dataOf('GET', path, answer);
        if (!Array.isArray(data)) throw new CarrierUnreachableError('telnyx', 'telnyx message records answered without a data array', 200);
        for (const item of data) {
          const r = item as Partial<TelnyxMessageRecord> | null;
          if (typeof r?.uuid !== 'string' || typeof r.cli !== 'string' || typeof r.cld !== 'string' || typeof r.created_at !== 'string') {
            throw new CarrierUnreachableError('telnyx', 'telnyx message record without an id, numbers or time', 200);
          }
          if (r.cli === filter.cli && r.cld === filter.cld) records.push(r as TelnyxMessageRecord);
        }
        const totalPages = answer?.meta?.total_pages;
        if (data.length < pageSize || typeof totalPages !== 'number' || page >= totalPages) break;
      }
      return records;
    },
  };
}

function isCallEvent(value: unknown): value is TelnyxCallEvent {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.call_leg_id === 'string' && typeof v.name === 'string' && typeof v.event_timestamp === 'string' && typeof v.type === 'string';
}

function isCallIds(value: unknown): value is TelnyxCallIds & Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.call_control_id === 'string' && v.call_control_id !== '' && typeof v.call_leg_id === 'string' && typeof v.call_session_id === 'string';
}

function describeError(body: unknown): { code: string | null; message: string | null } {
  const errors = typeof body === 'object' && body !== null ? (body as { errors?: unknown }).errors : undefined;
  const first: unknown = Array.isArray(errors) ? errors[0] : undefined;
  if (typeof first !== 'object' || first === null) return { code: null, message: null };
  const { code, title, detail } = first as { code?: unknown; title?: unknown; detail?: unknown };
  const parts = [title, detail].filter((p): p is string => typeof p === 'string' && p !== '');
  return {
    code: typeof code === 'string' ? code : typeof code === 'number' ? String(code) : null,
    message: parts.length > 0 ? parts.join(': ') : null,
  };
}

function isTelnyxNumber(value: unknown): value is TelnyxNumber {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { id?: unknown; phone_number?: unknown };
  return typeof v.id === 'string' && typeof v.phone_number === 'string';
}
