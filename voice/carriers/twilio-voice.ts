// Carrier A (Twilio) voice: the CarrierVoice the call actors use (dial, hang up, ask),
// and `parseTwilioWebhook`, which turns the carrier's voice/status/AMD webhooks into
// what the service acts on. For the `/carrier/twilio/*` endpoints:
//   1. rebuild the URL the carrier requested as PUBLIC_BASE_URL + path + `?` + query
//      and check `verifyTwilio(authToken, url, form, X-Twilio-Signature)` (twilio-signature.ts)
//      with the token of the number's account: the number `To` of AccountSid for an
//      incoming call, the call's own number for `?cid=` (403 `invalid_signature` otherwise);
//   2. `parseTwilioWebhook(kind, form, query, clock())`: `incoming` → route the call and
//      answer TwiML from twiml.ts; `event` → send `event` to the actor of `callId` (from
//      `?cid=`) or, when null (an inbound call's status callback), of `carrierCallId`;
//      `ignored` → 200. A signed body missing what carrier A always sends throws
//      TwilioWebhookError (answer 400, it names the field).
// Every URL we give the carrier carries `?cid=<internal call id>` (docs/design/calls.md).
//
// Dial outcomes (errors.ts): a 4xx (401/403 included) or a connection refused before
// sending is DialRejected; a timeout, a connection lost after sending, a 5xx or an
// unreadable 201 is DialOutcomeUnknown. Carrier A has no idempotency key for creating
// calls, so an unknown dial is reconciled with findDialedCall: the Calls list filtered
// by To, From and start day, then narrowed to calls created at or after the dial.

import { z } from 'zod';
import { callEventSchema, type CallEvent, type FinalCallStatus } from '../../machines/call-events.ts';
import { DEFAULT_CARRIER_TIMEOUT_MS } from './carrier-http.ts';
import { CarrierRequestError, classifyDialError } from './errors.ts';
import { createTwilioRest, type TwilioCall, type TwilioCallEvent, type TwilioRestOptions } from './twilio-rest.ts';
import type { TwilioParams } from './twilio-signature.ts';
import type { CarrierCallInfo, CarrierCallStatus, CarrierVoice, CarrierWebhook, DialedCall, DialLookup } from './voice.ts';

export interface TwilioVoiceOptions extends TwilioRestOptions {
  /** Deadline of the dial request, ms (default `timeoutMs`, else 10 s); past it the outcome is unknown. */
  dialTimeoutMs?: number;
}

/**
 * How far before `since` a call's `date_created` may lie and still be the dial's: the
 * carrier writes it to the second (truncated) and its clock is not ours.
 */
export const TWILIO_LOOKUP_SLACK_MS = 5_000;

/** Status callbacks asked for on every outbound call; `completed` carries the final status. */
const CALL_EVENTS: readonly TwilioCallEvent[] = ['initiated', 'ringing', 'answered', 'completed'];

