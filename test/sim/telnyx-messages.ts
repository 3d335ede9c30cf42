// Carrier B's (Telnyx) Messaging API v2 in the simulator (carriers.md §5): `POST /v2/messages`
// sends an SMS from a number of the API key's account that has a messaging profile;
// an accepted message moves on in the background, each step a signed v2 event
// (`telnyx-signature-ed25519`, as the call webhooks) to the send's `webhook_url`, else to
// the number's messaging profile `webhook_url` (set by `PATCH /v2/messaging_profiles/{id}`):
// `message.sent` (to[0].status `sent`), then `message.finalized` with the outcome the test
// chose for the recipient (`outcome(to, …)`, default `delivered`); a `sending_failed`
// message is never `sent`, so it gets `message.finalized` only. Events are delivered once,
// not retried. `GET /v2/messages/{id}` fetches one; `GET /v2/detail_records` with
// `filter[record_type]=messaging` lists message detail records (MDRs) for reconciliation;
// `PATCH /v2/phone_numbers/{id}/messaging` moves a number to a messaging profile.
// `receive` is a text from the far end: `message.received` to the profile's webhook_url.
//
// Refusals of a send, `{errors:[{code,title,detail,source:{pointer}}]}` with HTTP 400 (the
// status the carrier documents for 40310; the other messaging request errors are taken to
// match): 40310 `to` missing or not one E.164 number; 40305 `from` not a number of this
// account with a messaging profile; 40316 no `text`; 40302 `text` over 1600 characters;
// 10003 `webhook_url` not a URL; 40010 `from` marked `unregistered` (US 10DLC). The carrier
// documents 40010 as a delivery error (on message.finalized) more than as a refusal; a test
// wanting that reading uses `outcome(to, 'delivery_failed', '40010')` instead.
//
// MDR `status` is the MDR enum (delivered, failed, gw_reject, dlr_unconfirmed, received);
// while a message is still in flight it shows the message's own status (`queued`, `sent`),
// which that enum lacks: how the carrier shows an MDR that early is UNCONFIRMED (it may
// list none yet). `sent()` is what "sent exactly once" is judged by, as in twilio-messages.ts.

import { randomUUID } from 'node:crypto';
import { signTelnyx } from '../../voice/carriers/telnyx-signature.ts';
import type { SimClock, SimResponse } from './sim-http.ts';
import { E164, MAX_SMS_CHARS, simSleep, smsParts, type SimSentMessage } from './sms-common.ts';
import { telnyxError, TELNYX_ENDPOINTS, type TelnyxRecord, type TelnyxRoute, type TelnyxSimRequest, type TelnyxState } from './telnyx-sim.ts';

export type TelnyxMessageStatus = 'queued' | 'sent' | 'delivered' | 'delivery_failed' | 'sending_failed' | 'delivery_unconfirmed' | 'webhook_delivered';
/** What becomes of messages to a number. */
export type TelnyxMessageOutcome = 'delivered' | 'delivery_failed' | 'sending_failed' | 'delivery_unconfirmed';
export interface TelnyxMessageError {
  code: string;
  title: string;
  detail: string;
}

/** One message event the sim sent, with the answer it got. */
export interface TelnyxMessageWebhook {
  eventType: string;
  messageId: string;
  url: string;
  /** The exact bytes sent. */
  body: string;
  payload: Record<string, unknown>;
  headers: Record<string, string>;
  status: number | null;
  error: string | null;
}

/** One message as the simulated carrier keeps it (live: status and times move on). */
export interface TelnyxSimMessage extends SimSentMessage {
  readonly apiKey: string;
  readonly direction: 'outbound' | 'inbound';
  /** to[0].status. */
  readonly status: TelnyxMessageStatus;
  readonly createdAt: number;
  readonly sentAt: number | null;
  readonly completedAt: number | null;
  readonly profileId: string | null;
  /** The send's own webhook_url; null: the profile's, looked up at each event. */
  readonly webhookUrl: string | null;
  readonly errors: TelnyxMessageError[];
  readonly webhooks: TelnyxMessageWebhook[];
  /** Resolves with the final status once message.finalized (if it had a URL) was answered. */
  readonly done: Promise<TelnyxMessageStatus>;
}

