// The carriers' SMS webhooks, turned into what the SMS system acts on: a text received
// on one of our numbers, or a delivery status of a text we sent (carriers.md §2 "Incoming
// SMS" and "Message status callbacks"; §5 "Messaging": message.received, message.sent,
// message.finalized). Parsing acts on nothing; the routes verify the signature first.

export type SmsWebhook =
  | { kind: 'received'; carrierMessageId: string; from: string; to: string; body: string }
  | { kind: 'status'; carrierMessageId: string; status: 'sent' | 'delivered' | 'undelivered' | 'failed'; errorCode: string | null; errorMessage: string | null }
  | { kind: 'ignored'; reason: string };

/** Carrier A's MessageStatus values, as our statuses (queued/sending/accepted are steps before `sent`). */
const TWILIO_STATUS: Record<string, 'sent' | 'delivered' | 'undelivered' | 'failed'> = {
  sent: 'sent',
  delivered: 'delivered',
  read: 'delivered',
  undelivered: 'undelivered',
  failed: 'failed',
};

/** Carrier A's incoming-SMS webhook (form). */
export function parseTwilioSms(form: URLSearchParams): SmsWebhook {
  const sid = form.get('MessageSid') ?? form.get('SmsMessageSid') ?? form.get('SmsSid');
  const from = form.get('From');
  const to = form.get('To');
  if (!sid || !from || !to) return { kind: 'ignored', reason: 'incoming SMS without MessageSid, From or To' };
  return { kind: 'received', carrierMessageId: sid, from, to, body: form.get('Body') ?? '' };
}

/** Carrier A's message status callback (form). */
export function parseTwilioSmsStatus(form: URLSearchParams): SmsWebhook {
  const sid = form.get('MessageSid') ?? form.get('SmsSid');
  const status = TWILIO_STATUS[form.get('MessageStatus') ?? form.get('SmsStatus') ?? ''];
  if (!sid || !status) return { kind: 'ignored', reason: 'a status this service does not track' };
  const code = form.get('ErrorCode');
  return { kind: 'status', carrierMessageId: sid, status, errorCode: code ? `carrier:${code}` : null, errorMessage: code ? `carrier A error ${code}` : null };
}

/** Carrier B's `to[].status` of message.sent / message.finalized, as our statuses. */
const TELNYX_STATUS: Record<string, 'sent' | 'delivered' | 'undelivered' | 'failed'> = {
  sent: 'sent',
  delivered: 'delivered',
  delivery_unconfirmed: 'sent',
  delivery_failed: 'undelivered',
  sending_failed: 'failed',
};

interface TelnyxMessagePayload {
  id?: unknown;
  text?: unknown;
  from?: { phone_number?: unknown };
  to?: { phone_number?: unknown; status?: unknown }[];
  errors?: { code?: unknown; title?: unknown; detail?: unknown }[];
}

/** True for an envelope whose event is a message's (routed to the SMS system, not the calls). */
export function isTelnyxMessageEvent(raw: string): boolean {
  return /"event_type"\s*:\s*"message\./.test(raw);
}

/** Carrier B's message.* events (JSON envelope). */
export function parseTelnyxSms(raw: string): SmsWebhook {
  let data: { event_type?: unknown; payload?: TelnyxMessagePayload } | undefined;
  try {
    data = (JSON.parse(raw) as { data?: typeof data }).data;
  } catch {
    return { kind: 'ignored', reason: 'not JSON' };
  }
  const p = data?.payload;
  const id = typeof p?.id === 'string' ? p.id : null;
  const type = data?.event_type;
  if (!p || id === null) return { kind: 'ignored', reason: 'message event without a payload id' };
  if (type === 'message.received') {
    const from = p.from?.phone_number;
    const to = Array.isArray(p.to) ? p.to[0]?.phone_number : undefined;
    if (typeof from !== 'string' || typeof to !== 'string') return { kind: 'ignored', reason: 'message.received without from or to' };
    return { kind: 'received', carrierMessageId: id, from, to, body: typeof p.text === 'string' ? p.text : '' };
  }
  if (type === 'message.sent' || type === 'message.finalized') {
    const status = TELNYX_STATUS[String(Array.isArray(p.to) ? p.to[0]?.status : '')];
    if (!status) return { kind: 'ignored', reason: 'a status this service does not track' };
    const err = Array.isArray(p.errors) ? p.errors[0] : undefined;
    const code = err && (typeof err.code === 'string' || typeof err.code === 'number') ? String(err.code) : null;
    const message = err ? [err.title, err.detail].filter((x): x is string => typeof x === 'string' && x !== '').join(': ') || null : null;
    return { kind: 'status', carrierMessageId: id, status, errorCode: code === null ? null : `carrier:${code}`, errorMessage: message };
  }
  return { kind: 'ignored', reason: `event ${String(type)}` };
}