export function createTwilioVoice(opts: TwilioVoiceOptions): CarrierVoice {
  const rest = createTwilioRest(opts);
  const dialTimeoutMs = opts.dialTimeoutMs ?? opts.timeoutMs ?? DEFAULT_CARRIER_TIMEOUT_MS;

  async function fetchCall(carrierCallId: string): Promise<CarrierCallInfo> {
    try {
      return callInfo(await rest.fetchCall(carrierCallId));
    } catch (err) {
      // The carrier keeps call records; a missing one is not evidence of how it ended.
      if (isGone(err)) return { status: 'unknown' };
      throw err;
    }
  }

  return {
    async dial(req) {
      const base = req.publicBaseUrl.replace(/\/+$/, '');
      const cid = `cid=${encodeURIComponent(req.callId)}`;
      const call = await rest.createCall({
        To: req.to,
        From: req.from,
        Url: `${base}/carrier/twilio/voice?${cid}`,
        StatusCallback: `${base}/carrier/twilio/status?${cid}`,
        StatusCallbackEvent: CALL_EVENTS,
        TimeLimit: req.timeLimitSec,
        // Async AMD keeps the call flowing while detection runs; the result is a separate webhook.
        ...(req.amdEnabled
          ? { MachineDetection: 'Enable' as const, AsyncAmd: true, AsyncAmdStatusCallback: `${base}/carrier/twilio/amd?${cid}` }
          : {}),
      }, { timeoutMs: dialTimeoutMs }).catch((err: unknown) => {
        throw classifyDialError('twilio', err);
      });
      return { carrierCallId: call.sid };
    },

    async hangup(carrierCallId) {
      try {
        // `completed` ends an answered call and cancels one still ringing.
        await rest.updateCall(carrierCallId, { Status: 'completed' });
      } catch (err) {
        if (isGone(err)) return;
        throw err;
      }
    },

    async fetchStatus(carrierCallId) {
      return (await fetchCall(carrierCallId)).status;
    },

    fetchCall,

    async findDialedCall(q: DialLookup): Promise<DialedCall> {
      const earliest = q.since - TWILIO_LOOKUP_SLACK_MS;
      // `StartTime>=` is a UTC day and skips calls the carrier has not dialed yet (no
      // start_time while queued behind the account's calls-per-second limit), so the
      // queued ones are asked for separately.
      const [started, queued] = await Promise.all([
        rest.listCalls({ To: q.to, From: q.from, StartedOnOrAfter: new Date(earliest).toISOString().slice(0, 10) }),
        rest.listCalls({ To: q.to, From: q.from, Status: 'queued' }),
      ]);
      const exclude = new Set(q.exclude ?? []);
      const bySid = new Map<string, { call: TwilioCall; created: number; age: number }>();
      // `age`: position in its list, which comes newest first; it orders calls of one second.
      for (const [age, call] of [...started.entries(), ...queued.entries()]) {
        const created = Date.parse(call.date_created ?? '');
        if (bySid.has(call.sid) || exclude.has(call.sid) || !Number.isFinite(created) || created < earliest) continue;
        // Our dials are `outbound-api` calls from our number to theirs; the list filters match loosely.
        if (call.direction !== 'outbound-api' || call.to !== q.to || call.from !== q.from) continue;
        bySid.set(call.sid, { call, created, age });
      }
      // The resource does not show the callback URL that carries our `cid`, so the call is
      // recognised by time: the earliest one created in or after the second of the dial;
      // failing that (the carrier's clock behind ours), the latest one in the slack before it.
      // Two dials from one number to one number within the same second cannot be told
      // apart by the carrier's records (whole seconds): pass the other's id in `exclude`.
      const candidates = [...bySid.values()].sort((a, b) => a.created - b.created || b.age - a.age);
      const second = Math.floor(q.since / 1000) * 1000;
      const pick = candidates.find((c) => c.created >= second) ?? candidates.at(-1);
      if (!pick) return { found: false, searched: 'all-calls' };
      return { found: true, carrierCallId: pick.call.sid, ...callInfo(pick.call) };
    },
  };
}

/** A Call resource as CarrierCallInfo: end time (RFC 2822) and connected seconds once it is over. */
function callInfo(call: TwilioCall): CarrierCallInfo {
  const status = resourceStatus(call.status);
  const info: CarrierCallInfo = { status };
  if (status === 'active') return info;
  const endedAt = typeof call.end_time === 'string' ? Date.parse(call.end_time) : NaN;
  if (Number.isFinite(endedAt)) info.endedAt = endedAt;
  if (typeof call.duration === 'string' && /^\d+$/.test(call.duration)) info.durationSec = Number(call.duration);
  return info;
}

/** Carrier A's "no such resource": the call is over and gone (carriers.md §1). */
function isGone(err: unknown): boolean {
  return err instanceof CarrierRequestError && err.status === 404 && Number(err.code) === 20404;
}

const FINAL: ReadonlySet<string> = new Set<FinalCallStatus>(['completed', 'busy', 'no-answer', 'failed', 'canceled']);

function resourceStatus(status: string): CarrierCallStatus {
  if (status === 'queued' || status === 'ringing' || status === 'in-progress') return 'active';
  return FINAL.has(status) ? (status as FinalCallStatus) : 'unknown';
}

/** A signed webhook body without what carrier A always sends; `field` names the parameter. */
export class TwilioWebhookError extends Error {
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.name = 'TwilioWebhookError';
    this.field = field;
  }
}

export type TwilioWebhookKind = 'voice' | 'status' | 'amd';

