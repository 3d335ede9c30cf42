// Carrier A's (Twilio) Programmable Messaging in the simulator (carriers.md §1–§2):
// `POST …/Messages.json` sends an SMS from one of the account's numbers, refused with the
// carrier's codes (below); an accepted message moves on in the background (queued →
// sent → delivered | undelivered, or queued → failed: a message that could not be sent
// is never `sent`) with a signed, form-encoded status callback per step to its
// StatusCallback (none without one, none for the initial `queued`, as the carrier does).
// The test picks each recipient's fate with `outcome(to, …)`. `GET …/Messages.json`
// lists with the carrier's filters (To, From, DateSent with `>`/`<`), newest first;
// `…/Messages/{Sid}.json` fetches one. `receive` is a text from the far end: the signed
// incoming-SMS webhook to the number's sms_url; `<Message>` verbs in the TwiML answer are
// sent as replies (direction `outbound-reply`), as the carrier does.
//
// Refusals (HTTP 400, {code, message, more_info, status}): 21604 no To, 21603 no From,
// 21602 no Body, 21211 To not E.164, 21606 From not an SMS number of this account, 21617
// Body over 1600 characters, 21609 StatusCallback not a URL, 30034 From marked
// `unregistered` (US A2P 10DLC). The carrier reports 30034 on the message once it
// failed, more often than on the request; a test wanting that reading uses
// `outcome(to, 'failed', 30034)` instead.
//
// `sent()` (every outbound message accepted, in order) is what "sent exactly once" is
// judged by: a send whose answer was lost (`fail({match: 'message', drop: true})`) is in
// it, one reset before processing (`reset: true`) or refused by a fault (`status`) is not.

import type { SimClock, SimResponse } from './sim-http.ts';
import { E164, MAX_SMS_CHARS, simSleep, smsParts, type SimSentMessage } from './sms-common.ts';
import { readTwiml } from './twiml-reader.ts';
import { page, rfc2822, twilioError, twilioSid, TWILIO_ENDPOINTS, type TwilioRoute, type TwilioSimForm, type TwilioSimRequest, type TwilioState } from './twilio-sim.ts';
import { TwilioWebhookSender, type TwilioSimWebhook } from './twilio-webhooks.ts';

export type TwilioMessageStatus = 'queued' | 'sent' | 'delivered' | 'undelivered' | 'failed' | 'received';
/** What becomes of messages to a number. */
export type TwilioMessageOutcome = 'delivered' | 'failed' | 'undelivered';

/** One message as the simulated carrier keeps it (live: status and times move on). */
export interface TwilioSimMessage extends SimSentMessage {
  readonly accountSid: string;
  readonly direction: 'outbound-api' | 'outbound-reply' | 'inbound';
  readonly status: TwilioMessageStatus;
  readonly createdAt: number;
  /** When it was sent (the resource's date_sent); null until then, and for ever if it failed. */
  readonly sentAt: number | null;
  readonly updatedAt: number;
  readonly errorCode: number | null;
  readonly statusCallback: string | null;
  /** The incoming-SMS webhook (inbound) or the status callbacks (outbound), with their answers. */
  readonly webhooks: TwilioSimWebhook[];
  /** Resolves with the final status once the last status callback (if any) was answered. */
  readonly done: Promise<TwilioMessageStatus>;
}

export interface TwilioMessagesOptions {
  /** Milliseconds between a message's steps (queued → sent → final). Default 20. */
  messageStepMs?: number;
}

type Live = { -readonly [K in keyof TwilioSimMessage]: TwilioSimMessage[K] } & { resolveDone(status: TwilioMessageStatus): void };

const DEFAULT_CODE: Record<TwilioMessageOutcome, number | null> = { delivered: null, undelivered: 30003, failed: 30008 };
const ERROR_TEXT: Record<number, string> = {
  30003: 'Unreachable destination handset',
  30005: 'Unknown destination handset',
  30006: 'Landline or unreachable carrier',
  30007: 'Message filtered',
  30008: 'Unknown error',
  30034: 'Message from an Unregistered Number',
};

