// Carrier B (Telnyx) Call Control v2 in the simulator (carriers.md §5): `POST /v2/calls`
// dials and plays the scenario the test chose for the destination; `actions/answer`,
// `actions/reject`, `actions/hangup`, `actions/transfer` (recorded as `transferredTo`; a
// ringing call counts as answered, no far leg is simulated) and `GET /v2/calls/{id}`; inbound calls placed by
// the test. Every event goes as a v2 envelope to the call's webhook URL, signed with the
// account's Ed25519 key, one call's events strictly in order; an answered call with a
// stream_url opens the media websocket (telnyx-media-client.ts). Steps are `stepMs` apart.
//
// Scenarios (`setScenario(to, …)`), each after call.initiated (outgoing, bridging):
//   answer   call.answered, streaming.started + media websocket, then
//            call.machine.detection.ended `human` when AMD was asked; up until a hangup
//   machine  the same with AMD `machine`
//   busy     call.hangup user_busy / callee      no-answer  call.hangup timeout / unknown
//   failed   call.hangup unspecified / unknown   reject     dial answers 422 10015, no call
// Hang-ups end with streaming.stopped (when a stream was open) and call.hangup.
//   decline  call.hangup call_rejected / callee (the person refuses the call)
// Transfers: `actions/transfer` of an answered call places the far leg (its client_state
// and webhook_url from the command), which plays the scenario of `to`; answered, it is
// bridged (call.bridged on both legs). `actions/speak` records the text on the leg it was
// spoken on (`spoken`: what the person on that leg heard) and reports
// call.speak.started/ended; `actions/bridge` joins two answered legs; `actions/streaming_stop`
// closes the call's media stream (streaming.stopped). Bridged legs end together.
//
// hangup_source is the side of the call that hung up: `caller` is the party that placed
// it, `callee` the one that received it. So our `actions/hangup` is `caller` on an
// outbound call and `callee` on an inbound one; `sim.hangup(id)` (the far end) the reverse.
// Webhooks are delivered once (no retries); each delivery is recorded with its answer.
//
// The carrier's memory runs on the sim's clock (SimClock: real time plus what
// `advanceClock` added, or an injected `now`), like the real carrier's:
// - a command_id is remembered for COMMAND_ID_WINDOW_MS (60 s) from its first use: a dial
//   repeated with the same command_id within it returns the first call, after it places
//   a new one; a repeated call command within it is a no-op;
// - an ended call's record (`GET /v2/calls/{id}`) is kept RECORD_RETENTION_MS (10 min)
//   after the end, then 404 (`expire(id)` forgets one at once);
// - `GET /v2/connections/{id}/active_calls` lists the calls not yet ended, cursor-paged;
// - `GET /v2/call_events` (the carrier's "List call events", under Debugging) is its log of
//   every webhook it sent, delivered or not (a dead receiver loses the webhook, never the
//   log entry): by `filter[leg_id]` (or `filter[call_leg_id]`) or `filter[application_session_id]`
//   (or `filter[call_session_id]`), `filter[name]`, `filter[type]`; page-numbered
//   (`page[number]`, `page[size]` 1–250, default 20); without a leg or session filter, the
//   last 24 hours only.

import { simHex, simRecordingMp3, simRecordingReady } from './sim-recording.ts';
import type { FarEndAudio } from './far-end-playback.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { signTelnyx } from '../../voice/carriers/telnyx-signature.ts';
import { connectTelnyxMedia, type TelnyxMediaClient, type TelnyxMediaClientOptions } from './telnyx-media-client.ts';
import { SimClock, type SimResponse } from './sim-http.ts';
import { telnyxError, type TelnyxRoute, type TelnyxRouteContext, type TelnyxState } from './telnyx-sim.ts';

/** What happens to an outbound call to a destination (default `answer`). */
export type TelnyxScenario = 'answer' | 'busy' | 'no-answer' | 'failed' | 'machine' | 'reject' | 'decline';

export interface SimStream {
  url: string;
  track: string;
  mode: string;
  codec: string;
}

/** One call as the simulated carrier keeps it. */
export interface SimCall {
  callControlId: string;
  callLegId: string;
  callSessionId: string;
  apiKey: string;
  connectionId: string;
  direction: 'incoming' | 'outgoing';
  from: string;
  to: string;
  webhookUrl: string;
  clientState: string | null;
  status: 'ringing' | 'answered' | 'ended';
  startedAt: number;
  answeredAt: number | null;
  endedAt: number | null;
  hangupCause: string | null;
  hangupSource: 'caller' | 'callee' | 'unknown' | null;
  stream: SimStream | null;
  /** The answering_machine_detection mode asked for at dial (null: none). */
  amd: string | null;
  timeLimitSecs: number;
  /** Every command received for this call, in order (duplicates by command_id included), at sim time `at`. */
  commands: { action: string; body: Record<string, unknown>; at: number; deduplicated: boolean }[];
  webhooks: SimWebhook[];
  /** The carrier's log of this leg (`GET /v2/call_events`): every webhook it sent, when it happened, delivered or not. */
  log: SimCallEvent[];
  media: TelnyxMediaClient | null;
  /** Forgotten by the carrier (GET answers 404), as after its ~10-minute retention. */
  expired: boolean;
  /** The number a `transfer` command handed the call to (null: none). */
  transferredTo: string | null;
  /** Text the carrier spoke on this leg (`speak`), in order: what the person on it heard. */
  spoken: string[];
  /** The leg this one is bridged to (a transfer), and since when. */
  bridgedWith: string | null;
  bridgedAt: number | null;
  /** The leg a `transfer` command placed from this call. */
  transferLeg: string | null;
  /** The recording `record_start` began; its file and `call.recording.saved` come after the hang-up. */
  recording: { id: string; startedAt: number; mp3: Uint8Array | null; downloads: number } | null;
}