export interface TelnyxMessagesOptions {
  /** Milliseconds between a message's steps (queued → sent → finalized). Default 20. */
  messageStepMs?: number;
}

type Live = { -readonly [K in keyof TelnyxSimMessage]: TelnyxSimMessage[K] } & { resolveDone(status: TelnyxMessageStatus): void };

const ERRORS: Record<string, { title: string; detail: string }> = {
  '40002': { title: 'Blocked as spam - temporary', detail: 'The message was blocked by a carrier spam filter.' },
  '40003': { title: 'Blocked as spam - permanent', detail: 'The sending number is permanently blocked by the carrier.' },
  '40006': { title: 'Recipient server unavailable', detail: "The recipient's carrier is unavailable." },
  '40008': { title: 'Undeliverable', detail: 'The carrier did not accept the message.' },
  '40010': { title: 'Not 10DLC registered', detail: 'The sending number is not 10DLC-registered but is required to be by the carrier.' },
};
const DEFAULT_CODE: Record<TelnyxMessageOutcome, string | null> = { delivered: null, delivery_failed: '40008', sending_failed: '40002', delivery_unconfirmed: null };
const MDR_STATUS: Partial<Record<TelnyxMessageStatus, string>> = {
  delivered: 'delivered',
  delivery_failed: 'failed',
  sending_failed: 'gw_reject',
  delivery_unconfirmed: 'dlr_unconfirmed',
  webhook_delivered: 'received',
};

const refuse = (code: string, title: string, detail: string, pointer: string) => telnyxError(400, code, title, detail, pointer);

export class TelnyxMessages {
  /** Every message, outbound and inbound, by id. */
  readonly messages = new Map<string, TelnyxSimMessage>();
  /** Every message event sent, in order. */
  readonly webhooks: TelnyxMessageWebhook[] = [];
  /** Background failures: undeliverable events, sim bugs. */
  readonly errors: string[] = [];
  /** Milliseconds between a message's steps; a test may change it. */
  stepMs: number;
  /** How long a message stays out of the detail records after it was created, as the carrier's records lag (0: at once). */
  listLagMs = 0;
  /** The REST requests the sim received (set once it listens). */
  requestLog: TelnyxSimRequest[] = [];
  private readonly closing = new AbortController();
  private readonly redirects: [URL, URL][] = [];
  private readonly outcomes = new Map<string, { status: TelnyxMessageOutcome; code: string | null }>();
  private readonly unregisteredFrom = new Set<string>();

  constructor(
    private readonly state: TelnyxState,
    private readonly clock: SimClock,
    opts: TelnyxMessagesOptions = {},
  ) {
    this.stepMs = opts.messageStepMs ?? 20;
  }

  /** Messages to `to` from now on end `status` (default `delivered`; codes 40008 delivery_failed, 40002 sending_failed). */
  outcome(to: string, status: TelnyxMessageOutcome, code?: string): void {
    this.outcomes.set(to, { status, code: code ?? DEFAULT_CODE[status] });
  }

  /** Sends from `from` are refused with 40010 (not 10DLC registered); `false` lifts it. */
  unregistered(from: string, on = true): void {
    if (on) this.unregisteredFrom.add(from);
    else this.unregisteredFrom.delete(from);
  }

  /** Outbound messages accepted (to `to` when given), in order. */
  sent(to?: string): TelnyxSimMessage[] {
    return [...this.messages.values()].filter((m) => m.direction === 'outbound' && (to === undefined || m.to === to));
  }

  sentTo(to: string): number {
    return this.sent(to).length;
  }

  /** Every `POST /v2/messages` received (to `to` when given): accepted, refused or met by a fault (`fault`). */
  requests(to?: string): TelnyxSimRequest[] {
    return this.requestLog.filter((r) => TELNYX_ENDPOINTS.message(r) && (to === undefined || toOf(r.body) === to));
  }