export class TwilioMessages {
  /** Every message, outbound and inbound, by SM sid. */
  readonly messages = new Map<string, TwilioSimMessage>();
  /** Background failures: undeliverable status callbacks, sim bugs. */
  readonly errors: string[] = [];
  /** Milliseconds between a message's steps; a test may change it. */
  stepMs: number;
  /**
   * How long a message stays out of the message list after it was created, as a busy
   * carrier's list lags its API (0: listed at once). A client that takes "not listed" for
   * "never sent" too soon sends it again.
   */
  listLagMs = 0;
  /** The REST requests the sim received (set once it listens). */
  requestLog: TwilioSimRequest[] = [];
  private readonly closing = new AbortController();
  private readonly sender = new TwilioWebhookSender(this.closing.signal);
  /** Every message webhook sent (incoming SMS and status callbacks), in order. */
  readonly webhooks: TwilioSimWebhook[] = this.sender.sent;
  private readonly outcomes = new Map<string, { status: TwilioMessageOutcome; code: number | null }>();
  private readonly unregisteredFrom = new Set<string>();

  constructor(
    private readonly state: TwilioState,
    private readonly clock: SimClock,
    opts: TwilioMessagesOptions = {},
  ) {
    this.stepMs = opts.messageStepMs ?? 20;
  }

  /** Messages to `to` from now on end `status` (default `delivered`; codes 30003 undelivered, 30008 failed). */
  outcome(to: string, status: TwilioMessageOutcome, errorCode?: number): void {
    this.outcomes.set(to, { status, code: errorCode ?? DEFAULT_CODE[status] });
  }

  /** Sends from `from` are refused with 30034 (not registered for US A2P 10DLC); `false` lifts it. */
  unregistered(from: string, on = true): void {
    if (on) this.unregisteredFrom.add(from);
    else this.unregisteredFrom.delete(from);
  }

  /** Outbound messages accepted (to `to` when given), in order. */
  sent(to?: string): TwilioSimMessage[] {
    return [...this.messages.values()].filter((m) => m.direction !== 'inbound' && (to === undefined || m.to === to));
  }

  sentTo(to: string): number {
    return this.sent(to).length;
  }

  /** Every `POST …/Messages.json` received (to `to` when given): accepted, refused or met by a fault (`fault`). */
  requests(to?: string): TwilioSimRequest[] {
    return this.requestLog.filter((r) => TWILIO_ENDPOINTS.message(r) && (to === undefined || first(r.body.To) === to));
  }

  /** Delivers webhooks for URLs under `publicBaseUrl` to `localBaseUrl` (signatures keep the public URL). */
  route(publicBaseUrl: string, localBaseUrl: string): void {
    this.sender.route(publicBaseUrl, localBaseUrl);
  }

  /**
   * A text from `from` to one of the sim's numbers: the signed incoming-SMS webhook to its
   * sms_url. Resolves with the service's answer (status null and `error` when it failed).
   */
  async receive(opts: { from: string; to: string; body: string; accountSid?: string }): Promise<{ sid: string; status: number | null; body: string; error: string | null }> {
    const number = [...this.state.numbers.values()].find((n) => n.phone_number === opts.to && (opts.accountSid === undefined || n.account_sid === opts.accountSid));
    if (!number) throw new Error(`twilio sim: no number ${opts.to}`);
    if (!number.sms_url) throw new Error(`twilio sim: number ${opts.to} has no sms_url`);
    const m = this.newMessage({ accountSid: number.account_sid, direction: 'inbound', from: opts.from, to: opts.to, body: opts.body, statusCallback: null });
    m.status = 'received';
    m.sentAt = m.createdAt;
    m.resolveDone('received');
    const hook = await this.sender.post(this.tokenOf(m.accountSid), m.sid, 'sms', number.sms_url, {
      MessageSid: m.sid,
      SmsSid: m.sid,
      SmsMessageSid: m.sid,
      AccountSid: m.accountSid,
      MessagingServiceSid: '',
      From: m.from,
      To: m.to,
      Body: m.body,
      NumMedia: '0',
      NumSegments: String(smsParts(m.body).parts),
      SmsStatus: 'received',
      ApiVersion: '2010-04-01',
    });
    m.webhooks.push(hook);
    if (hook.status !== null && hook.status >= 200 && hook.status < 300) this.replies(m, hook.body);
    return { sid: m.sid, status: hook.status, body: hook.body, error: hook.error };
  }