/** One entry of the carrier's log of a leg: a webhook it sent (or tried to). */
export interface SimCallEvent {
  name: string;
  type: 'webhook';
  /** ISO 8601, the webhook's own occurred_at. */
  occurredAt: string;
  /** Null while the delivery is under way. */
  failed: boolean | null;
}

/** One webhook delivery, recorded once the receiver answered (or failed to). */
export interface SimWebhook {
  eventType: string;
  callControlId: string;
  url: string;
  /** The exact bytes sent. */
  body: string;
  payload: Record<string, unknown>;
  headers: Record<string, string>;
  status: number | null;
  error: string | null;
}

export interface TelnyxCallHandle {
  readonly id: string;
  readonly call: SimCall;
  /** Resolves once the call.answered / call.hangup webhook of the call has been delivered. */
  waitFor(status: 'answered' | 'ended', timeoutMs?: number): Promise<SimCall>;
  /** The open media stream (after streaming.started). */
  media(timeoutMs?: number): Promise<TelnyxMediaClient>;
  /** The first delivered webhook of this type. */
  webhook(eventType: string, timeoutMs?: number): Promise<SimWebhook>;
  /** The far end hangs up; resolves once call.hangup has been delivered. */
  hangup(): Promise<void>;
  /**
   * The far end presses a key. The carrier reports it as a `call.dtmf.received` webhook
   * and, on an open media stream, as a `dtmf` stream event (`via` picks one); resolves
   * once the webhook was delivered.
   */
  pressKey(digit: string, via?: 'both' | 'event' | 'stream'): Promise<void>;
}

export interface InboundCallRequest {
  from: string;
  /** One of the account's numbers; its connection's webhook_event_url gets the events. */
  to: string;
  apiKey: string;
  /** The caller's voice on the media stream (default: the simulator's media options). */
  audio?: FarEndAudio;
}

const E164 = /^\+[1-9]\d{7,14}$/;
const STREAM_TRACKS = ['inbound_track', 'outbound_track', 'both_tracks'];
const BIDI_MODES = ['mp3', 'rtp'];
const BIDI_CODECS = ['PCMU', 'PCMA', 'G722', 'OPUS', 'AMR-WB', 'L16'];
const AMD_MODES = ['premium', 'detect', 'detect_beep', 'detect_words', 'greeting_end', 'disabled'];
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const SIP_CAUSES: Record<string, string> = {
  normal_clearing: '200',
  user_busy: '486',
  timeout: '480',
  no_answer: '480',
  call_rejected: '603',
  originator_cancel: '487',
  time_limit: '200',
  unspecified: 'unspecified',
};

const notFound = () => telnyxError(404, '10005', 'Resource not found', 'The requested resource or URL could not be found.');
const callEnded = () => telnyxError(422, '90018', 'Call has already ended', 'This call is no longer active and can\'t receive commands.');
const missing = (field: string) => telnyxError(422, '10004', 'Missing required parameter', `The '${field}' parameter is required.`, `/${field}`);
const invalid = (field: string, detail: string) => telnyxError(422, '10015', 'Bad Request', detail, `/${field}`);
const ok = (): SimResponse => ({ status: 200, body: { data: { result: 'ok' } } });

function callControlId(): string {
  return `v3:${randomBytes(36).toString('base64url')}`;
}

function optionalEnum(body: Record<string, unknown>, field: string, allowed: string[]): SimResponse | undefined {
  if (!(field in body)) return undefined;
  const v = body[field];
  return typeof v === 'string' && allowed.includes(v) ? undefined : invalid(field, `${field} must be one of ${allowed.join(', ')}.`);
}

// The stream_* parameters dial and answer share.
function checkStream(body: Record<string, unknown>): SimResponse | undefined {
  if ('stream_url' in body && (typeof body.stream_url !== 'string' || !/^wss?:\/\/[^/]+/.test(body.stream_url))) {
    return invalid('stream_url', 'stream_url must be a ws:// or wss:// URL.');
  }
  return (
    optionalEnum(body, 'stream_track', STREAM_TRACKS) ??
    optionalEnum(body, 'stream_bidirectional_mode', BIDI_MODES) ??
    optionalEnum(body, 'stream_bidirectional_codec', BIDI_CODECS)
  );
}

function checkClientState(body: Record<string, unknown>): SimResponse | undefined {
  if (!('client_state' in body) || body.client_state === null) return undefined;
  const v = body.client_state;
  return typeof v === 'string' && v !== '' && BASE64.test(v) ? undefined : invalid('client_state', 'client_state must be a valid Base-64 encoded string.');
}

function streamOf(body: Record<string, unknown>): SimStream | null {
  if (typeof body.stream_url !== 'string') return null;
  const s = (k: string, d: string) => (typeof body[k] === 'string' ? (body[k] as string) : d);
  return { url: body.stream_url, track: s('stream_track', 'inbound_track'), mode: s('stream_bidirectional_mode', 'mp3'), codec: s('stream_bidirectional_codec', 'PCMU') };
}

export interface TelnyxCallsOptions {
  /** Pause between a call's steps (ringing → answer, answer → AMD), ms. Default 20. */
  stepMs?: number;
  /** Options for the media client of every answered call (audio, frame interval). */
  media?: Pick<TelnyxMediaClientOptions, 'audio' | 'frameIntervalMs' | 'encoding'>;
  /** The carrier's clock (default: real time); a test can also move it with `advanceClock`. */
  now?: () => number;
}