  /** Delivers events for URLs on `publicBase`'s host to `actualBase` (payloads keep the original URLs). */
  redirect(publicBase: string, actualBase: string): void {
    this.redirects.unshift([new URL(publicBase), new URL(actualBase)]);
  }

  /**
   * A text from `from` to one of the sim's numbers: `message.received` to its messaging
   * profile's webhook_url. Resolves with the service's answer (status null and `error` when it failed).
   */
  async receive(opts: { from: string; to: string; body: string }): Promise<{ sid: string; status: number | null; body: string; error: string | null }> {
    const number = [...this.state.numbers.values()].find((n) => n.phone_number === opts.to);
    const apiKey = number && [...this.state.apiKeys].find((k) => this.state.owns(k, number));
    if (!number || !apiKey) throw new Error(`telnyx sim: no number ${opts.to}`);
    const profileId = typeof number.messaging_profile_id === 'string' ? number.messaging_profile_id : null;
    const url = this.profileWebhook(profileId);
    if (!url) throw new Error(`telnyx sim: number ${opts.to} has no messaging profile with a webhook_url`);
    const m = this.newMessage({ apiKey, direction: 'inbound', from: opts.from, to: opts.to, body: opts.body, profileId, webhookUrl: null });
    m.status = 'webhook_delivered';
    m.resolveDone(m.status);
    const hook = await this.deliver(m, 'message.received', url);
    return { sid: m.sid, status: hook.status, body: hook.body, error: hook.error };
  }

  routes(): TelnyxRoute[] {
    return [
      { method: 'POST', pattern: /^\/v2\/messages$/, handle: ({ req, apiKey }) => this.create(apiKey, req.body) },
      {
        method: 'GET',
        pattern: /^\/v2\/messages\/([^/]+)$/,
        handle: ({ apiKey, params }) => {
          const m = this.messages.get(decodeURIComponent(params[0] ?? ''));
          return m && this.state.sameAccount(m.apiKey, apiKey) ? { status: 200, body: { data: renderMessage(m) } } : notFound();
        },
      },
      { method: 'GET', pattern: /^\/v2\/detail_records$/, handle: ({ req, apiKey }) => this.detailRecords(apiKey, req) },
      {
        method: 'PATCH',
        pattern: /^\/v2\/phone_numbers\/([^/]+)\/messaging$/,
        handle: ({ req, apiKey, params }) => this.moveToProfile(apiKey, decodeURIComponent(params[0] ?? ''), req.body),
      },
    ];
  }

  /** Stops every message where it is: no further events. */
  async close(): Promise<void> {
    this.closing.abort();
  }

  private create(apiKey: string, body: unknown): SimResponse {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return telnyxError(400, '10015', 'Bad Request', 'The request failed because it was not well-formed.');
    }
    const b = body as Record<string, unknown>;
    const to = toOf(b);
    if (to === undefined || !E164.test(to)) return refuse('40310', "Invalid 'to' address", "The 'to' address should be a single valid number.", '/to');
    const from = this.fromNumber(apiKey, b);
    if (!from) {
      return refuse('40305', "Invalid 'from' address", "The 'from' address should be a number of your account assigned to a messaging profile.", '/from');
    }
    const text = b.text;
    if (typeof text !== 'string' || text === '') return refuse('40316', 'No content provided', "The message must have 'text' or 'media_urls'.", '/text');
    if ([...text].length > MAX_SMS_CHARS) return refuse('40302', 'Message too large', `The text is longer than ${MAX_SMS_CHARS} characters.`, '/text');
    const webhookUrl = typeof b.webhook_url === 'string' && b.webhook_url !== '' ? b.webhook_url : null;
    if (webhookUrl !== null && !/^https?:\/\//i.test(webhookUrl)) return refuse('10003', 'Invalid URL', 'The webhook_url is not a valid URL.', '/webhook_url');
    const phone = String(from.phone_number);
    if (this.unregisteredFrom.has(phone)) return refuse('40010', ERRORS['40010']!.title, ERRORS['40010']!.detail, '/from');
    const m = this.newMessage({ apiKey, direction: 'outbound', from: phone, to, body: text, profileId: String(from.messaging_profile_id), webhookUrl });
    this.background(m, this.progress(m));
    return { status: 200, body: { data: renderMessage(m, m.webhookUrl ?? this.profileWebhook(m.profileId)) } };
  }

