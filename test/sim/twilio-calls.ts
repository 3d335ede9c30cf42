// Carrier A's calls in the simulator (carriers.md §1–§4). `POST …/Calls.json` creates a
// call and plays, in the background, the scenario the test chose for its `To` number;
// the sim then behaves as the carrier does: signed, form-encoded status callbacks for
// the events asked for, the TwiML fetch of `Url` on answer, async AMD, and the media
// stream of `<Connect><Stream>` (twilio-media-client.ts). `…/Calls/{Sid}.json` fetches
// and updates (hang up, cancel, new TwiML); `GET …/Calls.json` lists them with the
// carrier's filters (To, From, Status, StartTime with `>`/`<`, EndTime likewise), newest
// first. Inbound calls start with `placeInboundCall`. Webhooks go out through
// twilio-webhooks.ts (signing, mapping to loopback). `<Dial><Number>` (a transfer) places
// a child leg (`outbound-dial`, ParentCallSid) that plays the scenario set for its number
// (`decline`: the person refuses, reported busy), with `<Number statusCallback>`,
// `<Number url>` (the whisper: `<Say>` heard by the answerer only) and `<Dial action>`;
// each call's `dials` records what the caller and the answerer heard, and the bridge.
//
// Times on the Call resource come from the sim's clock (SimClock: real time plus what
// `advanceClock` added). `start_time` is when the carrier dialed the call (the
// `initiated` step), null while it is still queued, as the carrier documents it;
// `end_time` and `duration` (connected seconds) are set once it ends.

import { simHex, simRecordingMp3, simRecordingReady } from './sim-recording.ts';
import type { FarEndAudio } from './far-end-playback.ts';
import { SimClock, type SimResponse } from './sim-http.ts';
import { connectTwilioMedia, type TwilioMediaClient } from './twilio-media-client.ts';
import { page, rfc2822, twilioError, twilioSid, type TwilioRoute, type TwilioRouteContext, type TwilioSimForm, type TwilioState } from './twilio-sim.ts';
import { TwilioWebhookSender, type TwilioSimWebhook } from './twilio-webhooks.ts';
import { readTwiml, type TwimlNode } from './twiml-reader.ts';

export type { TwilioSimWebhook } from './twilio-webhooks.ts';

export type TwilioScenarioName = 'answer' | 'busy' | 'no-answer' | 'failed' | 'machine' | 'reject' | 'decline';

/** What happens to a call placed to a given number. */
export interface TwilioScenario {
  name: TwilioScenarioName;
  /** `reject`: the refusal of the create request (default 400, code 21211 invalid 'To'). */
  status?: number;
  code?: number;
  message?: string;
  /** `answer`/`machine`: the far end's voice, 8 kHz μ-law played in a loop (default a 440 Hz tone). */
  audio?: FarEndAudio;
  /** How long it rings before the answer or the no-answer (default one step). */
  ringMs?: number;
}

export type TwilioSimCallStatus = 'queued' | 'ringing' | 'in-progress' | 'completed' | 'busy' | 'failed' | 'no-answer' | 'canceled';

/**
 * One `<Dial><Number>` a call ran (a transfer): the child leg it placed, what the person
 * who answered heard before the bridge (the `<Say>` of `<Number url>`), and what the caller
 * heard meanwhile: the carrier's ringback, from the dial's start until the bridge or the end.
 */
export interface TwilioSimDial {
  readonly to: string;
  readonly childSid: string;
  readonly startedAt: number;
  /** `ringback` while the number rings and the whisper plays; `bridged` once the two talk; `over` after. */
  readonly callerHears: 'ringback' | 'bridged' | 'over';
  /** Text the answerer heard from `<Number url>` (`<Say>`), in order; the caller never hears it. */
  readonly whisper: string[];
  readonly answeredAt: number | null;
  readonly bridgedAt: number | null;
  /** DialCallStatus, once the dial ended. */
  readonly dialCallStatus: string | null;
}

/** A recording started on a call (`POST …/Calls/{Sid}/Recordings.json`). */
export interface TwilioSimRecording {
  readonly sid: string;
  readonly callSid: string;
  readonly statusCallback: string | null;
  readonly startedAt: number;
  status: 'in-progress' | 'completed';
  /** The file, once the call ended. */
  mp3: Uint8Array | null;
  durationSec: number;
  /** GETs of the file with the account's credentials. */
  downloads: number;
}