/** How long the carrier remembers a command_id (its docs: about 60 s). */
export const COMMAND_ID_WINDOW_MS = 60_000;
/** How long an ended call's record answers `GET /v2/calls/{id}` (its docs: 10 minutes). */
export const RECORD_RETENTION_MS = 10 * 60_000;

export class TelnyxCalls {
  readonly calls = new Map<string, SimCall>();
  /** Every webhook delivery of every call, in delivery order. */
  readonly webhooks: SimWebhook[] = [];
  stepMs: number;
  mediaOptions: TelnyxCallsOptions['media'];

  private readonly scenarios = new Map<string, TelnyxScenario>();
  private readonly ringTimes = new Map<string, number>();
  /** The call each dial command_id placed, and when (sim time) it was first used. */
  private readonly dialsByCommand = new Map<string, { callControlId: string; at: number }>();
  readonly clock: SimClock;
  private readonly queues = new Map<string, Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly waiters = new Set<() => void>();
  private readonly redirects: [URL, URL][] = [];
  private readonly limitTimers = new Map<string, NodeJS.Timeout>();
  private closed = false;
  /** Far-end voices by call control id (inbound) and by dialed number (outbound). */
  private readonly voices = new Map<string, FarEndAudio>();
  private readonly outboundVoices = new Map<string, FarEndAudio>();

  constructor(
    private readonly state: TelnyxState,
    opts: TelnyxCallsOptions = {},
  ) {
    this.stepMs = opts.stepMs ?? 20;
    this.mediaOptions = opts.media;
    this.clock = new SimClock(opts.now);
  }

  /** Who answers outbound calls to `to` speaks with this voice on the media stream. */
  voiceFor(to: string, audio: FarEndAudio): void {
    this.outboundVoices.set(to, audio);
  }

  /** Outbound calls placed to `to` (a dial de-duplicated by command_id places none). */
  placedTo(to: string): number {
    let n = 0;
    for (const c of this.calls.values()) if (c.direction === 'outgoing' && c.to === to) n++;
    return n;
  }