  // The number a send goes from: `from` itself, or with only `messaging_profile_id` one of
  // that profile's numbers (the carrier's number pool); either way one with a profile.
  private fromNumber(apiKey: string, b: Record<string, unknown>): TelnyxRecord | undefined {
    const mine = [...this.state.numbers.values()].filter((n) => this.state.owns(apiKey, n) && typeof n.messaging_profile_id === 'string');
    if (typeof b.from === 'string' && b.from !== '') return mine.find((n) => n.phone_number === b.from);
    if (typeof b.messaging_profile_id === 'string') return mine.find((n) => n.messaging_profile_id === b.messaging_profile_id);
    return undefined;
  }

  // The steps of an accepted message, each with its event.
  private async progress(m: Live): Promise<void> {
    const { status: final, code } = this.outcomes.get(m.to) ?? { status: 'delivered' as const, code: null };
    if (!(await simSleep(this.stepMs, this.closing.signal))) return;
    if (final !== 'sending_failed') {
      m.status = 'sent';
      m.sentAt = this.clock.now();
      await this.event(m, 'message.sent');
      if (!(await simSleep(this.stepMs, this.closing.signal))) return;
    }
    m.status = final;
    m.completedAt = this.clock.now();
    if (code !== null) m.errors = [{ code, ...(ERRORS[code] ?? { title: 'Message failed', detail: `The message failed with code ${code}.` }) }];
    await this.event(m, 'message.finalized');
    m.resolveDone(final);
  }

  private async event(m: Live, eventType: string): Promise<void> {
    const url = m.webhookUrl ?? this.profileWebhook(m.profileId);
    if (!url) return;
    const hook = await this.deliver(m, eventType, url);
    if (hook.error !== null && !this.closing.signal.aborted) this.errors.push(`${m.sid}: ${eventType} to ${url}: ${hook.error}`);
  }