export interface TwilioSimCall {
  readonly sid: string;
  readonly accountSid: string;
  readonly direction: 'outbound-api' | 'inbound' | 'outbound-dial';
  readonly from: string;
  readonly to: string;
  readonly status: TwilioSimCallStatus;
  /** The AMD result once known (human, machine_start, …). */
  readonly answeredBy: string | null;
  readonly createdAt: number;
  /** When the carrier dialed it (`initiated`); null while queued. The resource's `start_time`. */
  readonly startedAt: number | null;
  readonly answeredAt: number | null;
  readonly endedAt: number | null;
  /** The create request's form (outbound). */
  readonly params: TwilioSimForm;
  /** The call whose `<Dial>` placed this one (direction `outbound-dial`); null otherwise. */
  readonly parentSid: string | null;
  /** Every `<Dial>` this call ran, in order. */
  readonly dials: TwilioSimDial[];
  /** Every TwiML document the call ran, in order. */
  readonly twiml: string[];
  /** The latest media stream (kept after it closed, for its recordings). */
  readonly stream: TwilioMediaClient | null;
  readonly streams: TwilioMediaClient[];
  readonly webhooks: TwilioSimWebhook[];
  /** Recordings the service started on the call. */
  readonly recordings: TwilioSimRecording[];
  /** Resolves with the final status once the final status callback (if any) was answered. */
  readonly ended: Promise<TwilioSimCallStatus>;
}

/** A call from the far end to one of the account's numbers, as placeInboundCall leaves it. */
export interface TwilioInboundCall {
  readonly callSid: string;
  readonly call: TwilioSimCall;
  /** The answer to the incoming-call webhook: HTTP status (null if it failed) and body. */
  readonly httpStatus: number | null;
  readonly twiml: string | null;
  readonly stream: TwilioMediaClient | null;
  /** The audio the service played to the caller so far. */
  receivedAudio(): Uint8Array;
  sendDtmf(digit: string): void;
  /** The caller hangs up; resolves with the final status. */
  hangup(): Promise<TwilioSimCallStatus>;
  readonly ended: Promise<TwilioSimCallStatus>;
}

export interface TwilioCallsOptions {
  /** Milliseconds between the steps of a scenario (initiated → ringing → answered …). Default 20. */
  stepMs?: number;
  /** Milliseconds between media frames sent on a stream. Default 20 (real time). */
  frameIntervalMs?: number;
  /** The carrier's clock (default: real time); a test can also move it with `advanceClock`. */
  now?: () => number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

type LiveDial = Mutable<TwilioSimDial>;

interface LiveCall extends Mutable<TwilioSimCall> {
  dials: LiveDial[];
  statusCallback: string | null;
  events: Set<string>;
  audio: FarEndAudio | undefined;
  seq: number;
  /** Webhooks of one call go out one after the other, so SequenceNumber order is send order. */
  chain: Promise<unknown>;
  /** Bumped whenever the running TwiML is replaced or the call ends: older runs stop. */
  generation: number;
  finished: boolean;
  abort: AbortController;
  timeLimit: NodeJS.Timeout | null;
  resolveEnded(status: TwilioSimCallStatus): void;
  /** Wakes placeInboundCall: the TwiML reached a stream, a waiting verb, or the end. */
  settle(): void;
}

const E164 = /^\+[1-9]\d{6,14}$/;
const CALL_EVENTS = new Set(['initiated', 'ringing', 'answered', 'completed']);
const SIP_CODE: Record<string, string> = { completed: '200', busy: '486', 'no-answer': '487', canceled: '487', failed: '500' };

export class TwilioCalls {
  readonly calls = new Map<string, TwilioSimCall>();
  /** Background failures (a webhook that could not be delivered, a stream refused, bad TwiML). */
  readonly errors: string[] = [];
  private readonly live = new Map<string, LiveCall>();
  private readonly scenarios = new Map<string, TwilioScenario>();
  private readonly closing = new AbortController();
  private readonly sender = new TwilioWebhookSender(this.closing.signal);
  /** Every webhook sent, in order. */
  readonly webhooks: TwilioSimWebhook[] = this.sender.sent;
  private readonly stepMs: number;
  private readonly frameIntervalMs: number;
  readonly clock: SimClock;

  constructor(
    private readonly state: TwilioState,
    opts: TwilioCallsOptions = {},
  ) {
    this.stepMs = opts.stepMs ?? 20;
    this.frameIntervalMs = opts.frameIntervalMs ?? 20;
    this.clock = new SimClock(opts.now);
  }

  /** Outbound calls placed to `to` (each created call counts once, however it ended). */
  placedTo(to: string): number {
    let n = 0;
    for (const c of this.calls.values()) if (c.direction === 'outbound-api' && c.to === to) n++;
    return n;
  }

