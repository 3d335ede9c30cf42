// Carrier B (Telnyx) behind the CarrierVoice interface (voice.ts), plus what the
// service's carrier B endpoints need. Per number: createTelnyxVoice({baseUrl:
// TELNYX_API_BASE, apiKey, connectionId}) from storage.numbers.openCredentials(row).
// Every method rejects with a CarrierError (errors.ts); dial also with a plain Error
// when the number has no events token (a data bug, not a carrier answer).
//
// For `POST /carrier/telnyx/events/{token}` (with verifyTelnyx, telnyx-signature.ts):
// - parseTelnyxWebhook(rawBody as string or bytes, clock()) → TelnyxWebhook. Never
//   throws: a body that is not a v2 envelope is `ignored` with a reason starting
//   "malformed"; streaming.* events are ignored (the media websocket reports the stream).
//   The route parses before it verifies, only to learn which number the event names (its
//   key verifies the signature); nothing is acted on until the signature checks out.
//   The internal call id comes from `client_state` (base64 of `call_…`, set by dial and
//   answerWithStream); null when absent or not a call id (look up by carrierCallId then).
// - `incoming` → route the call, then either
//   answerWithStream(carrierCallId, {publicBaseUrl, mediaToken, callId}): answers with a
//   bidirectional μ-law stream to ws(s)://…/carrier/telnyx/media?token=<mediaToken> (the
//   websocket finds its call by the `token` query parameter), and client_state = callId
//   so every later event names the call; or
//   rejectBusy(carrierCallId): refuses with USER_BUSY (the caller hears busy); or, as the
//   pre-call gate decides, rejectCall (CALL_REJECTED) or transfer(carrierCallId, to, commandId).
//   All treat a call that already ended (422 "90018") as done.
//
// Decisions: hangup() counts 422 "90018" (already ended) and 404 (the carrier no longer
// knows the id) as success. fetchStatus(): is_alive true → 'active'; gone (is_alive
// false, or 404 once the record expired about 10 minutes after the end) → 'unknown'.
// The carrier's call record carries no hangup cause, so no final status can be named:
// 'completed' would tell the machine the call had connected (a carrier `completed` is
// its proof of connection), which a call that ended while still ringing never did. On
// 'unknown' the machine hangs up (a no-op here: "already ended" counts as success).
// Webhook hangup causes are reported as the carrier said them (see HANGUP_CAUSES).
// fetchCall() adds the carrier's `end_time` of an ended call (no duration: the record's
// call_duration runs from the call's start, ringing included).
//
// Dial outcomes (errors.ts): a 4xx (401/403 included) or a connection refused before
// sending is DialRejected; a timeout, a connection lost after sending, a 5xx or an
// unreadable answer is DialOutcomeUnknown. The dial carries command_id `dial-<callId>`,
// which the carrier honours for about 60 s: a repeat within that window returns the
// same call instead of placing another (TELNYX_COMMAND_ID_WINDOW_MS; this adapter never
// repeats a dial by itself). findDialedCall() asks the connection's active calls for
// the one whose client_state is our call id.

import { z } from 'zod';
import type { CallEvent, FinalCallStatus } from '../../machines/call-events.ts';
import { DEFAULT_CARRIER_TIMEOUT_MS } from './carrier-http.ts';
import { CarrierRequestError, classifyDialError } from './errors.ts';
import { createTelnyxRest, type TelnyxRest } from './telnyx-rest.ts';
import type { CarrierCallInfo, CarrierCallStatus, CarrierVoice, CarrierWebhook, DialedCall, DialLookup, DialRequest } from './voice.ts';
import { decodeTransferState, type TelnyxLegStep, type TelnyxWebhook } from './telnyx-transfer-state.ts';