const nonEmpty = z.string().min(1);
const callSid = z.object({ CallSid: nonEmpty });
const voiceForm = callSid.extend({ From: z.string(), To: z.string(), Direction: nonEmpty, CallStatus: z.string().optional() });
const statusForm = callSid.extend({ CallStatus: nonEmpty, CallDuration: z.string().optional() });
const amdForm = callSid.extend({ AnsweredBy: nonEmpty });

/**
 * Turns a carrier A webhook into a CarrierWebhook. `form` is the form body (repeated
 * keys: the first value counts), `query` the URL's query (`cid`), `at` the receive time
 * (epoch ms) that every event carries.
 * - voice: `Direction=inbound` without `cid` → `incoming`; with `cid` (the TwiML fetch
 *   of an answered outbound call) → the event of its CallStatus, normally ANSWERED.
 * - status: ringing → CARRIER.RINGING; in-progress/answered → CARRIER.ANSWERED;
 *   completed/busy/no-answer/failed/canceled → CARRIER.ENDED with `durationSec` from
 *   CallDuration (carrier A never says who hung up); queued/initiated → ignored.
 * - amd: AnsweredBy human → human; machine_start, machine_end_* → machine; fax → fax;
 *   anything else → unknown.
 */
export function parseTwilioWebhook(kind: TwilioWebhookKind, form: TwilioParams, query: TwilioParams, at: number): CarrierWebhook {
  const fields = firstValues(form);
  const callId = firstValues(query).cid || null;

  if (kind === 'voice') {
    const v = parse(voiceForm, fields);
    if (callId === null) {
      if (v.Direction !== 'inbound') return { kind: 'ignored', reason: `voice webhook of a ${v.Direction} call without cid` };
      return { kind: 'incoming', carrierCallId: v.CallSid, from: v.From, to: v.To };
    }
    return progress(callId, v.CallSid, v.CallStatus ?? 'in-progress', undefined, at);
  }
  if (kind === 'status') {
    const s = parse(statusForm, fields);
    return progress(callId, s.CallSid, s.CallStatus, s.CallDuration, at);
  }
  const a = parse(amdForm, fields);
  return event(callId, a.CallSid, { type: 'CARRIER.AMD', at, result: amdResult(a.AnsweredBy) });
}

function progress(callId: string | null, sid: string, status: string, duration: string | undefined, at: number): CarrierWebhook {
  switch (status) {
    case 'ringing':
      return event(callId, sid, { type: 'CARRIER.RINGING', at, carrierCallId: sid });
    case 'in-progress':
    case 'answered':
      return event(callId, sid, { type: 'CARRIER.ANSWERED', at, carrierCallId: sid });
    case 'completed':
    case 'busy':
    case 'no-answer':
    case 'failed':
    case 'canceled': {
      const durationSec = duration !== undefined && /^\d+$/.test(duration) ? Number(duration) : undefined;
      return event(callId, sid, { type: 'CARRIER.ENDED', at, status, ...(durationSec === undefined ? {} : { durationSec }) });
    }
    default:
      // queued and initiated say nothing the actor does not know; unknown statuses are tolerated.
      return { kind: 'ignored', reason: `call status ${status}` };
  }
}

function amdResult(answeredBy: string): 'human' | 'machine' | 'fax' | 'unknown' {
  if (answeredBy === 'human' || answeredBy === 'fax') return answeredBy;
  return answeredBy.startsWith('machine_') ? 'machine' : 'unknown';
}

function event(callId: string | null, carrierCallId: string, e: CallEvent): CarrierWebhook {
  // The union is the contract with the actor: a shape it would reject is a bug here, not input.
  return { kind: 'event', callId, carrierCallId, event: callEventSchema.parse(e) };
}

function parse<T>(schema: z.ZodType<T>, fields: Record<string, string>): T {
  const result = schema.safeParse(fields);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = String(issue?.path[0] ?? 'body');
  throw new TwilioWebhookError(field, `carrier A webhook: ${field} is missing or empty`);
}

function firstValues(params: TwilioParams): Record<string, string> {
  const out: Record<string, string> = {};
  const entries: Iterable<[string, string | readonly string[] | undefined]> =
    params instanceof URLSearchParams ? params : Object.entries(params);
  for (const [key, value] of entries) {
    if (key in out || value === undefined) continue;
    const first = typeof value === 'string' ? value : value[0];
    if (first !== undefined) out[key] = first;
  }
  return out;
}