  /** Outbound calls placed, by `to` number. */
  placedCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const c of this.calls.values()) if (c.direction === 'outgoing') counts.set(c.to, (counts.get(c.to) ?? 0) + 1);
    return counts;
  }

  /** Outbound calls to `to` play this scenario from now on. */
  setScenario(to: string, scenario: TelnyxScenario): void {
    this.scenarios.set(to, scenario);
  }

  /** Calls to `to` (dialed, or a transfer's far leg) ring this long before their scenario plays (default one step). */
  setRingMs(to: string, ms: number): void {
    this.ringTimes.set(to, ms);
  }

  /**
   * Deliver URLs on `publicBase`'s host to `actualBase` instead (https → http, wss → ws when
   * `actualBase` is plain http): the service's PUBLIC_BASE_URL is not where a test listens.
   * Payloads keep the original URLs.
   */
  redirect(publicBase: string, actualBase: string): void {
    // The latest redirect of a host wins: a test re-points the carrier at a restarted service.
    this.redirects.unshift([new URL(publicBase), new URL(actualBase)]);
  }

  handle(id: string): TelnyxCallHandle {
    const call = this.calls.get(id);
    if (!call) throw new Error(`telnyx sim: no call ${id}`);
    const delivered = (type: string) => call.webhooks.find((w) => w.eventType === type);
    return {
      id,
      call,
      waitFor: (status, timeoutMs) =>
        this.until(() => (delivered(status === 'answered' ? 'call.answered' : 'call.hangup') ? call : undefined), timeoutMs, `${id} ${status}`),
      media: (timeoutMs) => this.until(() => (delivered('streaming.started') && call.media ? call.media : undefined), timeoutMs, `${id} media`),
      webhook: (type, timeoutMs) => this.until(() => delivered(type), timeoutMs, `${id} ${type}`),
      hangup: async () => {
        this.farEndHangup(call);
        await this.until(() => delivered('call.hangup'), undefined, `${id} hangup`);
      },
      pressKey: async (digit, via = 'both') => {
        if (call.status !== 'answered') throw new Error(`telnyx sim: ${id} is not answered`);
        if (via !== 'event') call.media?.sendDtmf(digit);
        if (via === 'stream') return;
        const before = call.webhooks.filter((w) => w.eventType === 'call.dtmf.received').length;
        this.enqueue(call, () => this.deliver(call, 'call.dtmf.received', { digit }));
        await this.until(() => (call.webhooks.filter((w) => w.eventType === 'call.dtmf.received').length > before ? true : undefined), undefined, `${id} dtmf`);
      },
    };
  }

  /** The far end hangs up (or gives up / declines before the answer). */
  farEndHangup(call: SimCall): void {
    if (call.status === 'answered') this.end(call, 'normal_clearing', call.direction === 'outgoing' ? 'callee' : 'caller');
    else if (call.direction === 'outgoing') this.end(call, 'call_rejected', 'callee');
    else this.end(call, 'originator_cancel', 'caller');
  }

  /** Rings one of the account's numbers; resolves once call.initiated has been delivered. */
  async placeInboundCall(req: InboundCallRequest): Promise<TelnyxCallHandle> {
    const number = [...this.state.numbers.values()].find((n) => this.state.owns(req.apiKey, n) && n.phone_number === req.to);
    if (!number) throw new Error(`telnyx sim: ${req.to} is not a number of this API key`);
    const connectionId = typeof number.connection_id === 'string' ? number.connection_id : null;
    const app = connectionId === null ? undefined : this.state.callControlApplications.get(connectionId);
    if (!connectionId || !app) throw new Error(`telnyx sim: ${req.to} is on no Call Control application`);
    if (String(app.webhook_api_version) !== '2') throw new Error('telnyx sim: the application must use webhook_api_version 2');
    const call = this.create(req.apiKey, connectionId, 'incoming', req.from, req.to, String(app.webhook_event_url), null);
    if (req.audio) this.voices.set(call.callControlId, req.audio);
    call.timeLimitSecs = 14400;
    this.enqueue(call, () => this.deliver(call, 'call.initiated', { direction: 'incoming', state: 'parked', caller_id_name: req.from, calling_party_type: 'pstn' }));
    const handle = this.handle(call.callControlId);
    await handle.webhook('call.initiated');
    return handle;
  }

  /** Forgets an ended call: GET then answers 404. */
  expire(id: string): void {
    const call = this.calls.get(id);
    if (call) call.expired = true;
  }

  routes(): TelnyxRoute[] {
    return [
      { method: 'POST', pattern: /^\/v2\/calls$/, handle: (ctx) => this.dial(ctx) },
      { method: 'GET', pattern: /^\/v2\/calls\/([^/]+)$/, handle: (ctx) => this.status(ctx) },
      { method: 'GET', pattern: /^\/v2\/connections\/([^/]+)\/active_calls$/, handle: (ctx) => this.activeCalls(ctx) },
      { method: 'GET', pattern: /^\/v2\/call_events$/, handle: (ctx) => this.callEvents(ctx) },
      { method: 'POST', pattern: /^\/v2\/calls\/([^/]+)\/actions\/([^/]+)$/, handle: (ctx) => this.command(ctx) },
    ];
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    for (const t of this.limitTimers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.all([...this.calls.values()].map((c) => c.media?.stop()));
    for (const w of [...this.waiters]) w();
  }

  // --- routes -------------------------------------------------------------------

  private dial({ state, req, apiKey }: TelnyxRouteContext): SimResponse {
    const body = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return telnyxError(400, '10015', 'Bad Request', 'The request failed because it was not well-formed.');
    }
    const b = body as Record<string, unknown>;
    for (const field of ['connection_id', 'to', 'from']) if (typeof b[field] !== 'string' || b[field] === '') return missing(field);
    const connectionId = b.connection_id as string;
    if (!state.owns(apiKey, state.callControlApplications.get(connectionId))) {
      return telnyxError(422, '10017', 'Associated resource does not exist', 'The connection_id does not exist.', '/connection_id');
    }
    const to = b.to as string;
    const from = b.from as string;
    if (!E164.test(to)) return invalid('to', 'to must be a phone number in E.164 format.');
    if (!E164.test(from)) return invalid('from', 'from must be a phone number in E.164 format.');
    if (![...state.numbers.values()].some((n) => state.owns(apiKey, n) && n.phone_number === from)) {
      return invalid('from', 'from must be a number on your account.');
    }
    if ('webhook_url' in b && (typeof b.webhook_url !== 'string' || !/^https?:\/\/[^/]+/.test(b.webhook_url))) {
      return invalid('webhook_url', 'webhook_url must be an http(s) URL.');
    }
    const limit = b.time_limit_secs ?? 14400;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 30 || limit > 14400) {
      return invalid('time_limit_secs', 'time_limit_secs must be an integer between 30 and 14400.');
    }
    if ('timeout_secs' in b && (typeof b.timeout_secs !== 'number' || !Number.isInteger(b.timeout_secs) || b.timeout_secs < 1)) {
      return invalid('timeout_secs', 'timeout_secs must be a positive integer.');
    }
    const refused = checkClientState(b) ?? checkStream(b) ?? optionalEnum(b, 'answering_machine_detection', AMD_MODES);
    if (refused) return refused;

    // command_id: the same dial sent again within the window is the same call; after it, a new one.
    const commandId = typeof b.command_id === 'string' ? `${apiKey}\n${connectionId}\n${b.command_id}` : null;
    const remembered = commandId === null ? undefined : this.dialsByCommand.get(commandId);
    if (remembered && this.clock.now() - remembered.at < COMMAND_ID_WINDOW_MS) {
      const earlier = this.calls.get(remembered.callControlId);
      if (earlier) return { status: 200, body: { data: this.dialRecord(earlier) } };
    }

    const scenario = this.scenarios.get(to) ?? 'answer';
    if (scenario === 'reject') return invalid('to', 'The destination number cannot be reached.');

    const app = state.callControlApplications.get(connectionId)!;
    const webhookUrl = typeof b.webhook_url === 'string' ? b.webhook_url : String(app.webhook_event_url);
    const call = this.create(apiKey, connectionId, 'outgoing', from, to, webhookUrl, typeof b.client_state === 'string' ? b.client_state : null);
    call.stream = streamOf(b);
    call.timeLimitSecs = limit;
    call.amd = typeof b.answering_machine_detection === 'string' && b.answering_machine_detection !== 'disabled' ? b.answering_machine_detection : null;
    if (commandId !== null) this.dialsByCommand.set(commandId, { callControlId: call.callControlId, at: this.clock.now() });

    this.enqueue(call, () => this.deliver(call, 'call.initiated', { direction: 'outgoing', state: 'bridging' }));
    this.later(() => this.play(call, scenario), this.ringTimes.get(to));
    return { status: 200, body: { data: this.dialRecord(call) } };
  }

  /** True once the carrier no longer answers for an ended call (expire(), or past its retention). */
  private forgotten(call: SimCall): boolean {
    return call.expired || (call.endedAt !== null && this.clock.now() - call.endedAt >= RECORD_RETENTION_MS);
  }

  // `GET /v2/connections/{id}/active_calls`: the connection's calls not yet ended, oldest
  // first, cursor-paged (`page[limit]` 1–250, default 20; `page[after]`/`page[before]`).
  private activeCalls({ state, req, apiKey, params }: TelnyxRouteContext): SimResponse {
    const connectionId = decodeURIComponent(params[0] ?? '');
    if (!state.owns(apiKey, state.callControlApplications.get(connectionId))) return notFound();
    const q = (k: string) => {
      const v = req.query[k];
      return Array.isArray(v) ? v[0] : v;
    };
    const limitParam = q('page[limit]') ?? q('page[size]');
    const limit = limitParam === undefined ? 20 : Number(limitParam);
    if (!Number.isInteger(limit) || limit < 1 || limit > 250) return invalid('page[limit]', 'page[limit] must be an integer between 1 and 250.');
    const live = [...this.calls.values()]
      .filter((c) => c.connectionId === connectionId && c.status !== 'ended' && this.state.sameAccount(c.apiKey, apiKey))
      .sort((a, b) => a.startedAt - b.startedAt);
    const cursorOf = (c: SimCall) => `v1:${Buffer.from(c.callControlId).toString('base64url')}`;
    const indexOf = (cursor: string | undefined) => (cursor === undefined ? -1 : live.findIndex((c) => cursorOf(c) === cursor));
    const after = q('page[after]');
    const before = q('page[before]');
    let start = 0;
    if (after !== undefined) start = indexOf(after) + 1;
    else if (before !== undefined) start = Math.max(0, indexOf(before) - limit);
    // A cursor naming a call that has since ended points nowhere: the page is empty.
    if ((after !== undefined && indexOf(after) < 0) || (before !== undefined && indexOf(before) < 0)) start = live.length;
    const items = live.slice(start, start + limit);
    const base = `/v2/connections/${encodeURIComponent(connectionId)}/active_calls`;
    const first = items[0];
    const last = items.at(-1);
    const hasNext = last !== undefined && start + items.length < live.length;
    const hasPrevious = first !== undefined && start > 0;
    return {
      status: 200,
      body: {
        data: items.map((c) => ({
          call_control_id: c.callControlId,
          call_leg_id: c.callLegId,
          call_session_id: c.callSessionId,
          client_state: c.clientState,
          call_duration: Math.round((this.clock.now() - c.startedAt) / 1000),
          record_type: 'call',
        })),
        meta: {
          cursors: { after: last ? cursorOf(last) : null, before: first ? cursorOf(first) : null },
          total_items: live.length,
          ...(hasNext ? { next: `${base}?page[after]=${cursorOf(last)}&page[limit]=${limit}` } : {}),
          ...(hasPrevious ? { previous: `${base}?page[before]=${cursorOf(first)}&page[limit]=${limit}` } : {}),
        },
      },
    };
  }

  // `GET /v2/call_events`: the log entries of the account's legs, oldest first, page-numbered.
  private callEvents({ req, apiKey }: TelnyxRouteContext): SimResponse {
    const q = (k: string) => {
      const v = req.query[k];
      return Array.isArray(v) ? v[0] : v;
    };
    const size = Number(q('page[size]') ?? 20);
    const number = Number(q('page[number]') ?? 1);
    if (!Number.isInteger(size) || size < 1 || size > 250) return invalid('page[size]', 'page[size] must be an integer between 1 and 250.');
    if (!Number.isInteger(number) || number < 1) return invalid('page[number]', 'page[number] must be a positive integer.');
    const leg = q('filter[leg_id]') ?? q('filter[call_leg_id]');
    const session = q('filter[application_session_id]') ?? q('filter[call_session_id]');
    const name = q('filter[name]');
    const type = q('filter[type]');
    const since = leg === undefined && session === undefined ? this.clock.now() - 24 * 3_600_000 : -Infinity;
    const items = [...this.calls.values()]
      .filter((c) => this.state.sameAccount(c.apiKey, apiKey) && (leg === undefined || c.callLegId === leg) && (session === undefined || c.callSessionId === session))
      .flatMap((c) =>
        c.log.map((e) => ({
          record_type: 'call_event',
          call_leg_id: c.callLegId,
          call_session_id: c.callSessionId,
          event_timestamp: e.occurredAt,
          name: e.name,
          type: e.type,
          metadata: e.failed === null ? {} : { delivery_failed: e.failed },
        })),
      )
      .filter((e) => (name === undefined || e.name === name) && (type === undefined || e.type === type) && Date.parse(e.event_timestamp) >= since)
      .sort((a, b) => Date.parse(a.event_timestamp) - Date.parse(b.event_timestamp));
    return {
      status: 200,
      body: {
        data: items.slice((number - 1) * size, number * size),
        meta: { page_number: number, page_size: size, total_pages: Math.max(1, Math.ceil(items.length / size)), total_results: items.length },
      },
    };
  }

  private status({ apiKey, params }: TelnyxRouteContext): SimResponse {
    const call = this.calls.get(decodeURIComponent(params[0] ?? ''));
    if (!call || !this.state.sameAccount(call.apiKey, apiKey) || this.forgotten(call)) return notFound();
    const end = call.endedAt ?? this.clock.now();
    return {
      status: 200,
      body: {
        data: {
          record_type: 'call',
          call_control_id: call.callControlId,
          call_leg_id: call.callLegId,
          call_session_id: call.callSessionId,
          client_state: call.clientState,
          is_alive: call.status !== 'ended',
          call_duration: Math.round((end - call.startedAt) / 1000),
          start_time: new Date(call.startedAt).toISOString(),
          end_time: call.endedAt === null ? null : new Date(call.endedAt).toISOString(),
        },
      },
    };
  }

  private command({ req, apiKey, params }: TelnyxRouteContext): SimResponse {
    const call = this.calls.get(decodeURIComponent(params[0] ?? ''));
    const action = params[1] ?? '';
    if (!call || !this.state.sameAccount(call.apiKey, apiKey) || !['answer', 'reject', 'hangup', 'transfer', 'speak', 'bridge', 'streaming_stop', 'record_start'].includes(action)) return notFound();
    const raw = req.body ?? {};
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      return telnyxError(400, '10015', 'Bad Request', 'The request failed because it was not well-formed.');
    }
    const body = raw as Record<string, unknown>;
    const now = this.clock.now();
    // The window runs from the command_id's last use that was carried out.
    const carriedOut = typeof body.command_id === 'string' ? [...call.commands].reverse().find((c) => c.body.command_id === body.command_id && !c.deduplicated) : undefined;
    const repeated = carriedOut !== undefined && now - carriedOut.at < COMMAND_ID_WINDOW_MS;
    call.commands.push({ action, body, at: now, deduplicated: repeated });
    if (repeated) return ok();
    if (call.status === 'ended') return callEnded();
    const refused = checkClientState(body);
    if (refused) return refused;

    if (action === 'hangup') {
      if (call.status === 'answered') this.end(call, 'normal_clearing', call.direction === 'outgoing' ? 'caller' : 'callee');
      else if (call.direction === 'outgoing') this.end(call, 'originator_cancel', 'caller');
      else this.end(call, 'call_rejected', 'callee');
      return ok();
    }
    if (action === 'transfer') {
      // A ringing call is answered by it (the sim places no far leg for one); an answered
      // call's far leg plays the scenario of `to` and is bridged on answer.
      if (body.to === undefined) return missing('to');
      if (typeof body.to !== 'string' || !E164.test(body.to)) return invalid('to', 'to must be an E.164 number.');
      const refused = checkClientState(body);
      if (refused) return refused;
      call.transferredTo = body.to;
      if (call.status !== 'answered') this.answer(call);
      else this.transferLeg(call, body);
      return ok();
    }
    if (action === 'record_start') {
      if (call.status !== 'answered') return invalid('call_control_id', 'The call must be answered to record it.');
      if (body.format !== 'mp3' && body.format !== 'wav') return invalid('format', 'format must be mp3 or wav.');
      if (body.channels !== 'single' && body.channels !== 'dual') return invalid('channels', 'channels must be single or dual.');
      call.recording ??= { id: simHex(16), startedAt: now, mp3: null, downloads: 0 };
      return ok();
    }
    if (action === 'speak' || action === 'bridge' || action === 'streaming_stop') return this.legCommand(call, action, body);
    if (call.direction !== 'incoming') return invalid('call_control_id', `${action} applies to incoming calls only.`);
    if (call.status === 'answered') return invalid('call_control_id', 'This call has already been answered.');

    if (action === 'reject') {
      const cause = body.cause;
      if (cause === undefined) return missing('cause');
      if (cause !== 'CALL_REJECTED' && cause !== 'USER_BUSY') return invalid('cause', 'cause must be CALL_REJECTED or USER_BUSY.');
      this.end(call, cause === 'USER_BUSY' ? 'user_busy' : 'call_rejected', 'callee');
      return ok();
    }
    const badStream = checkStream(body);
    if (badStream) return badStream;
    if (typeof body.client_state === 'string') call.clientState = body.client_state;
    call.stream = streamOf(body);
    this.answer(call);
    return ok();
  }

  // --- transfers ------------------------------------------------------------------

  /** `transfer` of an answered call: the far leg rings and plays its scenario; answered, it is bridged to the call. */
  private transferLeg(call: SimCall, body: Record<string, unknown>): void {
    const to = body.to as string;
    const webhookUrl = typeof body.webhook_url === 'string' ? body.webhook_url : call.webhookUrl;
    const clientState = typeof body.client_state === 'string' ? body.client_state : call.clientState;
    const from = typeof body.from === 'string' ? body.from : call.from;
    const leg = this.create(call.apiKey, call.connectionId, 'outgoing', from, to, webhookUrl, clientState);
    call.transferLeg = leg.callControlId;
    this.enqueue(leg, () => this.deliver(leg, 'call.initiated', { direction: 'outgoing', state: 'bridging' }));
    const scenario = this.scenarios.get(to) ?? 'answer';
    this.later(() => {
      if (leg.status !== 'ringing') return;
      if (call.status === 'ended') return this.end(leg, 'originator_cancel', 'caller');
      if (scenario !== 'answer' && scenario !== 'machine') return this.play(leg, scenario === 'reject' ? 'decline' : scenario);
      this.play(leg, 'answer');
      this.bridgeLegs(call, leg);
    }, this.ringTimes.get(to));
  }

  private bridgeLegs(a: SimCall, b: SimCall): void {
    a.bridgedWith = b.callControlId;
    b.bridgedWith = a.callControlId;
    a.bridgedAt = b.bridgedAt = this.clock.now();
    this.enqueue(a, () => this.deliver(a, 'call.bridged', { to: b.to }));
    this.enqueue(b, () => this.deliver(b, 'call.bridged', { to: a.to }));
  }

  /** `speak`, `bridge`, `streaming_stop` on a live call. */
  private legCommand(call: SimCall, action: string, body: Record<string, unknown>): SimResponse {
    if (call.status !== 'answered') return telnyxError(422, '90034', 'Call not answered yet', 'This call has not been answered yet.');
    if (action === 'speak') {
      if (typeof body.payload !== 'string' || body.payload === '') return missing('payload');
      if (typeof body.voice !== 'string' || body.voice === '') return missing('voice');
      const text = body.payload;
      call.spoken.push(text);
      this.enqueue(call, () => this.deliver(call, 'call.speak.started', {}));
      // The carrier speaks for a while (about 60 ms a word here, faster than life).
      const ms = Math.min(3_000, text.split(/\s+/).length * 60);
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        if (!this.closed && call.status === 'answered') this.enqueue(call, () => this.deliver(call, 'call.speak.ended', { status: 'completed' }));
      }, ms);
      this.timers.add(timer);
      return ok();
    }
    if (action === 'bridge') {
      const other = typeof body.call_control_id === 'string' ? this.calls.get(body.call_control_id) : undefined;
      if (!other || !this.state.sameAccount(other.apiKey, call.apiKey)) return invalid('call_control_id', 'call_control_id must name a call of your account.');
      if (other.status === 'ended') return callEnded();
      if (other.status !== 'answered') return telnyxError(422, '90034', 'Call not answered yet', 'The other call has not been answered yet.');
      this.bridgeLegs(call, other);
      return ok();
    }
    // streaming_stop: the stream closes, the call goes on.
    const media = call.media;
    const stream = call.stream;
    if (media && stream) {
      // The stream is gone (the client keeps what it heard, for the tests).
      call.stream = null;
      this.enqueue(call, async () => {
        await media.stop();
        await this.deliver(call, 'streaming.stopped', { stream_url: stream.url });
      });
    }
    return ok();
  }

  // --- the call's life ----------------------------------------------------------

  private create(apiKey: string, connectionId: string, direction: SimCall['direction'], from: string, to: string, webhookUrl: string, clientState: string | null): SimCall {
    const call: SimCall = {
      callControlId: callControlId(),
      callLegId: randomUUID(),
      callSessionId: randomUUID(),
      apiKey,
      connectionId,
      direction,
      from,
      to,
      webhookUrl,
      clientState,
      status: 'ringing',
      startedAt: this.clock.now(),
      answeredAt: null,
      endedAt: null,
      hangupCause: null,
      hangupSource: null,
      stream: null,
      amd: null,
      timeLimitSecs: 14400,
      commands: [],
      webhooks: [],
      log: [],
      recording: null,
      media: null,
      expired: false,
      transferredTo: null,
      spoken: [],
      bridgedWith: null,
      bridgedAt: null,
      transferLeg: null,
    };
    this.calls.set(call.callControlId, call);
    return call;
  }

  private dialRecord(call: SimCall): Record<string, unknown> {
    return {
      record_type: 'call',
      call_control_id: call.callControlId,
      call_leg_id: call.callLegId,
      call_session_id: call.callSessionId,
      // Dialing is asynchronous: the carrier answers before the call is up.
      is_alive: false,
      client_state: call.clientState,
    };
  }

  private play(call: SimCall, scenario: TelnyxScenario): void {
    if (call.status !== 'ringing') return;
    switch (scenario) {
      case 'busy':
        return this.end(call, 'user_busy', 'callee');
      case 'no-answer':
        return this.end(call, 'timeout', 'unknown');
      case 'failed':
        return this.end(call, 'unspecified', 'unknown');
      case 'decline':
        return this.end(call, 'call_rejected', 'callee');
      default:
        this.answer(call);
        if (call.amd !== null) {
          const result = scenario === 'machine' ? 'machine' : 'human';
          this.later(() => {
            if (call.status === 'answered') this.enqueue(call, () => this.deliver(call, 'call.machine.detection.ended', { result }));
          });
        }
    }
  }

  private answer(call: SimCall): void {
    call.status = 'answered';
    call.answeredAt = this.clock.now();
    const limit = setTimeout(() => this.end(call, 'time_limit', 'unknown'), call.timeLimitSecs * 1000);
    limit.unref();
    this.limitTimers.set(call.callControlId, limit);
    this.enqueue(call, () => this.deliver(call, 'call.answered', {}));
    const stream = call.stream;
    if (!stream) return;
    this.enqueue(call, async () => {
      if (call.status !== 'answered') return;
      await this.deliver(call, 'streaming.started', { stream_url: stream.url });
      let open = false;
      const voice = this.voices.get(call.callControlId) ?? (call.direction === 'outgoing' ? this.outboundVoices.get(call.to) : undefined);
      const media = connectTelnyxMedia({
        ...this.mediaOptions,
        ...(voice ? { audio: voice } : {}),
        url: this.resolve(stream.url),
        callControlId: call.callControlId,
        callSessionId: call.callSessionId,
        from: call.from,
        to: call.to,
        clientState: call.clientState,
        onClose: (close) => {
          // The service closed the stream while the call goes on: the carrier reports it.
          if (open && close.byServer && call.status === 'answered') {
            this.enqueue(call, () => this.deliver(call, 'streaming.stopped', { stream_url: stream.url }));
          }
        },
      });
      try {
        await media.opened;
        open = true;
        call.media = media;
        this.notify();
      } catch (err) {
        await this.deliver(call, 'streaming.failed', {
          failure_reason: err instanceof Error ? err.message : String(err),
          stream_id: media.streamId,
          stream_type: 'websocket',
          stream_params: { stream_url: stream.url, track: stream.track },
        });
      }
    });
  }

  /** Ends the call at once (is_alive false); its last webhooks follow in order. */
  private end(call: SimCall, cause: string, source: 'caller' | 'callee' | 'unknown'): void {
    if (call.status === 'ended') return;
    call.status = 'ended';
    // Bridged legs end together: the other side hears the hang-up.
    const partner = call.bridgedWith === null ? undefined : this.calls.get(call.bridgedWith);
    if (partner && partner.status !== 'ended') queueMicrotask(() => this.end(partner, 'normal_clearing', 'unknown'));
    call.endedAt = this.clock.now();
    call.hangupCause = cause;
    call.hangupSource = source;
    const limit = this.limitTimers.get(call.callControlId);
    if (limit) clearTimeout(limit);
    this.notify();
    this.enqueue(call, async () => {
      if (call.media && call.stream) {
        const close = await call.media.stop();
        // A stream the service had already closed was reported then.
        if (!close.byServer) await this.deliver(call, 'streaming.stopped', { stream_url: call.stream.url });
      }
      await this.deliver(call, 'call.hangup', {
        end_time: new Date(call.endedAt!).toISOString(),
        hangup_cause: cause,
        hangup_source: source,
        sip_hangup_cause: SIP_CAUSES[cause] ?? 'unspecified',
      });
      const rec = call.recording;
      if (rec && rec.mp3 === null) {
        const seconds = Math.max(1, Math.round((call.endedAt! - rec.startedAt) / 1000));
        rec.mp3 = await simRecordingMp3(call.media?.audio ?? [], seconds);
        await simRecordingReady();
        await this.deliver(call, 'call.recording.saved', {
          recording_id: rec.id,
          channels: 'single',
          format: 'mp3',
          recording_started_at: new Date(rec.startedAt).toISOString(),
          recording_ended_at: new Date(call.endedAt!).toISOString(),
          recording_urls: { mp3: `${this.recordingBase || this.apiBase}/sim-recordings/${rec.id}.mp3` },
          public_recording_urls: {},
        });
      }
    });
  }

  /** The sim's own base URL (set once it listens). */
  apiBase = '';
  /**
   * Where recording links point: the carrier's file host (an https server of the sim's,
   * like the real carrier's pre-signed bucket links), or the API base when the sim was
   * started without a certificate for it (the service then refuses the http link).
   */
  recordingBase = '';

  /** A recording's file by its pre-signed link (no API key). */
  recordingFile(id: string): SimResponse {
    for (const call of this.calls.values()) {
      const rec = call.recording;
      if (rec && rec.id === id && rec.mp3 !== null) {
        rec.downloads++;
        return { status: 200, body: rec.mp3, headers: { 'content-type': 'audio/mpeg' } };
      }
    }
    return { status: 404, body: '<Error><Code>NoSuchKey</Code></Error>', headers: { 'content-type': 'application/xml' } };
  }

  private async deliver(call: SimCall, eventType: string, extra: Record<string, unknown>): Promise<void> {
    if (this.closed) return;
    const keys = this.state.keyPairs.get(call.apiKey);
    if (!keys) throw new Error('telnyx sim: API key without a signing key');
    const payload = {
      call_control_id: call.callControlId,
      call_leg_id: call.callLegId,
      call_session_id: call.callSessionId,
      connection_id: call.connectionId,
      client_state: call.clientState,
      from: call.from,
      to: call.to,
      start_time: new Date(call.startedAt).toISOString(),
      ...extra,
    };
    const occurredAt = new Date().toISOString();
    const body = JSON.stringify({
      data: { record_type: 'event', event_type: eventType, id: randomUUID(), occurred_at: occurredAt, payload },
      meta: { attempt: 1, delivered_to: call.webhookUrl },
    });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'telnyx-webhooks',
      'telnyx-timestamp': timestamp,
      'telnyx-signature-ed25519': signTelnyx(keys.privateKey, body, timestamp),
    };
    const record: SimWebhook = { eventType, callControlId: call.callControlId, url: call.webhookUrl, body, payload, headers, status: null, error: null };
    // Logged as it happens: the carrier's log keeps a webhook its receiver never got.
    const logged: SimCallEvent = { name: eventType, type: 'webhook', occurredAt, failed: null };
    call.log.push(logged);
    try {
      const res = await fetch(this.resolve(call.webhookUrl), { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(5000) });
      record.status = res.status;
      await res.arrayBuffer();
    } catch (err) {
      record.error = err instanceof Error ? err.message : String(err);
    }
    logged.failed = record.status === null || record.status < 200 || record.status > 299;
    call.webhooks.push(record);
    this.webhooks.push(record);
    this.notify();
  }

  private resolve(url: string): string {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return url;
    }
    for (const [from, to] of this.redirects) {
      if (u.host !== from.host) continue;
      const secure = to.protocol === 'https:';
      u.protocol = u.protocol === 'ws:' || u.protocol === 'wss:' ? (secure ? 'wss:' : 'ws:') : to.protocol;
      u.host = to.host;
      return u.toString();
    }
    return url;
  }

  // One call's steps run one after another, so its webhooks arrive in order.
  private enqueue(call: SimCall, step: () => Promise<void>): void {
    const prev = this.queues.get(call.callControlId) ?? Promise.resolve();
    const next = prev.then(step).catch((err: unknown) => {
      // A sim bug must not vanish: surface it as a failed delivery record.
      const record: SimWebhook = { eventType: 'sim.error', callControlId: call.callControlId, url: '', body: '', payload: {}, headers: {}, status: null, error: String(err) };
      call.webhooks.push(record);
      this.webhooks.push(record);
      this.notify();
    });
    this.queues.set(call.callControlId, next);
  }

  private later(step: () => void, ms = this.stepMs): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.closed) step();
    }, ms);
    this.timers.add(timer);
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  until<T>(check: () => T | undefined, timeoutMs = 5000, what = 'condition'): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = (fn: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        fn();
      };
      const waiter = () => {
        const value = check();
        if (value !== undefined) done(() => resolve(value));
        else if (this.closed) done(() => reject(new Error(`telnyx sim closed while waiting for ${what}`)));
      };
      const timer = setTimeout(() => done(() => reject(new Error(`telnyx sim: timed out waiting for ${what}`))), timeoutMs);
      this.waiters.add(waiter);
      waiter();
    });
  }
}