  /** The REST routes of messages, below /2010-04-01/Accounts/{AccountSid}. */
  routes(): TwilioRoute[] {
    return [
      { method: 'POST', pattern: /^\/Messages\.json$/, handle: ({ req, accountSid }) => this.create(accountSid, req.body) },
      { method: 'GET', pattern: /^\/Messages\.json$/, handle: ({ req, accountSid }) => this.list(accountSid, req) },
      {
        method: 'GET',
        pattern: /^\/Messages\/((?:SM|MM)[0-9a-fA-F]{32})\.json$/,
        handle: ({ req, accountSid, params }) => {
          const m = this.messages.get(params[0] ?? '');
          return m && m.accountSid === accountSid ? { status: 200, body: renderMessage(m) } : notFound(req.path);
        },
      },
    ];
  }

  /** Stops every message where it is: no further callbacks. */
  async close(): Promise<void> {
    this.closing.abort();
  }

  private create(accountSid: string, form: TwilioSimForm): SimResponse {
    const to = first(form.To);
    const from = first(form.From);
    const body = first(form.Body);
    const callback = first(form.StatusCallback) || null;
    if (!to) return twilioError(400, 21604, "A 'To' phone number is required.");
    if (!from) return twilioError(400, 21603, "A 'From' phone number is required.");
    if (!body) return twilioError(400, 21602, 'Message body is required.');
    if (!E164.test(to)) return twilioError(400, 21211, `The 'To' number ${to} is not a valid phone number.`);
    const owned = [...this.state.numbers.values()].some((n) => n.account_sid === accountSid && n.phone_number === from);
    if (!owned) {
      return twilioError(400, 21606, `The From phone number ${from} is not a valid, SMS-capable inbound phone number or short code for your account.`);
    }
    if ([...body].length > MAX_SMS_CHARS) return twilioError(400, 21617, 'The concatenated message body exceeds the 1600 character limit.');
    if (callback && !/^https?:\/\//i.test(callback)) return twilioError(400, 21609, `The StatusCallback URL ${callback} is not a valid URL.`);
    if (this.unregisteredFrom.has(from)) return twilioError(400, 30034, 'Message from an Unregistered Number');
    const m = this.newMessage({ accountSid, direction: 'outbound-api', from, to, body, statusCallback: callback });
    this.background(m, this.progress(m));
    return { status: 201, body: renderMessage(m) };
  }

  // `GET …/Messages.json`: the account's messages, newest first, narrowed by the carrier's filters.
  private list(accountSid: string, req: TwilioSimRequest): SimResponse {
    const q = (k: string) => first(req.query[k]);
    const to = q('To');
    const from = q('From');
    const checks: ((m: TwilioSimMessage) => boolean)[] = [];
    // `DateSent=D` within D, `DateSent>=D` (the key `DateSent>`) from its start, `DateSent<=D`
    // (key `DateSent<`) to its end. D is a day (YYYY-MM-DD, UTC) or an instant (ISO 8601, to
    // the second, as twilio-node sends it). A message not yet sent counts at its creation.
    for (const [suffix, test] of [
      ['', (t: number, [lo, hi]: Span) => t >= lo && t < hi],
      ['>', (t: number, [lo]: Span) => t >= lo],
      ['<', (t: number, [, hi]: Span) => t < hi],
    ] as const) {
      const value = q(`DateSent${suffix}`);
      if (value === undefined) continue;
      const span = parseSpan(value);
      if (span === null) return twilioError(400, 20001, `Invalid DateSent${suffix}: ${value}`);
      checks.push((m) => test(m.sentAt ?? m.createdAt, span));
    }
    const listedBy = this.clock.now() - this.listLagMs;
    const items = [...this.messages.values()]
      .filter((m) => m.createdAt <= listedBy && m.accountSid === accountSid && (to === undefined || m.to === to) && (from === undefined || m.from === from) && checks.every((c) => c(m)))
      .reverse() // insertion order, newest last: reversed, ties on the millisecond stay newest first
      .sort((a, b) => b.createdAt - a.createdAt)
      .map(renderMessage);
    return { status: 200, body: page('messages', req, items) };
  }

  // The steps of an accepted message, each with its status callback.
  private async progress(m: Live): Promise<void> {
    const { status: final, code } = this.outcomes.get(m.to) ?? { status: 'delivered' as const, code: null };
    if (!(await simSleep(this.stepMs, this.closing.signal))) return;
    if (final !== 'failed') {
      m.sentAt = this.clock.now();
      await this.step(m, 'sent', null);
      if (!(await simSleep(this.stepMs, this.closing.signal))) return;
    }
    await this.step(m, final, code);
    m.resolveDone(final);
  }

  private async step(m: Live, status: TwilioMessageStatus, code: number | null): Promise<void> {
    m.status = status;
    m.errorCode = code;
    m.updatedAt = this.clock.now();
    if (!m.statusCallback) return;
    const hook = await this.sender.post(this.tokenOf(m.accountSid), m.sid, 'message-status', m.statusCallback, {
      MessageSid: m.sid,
      SmsSid: m.sid,
      MessageStatus: status,
      SmsStatus: status,
      AccountSid: m.accountSid,
      From: m.from,
      To: m.to,
      ApiVersion: '2010-04-01',
      ...(code === null ? {} : { ErrorCode: String(code) }),
    });
    m.webhooks.push(hook);
    if (hook.error !== null && !this.closing.signal.aborted) this.errors.push(`${m.sid}: status callback ${m.statusCallback}: ${hook.error}`);
  }

  // `<Message>` verbs of the answer to an incoming SMS: replies from the number to the sender.
  private replies(inbound: TwilioSimMessage, twiml: string): void {
    for (const verb of readTwiml(twiml) ?? []) {
      if (verb.name !== 'Message') continue;
      const body = verb.children.find((c) => c.name === 'Body')?.text ?? verb.text;
      const m = this.newMessage({
        accountSid: inbound.accountSid,
        direction: 'outbound-reply',
        from: verb.attrs.from ?? inbound.to,
        to: verb.attrs.to ?? inbound.from,
        body: body.trim(),
        statusCallback: verb.attrs.action ?? verb.attrs.statusCallback ?? null,
      });
      this.background(m, this.progress(m));
    }
  }

  private newMessage(init: { accountSid: string; direction: TwilioSimMessage['direction']; from: string; to: string; body: string; statusCallback: string | null }): Live {
    let resolveDone: (s: TwilioMessageStatus) => void = () => {};
    const done = new Promise<TwilioMessageStatus>((resolve) => (resolveDone = resolve));
    const now = this.clock.now();
    const m: Live = { ...init, sid: twilioSid('SM'), status: 'queued', at: now, createdAt: now, sentAt: null, updatedAt: now, errorCode: null, webhooks: [], done, resolveDone };
    this.messages.set(m.sid, m);
    return m;
  }

  private tokenOf(accountSid: string): string {
    const account = this.state.accounts.get(accountSid);
    if (!account) throw new Error(`twilio sim: unknown account ${accountSid}`);
    return account.authToken;
  }

  private background(m: Live, work: Promise<unknown>): void {
    work.catch((err: unknown) => this.errors.push(`${m.sid}: ${err instanceof Error ? err.stack : String(err)}`));
  }
}

/** A Message resource as the API renders it (carriers.md §1). */
function renderMessage(m: TwilioSimMessage): Record<string, unknown> {
  const uri = `/2010-04-01/Accounts/${m.accountSid}/Messages/${m.sid}`;
  return {
    sid: m.sid,
    account_sid: m.accountSid,
    messaging_service_sid: null,
    to: m.to,
    from: m.from,
    body: m.body,
    status: m.status,
    direction: m.direction,
    num_segments: String(smsParts(m.body).parts),
    num_media: '0',
    error_code: m.errorCode,
    error_message: m.errorCode === null ? null : (ERROR_TEXT[m.errorCode] ?? null),
    price: null,
    price_unit: 'USD',
    date_created: rfc2822(m.createdAt),
    date_updated: rfc2822(m.updatedAt),
    date_sent: m.sentAt === null ? null : rfc2822(m.sentAt),
    api_version: '2010-04-01',
    uri: `${uri}.json`,
    subresource_uris: { media: `${uri}/Media.json`, feedback: `${uri}/Feedback.json` },
  };
}

/** [start, end) in ms. */
type Span = readonly [number, number];

const DAY_MS = 86_400_000;

function parseSpan(value: string): Span | null {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const day = Date.parse(`${value}T00:00:00Z`);
    return Number.isFinite(day) ? [day, day + DAY_MS] : null;
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return null;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) return null;
  const second = Math.floor(ms / 1000) * 1000;
  return [second, second + 1000];
}

function notFound(path: string): SimResponse {
  return twilioError(404, 20404, `The requested resource ${path} was not found`);
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