  /** Outbound calls placed, by `To` number. */
  placedCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const c of this.calls.values()) if (c.direction === 'outbound-api') counts.set(c.to, (counts.get(c.to) ?? 0) + 1);
    return counts;
  }

  /** Calls placed to `to` from now on play this scenario (default `answer`). */
  scenario(to: string, scenario: TwilioScenarioName | TwilioScenario): void {
    this.scenarios.set(to, typeof scenario === 'string' ? { name: scenario } : scenario);
  }

  /**
   * Delivers webhooks and media for URLs under `publicBaseUrl` (e.g.
   * https://switchboard.test) to `localBaseUrl` (e.g. http://127.0.0.1:4321); wss:// URLs
   * follow as ws:// (or wss:// for an https local base). Signatures still cover the public URL.
   */
  route(publicBaseUrl: string, localBaseUrl: string): void {
    this.sender.route(publicBaseUrl, localBaseUrl);
  }

  /** The far end hangs up: the stream stops, then the final status callback goes out. */
  async hangup(callSid: string): Promise<TwilioSimCallStatus> {
    const call = this.live.get(callSid);
    if (!call) throw new Error(`twilio sim: no call ${callSid}`);
    this.finish(call, call.answeredAt === null ? 'canceled' : 'completed');
    return call.ended;
  }

  /**
   * Rings one of the account's numbers: posts the signed incoming-call webhook to its
   * voice_url and follows the TwiML. Resolves once the TwiML opened its stream (or ended
   * the call, or reached a verb that waits).
   */
  async placeInboundCall(opts: { from: string; to: string; accountSid?: string; audio?: FarEndAudio }): Promise<TwilioInboundCall> {
    const number = [...this.state.numbers.values()].find(
      (n) => n.phone_number === opts.to && (opts.accountSid === undefined || n.account_sid === opts.accountSid),
    );
    if (!number) throw new Error(`twilio sim: no number ${opts.to}`);
    if (!number.voice_url) throw new Error(`twilio sim: number ${opts.to} has no voice_url`);
    const call = this.newCall({
      accountSid: number.account_sid,
      direction: 'inbound',
      from: opts.from,
      to: opts.to,
      params: {},
      // A number's status callback reports the end of its calls only.
      statusCallback: number.status_callback || null,
      events: new Set(['completed']),
      audio: opts.audio,
    });
    call.status = 'ringing';
    call.startedAt = call.createdAt;
    const settled = new Promise<void>((resolve) => (call.settle = resolve));
    this.background(call, this.runTwiml(call, { url: number.voice_url }, ++call.generation));
    await settled;
    const voice = call.webhooks.find((w) => w.kind === 'voice');
    return {
      callSid: call.sid,
      call,
      httpStatus: voice?.status ?? null,
      twiml: call.twiml[0] ?? null,
      get stream() {
        return call.stream;
      },
      receivedAudio: () => call.stream?.receivedAudio() ?? new Uint8Array(0),
      sendDtmf: (digit) => call.stream?.sendDtmf(digit),
      hangup: () => this.hangup(call.sid),
      ended: call.ended,
    };
  }

  /** The REST routes of calls, below /2010-04-01/Accounts/{AccountSid}. */
  routes(): TwilioRoute[] {
    return [
      { method: 'POST', pattern: /^\/Calls\.json$/, handle: ({ req, accountSid }) => this.create(accountSid, req.body) },
      { method: 'GET', pattern: /^\/Calls\.json$/, handle: ({ req, accountSid }) => this.list(accountSid, req) },
      {
        method: 'GET',
        pattern: /^\/Calls\/(CA[0-9a-fA-F]{32})\.json$/,
        handle: ({ req, accountSid, params }) => {
          const call = this.live.get(params[0] ?? '');
          return call && call.accountSid === accountSid ? { status: 200, body: renderCall(call) } : notFound(req.path);
        },
      },
      {
        method: 'POST',
        pattern: /^\/Calls\/(CA[0-9a-fA-F]{32})\.json$/,
        handle: ({ req, accountSid, params }) => this.update(accountSid, params[0] ?? '', req.path, req.body),
      },
      {
        method: 'POST',
        pattern: /^\/Calls\/(CA[0-9a-fA-F]{32})\/Recordings\.json$/,
        handle: ({ req, accountSid, params }) => this.startRecording(accountSid, params[0] ?? '', req.path, req.body),
      },
      {
        method: 'GET',
        pattern: /^\/Recordings\/(RE[0-9a-fA-F]{32})\.mp3$/,
        handle: ({ req, accountSid, params }) => {
          const rec = this.recordingsBySid.get(params[0] ?? '');
          const call = rec ? this.live.get(rec.callSid) : undefined;
          if (!rec || !call || call.accountSid !== accountSid || rec.mp3 === null) return notFound(req.path);
          rec.downloads++;
          return { status: 200, body: rec.mp3, headers: { 'content-type': 'audio/mpeg' } };
        },
      },
    ];
  }

  /** Carrier A records a live call on request; the file and its status callback come when the call ends. */
  private readonly recordingsBySid = new Map<string, TwilioSimRecording>();

  private startRecording(accountSid: string, sid: string, path: string, form: TwilioSimForm): SimResponse {
    const call = this.live.get(sid);
    if (!call || call.accountSid !== accountSid || call.finished) return notFound(path);
    if (call.answeredAt === null) return twilioError(400, 21220, 'Call is not in-progress. Cannot start a recording.');
    const rec: TwilioSimRecording = {
      sid: `RE${simHex(16)}`,
      callSid: sid,
      statusCallback: first(form.RecordingStatusCallback) ?? null,
      startedAt: this.clock.now(),
      status: 'in-progress',
      mp3: null,
      durationSec: 0,
      downloads: 0,
    };
    call.recordings.push(rec);
    this.recordingsBySid.set(rec.sid, rec);
    return { status: 201, body: { sid: rec.sid, call_sid: sid, account_sid: accountSid, status: 'in-progress', channels: 1, source: 'StartCallRecordingAPI' } };
  }

  /** After the call ended: each recording's file, then its status callback (signed like every webhook). */
  private async finishRecordings(call: LiveCall): Promise<void> {
    for (const rec of call.recordings) {
      if (rec.status === 'completed') continue;
      rec.durationSec = Math.max(1, Math.round(((call.endedAt ?? this.clock.now()) - rec.startedAt) / 1000));
      rec.mp3 = await simRecordingMp3(call.streams.map((s) => s.receivedAudio()), rec.durationSec);
      await simRecordingReady();
      rec.status = 'completed';
      if (!rec.statusCallback || this.closing.signal.aborted) continue;
      await this.post(call, 'recording', rec.statusCallback, {
        AccountSid: call.accountSid,
        CallSid: call.sid,
        RecordingSid: rec.sid,
        RecordingUrl: `${this.apiBase}/2010-04-01/Accounts/${call.accountSid}/Recordings/${rec.sid}`,
        RecordingStatus: 'completed',
        RecordingDuration: String(rec.durationSec),
        RecordingChannels: '1',
        RecordingSource: 'StartCallRecordingAPI',
        RecordingStartTime: rfc2822(rec.startedAt),
      });
    }
  }

  /** The sim's own base URL (set once it listens): recordings' media URLs point at it. */
  apiBase = '';

  /** Stops every call without further webhooks and closes every stream. */
  async close(): Promise<void> {
    this.closing.abort();
    const streams: Promise<unknown>[] = [];
    for (const call of this.live.values()) {
      call.finished = true;
      call.generation++;
      call.abort.abort();
      if (call.timeLimit) clearTimeout(call.timeLimit);
      for (const s of call.streams) streams.push(s.stop());
    }
    await Promise.all(streams);
  }

  private create(accountSid: string, form: TwilioSimForm): SimResponse {
    const to = first(form.To);
    const from = first(form.From);
    const url = first(form.Url);
    const twiml = first(form.Twiml);
    if (!to) return twilioError(400, 21201, "No 'To' number is specified");
    if (!from) return twilioError(400, 21213, "No 'From' number is specified");
    if (!url && !twiml) return twilioError(400, 21205, 'Url parameter is required');
    if (url && !/^https?:\/\//i.test(url)) return twilioError(400, 21205, `Url is not a valid URL: ${url}`);
    if (!E164.test(to)) return twilioError(400, 21211, `The 'To' number ${to} is not a valid phone number.`);
    const owned = [...this.state.numbers.values()].some((n) => n.account_sid === accountSid && n.phone_number === from);
    if (!owned) return twilioError(400, 21210, `The source phone number provided, ${from}, is not yet verified for your account.`);
    const scenario = this.scenarios.get(to) ?? { name: 'answer' };
    if (scenario.name === 'reject') {
      return twilioError(scenario.status ?? 400, scenario.code ?? 21211, scenario.message ?? `The 'To' number ${to} is not a valid phone number.`);
    }
    // Omitted events mean `completed` only; the final callback is always sent.
    const asked = all(form.StatusCallbackEvent).flatMap((v) => v.split(/\s+/)).filter((e) => CALL_EVENTS.has(e));
    const call = this.newCall({
      accountSid,
      direction: 'outbound-api',
      from,
      to,
      params: form,
      statusCallback: first(form.StatusCallback) || null,
      events: new Set(['completed', ...asked]),
      audio: scenario.audio,
    });
    this.background(call, this.runOutbound(call, scenario, url ? { url } : { twiml: twiml ?? '' }));
    return { status: 201, body: renderCall(call) };
  }

  // `GET …/Calls.json`: the account's calls, newest first, narrowed by the carrier's filters.
  private list(accountSid: string, req: TwilioRouteContext['req']): SimResponse {
    const q = (k: string) => first(req.query[k]);
    const to = q('To');
    const from = q('From');
    const status = q('Status');
    const parent = q('ParentCallSid');
    const timeFilters: [string, (c: TwilioSimCall) => number | null][] = [
      ['StartTime', (c) => c.startedAt],
      ['EndTime', (c) => c.endedAt],
    ];
    const checks: ((c: TwilioSimCall) => boolean)[] = [];
    for (const [name, timeOf] of timeFilters) {
      // `StartTime=D` that day, `StartTime>=D` (sent as the key `StartTime>`) on or after
      // its midnight UTC, `StartTime<=D` (key `StartTime<`) on or before the end of that day.
      for (const [suffix, test] of [
        ['', (t: number, day: number) => t >= day && t < day + DAY_MS],
        ['>', (t: number, day: number) => t >= day],
        ['<', (t: number, day: number) => t < day + DAY_MS],
      ] as const) {
        const value = q(name + suffix);
        if (value === undefined) continue;
        const day = parseDay(value);
        if (day === null) return twilioError(400, 20001, `Invalid ${name}${suffix}: ${value} (expected YYYY-MM-DD)`);
        checks.push((c) => {
          const t = timeOf(c);
          return t !== null && test(t, day);
        });
      }
    }
    const items = [...this.calls.values()]
      .filter(
        (c) =>
          c.accountSid === accountSid &&
          (to === undefined || c.to === to) &&
          (from === undefined || c.from === from) &&
          (status === undefined || c.status === status) &&
          (parent === undefined || parent === '' || c.parentSid === parent) &&
          checks.every((check) => check(c)),
      )
      .sort((a, b) => b.createdAt - a.createdAt)
      .map(renderCall);
    return { status: 200, body: page('calls', req, items) };
  }

  private update(accountSid: string, sid: string, path: string, form: TwilioSimForm): SimResponse {
    const call = this.live.get(sid);
    // A call that is over is gone as far as updates go (404 20404, carriers.md §1).
    if (!call || call.accountSid !== accountSid || call.finished) return notFound(path);
    const status = first(form.Status);
    if (status !== undefined) {
      if (status !== 'completed' && status !== 'canceled') return twilioError(400, 21218, `Invalid Status: ${status}`);
      // `completed` ends any live call; `canceled` only one not yet answered.
      if (call.answeredAt === null) this.finish(call, 'canceled');
      else if (status === 'completed') this.finish(call, 'completed');
      return { status: 200, body: renderCall(call) };
    }
    const url = first(form.Url);
    const twiml = first(form.Twiml);
    if (url || twiml) {
      if (call.answeredAt === null) return twilioError(400, 21220, 'Call is not in-progress. Cannot redirect.');
      // New TwiML ends the running document (and its stream, UNCONFIRMED) before it starts.
      const generation = ++call.generation;
      const old = call.stream;
      this.background(
        call,
        (async () => {
          if (old) await old.stop();
          await this.runTwiml(call, url ? { url } : { twiml: twiml ?? '' }, generation);
        })(),
      );
    }
    return { status: 200, body: renderCall(call) };
  }

  private newCall(init: {
    accountSid: string;
    direction: 'outbound-api' | 'inbound' | 'outbound-dial';
    from: string;
    to: string;
    params: TwilioSimForm;
    statusCallback: string | null;
    events: Set<string>;
    audio: FarEndAudio | undefined;
    parentSid?: string;
  }): LiveCall {
    let resolveEnded: (status: TwilioSimCallStatus) => void = () => {};
    const ended = new Promise<TwilioSimCallStatus>((resolve) => (resolveEnded = resolve));
    const call: LiveCall = {
      ...init,
      parentSid: init.parentSid ?? null,
      dials: [],
      sid: twilioSid('CA'),
      status: 'queued',
      answeredBy: null,
      createdAt: this.clock.now(),
      startedAt: null,
      answeredAt: null,
      endedAt: null,
      twiml: [],
      stream: null,
      streams: [],
      webhooks: [],
      recordings: [],
      ended,
      seq: 0,
      chain: Promise.resolve(),
      generation: 0,
      finished: false,
      abort: new AbortController(),
      timeLimit: null,
      resolveEnded,
      settle: () => {},
    };
    this.live.set(call.sid, call);
    this.calls.set(call.sid, call);
    return call;
  }

  private async runOutbound(call: LiveCall, scenario: TwilioScenario, twiml: { url: string } | { twiml: string }): Promise<void> {
    const name = scenario.name;
    if (!(await this.step(call))) return;
    // Dialed: the resource's start_time from now on (its status stays queued until it rings).
    call.startedAt = this.clock.now();
    this.progress(call, 'initiated', 'initiated');
    if (name === 'busy' || name === 'failed') {
      if (await this.step(call)) this.finish(call, name);
      return;
    }
    if (!(await this.step(call))) return;
    call.status = 'ringing';
    this.progress(call, 'ringing', 'ringing');
    if (!(await this.sleep(call, scenario.ringMs ?? this.stepMs))) return;
    if (name === 'no-answer') return this.finish(call, 'no-answer');

    this.answer(call);
    this.progress(call, 'answered', 'in-progress');
    const detection = first(call.params.MachineDetection);
    if (detection === 'Enable' || detection === 'DetectMessageEnd') {
      const machine = detection === 'Enable' ? 'machine_start' : 'machine_end_beep';
      const answeredBy = name === 'machine' ? machine : 'human';
      const callback = first(call.params.AsyncAmdStatusCallback);
      if (first(call.params.AsyncAmd) === 'true') {
        if (callback) this.background(call, this.sendAmd(call, callback, answeredBy));
      } else {
        // Synchronous AMD holds the TwiML fetch until detection ends and adds AnsweredBy to it.
        call.answeredBy = answeredBy;
      }
    }
    // The answered callback goes first; the TwiML fetch follows it.
    await call.chain;
    if (call.finished) return;
    await this.runTwiml(call, twiml, ++call.generation);
  }

  private async sendAmd(call: LiveCall, url: string, answeredBy: string): Promise<void> {
    if (!(await this.step(call))) return;
    call.answeredBy = answeredBy;
    await this.post(call, 'amd', url, {
      AccountSid: call.accountSid,
      CallSid: call.sid,
      AnsweredBy: answeredBy,
      MachineDetectionDuration: String(this.stepMs),
    });
  }

  // Runs one TwiML document (fetched or inline) verb by verb, while `generation` is current.
  private async runTwiml(call: LiveCall, source: { url: string } | { twiml: string }, generation: number): Promise<void> {
    const current = () => call.generation === generation && !call.finished;
    let xml: string;
    if ('url' in source) {
      const hook = await this.post(call, 'voice', source.url, {
        ...this.baseParams(call),
        CallStatus: call.status,
        ...(call.answeredBy ? { AnsweredBy: call.answeredBy } : {}),
      });
      if (!current()) return;
      if (hook.status === null || hook.status < 200 || hook.status > 299) {
        this.errors.push(`${call.sid}: voice webhook ${source.url} answered ${hook.status ?? hook.error}`);
        return this.finish(call, call.answeredAt === null ? 'failed' : 'completed');
      }
      xml = hook.body;
    } else {
      xml = source.twiml;
    }
    call.twiml.push(xml);
    const verbs = readTwiml(xml);
    if (!verbs) {
      this.errors.push(`${call.sid}: not a TwiML document: ${xml.slice(0, 200)}`);
      return this.finish(call, call.answeredAt === null ? 'failed' : 'completed');
    }
    for (const verb of verbs) {
      if (!current()) return;
      switch (verb.name) {
        case 'Reject':
          // Only a first verb refuses the call unanswered: busy → busy, rejected → no-answer.
          if (call.answeredAt === null) return this.finish(call, verb.attrs.reason === 'busy' ? 'busy' : 'no-answer');
          return this.finish(call, 'completed');
        case 'Hangup':
          this.answer(call);
          return this.finish(call, 'completed');
        case 'Connect': {
          this.answer(call);
          const stream = verb.children.find((c) => c.name === 'Stream');
          if (stream?.attrs.url) await this.runStream(call, stream);
          break;
        }
        case 'Redirect':
          this.answer(call);
          return this.runTwiml(call, { url: verb.text.trim() }, generation);
        case 'Dial': {
          this.answer(call);
          call.settle();
          const next = await this.runDial(call, verb, generation);
          // `action` answered with the call's next TwiML: it replaces what was left of this one.
          if (next !== null) return this.runTwiml(call, { twiml: next }, generation);
          break;
        }
        case 'Pause':
          this.answer(call);
          call.settle();
          await this.sleep(call, Number(verb.attrs.length ?? '1') * 1000);
          break;
        default:
          // Say, Play, Start, …: answered, nothing for the sim to do.
          this.answer(call);
      }
    }
    // When the document runs out the carrier hangs up.
    if (current()) this.finish(call, 'completed');
  }

  /**
   * `<Dial><Number>`: places the child leg to the number (the scenario set for it), lets
   * it ring (the caller hears ringback), and on answer reports it to `<Number
   * statusCallback>`, fetches `<Number url>` and plays its `<Say>` to the answerer only,
   * then bridges the two until one hangs up. Resolves with the TwiML `action` answered
   * once the dial ended (null without `action`, or when the call itself is over).
   */
  private async runDial(call: LiveCall, verb: TwimlNode, generation: number): Promise<string | null> {
    const number = verb.children.find((c) => c.name === 'Number');
    const to = (number?.text ?? verb.text).trim();
    const scenario = this.scenarios.get(to) ?? { name: 'answer' };
    const timeoutMs = Number(verb.attrs.timeout ?? '30') * 1000;
    const childEvents = (number?.attrs.statusCallbackEvent ?? '').split(/\s+/).filter((e) => CALL_EVENTS.has(e));
    const child = this.newCall({
      accountSid: call.accountSid,
      direction: 'outbound-dial',
      // The dialed number sees the caller's number (no callerId attribute).
      from: call.direction === 'inbound' ? call.from : call.to,
      to,
      params: {},
      statusCallback: number?.attrs.statusCallback ?? null,
      events: new Set(childEvents),
      audio: scenario.audio,
      parentSid: call.sid,
    });
    const dial: LiveDial = { to, childSid: child.sid, startedAt: this.clock.now(), callerHears: 'ringback', whisper: [], answeredAt: null, bridgedAt: null, dialCallStatus: null };
    call.dials.push(dial);
    const current = () => call.generation === generation && !call.finished;
    child.startedAt = this.clock.now();
    child.status = 'ringing';
    this.progress(child, 'ringing', 'ringing');

    let status: string;
    const ringMs = Math.min(scenario.ringMs ?? this.stepMs, timeoutMs);
    if (!(await this.sleep(call, ringMs)) || !current()) {
      this.finish(child, 'canceled');
      dial.callerHears = 'over';
      return null;
    }
    if (scenario.name === 'busy' || scenario.name === 'failed' || scenario.name === 'no-answer') {
      status = scenario.name;
      this.finish(child, scenario.name);
    } else if (scenario.name === 'decline' || scenario.name === 'reject') {
      // The person declines the call: the carrier reports the leg busy.
      status = 'busy';
      this.finish(child, 'busy');
    } else {
      this.answer(child);
      dial.answeredAt = this.clock.now();
      this.progress(child, 'answered', 'in-progress');
      await child.chain;
      const url = number?.attrs.url;
      if (url && current() && !child.finished) {
        // The whisper: the answerer's TwiML, heard by the answerer only, before the bridge.
        const hook = await this.post(child, 'voice', url, { ...this.baseParams(child), ParentCallSid: call.sid, CallStatus: 'in-progress' });
        const verbs = hook.status === 200 ? readTwiml(hook.body) : null;
        if (verbs === null) this.errors.push(`${child.sid}: whisper url ${url} answered ${hook.status ?? hook.error}`);
        for (const v of verbs ?? []) {
          if (v.name === 'Say') dial.whisper.push(v.text.trim());
          if (v.name === 'Hangup') this.finish(child, 'completed');
        }
        // Speaking takes time (about 60 ms a word here, faster than life).
        const words = dial.whisper.join(' ').split(/\s+/).filter(Boolean).length;
        await this.sleep(child, Math.min(3_000, words * 60));
      }
      if (current() && !child.finished) {
        dial.bridgedAt = this.clock.now();
        dial.callerHears = 'bridged';
        // Bridged: the two talk until one of them hangs up.
        await Promise.race([child.ended, call.ended]);
      }
      status = 'completed';
      if (!child.finished) this.finish(child, 'completed');
    }
    dial.callerHears = 'over';
    dial.dialCallStatus = status;
    const action = verb.attrs.action;
    if (!action || !current()) return null;
    const talked = dial.bridgedAt === null ? 0 : Math.round((this.clock.now() - dial.bridgedAt) / 1000);
    const hook = await this.post(call, 'voice', action, {
      ...this.baseParams(call),
      CallStatus: call.status,
      DialCallStatus: status,
      DialCallSid: child.sid,
      DialCallDuration: String(talked),
    });
    if (!current()) return null;
    if (hook.status === null || hook.status < 200 || hook.status > 299) {
      this.errors.push(`${call.sid}: dial action ${action} answered ${hook.status ?? hook.error}`);
      return null;
    }
    return hook.body;
  }

  // Opens the stream and waits until it closes; the service closing it moves on to the next verb.
  private async runStream(call: LiveCall, node: TwimlNode): Promise<void> {
    // The carrier drops the query string of a Stream url (carriers.md §3).
    const signedUrl = (node.attrs.url ?? '').split('?')[0] ?? '';
    const customParameters: Record<string, string> = {};
    for (const p of node.children) if (p.name === 'Parameter' && p.attrs.name) customParameters[p.attrs.name] = p.attrs.value ?? '';
    const client = connectTwilioMedia({
      url: this.resolve(signedUrl),
      signedUrl,
      authToken: this.tokenOf(call),
      accountSid: call.accountSid,
      callSid: call.sid,
      customParameters,
      ...(call.audio ? { audio: call.audio } : {}),
      frameIntervalMs: this.frameIntervalMs,
    });
    call.stream = client;
    call.streams.push(client);
    const generation = call.generation;
    try {
      await client.opened;
    } catch (err) {
      // A stream stopped while it was still connecting (the call ended, new TwiML) is no fault.
      if (!call.finished && call.generation === generation) {
        this.errors.push(`${call.sid}: media stream ${signedUrl}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    call.settle();
    await client.closed;
  }

  private answer(call: LiveCall): void {
    if (call.answeredAt !== null || call.finished) return;
    call.answeredAt = this.clock.now();
    call.status = 'in-progress';
    const limit = Number(first(call.params.TimeLimit));
    if (limit > 0) call.timeLimit = setTimeout(() => this.finish(call, 'completed'), limit * 1000);
  }

  // Ends the call once: stops its stream, then sends the final status callback.
  private finish(call: LiveCall, status: TwilioSimCallStatus): void {
    if (call.finished) return;
    call.finished = true;
    // A call's `<Dial>` leg ends with it.
    for (const dial of call.dials) {
      const child = this.live.get(dial.childSid);
      if (child && !child.finished) this.finish(child, child.answeredAt === null ? 'canceled' : 'completed');
    }
    call.generation++;
    call.status = status;
    call.endedAt = this.clock.now();
    call.abort.abort();
    if (call.timeLimit) clearTimeout(call.timeLimit);
    call.settle();
    const stream = call.stream;
    const stopped = stream ? stream.stop() : Promise.resolve();
    const sec = call.answeredAt === null ? 0 : Math.round((call.endedAt - call.answeredAt) / 1000);
    const final = this.progressParams(call, status, {
      CallDuration: String(sec),
      Duration: String(call.answeredAt === null ? 0 : Math.max(1, Math.ceil(sec / 60))),
      SipResponseCode: SIP_CODE[status] ?? '200',
    });
    const previous = call.chain;
    call.chain = (async () => {
      await previous;
      await stopped;
      if (final && call.statusCallback && !this.closing.signal.aborted) await this.post(call, 'status', call.statusCallback, final);
      await this.finishRecordings(call);
      call.resolveEnded(status);
    })();
  }

  // Queues the status callback of `event` when the call asked for it.
  private progress(call: LiveCall, event: string, callStatus: string): void {
    if (!call.statusCallback || !call.events.has(event)) return;
    const url = call.statusCallback;
    const params = this.progressParams(call, callStatus, {});
    if (params) call.chain = call.chain.then(() => this.post(call, 'status', url, params));
  }

  private progressParams(call: LiveCall, callStatus: string, extra: Record<string, string>): Record<string, string> | null {
    if (!call.statusCallback) return null;
    return {
      ...this.baseParams(call),
      CallStatus: callStatus,
      CallbackSource: 'call-progress-events',
      SequenceNumber: String(call.seq++),
      Timestamp: rfc2822(this.clock.now()),
      ...extra,
    };
  }

  private baseParams(call: LiveCall): Record<string, string> {
    return {
      AccountSid: call.accountSid,
      ApiVersion: '2010-04-01',
      CallSid: call.sid,
      Called: call.to,
      Caller: call.from,
      Direction: call.direction,
      From: call.from,
      To: call.to,
      ...(call.parentSid ? { ParentCallSid: call.parentSid } : {}),
    };
  }

  private async post(call: LiveCall, kind: TwilioSimWebhook['kind'], url: string, params: Record<string, string>): Promise<TwilioSimWebhook> {
    const record = await this.sender.post(this.tokenOf(call), call.sid, kind, url, params);
    call.webhooks.push(record);
    if (record.error !== null && !this.closing.signal.aborted) this.errors.push(`${call.sid}: ${kind} webhook ${url}: ${record.error}`);
    return record;
  }

  private resolve(url: string): string {
    return this.sender.resolve(url);
  }

  private tokenOf(call: LiveCall): string {
    const account = this.state.accounts.get(call.accountSid);
    if (!account) throw new Error(`twilio sim: unknown account ${call.accountSid}`);
    return account.authToken;
  }

  private step(call: LiveCall): Promise<boolean> {
    return this.sleep(call, this.stepMs);
  }

  // Resolves true after `ms`, false as soon as the call ends or the sim closes.
  private sleep(call: LiveCall, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (call.finished) return resolve(false);
      const signal = AbortSignal.any([call.abort.signal, this.closing.signal]);
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(!call.finished);
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private background(call: LiveCall, work: Promise<unknown>): void {
    work.catch((err: unknown) => this.errors.push(`${call.sid}: ${err instanceof Error ? err.stack : String(err)}`));
  }
}

/** A Call resource as the API renders it (carriers.md §1). */
function renderCall(call: TwilioSimCall): Record<string, unknown> {
  const uri = `/2010-04-01/Accounts/${call.accountSid}/Calls/${call.sid}`;
  const sec = call.answeredAt !== null && call.endedAt !== null ? Math.round((call.endedAt - call.answeredAt) / 1000) : 0;
  return {
    sid: call.sid,
    date_created: rfc2822(call.createdAt),
    date_updated: rfc2822(call.endedAt ?? call.answeredAt ?? call.createdAt),
    parent_call_sid: call.parentSid,
    account_sid: call.accountSid,
    to: call.to,
    to_formatted: call.to,
    from: call.from,
    from_formatted: call.from,
    phone_number_sid: null,
    status: call.status,
    start_time: call.startedAt === null ? null : rfc2822(call.startedAt),
    end_time: call.endedAt === null ? null : rfc2822(call.endedAt),
    duration: call.endedAt === null ? null : String(sec),
    price: null,
    price_unit: 'USD',
    direction: call.direction,
    answered_by: call.answeredBy,
    api_version: '2010-04-01',
    forwarded_from: null,
    group_sid: null,
    caller_name: null,
    queue_time: '0',
    trunk_sid: null,
    uri: `${uri}.json`,
    subresource_uris: {
      notifications: `${uri}/Notifications.json`,
      recordings: `${uri}/Recordings.json`,
      streams: `${uri}/Streams.json`,
    },
  };
}

const DAY_MS = 86_400_000;

/** Midnight UTC of a `YYYY-MM-DD`, or null when it is not one. */
function parseDay(value: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return null;
  const ms = Date.parse(`${value}T00:00:00Z`);
  return Number.isFinite(ms) ? ms : null;
}

function notFound(path: string): SimResponse {
  return twilioError(404, 20404, `The requested resource ${path} was not found`);
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function all(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}
