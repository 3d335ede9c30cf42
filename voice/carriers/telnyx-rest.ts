// Carrier B (Telnyx) REST client, API v2 (carriers.md §5): Bearer API key, JSON
// bodies, answers wrapped in {data}, errors {errors:[{code,title,detail}]}.
// `baseUrl` is the host root, e.g. https://api.telnyx.com (TELNYX_API_BASE), and
// paths start with /v2/. A base that already ends in /v2 (the form the carrier's
// docs print) is accepted too, so either reading of the setting works.
// Numbers and webhooks come first, then Call Control (dial, answer, reject, hang up,
// status); messages are further methods over `request`.

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

/** `GET /v2/calls/{id}`: the fields the service relies on, the rest as sent. */
export interface TelnyxCallStatus extends TelnyxCallIds {
  is_alive: boolean;
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
  /** Places an outbound call; events follow at `webhook_url`. */
  dial(params: TelnyxDialParams): Promise<TelnyxCallIds>;
  /** Answers an incoming call. */
  answer(callControlId: string, params: TelnyxAnswerParams): Promise<void>;
  /** Refuses an incoming call before it is answered. */
  reject(callControlId: string, cause: TelnyxRejectCause): Promise<void>;
  /** Ends the call. A call already over is a CarrierRequestError 422 code "90018". */
  hangup(callControlId: string, params: { command_id: string }): Promise<void>;
  /** The call's status; the carrier keeps it about 10 minutes after the end, then 404. */
  getCall(callControlId: string): Promise<TelnyxCallStatus>;
}

export function createTelnyxRest(opts: TelnyxRestOptions): TelnyxRest {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_CARRIER_TIMEOUT_MS;
  const root = opts.baseUrl.replace(/\/+$/, '').replace(/\/v2$/, '');
  const authorization = `Bearer ${opts.apiKey}`;

  // `path` starts with /v2/; resolves to the `data` member of the answer.
  async function request(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: object): Promise<unknown> {
    const answer = await carrierFetch({
      carrier: 'telnyx',
      method,
      url: joinUrl(root, path),
      headers: {
        authorization,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      timeoutMs,
      describeError,
    });
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

    async dial(params) {
      const data = await request('POST', '/v2/calls', params);
      if (!isCallIds(data)) throw new CarrierUnreachableError('telnyx', 'telnyx dial answered without call ids', 200);
      return { call_control_id: data.call_control_id, call_leg_id: data.call_leg_id, call_session_id: data.call_session_id };
    },

    answer: (id, params) => command(id, 'answer', params),
    reject: (id, cause) => command(id, 'reject', { cause }),
    hangup: (id, params) => command(id, 'hangup', params),

    async getCall(id) {
      const data = await fetchRecord(callPath(id));
      if (!isCallIds(data) || typeof data.is_alive !== 'boolean') {
        throw new CarrierUnreachableError('telnyx', 'telnyx call status answered without is_alive', 200);
      }
      return data as TelnyxCallStatus;
    },
  };
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
