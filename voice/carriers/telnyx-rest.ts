// Carrier B (Telnyx) REST client, API v2 (carriers.md §5): Bearer API key, JSON
// bodies, answers wrapped in {data}, errors {errors:[{code,title,detail}]}.
// `baseUrl` is the host root, e.g. https://api.telnyx.com (TELNYX_API_BASE), and
// paths start with /v2/. A base that already ends in /v2 (the form the carrier's
// docs print) is accepted too, so either reading of the setting works.
// Numbers and webhooks come first; calls and messages are further methods over `request`.

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

export interface TelnyxRest {
  /** The account's number with exactly this E.164 value, or null when the account has none. */
  findNumber(e164: string): Promise<TelnyxNumber | null>;
  /** Routes the number's calls to a Call Control application (its "connection"). */
  setNumberConnection(numberId: string, connectionId: string): Promise<TelnyxNumber>;
  /** Sends the application's call events to `url`, in the v2 envelope. */
  setCallControlWebhook(connectionId: string, url: string): Promise<void>;
  /** Sends the messaging profile's SMS events to `url`, in the v2 envelope. */
  setMessagingWebhook(messagingProfileId: string, url: string): Promise<void>;
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
  };
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
