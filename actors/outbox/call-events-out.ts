// What the customer's receivers hear about a call (api.md "Events"): the flat,
// whitelisted payload of `call.started` and `call.completed`, and the URLs each event
// goes to. Built from the stored call row only: the system prompt, the API key id and
// internal ids (the `call_…` actor id of a call that has a carrier id, the agent's
// UUID) are not on the row's public fields, and only the fields named here are copied.
import type { Storage } from '../../storage/index.ts';
import type { CallRow } from '../../storage/calls.ts';
import { canonicalUrl } from '../../storage/webhook-deliveries.ts';

export type CallEvent = 'call.started' | 'call.completed';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const parsed = <T>(json: string | null, fallback: T): T => {
  if (json === null) return fallback;
  try {
    return JSON.parse(json) as T;
  } catch {
    return fallback;
  }
};

/**
 * The payload of a call event. Both events carry the same keys, so a receiver parses
 * one shape: `call.started` has every post-call field null (`ended_reason`, `ended_at`,
 * `duration_seconds`, `transcript`, the analysis, the recording, `avg_latency_ms`, and
 * `voicemail_detected` on outbound calls) and `bookings` empty. `voicemail_detected`
 * is present on outbound calls only; `campaign_id` is null unless the call is a batch's.
 */
export function callEventPayload(call: CallRow, event: CallEvent): Record<string, unknown> {
  const done = event === 'call.completed';
  const payload: Record<string, unknown> = {
    event,
    call_id: call.call_id,
    agent_id: call.agent_id,
    direction: call.direction,
    // `web` for a browser's web call (POST /v1/web-calls; its row's provider is `web`), `phone` otherwise.
    channel: call.provider === 'web' ? 'web' : 'phone',
    from: call.from_number,
    to: call.to_number,
    status: call.call_status,
    ended_reason: done ? call.ended_reason : null,
    started_at: iso(call.started_at),
    ended_at: done ? iso(call.ended_at) : null,
    duration_seconds: done && call.duration_ms !== null ? Math.ceil(call.duration_ms / 1000) : null,
    transcript: done ? call.transcript : null,
    summary: done ? call.summary : null,
    sentiment: done ? call.sentiment : null,
    successful: done && call.successful !== null ? call.successful === 1 : null,
    extracted: done ? parsed<Record<string, unknown> | null>(call.extracted, null) : null,
    bookings: done ? parsed<unknown[]>(call.bookings, []) : [],
    recording_url: done ? call.recording_url : null,
    recording_duration_seconds: done ? call.recording_duration_seconds : null,
  };
  if (call.direction === 'outbound') payload.voicemail_detected = done ? call.voicemail_detected === 1 : null;
  payload.campaign_id = call.campaign_id;
  payload.avg_latency_ms = done ? call.avg_latency_ms : null;
  return payload;
}

const configuredUrl = (config: Record<string, unknown> | undefined, key: string): string | null => {
  const v = config?.[key];
  return typeof v === 'string' && v !== '' ? v : null;
};

/**
 * Where a call event goes: the number's primary and second webhook (both events), and
 * for `call.completed` also the agent's `webhook_url` and the number's automation
 * `post_call_url` (api.md: the agent's URL is "also used for post-call data"; the
 * automation post-call hook "receives the same payload as call.completed"). The same
 * URL configured twice appears once. Empty when nothing is configured.
 */
export function callEventUrls(storage: Storage, accountId: string, call: CallRow, event: CallEvent = 'call.completed'): string[] {
  const urls: Array<string | null> = [];
  const number = call.phone_number;
  if (number !== null) {
    const target = { phoneNumber: number };
    urls.push(configuredUrl(storage.integrations.get(accountId, 'webhook', target)?.config, 'url'));
    urls.push(configuredUrl(storage.integrations.get(accountId, 'webhook2', target)?.config, 'url'));
  }
  if (event === 'call.completed') {
    if (call.agent_id !== null) urls.push(storage.agents.get(accountId, call.agent_id)?.webhook_url ?? null);
    if (number !== null) urls.push(configuredUrl(storage.integrations.get(accountId, 'automation', { phoneNumber: number })?.config, 'post_call_url'));
  }
  const seen = new Set<string>();
  const out: string[] = [];
  for (const u of urls) {
    if (u === null || seen.has(canonicalUrl(u))) continue;
    seen.add(canonicalUrl(u));
    out.push(u);
  }
  return out;
}

/**
 * Inside the commit in which a call connects: its `call.started` deliveries, due
 * `delayMs` after it connected. Committed with the connect, so a crash before they are
 * due still sends them once after the restart. Nothing when no number webhook is set.
 */
export function enqueueCallStarted(storage: Storage, internalId: string, now: number, delayMs: number): string[] {
  const call = storage.calls.getByInternalId(internalId);
  if (!call || call.started_at === null) return [];
  const urls = callEventUrls(storage, call.account_id, call, 'call.started');
  if (urls.length === 0) return [];
  return storage.webhookDeliveries.enqueue({
    accountId: call.account_id,
    callId: call.call_id,
    event: 'call.started',
    urls,
    payload: callEventPayload(call, 'call.started'),
    now,
    dueAt: Math.max(now, call.started_at + delayMs),
  });
}