  // One signed v2 envelope; never throws (a failure is in the record's `error`).
  private async deliver(m: Live, eventType: string, url: string): Promise<TelnyxMessageWebhook> {
    const keys = this.state.keyPairs.get(m.apiKey);
    if (!keys) throw new Error('telnyx sim: API key without a signing key');
    const payload = renderMessage(m, url);
    const body = JSON.stringify({
      data: { event_type: eventType, id: randomUUID(), occurred_at: iso(this.clock.now()), payload, record_type: 'event' },
      meta: { attempt: 1, delivered_to: url },
    });
    // Signed with the real time: the receiver checks the timestamp against its own clock.
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'telnyx-webhooks',
      'telnyx-timestamp': timestamp,
      'telnyx-signature-ed25519': signTelnyx(keys.privateKey, body, timestamp),
    };
    const record: TelnyxMessageWebhook = { eventType, messageId: m.sid, url, body, payload, headers, status: null, error: null };
    this.webhooks.push(record);
    m.webhooks.push(record);
    try {
      const res = await fetch(this.resolve(url), {
        method: 'POST',
        headers,
        body,
        redirect: 'manual',
        signal: AbortSignal.any([this.closing.signal, AbortSignal.timeout(5000)]),
      });
      record.status = res.status;
      await res.arrayBuffer();
    } catch (err) {
      record.error = err instanceof Error ? err.message : String(err);
    }
    return record;
  }

  // `GET /v2/detail_records`: the account's message detail records.
  private detailRecords(apiKey: string, req: TelnyxSimRequest): SimResponse {
    const q = (k: string) => {
      const v = req.query[k];
      return Array.isArray(v) ? v[0] : v;
    };
    const recordType = q('filter[record_type]');
    if (!recordType) {
      return telnyxError(422, '10004', 'Missing required parameter', "The 'filter[record_type]' parameter is required.", '/filter[record_type]');
    }
    const listedBy = this.clock.now() - this.listLagMs;
    const checks: ((m: TelnyxSimMessage) => boolean)[] = [(m) => this.state.sameAccount(m.apiKey, apiKey), (m) => m.createdAt <= listedBy];
    // Messaging is the only record type the sim keeps: any other lists nothing.
    if (recordType !== 'messaging') checks.push(() => false);
    const cli = q('filter[cli]');
    const cld = q('filter[cld]');
    const direction = q('filter[direction]');
    if (cli !== undefined) checks.push((m) => m.from === cli);
    if (cld !== undefined) checks.push((m) => m.to === cld);
    if (direction !== undefined) checks.push((m) => m.direction === direction.toLowerCase());
    for (const [op, test] of [
      ['gte', (t: number, x: number) => t >= x],
      ['gt', (t: number, x: number) => t > x],
      ['lte', (t: number, x: number) => t <= x],
      ['lt', (t: number, x: number) => t < x],
    ] as const) {
      const value = q(`filter[created_at][${op}]`);
      if (value === undefined) continue;
      const at = Date.parse(value);
      if (!Number.isFinite(at)) return telnyxError(422, '10015', 'Bad Request', `filter[created_at][${op}] is not an ISO 8601 date-time.`, `/filter[created_at][${op}]`);
      checks.push((m) => test(m.createdAt, at));
    }
    const sort = q('sort') ?? '-created_at';
    if (sort !== 'created_at' && sort !== '-created_at') return telnyxError(422, '10015', 'Bad Request', `Unsupported sort: ${sort}.`, '/sort');
    const all = [...this.messages.values()].filter((m) => checks.every((c) => c(m)));
    // Insertion order is creation order: ties on the millisecond keep it.
    if (sort === '-created_at') all.reverse();
    all.sort((a, b) => (sort === 'created_at' ? a.createdAt - b.createdAt : b.createdAt - a.createdAt));
    const size = Math.min(250, Math.max(1, Number(q('page[size]') ?? 20) || 20));
    const pageNumber = Math.max(1, Number(q('page[number]') ?? 1) || 1);
    const data = all.slice((pageNumber - 1) * size, pageNumber * size).map(renderDetailRecord);
    return { status: 200, body: { data, meta: { page_number: pageNumber, page_size: size, total_pages: Math.ceil(all.length / size), total_results: all.length } } };
  }

  private moveToProfile(apiKey: string, numberId: string, body: unknown): SimResponse {
    const number = this.state.numbers.get(numberId);
    if (!this.state.owns(apiKey, number)) return notFound();
    const id = (body as { messaging_profile_id?: unknown } | undefined)?.messaging_profile_id;
    if (id !== null && id !== '' && !(typeof id === 'string' && this.state.owns(apiKey, this.state.messagingProfiles.get(id)))) {
      return telnyxError(422, '10017', 'Associated resource does not exist', 'The messaging_profile_id does not exist.', '/messaging_profile_id');
    }
    number.messaging_profile_id = id === '' ? null : id;
    number.messaging_profile_name = typeof id === 'string' ? (this.state.messagingProfiles.get(id)?.name ?? null) : null;
    number.updated_at = new Date().toISOString();
    const data = {
      record_type: 'messaging_settings',
      id: number.id,
      phone_number: number.phone_number,
      messaging_profile_id: number.messaging_profile_id,
      country_code: 'US',
      type: 'long-code',
      created_at: number.created_at,
      updated_at: number.updated_at,
    };
    return { status: 200, body: { data } };
  }

  private profileWebhook(profileId: string | null): string | null {
    const url = profileId === null ? undefined : this.state.messagingProfiles.get(profileId)?.webhook_url;
    return typeof url === 'string' && url !== '' ? url : null;
  }

  private resolve(url: string): string {
    const u = new URL(url);
    for (const [from, to] of this.redirects) {
      if (u.host !== from.host) continue;
      u.protocol = to.protocol;
      u.host = to.host;
      return u.toString();
    }
    return url;
  }

  private newMessage(init: { apiKey: string; direction: TelnyxSimMessage['direction']; from: string; to: string; body: string; profileId: string | null; webhookUrl: string | null }): Live {
    let resolveDone: (s: TelnyxMessageStatus) => void = () => {};
    const done = new Promise<TelnyxMessageStatus>((resolve) => (resolveDone = resolve));
    const now = this.clock.now();
    const m: Live = { ...init, sid: randomUUID(), status: 'queued', at: now, createdAt: now, sentAt: null, completedAt: null, errors: [], webhooks: [], done, resolveDone };
    this.messages.set(m.sid, m);
    return m;
  }

  private background(m: Live, work: Promise<unknown>): void {
    work.catch((err: unknown) => this.errors.push(`${m.sid}: ${err instanceof Error ? err.stack : String(err)}`));
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
const notFound = () => telnyxError(404, '10005', 'Resource not found', 'The requested resource or URL could not be found.');

/** `to` of a send: a string, or an array of exactly one. */
function toOf(body: unknown): string | undefined {
  const to = (body as { to?: unknown } | undefined)?.to;
  if (typeof to === 'string') return to;
  return Array.isArray(to) && to.length === 1 && typeof to[0] === 'string' ? to[0] : undefined;
}

/** The message record as the API and the events render it; `webhookUrl` the one in effect. */
function renderMessage(m: TelnyxSimMessage, webhookUrl: string | null = m.webhookUrl): Record<string, unknown> {
  const { encoding, parts } = smsParts(m.body);
  const telnyx = (phone: string) => ({ phone_number: phone, carrier: 'Telnyx', line_type: 'Wireless' });
  const far = (phone: string) => ({ phone_number: phone, carrier: 'T-MOBILE USA, INC.', line_type: 'Wireless' });
  const outbound = m.direction === 'outbound';
  return {
    record_type: 'message',
    id: m.sid,
    direction: m.direction,
    type: 'SMS',
    messaging_profile_id: m.profileId,
    from: outbound ? telnyx(m.from) : far(m.from),
    to: [{ ...(outbound ? far(m.to) : telnyx(m.to)), status: m.status }],
    text: m.body,
    subject: null,
    media: [],
    encoding,
    parts,
    tags: [],
    cost: null,
    errors: m.errors,
    received_at: iso(m.createdAt),
    sent_at: m.sentAt === null ? null : iso(m.sentAt),
    completed_at: m.completedAt === null ? null : iso(m.completedAt),
    // The sim's validity period: four hours from acceptance.
    valid_until: iso(m.createdAt + 4 * 3_600_000),
    webhook_url: webhookUrl,
    webhook_failover_url: null,
  };
}

/** A message detail record (`record_type: message_detail_record`) of the carrier's reporting API. */
function renderDetailRecord(m: TelnyxSimMessage): Record<string, unknown> {
  const { encoding, parts } = smsParts(m.body);
  return {
    record_type: 'message_detail_record',
    uuid: m.sid,
    cli: m.from,
    cld: m.to,
    direction: m.direction,
    status: MDR_STATUS[m.status] ?? m.status,
    message_type: 'SMS',
    profile_id: m.profileId,
    parts,
    encoding,
    errors: m.errors.map((e) => e.code),
    created_at: iso(m.createdAt),
    sent_at: m.sentAt === null ? null : iso(m.sentAt),
    completed_at: m.completedAt === null ? null : iso(m.completedAt),
    updated_at: iso(m.completedAt ?? m.sentAt ?? m.createdAt),
    cost: null,
    rate: null,
    currency: 'USD',
  };
}