export interface TelnyxVoiceOptions {
  /** TELNYX_API_BASE: the host root (a trailing /v2 is accepted). */
  baseUrl: string;
  apiKey: string;
  /** The number's Call Control application (`telnyx_connection_id`). */
  connectionId: string;
  timeoutMs?: number;
  /** Deadline of the dial request, ms (default `timeoutMs`, else 10 s); past it the outcome is unknown. */
  dialTimeoutMs?: number;
}

/**
 * How long the carrier remembers a command_id (about 60 s, per its docs): a dial repeated
 * with the same command_id within it returns the first call; after it, places a new one.
 */
export const TELNYX_COMMAND_ID_WINDOW_MS = 60_000;

/** The command_id of our dial of a call: the same for every attempt of one call. */
export function telnyxDialCommandId(callId: string): string {
  return `dial-${callId}`;
}

export interface AnswerStreamRequest {
  /** PUBLIC_BASE_URL of this service. */
  publicBaseUrl: string;
  /** One-time token the media websocket must present. */
  mediaToken: string;
  /** Internal id `call_…`: becomes client_state, and the answer's command_id. */
  callId: string;
}

export interface TelnyxVoice extends CarrierVoice {
  answerWithStream(carrierCallId: string, req: AnswerStreamRequest): Promise<void>;
  rejectBusy(carrierCallId: string): Promise<void>;
  /** Refuses an incoming call unanswered with CALL_REJECTED (the pre-call gate's `reject`). */
  rejectCall(carrierCallId: string): Promise<void>;
  /**
   * Hands the call to `to` with the carrier's `transfer` command (the pre-call gate's
   * `transfer`, before any answer); `commandId` makes a repeat harmless.
   */
  transfer(carrierCallId: string, to: string, commandId: string): Promise<void>;
}

export function createTelnyxVoice(opts: TelnyxVoiceOptions): TelnyxVoice {
  const rest: TelnyxRest = createTelnyxRest({
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
  });
  const dialTimeoutMs = opts.dialTimeoutMs ?? opts.timeoutMs ?? DEFAULT_CARRIER_TIMEOUT_MS;

  async function fetchCall(carrierCallId: string): Promise<CarrierCallInfo> {
    try {
      const call = await rest.getCall(carrierCallId);
      if (call.is_alive) return { status: 'active' };
      const endedAt = typeof call.end_time === 'string' ? Date.parse(call.end_time) : NaN;
      return Number.isFinite(endedAt) ? { status: 'unknown', endedAt } : { status: 'unknown' };
    } catch (err) {
      // The record is kept about 10 minutes after the end; then 404, and the end time is gone.
      if (err instanceof CarrierRequestError && err.status === 404) return { status: 'unknown' };
      throw err;
    }
  }

  return {
    async dial(req: DialRequest) {
      // Checked before anything is sent: a plain Error, not a dial outcome.
      if (req.eventsToken === null) throw new Error('telnyx dial needs the number events token');
      const ids = await rest.dial({
        connection_id: opts.connectionId,
        to: req.to,
        from: req.from,
        webhook_url: telnyxEventsUrl(req.publicBaseUrl, req.eventsToken),
        client_state: encodeClientState(req.callId),
        // A repeat within about 60 s returns this call instead of placing another.
        command_id: telnyxDialCommandId(req.callId),
        time_limit_secs: req.timeLimitSec,
        stream_url: telnyxMediaUrl(req.publicBaseUrl, req.mediaToken),
        stream_track: 'inbound_track',
        stream_bidirectional_mode: 'rtp',
        stream_bidirectional_codec: 'PCMU',
        ...(req.amdEnabled ? { answering_machine_detection: 'detect' as const } : {}),
      }, { timeoutMs: dialTimeoutMs }).catch((err: unknown) => {
        throw classifyDialError('telnyx', err);
      });
      return { carrierCallId: ids.call_control_id };
    },

    async hangup(carrierCallId) {
      await ignoreGone(rest.hangup(carrierCallId, { command_id: 'hangup' }), true);
    },

    async fetchStatus(carrierCallId): Promise<CarrierCallStatus> {
      return (await fetchCall(carrierCallId)).status;
    },

    fetchCall,

    /**
     * The live call of this connection whose client_state is our call id. `to`, `from`,
     * `since` and `commandId` are not used: the active-call items carry none of them, and
     * client_state (set on dial, never changed by our later commands) names the call.
     * Not listed → `{found: false, searched: 'live-calls'}`: either never placed, or placed
     * and already over; an ended call of carrier B is then known only from its call.hangup
     * webhook (which carries the same client_state), as without its call_control_id its
     * record cannot be fetched.
     */
    async findDialedCall(q: DialLookup): Promise<DialedCall> {
      const state = encodeClientState(q.callId);
      const live = await rest.listActiveCalls(opts.connectionId);
      const match = live.find((c) => c.client_state === state);
      if (!match) return { found: false, searched: 'live-calls' };
      return { found: true, carrierCallId: match.call_control_id, status: 'active' };
    },

    async answerWithStream(carrierCallId, req) {
      await ignoreGone(
        rest.answer(carrierCallId, {
          stream_url: telnyxMediaUrl(req.publicBaseUrl, req.mediaToken),
          stream_track: 'inbound_track',
          stream_bidirectional_mode: 'rtp',
          stream_bidirectional_codec: 'PCMU',
          client_state: encodeClientState(req.callId),
          command_id: `answer-${req.callId}`,
        }),
        false,
      );
    },

    async rejectBusy(carrierCallId) {
      await ignoreGone(rest.reject(carrierCallId, 'USER_BUSY'), false);
    },

    async rejectCall(carrierCallId) {
      await ignoreGone(rest.reject(carrierCallId, 'CALL_REJECTED'), false);
    },

    async transfer(carrierCallId, to, commandId) {
      await ignoreGone(rest.transfer(carrierCallId, { to, command_id: commandId }), false);
    },
  };
}

