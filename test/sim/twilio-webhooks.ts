// How the carrier A simulator reaches the service: signed, form-encoded webhook POSTs
// (X-Twilio-Signature over the URL exactly as given, carriers.md §2), and the mapping of
// public URLs (PUBLIC_BASE_URL, the wss:// URL of a stream) to the loopback server a
// test runs, so signatures cover the URL the service believes it was reached at.

import { randomUUID } from 'node:crypto';
import { signTwilio } from '../../voice/carriers/twilio-signature.ts';

/** One webhook the sim sent, with the answer it got. */
export interface TwilioSimWebhook {
  /** The call's CA sid; for `sms` and `message-status` (twilio-messages.ts) the message's SM sid. */
  callSid: string;
  kind: 'voice' | 'status' | 'amd' | 'recording' | 'sms' | 'message-status';
  /** The URL as given to the carrier: what the signature covers. */
  url: string;
  params: Record<string, string>;
  signature: string;
  /** The HTTP answer; null when the request failed (`error` says why). */
  status: number | null;
  body: string;
  error: string | null;
}

/** The carrier gives a webhook 15 s to answer. */
const WEBHOOK_TIMEOUT_MS = 15_000;

export class TwilioWebhookSender {
  /** Every webhook sent, in order. */
  readonly sent: TwilioSimWebhook[] = [];
  private readonly mappings: { from: URL; to: URL }[] = [];

  /** `closing` aborts every request in flight when the sim shuts down. */
  constructor(private readonly closing: AbortSignal) {}

  /**
   * Delivers URLs under `publicBaseUrl` (e.g. https://switchboard.test) to `localBaseUrl`
   * (e.g. http://127.0.0.1:4321); wss:// URLs follow as ws:// (wss:// for an https local base).
   */
  route(publicBaseUrl: string, localBaseUrl: string): void {
    // The latest route of a host wins: a test re-points the carrier at a restarted service.
    this.mappings.unshift({ from: new URL(publicBaseUrl), to: new URL(localBaseUrl) });
  }

  /** Where a request for `url` really goes. */
  resolve(url: string): string {
    const target = new URL(url);
    for (const { from, to } of this.mappings) {
      if (target.host !== from.host) continue;
      const ws = target.protocol === 'ws:' || target.protocol === 'wss:';
      const mapped = new URL(target.pathname + target.search, to);
      mapped.protocol = ws ? (to.protocol === 'https:' ? 'wss:' : 'ws:') : to.protocol;
      return mapped.toString();
    }
    return url;
  }

  /** POSTs the signed form; never throws (a failure is in the record's `error`). */
  async post(
    authToken: string,
    callSid: string,
    kind: TwilioSimWebhook['kind'],
    url: string,
    params: Record<string, string>,
  ): Promise<TwilioSimWebhook> {
    const signature = signTwilio(authToken, url, params);
    const record: TwilioSimWebhook = { callSid, kind, url, params, signature, status: null, body: '', error: null };
    this.sent.push(record);
    try {
      const res = await fetch(this.resolve(url), {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-twilio-signature': signature,
          'i-twilio-idempotency-token': randomUUID(),
          'user-agent': 'TwilioProxy/1.1',
        },
        body: new URLSearchParams(params).toString(),
        redirect: 'manual',
        signal: AbortSignal.any([this.closing, AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)]),
      });
      record.status = res.status;
      record.body = await res.text();
    } catch (err) {
      record.error = err instanceof Error ? err.message : String(err);
    }
    return record;
  }
}