/** 422 "90018": the call has already ended. */
export const TELNYX_CALL_ENDED_CODE = '90018';

async function ignoreGone(command: Promise<void>, unknownIdToo: boolean): Promise<void> {
  try {
    await command;
  } catch (err) {
    if (!(err instanceof CarrierRequestError)) throw err;
    if (err.status === 422 && String(err.code) === TELNYX_CALL_ENDED_CODE) return;
    if (unknownIdToo && err.status === 404) return;
    throw err;
  }
}

function base(publicBaseUrl: string): string {
  return publicBaseUrl.replace(/\/+$/, '');
}

/** `${PUBLIC_BASE_URL}/carrier/telnyx/events/${token}`: every event of the number. */
export function telnyxEventsUrl(publicBaseUrl: string, eventsToken: string): string {
  return `${base(publicBaseUrl)}/carrier/telnyx/events/${encodeURIComponent(eventsToken)}`;
}

/** The media websocket URL: ws(s) follows the public base URL's http(s); the token rides in the query. */
export function telnyxMediaUrl(publicBaseUrl: string, mediaToken: string): string {
  const wsBase = base(publicBaseUrl).replace(/^http(s?):\/\//i, (_m, s: string) => `ws${s.toLowerCase()}://`);
  return `${wsBase}/carrier/telnyx/media?token=${encodeURIComponent(mediaToken)}`;
}

export function encodeClientState(callId: string): string {
  return Buffer.from(callId, 'utf8').toString('base64');
}

const INTERNAL_CALL_ID = /^call_[0-9A-Za-z]{1,64}$/;

/** The internal call id in a client_state, or null when it holds anything else. */
export function decodeClientState(clientState: string | null | undefined): string | null {
  if (typeof clientState !== 'string' || clientState === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(clientState)) return null;
  const decoded = Buffer.from(clientState, 'base64').toString('utf8');
  return INTERNAL_CALL_ID.test(decoded) ? decoded : null;
}

/**
 * `hangup_cause` → final status, as the carrier said it: a call that had been answered
 * and ends with, say, `user_busy` is still reported busy; the machine turns it into
 * completed. `time_limit` is our own time_limit_secs cutting a connected call. Causes
 * not listed count as failed.
 */
export const HANGUP_CAUSES: Readonly<Record<string, FinalCallStatus>> = {
  normal_clearing: 'completed',
  time_limit: 'completed',
  user_busy: 'busy',
  no_answer: 'no-answer',
  timeout: 'no-answer',
  call_rejected: 'failed',
  unspecified: 'failed',
  not_found: 'failed',
  originator_cancel: 'canceled',
};

/**
 * A table's own entry for a carrier-supplied word: `HANGUP_CAUSES["constructor"]` would be
 * Object itself, an event the call machine refuses, and the call's end would be lost.
 */
const ownValue = <T>(table: Readonly<Record<string, T>>, key: string): T | undefined => (Object.hasOwn(table, key) ? table[key] : undefined);

const AMD_RESULTS: Readonly<Record<string, 'human' | 'machine' | 'fax' | 'unknown'>> = {
  human: 'human',
  machine: 'machine',
  not_sure: 'unknown',
  // Premium detection (not requested by this service, tolerated if configured on the app).
  human_residence: 'human',
  human_business: 'human',
  fax_detected: 'fax',
  silence: 'unknown',
};

const envelopeSchema = z.object({
  data: z.object({
    event_type: z.string().min(1),
    payload: z.record(z.string(), z.unknown()).nullish(),
  }),
});

const callPayloadSchema = z.object({
  call_control_id: z.string().min(1),
  client_state: z.string().nullish(),
});

const incomingSchema = callPayloadSchema.extend({ from: z.string().min(1), to: z.string().min(1) });

const optionalString = z.string().nullish().catch(null);

const HANDLED = new Set([
  'call.initiated',
  'call.answered',
  'call.hangup',
  'call.machine.detection.ended',
  'call.machine.premium.detection.ended',
  // Transfers (telnyx-transfer-state.ts): the bridge, and the whisper spoken on the target's leg.
  'call.bridged',
  'call.speak.ended',
  // A key the caller pressed (the media stream may report it too; the conversation keeps one).
  'call.dtmf.received',
  // The recording record_start asked for is ready (recording_source provider).
  'call.recording.saved',
]);

const recordingSavedSchema = z.object({
  recording_urls: z.object({ mp3: z.url({ protocol: /^https?$/ }) }),
  recording_started_at: z.iso.datetime({ offset: true }).nullish(),
  recording_ended_at: z.iso.datetime({ offset: true }).nullish(),
});

const LEG_STEPS: Readonly<Record<string, TelnyxLegStep>> = {
  'call.initiated': 'initiated',
  'call.answered': 'answered',
  'call.bridged': 'bridged',
  'call.speak.ended': 'speak-ended',
  'call.hangup': 'hangup',
};

/**
 * A verified carrier B webhook body → what the service acts on. `at` is the receive time
 * (epoch ms). Events of a transfer's target leg (its client_state names the call and the
 * attempt) and the caller leg's call.bridged are `transfer` steps (telnyx-transfer-state.ts).
 */
export function parseTelnyxWebhook(rawJson: string | Uint8Array, at: number): TelnyxWebhook {
  let json: unknown;
  try {
    json = JSON.parse(typeof rawJson === 'string' ? rawJson : Buffer.from(rawJson.buffer, rawJson.byteOffset, rawJson.byteLength).toString('utf8'));
  } catch {
    return { kind: 'ignored', reason: 'malformed: body is not JSON' };
  }
  const envelope = envelopeSchema.safeParse(json);
  if (!envelope.success) return { kind: 'ignored', reason: 'malformed: not a v2 event envelope {data:{event_type,payload}}' };
  const type = envelope.data.data.event_type;
  const p = envelope.data.data.payload ?? {};

  if (type.startsWith('streaming.')) return { kind: 'ignored', reason: `${type}: the media websocket reports the stream` };
  if (!HANDLED.has(type)) return { kind: 'ignored', reason: `${type}: not acted on` };

  const call = callPayloadSchema.safeParse(p);
  if (!call.success) return { kind: 'ignored', reason: `malformed: ${type} without call_control_id` };
  const carrierCallId = call.data.call_control_id;
  const leg = decodeTransferState(call.data.client_state);
  if (leg !== null) {
    const step = ownValue(LEG_STEPS, type);
    if (step === undefined) return { kind: 'ignored', reason: `${type} of a transfer leg: not acted on` };
    const cause = type === 'call.hangup' ? (optionalString.parse(p.hangup_cause) ?? '') : null;
    return { kind: 'transfer', callId: leg.callId, attempt: leg.attempt, carrierCallId, step, cause };
  }
  const callId = decodeClientState(call.data.client_state);
  if (type === 'call.bridged') return { kind: 'transfer', callId, attempt: null, carrierCallId, step: 'bridged', cause: null };
  if (type === 'call.speak.ended') return { kind: 'ignored', reason: 'call.speak.ended of a call that is not a transfer leg' };
  const event = (e: CallEvent): CarrierWebhook => ({ kind: 'event', callId, carrierCallId, event: e });
  if (type === 'call.recording.saved') {
    const saved = recordingSavedSchema.safeParse(p);
    if (!saved.success) return { kind: 'ignored', reason: 'malformed: call.recording.saved without recording_urls.mp3' };
    const { recording_started_at: from, recording_ended_at: to } = saved.data;
    const seconds = from && to ? Math.max(0, Math.round((Date.parse(to) - Date.parse(from)) / 10) / 100) : null;
    return { kind: 'recording', callId, carrierCallId, url: saved.data.recording_urls.mp3, seconds };
  }

  switch (type) {
    case 'call.initiated': {
      const direction = optionalString.parse(p.direction);
      // Call Control has no ringing event: the outgoing leg's call.initiated (placed and
      // alerting the far end) is the carrier's counterpart of carrier A's `ringing`.
      if (direction === 'outgoing') return event({ type: 'CARRIER.RINGING', at, carrierCallId });
      if (direction !== 'incoming') return { kind: 'ignored', reason: `call.initiated ${direction ?? 'without direction'}: neither incoming nor outgoing` };
      const incoming = incomingSchema.safeParse(p);
      if (!incoming.success) return { kind: 'ignored', reason: 'malformed: incoming call.initiated without from/to' };
      return { kind: 'incoming', carrierCallId, from: incoming.data.from, to: incoming.data.to };
    }
    case 'call.answered':
      return event({ type: 'CARRIER.ANSWERED', at, carrierCallId });
    case 'call.dtmf.received': {
      const digit = (optionalString.parse(p.digit) ?? '').toUpperCase();
      return /^[0-9A-D*#]$/.test(digit) ? event({ type: 'DTMF', at, digit }) : { kind: 'ignored', reason: 'malformed: call.dtmf.received without a key' };
    }
    case 'call.hangup': {
      const cause = optionalString.parse(p.hangup_cause) ?? '';
      const source = optionalString.parse(p.hangup_source);
      return event({
        type: 'CARRIER.ENDED',
        at,
        status: ownValue(HANGUP_CAUSES, cause) ?? 'failed',
        hangupSource: source === 'caller' || source === 'callee' ? source : 'unknown',
      });
    }
    default: {
      // call.machine.detection.ended and call.machine.premium.detection.ended
      const result = optionalString.parse(p.result) ?? '';
      return event({ type: 'CARRIER.AMD', at, result: ownValue(AMD_RESULTS, result) ?? 'unknown' });
    }
  }
}
