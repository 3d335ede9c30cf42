// Model test of the call machine as the supervisor drives it (pure transitions, effects as
// named actions; test/model/call-driver.ts plays the runtime's durable tables and the
// account's slot pool). fast-check generates sequences of named commands, one class per
// event: carrier webhooks (and their repeats), hang-up requests, slot grants, the outcome
// of each effect intent (a dial that resolves, rejects or times out; a reconciliation
// that finds, does not find or cannot reach; a check; a hang-up done or unreachable),
// each armed deadline coming due, post-call work, and a persist-restore (the process dies:
// the snapshot goes through JSON, durable deadlines and pending intents stay, RESTORED is
// delivered). After every command the model holds the machine to:
// - the slot: held from dialing (or an inbound answer) until the end, released exactly
//   once, never both held and queued; what the tags say agrees with the pool;
// - deadlines: every waiting state has its own armed, none is left once the call is final,
//   and an armed deadline coming due is never ignored;
// - the dial: at most one `dial` per call over the whole run, restarts included; an
//   unknown dial is reconciled (tag `dialing`) and, if the call ends before the carrier
//   says anything, it says the outcome is unknown;
// - one final state per call: once finished, its status, reason and times never change;
// - the hang-up reason: the first the service asked for (any of HANGUP_REASONS, the
//   conversation's provider_error and provider_not_configured included) never changes,
//   and a call that had one ends with it as its ended_reason;
// - the transcript: the conversation engine's lines (CONVERSATION.LINE, sent while the
//   call is connected or hanging up, or late after its end) are the record's
//   `transcript`, exactly: one `Agent: ` / `Caller: ` line each, in order, newlines
//   inside a line folded to spaces, through every restore; `avg_latency_ms` is the
//   rounded mean of the agent lines' latencies, null before the first.
// - transfers (machines/call-transfer.ts): the request, each transfer effect's outcomes
//   (placed, refused, lost; checks; whisper and bridge), the carriers' webhooks about the
//   target (answered, whispered, connected, failed; also late ones of an earlier attempt)
//   and restarts at any step. The machine is held to: never two `placeTransfer` for one
//   attempt, restarts included (no double transfer); a transfer waits only while its
//   outcome is pending; a failed one comes back to the agent (or hangs up, media_lost,
//   when a restart killed the media and nothing opens it again); a call that ends
//   `transferred` ends at its handoff, so the meter stops there.
// After the commands, the service asks to end the call while the carrier stays unreachable:
// driven by its own deadlines alone, the call must still end (and free its slot).
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { FINAL_CALL_STATUSES, HANGUP_REASONS, type CallEvent, type CallInput } from '../../machines/call-events.ts';
import { CALL_TAGS, MAX_DURATION_DEADLINE, callRecordOf, phaseOf, type CallSnapshot } from '../../machines/call.ts';
import { CallDriver, OUTCOMES, T0, callInput, type Effect, type Step } from './call-driver.ts';

// ---- the model ----

type DialPhase = 'none' | 'inflight' | 'unknown' | 'known';

/** A conversation line the call took. */
interface Line {
  speaker: 'agent' | 'caller';
  text: string;
  latencyMs?: number;
}

/** Where the conversation engine can still deliver lines: connected, hanging up, or just ended (its last words late). */
const TAKES_LINES = new Set(['in-progress', 'hanging-up', 'post-call']);

interface Model {
  input: CallInput;
  /** The clock: every event carries it as `at`; it never goes back. */
  now: number;
  /** The runtime's durable tables and the pool, as the supervisor would hold them (read by preconditions). */
  rt: CallDriver;
  /** What is known of the dial's outcome. */
  dial: DialPhase;
  /** The final values, fixed by the first step that finished the call. */
  final: { callStatus: string; endedReason: string | null; startedAt: number | null; endedAt: number | null } | null;
  /** Carrier webhooks delivered so far (a carrier repeats them). */
  webhooks: CallEvent[];
  /** The conversation's lines the call took, in order. */
  lines: Line[];
  /** The first hang-up reason the call recorded. */
  hangupReason: string | null;
  log: string[];
  /** Attempts a `placeTransfer` intent was issued for (each at most once). */
  placed: number[];
}

/** The transcript a call record must show for these lines. */
function transcriptOf(lines: readonly Line[]): string | null {
  if (lines.length === 0) return null;
  // One record line per conversation line: a newline inside one cannot start another.
  return lines.map((l) => `${l.speaker === 'agent' ? 'Agent' : 'Caller'}: ${l.text.replace(/\s*\n\s*/g, ' ')}`).join('\n');
}

function averageLatency(lines: readonly Line[]): number | null {
  const measured = lines.flatMap((l) => (l.latencyMs === undefined ? [] : [l.latencyMs]));
  return measured.length === 0 ? null : Math.round(measured.reduce((a, b) => a + b, 0) / measured.length);
}

const WEBHOOKS = new Set(['CARRIER.RINGING', 'CARRIER.ANSWERED', 'CARRIER.AMD', 'CARRIER.ENDED']);
/** Events that prove what became of the dial. */
const DIAL_ANSWERS = new Set(['DIAL.ACCEPTED', 'DIAL.REJECTED', 'DIAL.FOUND', 'DIAL.NOT_FOUND', ...WEBHOOKS]);

/** The deadlines each waiting state must have armed (and nothing else). */
function expectedDeadlines(s: CallSnapshot): string[] {
  if (s.matches('queued')) return ['queue_check'];
  if (s.matches('dialing')) return ['stale'];
  if (s.matches({ 'dial-unknown': 'asking' })) return ['give_up'];
  if (s.matches({ 'dial-unknown': 'waiting' })) return ['give_up', 'retry'];
  if (s.matches('initiated') || s.matches('ringing') || s.matches('hanging-up')) return ['stale'];
  // A transfer step that waits on the carrier has its own deadline (rechecking: its `retry`).
  if (s.matches({ 'in-progress': 'transferring' }) && !s.matches({ 'in-progress': { transferring: 'rechecking' } })) return [MAX_DURATION_DEADLINE, 'stale', 'transfer'].sort();
  if (s.matches('in-progress')) return [MAX_DURATION_DEADLINE, 'stale'].sort();
  return [];
}

function fail(m: Model, what: string): never {
  const steps = m.log.length > 30 ? [m.log[0]!, `… ${m.log.length - 30} more steps …`, ...m.log.slice(-29)] : m.log;
  throw new Error(`${what}\n  state: ${JSON.stringify(m.rt.value)}  tags: [${m.rt.tags().join(', ')}]\n  steps:\n    ${steps.join('\n    ')}`);
}

function hold(m: Model, ok: boolean, what: string): void {
  if (!ok) fail(m, what);
}

/** Updates the model from one step, then holds the machine to every invariant. */
function observe(m: Model, step: Step | null, label: string): void {
  const d = m.rt;
  const e = step?.event ?? null;
  m.log.push(`${label} → ${JSON.stringify(d.value)}${step && !step.taken ? ' (ignored)' : ''}${step?.actions.length ? ` [${step.actions.map((a) => a.type).join(', ')}]` : ''}`);

  // What is known of the dial.
  if (e && (m.dial === 'inflight' || m.dial === 'unknown')) {
    if (DIAL_ANSWERS.has(e.type)) m.dial = 'known';
    else if (m.dial === 'inflight' && (e.type === 'DIAL.UNKNOWN' || (e.type === 'TIMER' && e.name === 'stale'))) m.dial = 'unknown';
  }
  if (step?.actions.some((a) => a.type === 'dial') && m.dial === 'none') m.dial = 'inflight';
  if (e && WEBHOOKS.has(e.type)) m.webhooks.push(e);

  const ctx = d.ctx;
  const finished = d.finished;

  // At most one dial per call, ever.
  hold(m, d.issued.dial <= 1, `the call was dialed ${d.issued.dial} times`);
  if (m.input.direction === 'inbound') hold(m, d.issued.dial === 0, 'an inbound call was dialed');

  // The slot.
  hold(m, !(d.hasTag(CALL_TAGS.holdsSlot) && d.hasTag(CALL_TAGS.queued)), 'the call both holds a slot and waits for one');
  hold(m, !(d.slot.held && d.slot.queued), 'the pool has the call both holding a slot and queued');
  hold(m, d.slot.strayReleases === 0, 'a slot was released by a call holding none (released twice)');
  if (finished) {
    hold(m, d.slot.releases === 1, `a finished call released its slot ${d.slot.releases} times, not exactly once`);
    hold(m, !d.slot.held && !d.slot.queued, 'a finished call is still in the pool');
  } else {
    hold(m, d.slot.releases === 0, 'a live call released its slot');
    hold(m, d.slot.held === d.hasTag(CALL_TAGS.holdsSlot), `the pool says held=${d.slot.held}, the call's tags say ${d.hasTag(CALL_TAGS.holdsSlot)}`);
    hold(m, d.slot.queued === d.hasTag(CALL_TAGS.queued), `the pool says queued=${d.slot.queued}, the call's tags say ${d.hasTag(CALL_TAGS.queued)}`);
  }

  // Deadlines. A call still asking the carrier after it could not be reached may have a
  // retry armed besides its state's own; post-call has its finishing deadline until done.
  const checking = d.snapshot.matches('initiated') || d.snapshot.matches('ringing') || d.snapshot.matches('in-progress');
  const armed = Object.keys(d.armed()).filter((n) => !(checking && n === 'retry'));
  if (finished) {
    const allowed = d.snapshot.matches('post-call') ? ['stale'] : [];
    hold(m, JSON.stringify(armed) === JSON.stringify(allowed), `deadlines left armed after the end: ${armed.join(', ')}`);
  } else {
    hold(m, armed.length > 0, 'a waiting state has no deadline');
    const want = expectedDeadlines(d.snapshot);
    hold(m, JSON.stringify(armed) === JSON.stringify(want), `armed [${armed.join(', ')}], the state waits on [${want.join(', ')}]`);
  }

  // An unknown dial is reconciled, and a call ended before the carrier said anything says so.
  if (!finished && (m.dial === 'inflight' || m.dial === 'unknown')) {
    hold(m, d.hasTag(CALL_TAGS.dialing), `the dial's outcome is ${m.dial} but the call no longer says it is dialing`);
  }
  if (!finished && m.dial === 'unknown') {
    hold(m, d.pending('findDial').length > 0 || armed.includes('retry'), 'an unknown dial is neither being looked for nor about to be');
  }
  if (finished && (m.dial === 'inflight' || m.dial === 'unknown')) {
    hold(m, ctx.callStatus === 'failed' && (ctx.carrierError as { outcome?: unknown } | null)?.outcome === 'unknown', 'a call whose dial outcome nobody knows ended saying otherwise');
  }
  const endedNow = finished && step?.before != null && !step.before.hasTag(CALL_TAGS.finished);
  if (endedNow && e?.type === 'DIAL.NOT_FOUND') {
    hold(m, ctx.callStatus === 'failed' && (ctx.carrierError as { outcome?: unknown } | null)?.outcome === 'not_placed', 'a dial the carrier never placed did not end failed / not_placed');
  }

  // One final state.
  const finalStatus = (FINAL_CALL_STATUSES as readonly string[]).includes(ctx.callStatus);
  hold(m, finalStatus === finished && (ctx.endedAt !== null) === finished && (ctx.endedReason !== null) === finished, 'final status, end time and reason disagree with the finished tag');
  if (ctx.startedAt !== null && ctx.endedAt !== null) hold(m, ctx.startedAt <= ctx.endedAt, 'ended before it started');
  if (m.final) {
    hold(m, finished, 'a finished call became live again');
    const now = { callStatus: ctx.callStatus, endedReason: ctx.endedReason, startedAt: ctx.startedAt, endedAt: ctx.endedAt };
    hold(m, JSON.stringify(now) === JSON.stringify(m.final), `the final values changed: ${JSON.stringify(m.final)} → ${JSON.stringify(now)}`);
  } else if (finished) {
    m.final = { callStatus: ctx.callStatus, endedReason: ctx.endedReason, startedAt: ctx.startedAt, endedAt: ctx.endedAt };
  }
  if (d.snapshot.status === 'done') hold(m, finished, 'done without a final state');

  // The hang-up reason: the first one stays, and it is the ended_reason.
  if (m.hangupReason !== null) hold(m, ctx.hangupReason === m.hangupReason, `the hang-up reason changed: ${m.hangupReason} → ${ctx.hangupReason}`);
  else m.hangupReason = ctx.hangupReason;
  if (finished && ctx.hangupReason !== null) hold(m, ctx.endedReason === ctx.hangupReason, `asked to hang up for ${ctx.hangupReason}, the call ended as ${ctx.endedReason}`);
  if (e?.type === 'HANGUP.REQUESTED' && step?.before && step.before.context.hangupReason === null && step.before.matches('in-progress')) {
    hold(m, ctx.hangupReason === e.reason, `a connected call asked to hang up for ${e.reason} recorded ${ctx.hangupReason}`);
  }

  // Transfers: one request per attempt, ever; a transfer waits only while pending; its end.
  for (const a of step?.actions ?? []) {
    if (a.type !== 'placeTransfer') continue;
    const attempt = (a.params as { attempt: number }).attempt;
    hold(m, !m.placed.includes(attempt), `transfer attempt ${attempt} was requested from the carrier twice`);
    m.placed.push(attempt);
  }
  const t = ctx.transfer;
  if (d.snapshot.matches({ 'in-progress': 'transferring' })) hold(m, t !== null && t.outcome === 'pending', 'transferring without a pending transfer');
  if (t?.outcome === 'connected') hold(m, finished && ctx.endedReason === 'transferred', `a connected transfer left the call ${JSON.stringify(d.value)} ended as ${ctx.endedReason}`);
  if (endedNow && e?.type === 'TRANSFER.CONNECTED') {
    hold(m, ctx.endedReason === 'transferred' && ctx.endedAt === Math.max(e.at, ctx.startedAt ?? e.at), `the handoff at ${e.at} ended the call at ${ctx.endedAt} as ${ctx.endedReason}`);
  }
  if (e?.type === 'TRANSFER.FAILED' && step?.taken && step.before?.matches({ 'in-progress': 'transferring' })) {
    const lost = step.before.context.transfer!.mediaLost && e.mediaBack !== true;
    hold(m, lost ? d.snapshot.matches('hanging-up') && ctx.hangupReason === 'media_lost' : d.snapshot.matches({ 'in-progress': 'listening' }), `a failed transfer (media lost: ${lost}) went to ${JSON.stringify(d.value)}`);
  }

  // Voicemail: the record says `voicemail_detected` exactly when the call was hung up (or
  // ended) because a machine answered: the engine's screen (HANGUP.REQUESTED
  // voicemail_detected) or the carrier's detection, which counts only with amd_enabled.
  const record = callRecordOf(ctx);
  hold(m, ctx.voicemailDetected === (ctx.hangupReason === 'voicemail_detected' || ctx.endedReason === 'voicemail_detected'), `voicemail_detected ${ctx.voicemailDetected} with hang-up reason ${ctx.hangupReason}, ended ${ctx.endedReason}`);
  hold(m, record.voicemail_detected === ctx.voicemailDetected, `the record says voicemail_detected ${record.voicemail_detected}, the call ${ctx.voicemailDetected}`);
  if (finished) hold(m, (ctx.endedReason === 'voicemail_detected') === ctx.voicemailDetected, `ended ${ctx.endedReason} with voicemail_detected ${ctx.voicemailDetected}`);
  if (e?.type === 'CARRIER.AMD' && step?.before && step.before.context.hangupReason === null && step.before.context.endedReason === null) {
    const machine = e.result === 'machine' && m.input.amdEnabled && !step.before.hasTag(CALL_TAGS.finished);
    if (!machine) hold(m, ctx.hangupReason === null, `carrier AMD ${e.result} (amd_enabled ${m.input.amdEnabled}) asked to hang up for ${ctx.hangupReason}`);
    else if (step.taken) hold(m, ctx.hangupReason === 'voicemail_detected' || d.snapshot.hasTag(CALL_TAGS.finished), `carrier AMD machine with amd_enabled left the call ${JSON.stringify(d.value)}, hang-up reason ${ctx.hangupReason}`);
  }

  // The transcript and the turn latency, as the call record shows them.
  const want = transcriptOf(m.lines);
  hold(m, record.transcript === want, `transcript ${JSON.stringify(record.transcript)}, the lines taken say ${JSON.stringify(want)}`);
  hold(m, (record.transcript?.split('\n').length ?? 0) === m.lines.length, 'the transcript has not one line per conversation line');
  hold(m, record.avg_latency_ms === averageLatency(m.lines), `avg_latency_ms ${record.avg_latency_ms}, the lines say ${averageLatency(m.lines)}`);
}

// ---- commands ----

type Real = CallDriver;

abstract class CallCommand implements fc.Command<Model, Real> {
  constructor(readonly dt: number) {}
  check(m: Readonly<Model>): boolean {
    return m.rt.snapshot.status === 'active' && this.applies(m);
  }
  protected applies(_m: Readonly<Model>): boolean {
    return true;
  }
  run(m: Model, d: Real): void {
    m.now += this.dt;
    observe(m, this.act(m, d), this.toString());
  }
  protected abstract act(m: Model, d: Real): Step;
  abstract toString(): string;
}

/** An event from outside (carrier, media, API, pool, post-call work). */
abstract class EventCommand extends CallCommand {
  protected abstract event(m: Model): CallEvent;
  protected act(m: Model, d: Real): Step {
    return d.send(this.event(m));
  }
}

const opt = <T,>(v: T | undefined, k: string) => (v === undefined ? {} : { [k]: v });
const show = (name: string, args: Record<string, unknown> = {}) => {
  const parts = Object.entries(args).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `${name}(${parts.join(', ')})`;
};

class CarrierRinging extends EventCommand {
  constructor(dt: number, readonly carrierCallId: string | undefined) {
    super(dt);
  }
  event(m: Model): CallEvent {
    return { type: 'CARRIER.RINGING', at: m.now, ...opt(this.carrierCallId, 'carrierCallId') };
  }
  toString() {
    return show('CarrierRinging', { id: this.carrierCallId });
  }
}

class CarrierAnswered extends EventCommand {
  constructor(dt: number, readonly carrierCallId: string | undefined) {
    super(dt);
  }
  event(m: Model): CallEvent {
    return { type: 'CARRIER.ANSWERED', at: m.now, ...opt(this.carrierCallId, 'carrierCallId') };
  }
  toString() {
    return show('CarrierAnswered', { id: this.carrierCallId });
  }
}

class CarrierAmd extends EventCommand {
  constructor(dt: number, readonly result: 'human' | 'machine' | 'fax' | 'unknown') {
    super(dt);
  }
  event(m: Model): CallEvent {
    return { type: 'CARRIER.AMD', at: m.now, result: this.result };
  }
  toString() {
    return show('CarrierAmd', { result: this.result });
  }
}

class CarrierEnded extends EventCommand {
  constructor(dt: number, readonly status: (typeof FINAL_CALL_STATUSES)[number], readonly durationSec: number | undefined) {
    super(dt);
  }
  event(m: Model): CallEvent {
    return { type: 'CARRIER.ENDED', at: m.now, status: this.status, ...opt(this.durationSec, 'durationSec') };
  }
  toString() {
    return show('CarrierEnded', { status: this.status, durationSec: this.durationSec });
  }
}

/** The carrier sends one of its earlier webhooks again (now). */
class CarrierRepeats extends EventCommand {
  constructor(dt: number, readonly back: number) {
    super(dt);
  }
  protected override applies(m: Readonly<Model>): boolean {
    return m.webhooks.length > 0;
  }
  event(m: Model): CallEvent {
    const earlier = m.webhooks[m.webhooks.length - 1 - (this.back % m.webhooks.length)]!;
    return { ...earlier, at: m.now };
  }
  toString() {
    return show('CarrierRepeats', { back: this.back });
  }
}

class MediaStarted extends EventCommand {
  event(m: Model): CallEvent {
    return { type: 'MEDIA.STARTED', at: m.now };
  }
  toString() {
    return 'MediaStarted()';
  }
}

class MediaStopped extends EventCommand {
  event(m: Model): CallEvent {
    return { type: 'MEDIA.STOPPED', at: m.now };
  }
  toString() {
    return 'MediaStopped()';
  }
}

class Dtmf extends EventCommand {
  event(m: Model): CallEvent {
    return { type: 'DTMF', at: m.now, digit: '7' };
  }
  toString() {
    return 'Dtmf()';
  }
}

class HangupRequested extends EventCommand {
  constructor(dt: number, readonly reason: (typeof HANGUP_REASONS)[number]) {
    super(dt);
  }
  event(m: Model): CallEvent {
    return { type: 'HANGUP.REQUESTED', at: m.now, reason: this.reason };
  }
  toString() {
    return show('HangupRequested', { reason: this.reason });
  }
}

/** The conversation engine reports a final line (an agent line with its turn's latency when measured). */
class ConversationLine extends CallCommand {
  constructor(
    dt: number,
    readonly speaker: 'agent' | 'caller',
    readonly text: string,
    readonly latencyMs: number | undefined,
  ) {
    super(dt);
  }
  protected override applies(m: Readonly<Model>): boolean {
    return TAKES_LINES.has(phaseOf(m.rt.value));
  }
  protected act(m: Model, d: Real): Step {
    const step = d.send({ type: 'CONVERSATION.LINE', at: m.now, speaker: this.speaker, text: this.text, ...opt(this.latencyMs, 'latencyMs') });
    hold(m, step.taken, `a line sent in ${JSON.stringify(step.before?.value)} was dropped`);
    m.lines.push({ speaker: this.speaker, text: this.text, ...opt(this.latencyMs, 'latencyMs') });
    return step;
  }
  toString() {
    return show('ConversationLine', { speaker: this.speaker, text: this.text, latencyMs: this.latencyMs });
  }
}

class PostcallDone extends EventCommand {
  event(m: Model): CallEvent {
    return { type: 'POSTCALL.DONE', at: m.now };
  }
  toString() {
    return 'PostcallDone()';
  }
}

/** The pool grants the queued call a slot. */
class SlotGranted extends CallCommand {
  protected override applies(m: Readonly<Model>): boolean {
    return m.rt.slot.queued;
  }
  protected act(m: Model, d: Real): Step {
    return d.grant(m.now);
  }
  toString() {
    return 'SlotGranted()';
  }
}

/** The oldest pending intent of an effect finishes. */
abstract class OutcomeCommand extends CallCommand {
  abstract readonly effect: Effect;
  protected abstract outcome(m: Model): CallEvent;
  protected override applies(m: Readonly<Model>): boolean {
    return m.rt.pending(this.effect).length > 0;
  }
  protected act(m: Model, d: Real): Step {
    return d.settle(this.effect, this.outcome(m));
  }
}

class DialResolves extends OutcomeCommand {
  readonly effect = 'dial' as const;
  constructor(dt: number, readonly carrierCallId: string) {
    super(dt);
  }
  outcome(m: Model): CallEvent {
    return { type: 'DIAL.ACCEPTED', at: m.now, carrierCallId: this.carrierCallId };
  }
  toString() {
    return show('DialResolves', { id: this.carrierCallId });
  }
}

class DialRejects extends OutcomeCommand {
  readonly effect = 'dial' as const;
  outcome(m: Model): CallEvent {
    return { type: 'DIAL.REJECTED', at: m.now, carrierError: { status: 400, code: 21211 } };
  }
  toString() {
    return 'DialRejects()';
  }
}

class DialTimesOut extends OutcomeCommand {
  readonly effect = 'dial' as const;
  outcome(m: Model): CallEvent {
    return { type: 'DIAL.UNKNOWN', at: m.now, carrierError: { outcome: 'unknown', message: 'no answer within 10000 ms' } };
  }
  toString() {
    return 'DialTimesOut()';
  }
}

type CarrierStatus = (typeof FINAL_CALL_STATUSES)[number] | 'active' | 'unknown';
interface CarrierView {
  carrierStatus: CarrierStatus;
  answered: boolean | undefined;
  endedAgo: number | undefined;
  durationSec: number | undefined;
}
const carrierFields = (m: Model, v: CarrierView) => ({
  carrierStatus: v.carrierStatus,
  ...opt(v.answered, 'answered'),
  ...opt(v.endedAgo === undefined ? undefined : Math.max(T0, m.now - v.endedAgo), 'endedAt'),
  ...opt(v.durationSec, 'durationSec'),
});

class FindDialFound extends OutcomeCommand {
  readonly effect = 'findDial' as const;
  constructor(dt: number, readonly view: CarrierView) {
    super(dt);
  }
  outcome(m: Model): CallEvent {
    return { type: 'DIAL.FOUND', at: m.now, carrierCallId: 'CA1', ...carrierFields(m, this.view) };
  }
  toString() {
    return show('FindDialFound', { ...this.view });
  }
}

class FindDialNotFound extends OutcomeCommand {
  readonly effect = 'findDial' as const;
  outcome(m: Model): CallEvent {
    return { type: 'DIAL.NOT_FOUND', at: m.now };
  }
  toString() {
    return 'FindDialNotFound()';
  }
}

class FindDialUnreachable extends OutcomeCommand {
  readonly effect = 'findDial' as const;
  outcome(m: Model): CallEvent {
    return { type: 'CARRIER.UNREACHABLE', at: m.now };
  }
  toString() {
    return 'FindDialUnreachable()';
  }
}

class CheckCallReconciled extends OutcomeCommand {
  readonly effect = 'checkCall' as const;
  constructor(dt: number, readonly view: CarrierView) {
    super(dt);
  }
  outcome(m: Model): CallEvent {
    return { type: 'RECONCILED', at: m.now, ...carrierFields(m, this.view) };
  }
  toString() {
    return show('CheckCallReconciled', { ...this.view });
  }
}

class CheckCallUnreachable extends OutcomeCommand {
  readonly effect = 'checkCall' as const;
  outcome(m: Model): CallEvent {
    return { type: 'CARRIER.UNREACHABLE', at: m.now };
  }
  toString() {
    return 'CheckCallUnreachable()';
  }
}

class HangupDone extends OutcomeCommand {
  readonly effect = 'hangup' as const;
  outcome(m: Model): CallEvent {
    return { type: 'HANGUP.DONE', at: m.now };
  }
  toString() {
    return 'HangupDone()';
  }
}

class HangupUnreachable extends OutcomeCommand {
  readonly effect = 'hangup' as const;
  outcome(m: Model): CallEvent {
    return { type: 'CARRIER.UNREACHABLE', at: m.now };
  }
  toString() {
    return 'HangupUnreachable()';
  }
}

// ---- transfers ----

const TARGET = '+14155550999';
const attemptOf = (m: Readonly<Model>): number => m.rt.ctx.transfer?.attempt ?? 1;

/** The conversation asks to transfer (the machine takes it only while listening). */
class TransferRequested extends EventCommand {
  constructor(dt: number, readonly mode: 'cold' | 'warm') {
    super(dt);
  }
  event(m: Model): CallEvent {
    return { type: 'TRANSFER.REQUESTED', at: m.now, to: TARGET, mode: this.mode, whisper: this.mode === 'warm' ? 'A caller about an order.' : null };
  }
  toString() {
    return show('TransferRequested', { mode: this.mode });
  }
}

type TargetNews = 'ANSWERED' | 'WHISPERED' | 'CONNECTED' | 'FAILED';

/** A carrier webhook about the target's leg, of the current attempt or (stale) the one before. */
class TargetWebhook extends EventCommand {
  constructor(dt: number, readonly news: TargetNews, readonly stale: boolean, readonly mediaBack: boolean) {
    super(dt);
  }
  event(m: Model): CallEvent {
    const attempt = Math.max(1, attemptOf(m) - (this.stale ? 1 : 0));
    switch (this.news) {
      case 'ANSWERED':
        return { type: 'TRANSFER.ANSWERED', at: m.now, attempt, legId: 'leg1' };
      case 'WHISPERED':
        return { type: 'TRANSFER.WHISPERED', at: m.now, attempt };
      case 'CONNECTED':
        return { type: 'TRANSFER.CONNECTED', at: m.now, attempt };
      case 'FAILED':
        return { type: 'TRANSFER.FAILED', at: m.now, attempt, reason: 'busy', ...(this.mediaBack ? { mediaBack: true } : {}) };
    }
  }
  toString() {
    return show('TargetWebhook', { news: this.news, stale: this.stale, mediaBack: this.mediaBack });
  }
}

/** The transfer effects' outcomes: what the intent's own attempt answers. */
class TransferOutcome extends OutcomeCommand {
  constructor(
    dt: number,
    readonly effect: 'placeTransfer' | 'checkTransfer' | 'whisperTransfer' | 'bridgeTransfer' | 'releaseMedia',
    readonly answer: 'PLACED' | 'FAILED' | 'UNKNOWN' | 'ANSWERED' | 'CONNECTED' | 'SENT' | 'UNREACHABLE' | 'RECONCILED',
    readonly view: CarrierView,
  ) {
    super(dt);
  }
  protected override applies(m: Readonly<Model>): boolean {
    return super.applies(m) && (OUTCOMES[this.effect] as readonly string[]).includes(this.type());
  }
  private type(): CallEvent['type'] {
    return this.answer === 'UNREACHABLE' ? 'CARRIER.UNREACHABLE' : this.answer === 'RECONCILED' ? 'RECONCILED' : (`TRANSFER.${this.answer}` as CallEvent['type']);
  }
  outcome(m: Model): CallEvent {
    const attempt = m.rt.pending(this.effect)[0]!.context.transfer?.attempt ?? 1;
    switch (this.answer) {
      case 'UNREACHABLE':
        return { type: 'CARRIER.UNREACHABLE', at: m.now };
      case 'RECONCILED':
        return { type: 'RECONCILED', at: m.now, ...carrierFields(m, this.view) };
      case 'FAILED':
        return { type: 'TRANSFER.FAILED', at: m.now, attempt, reason: 'no-answer' };
      case 'PLACED':
      case 'ANSWERED':
        return { type: `TRANSFER.${this.answer}`, at: m.now, attempt, legId: 'leg1' };
      default:
        return { type: `TRANSFER.${this.answer}`, at: m.now, attempt };
    }
  }
  toString() {
    return show('TransferOutcome', { effect: this.effect, answer: this.answer, ...(this.answer === 'RECONCILED' ? this.view : {}) });
  }
}

const DEADLINES = ['queue_check', 'stale', 'retry', 'give_up', 'transfer', MAX_DURATION_DEADLINE] as const;

/** An armed deadline comes due: the scheduler delivers it at or after its dueAt. */
class DeadlineFires extends CallCommand {
  constructor(dt: number, readonly name: (typeof DEADLINES)[number]) {
    super(dt);
  }
  protected override applies(m: Readonly<Model>): boolean {
    return m.rt.deadlines.has(this.name);
  }
  override run(m: Model, d: Real): void {
    m.now = Math.max(m.now, d.deadlines.get(this.name)!.dueAt) + this.dt;
    const step = d.fire(this.name, m.now);
    observe(m, step, this.toString());
    hold(m, step.taken, `the armed deadline ${this.name} came due and the call ignored it`);
  }
  protected act(): Step {
    throw new Error('unused');
  }
  toString() {
    return show('DeadlineFires', { name: this.name });
  }
}

/** The process dies and comes back: the stored snapshot through JSON, RESTORED delivered. */
class PersistRestore extends CallCommand {
  override run(m: Model, d: Real): void {
    m.now += this.dt;
    const stored = JSON.parse(JSON.stringify(d.persisted())) as ReturnType<Real['persisted']>;
    const tags = d.tags();
    const step = d.restart(m.now);
    // Resolved from the stored form, the call is where it was, with what it knew.
    const back = step.before!;
    hold(m, JSON.stringify(back.value) === JSON.stringify(stored.value), 'restored into another state');
    expect(back.context).toEqual(stored.context);
    hold(m, JSON.stringify([...back.tags].sort()) === JSON.stringify(tags), 'restored with other tags');
    observe(m, step, this.toString());
  }
  protected act(): Step {
    throw new Error('unused');
  }
  toString() {
    return 'PersistRestore()';
  }
}

// ---- arbitraries ----

const dt = fc.integer({ min: 0, max: 20_000 });
const lateness = fc.integer({ min: 0, max: 5_000 });
const maybe = <T,>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const carrierView: fc.Arbitrary<CarrierView> = fc.record({
  carrierStatus: fc.constantFrom<CarrierStatus>(...FINAL_CALL_STATUSES, 'active', 'unknown'),
  answered: maybe(fc.boolean()),
  endedAgo: maybe(fc.integer({ min: 0, max: 120_000 })),
  durationSec: maybe(fc.integer({ min: 0, max: 600 })),
});

/** Words of a line; some with a line break inside (the model's answer can have one). */
const lineText = fc
  .array(fc.constantFrom('book', 'a table', 'for two,', 'at seven.', 'Thanks!', '\n', ' \n ', 'ça va'), { minLength: 1, maxLength: 6 })
  .map((ws) => `${ws.join(' ')} ok`);
const conversationLine = fc
  .tuple(dt, fc.constantFrom('agent' as const, 'caller' as const), lineText, maybe(fc.integer({ min: 0, max: 4_000 })))
  // The engine measures a latency for agent lines only.
  .map(([t, speaker, text, latency]) => new ConversationLine(t % 3_000, speaker, text, speaker === 'agent' ? latency : undefined));

/** Each command's arbitrary, listed `weight` times: fc.commands draws uniformly from the list. */
const weighted = (weight: number, arb: fc.Arbitrary<fc.Command<Model, Real>>) => Array.from({ length: weight }, () => arb);

const commands = [
  ...weighted(1, fc.tuple(dt, maybe(fc.constantFrom('CA1', 'CA2'))).map(([t, id]) => new CarrierRinging(t, id))),
  ...weighted(1, fc.tuple(dt, maybe(fc.constantFrom('CA1', 'CA2'))).map(([t, id]) => new CarrierAnswered(t, id))),
  ...weighted(1, fc.tuple(dt, fc.constantFrom('human', 'machine', 'fax', 'unknown') as fc.Arbitrary<'human' | 'machine' | 'fax' | 'unknown'>).map(([t, r]) => new CarrierAmd(t, r))),
  ...weighted(1, fc.tuple(dt, fc.constantFrom(...FINAL_CALL_STATUSES), maybe(fc.integer({ min: 0, max: 600 }))).map(([t, s, sec]) => new CarrierEnded(t, s, sec))),
  ...weighted(1, fc.tuple(dt, fc.nat(8)).map(([t, back]) => new CarrierRepeats(t, back))),
  // The media stream's events change nothing the machine keeps: one weight for the three.
  ...weighted(1, fc.oneof(dt.map((t) => new MediaStarted(t)), dt.map((t) => new MediaStopped(t)), dt.map((t) => new Dtmf(t)))),
  ...weighted(1, fc.tuple(dt, fc.constantFrom(...HANGUP_REASONS)).map(([t, r]) => new HangupRequested(t, r))),
  ...weighted(1, dt.map((t) => new PostcallDone(t))),
  ...weighted(4, conversationLine),
  ...weighted(2, dt.map((t) => new SlotGranted(t))),
  ...weighted(2, fc.tuple(dt, fc.constantFrom('CA1', 'CA2')).map(([t, id]) => new DialResolves(t, id))),
  ...weighted(1, dt.map((t) => new DialRejects(t))),
  ...weighted(2, dt.map((t) => new DialTimesOut(t))),
  ...weighted(2, fc.tuple(dt, carrierView).map(([t, v]) => new FindDialFound(t, v))),
  ...weighted(1, dt.map((t) => new FindDialNotFound(t))),
  ...weighted(2, dt.map((t) => new FindDialUnreachable(t))),
  ...weighted(2, fc.tuple(dt, carrierView).map(([t, v]) => new CheckCallReconciled(t, v))),
  ...weighted(1, dt.map((t) => new CheckCallUnreachable(t))),
  ...weighted(2, dt.map((t) => new HangupDone(t))),
  ...weighted(2, dt.map((t) => new HangupUnreachable(t))),
  ...weighted(4, fc.tuple(lateness, fc.constantFrom(...DEADLINES)).map(([t, n]) => new DeadlineFires(t, n))),
  ...weighted(2, dt.map((t) => new PersistRestore(t))),
  ...weighted(3, fc.tuple(dt, fc.constantFrom('cold' as const, 'warm' as const)).map(([t, mode]) => new TransferRequested(t, mode))),
  ...weighted(
    3,
    fc.tuple(dt, fc.constantFrom<TargetNews>('ANSWERED', 'WHISPERED', 'CONNECTED', 'FAILED'), fc.nat(3), fc.boolean()).map(([t, news, n, back]) => new TargetWebhook(t, news, n === 0, back)),
  ),
  ...weighted(
    4,
    fc
      .tuple(
        dt,
        fc.constantFrom('placeTransfer' as const, 'checkTransfer' as const, 'whisperTransfer' as const, 'bridgeTransfer' as const, 'releaseMedia' as const),
        fc.constantFrom('PLACED' as const, 'FAILED' as const, 'UNKNOWN' as const, 'ANSWERED' as const, 'CONNECTED' as const, 'SENT' as const, 'UNREACHABLE' as const, 'RECONCILED' as const),
        carrierView,
      )
      .map(([t, effect, answer, view]) => new TransferOutcome(t, effect, answer, view)),
  ),
];

/**
 * A connected call's transfers, denser: the transfer's commands weigh most, with the
 * carrier's end, hang-ups, its other checks, deadlines and restarts at any step.
 */
const transferCommands = [
  ...weighted(4, fc.tuple(dt, fc.constantFrom('cold' as const, 'warm' as const)).map(([t, mode]) => new TransferRequested(t, mode))),
  ...weighted(
    4,
    fc.tuple(dt, fc.constantFrom<TargetNews>('ANSWERED', 'WHISPERED', 'CONNECTED', 'FAILED'), fc.nat(3), fc.boolean()).map(([t, news, n, back]) => new TargetWebhook(t, news, n === 0, back)),
  ),
  ...weighted(
    6,
    fc
      .tuple(
        dt,
        fc.constantFrom('placeTransfer' as const, 'checkTransfer' as const, 'whisperTransfer' as const, 'bridgeTransfer' as const, 'releaseMedia' as const),
        fc.constantFrom('PLACED' as const, 'FAILED' as const, 'UNKNOWN' as const, 'ANSWERED' as const, 'CONNECTED' as const, 'SENT' as const, 'UNREACHABLE' as const, 'RECONCILED' as const),
        carrierView,
      )
      .map(([t, effect, answer, view]) => new TransferOutcome(t, effect, answer, view)),
  ),
  ...weighted(3, dt.map((t) => new PersistRestore(t))),
  ...weighted(3, fc.tuple(lateness, fc.constantFrom(...DEADLINES)).map(([t, n]) => new DeadlineFires(t, n))),
  ...weighted(2, conversationLine),
  ...weighted(1, fc.tuple(dt, fc.constantFrom(...FINAL_CALL_STATUSES), maybe(fc.integer({ min: 0, max: 600 }))).map(([t, st, sec]) => new CarrierEnded(t, st, sec))),
  ...weighted(1, fc.tuple(dt, fc.constantFrom(...HANGUP_REASONS)).map(([t, r]) => new HangupRequested(t, r))),
  ...weighted(1, fc.tuple(dt, carrierView).map(([t, v]) => new CheckCallReconciled(t, v))),
  ...weighted(1, dt.map((t) => new HangupDone(t))),
  ...weighted(1, dt.map((t) => new PostcallDone(t))),
];

const callArb = fc.record({
  kind: fc.constantFrom('inbound', 'outbound', 'outbound', 'queued'),
  amdEnabled: fc.boolean(),
  maxDurationSec: fc.integer({ min: 60, max: 1_800 }),
  provider: fc.constantFrom('twilio' as const, 'telnyx' as const),
});

// ---- liveness ----

/** What an effect answers when the carrier cannot be reached. */
function unreachable(effect: Effect, at: number, attempt: number): CallEvent {
  if (effect === 'dial') return { type: 'DIAL.UNKNOWN', at };
  if (effect === 'placeTransfer') return { type: 'TRANSFER.UNKNOWN', at, attempt };
  // Whisper, bridge and release are retried until they answer; here they finally do.
  if (effect === 'whisperTransfer' || effect === 'bridgeTransfer' || effect === 'releaseMedia' || effect === 'dropTransferLeg') return { type: 'TRANSFER.SENT', at, attempt };
  return { type: 'CARRIER.UNREACHABLE', at };
}

/**
 * After the run, the service asks to end the call while the carrier stays unreachable and
 * no webhook comes: every effect fails to reach it and only deadlines move time on. The
 * call must still end, so its slot frees (a hang-up is given up after a few attempts, an
 * unknown dial at its give-up). The invariants hold at every step of the way.
 */
function endsWithTheCarrierUnreachable(m: Model): void {
  const d = m.rt;
  if (d.snapshot.status !== 'active' || d.finished) return;
  m.now += 1_000;
  observe(m, d.send({ type: 'HANGUP.REQUESTED', at: m.now, reason: 'canceled' }), 'then: HangupRequested(reason="canceled")');
  for (let i = 0; i < 1_000 && !d.finished; i++) {
    const intent = d.pending()[0];
    if (intent) {
      m.now += 1_000;
      observe(m, d.settle(intent.effect, unreachable(intent.effect, m.now, intent.context.transfer?.attempt ?? 1)), `then: ${intent.effect} unreachable`);
      continue;
    }
    const [name, due] = [...d.deadlines].sort(([, a], [, b]) => a.dueAt - b.dueAt)[0] ?? fail(m, 'asked to end, the call waits on nothing');
    m.now = Math.max(m.now, due.dueAt);
    const step = d.fire(name, m.now);
    observe(m, step, `then: DeadlineFires(name="${name}")`);
    hold(m, step.taken, `the armed deadline ${name} came due and the call ignored it`);
  }
  hold(m, d.finished, 'asked to end while the carrier is unreachable, the call never ends (its slot is never freed)');
}

// CALL_MODEL_RUNS=20000 (and CALL_MODEL_SEED=…) for a deeper search.
const RUNS = Number(process.env['CALL_MODEL_RUNS'] ?? 300);
const SEED = process.env['CALL_MODEL_SEED'] === undefined ? {} : { seed: Number(process.env['CALL_MODEL_SEED']) };

it('slot released exactly once, deadlines armed and cancelled, one dial and one final state per call', { timeout: 20_000 + RUNS * 5 }, () => {
  fc.assert(
    fc.property(callArb, fc.commands(commands, { maxCommands: 40, size: 'max' }), ({ kind, amdEnabled, maxDurationSec, provider }, cmds) => {
      const input =
        kind === 'inbound'
          ? callInput({ direction: 'inbound', carrierCallId: 'CA_in', from: '+15550000009', to: '+15550000001', amdEnabled, maxDurationSec, provider })
          : callInput({ queued: kind === 'queued', amdEnabled, maxDurationSec, provider });
      const rt = CallDriver.start(input);
      const m: Model = { input, now: T0, rt, dial: 'none', final: null, webhooks: [], lines: [], hangupReason: null, log: [], placed: [] };
      observe(m, rt.last(), `start(${kind})`);
      fc.modelRun(() => ({ model: m, real: rt }), cmds);
      endsWithTheCarrierUnreachable(m);
    }),
    { numRuns: RUNS, ...SEED },
  );
});

it('transfers: one request per attempt through restarts, failures back to the agent, the meter stopping at the handoff', { timeout: 20_000 + RUNS * 5 }, () => {
  fc.assert(
    fc.property(fc.constantFrom('twilio' as const, 'telnyx' as const), fc.commands(transferCommands, { maxCommands: 40, size: 'max' }), (provider, cmds) => {
      const input = callInput({ direction: 'inbound', carrierCallId: 'CA_in', from: '+15550000009', to: '+15550000001', provider });
      const rt = CallDriver.start(input);
      const m: Model = { input, now: T0, rt, dial: 'none', final: null, webhooks: [], lines: [], hangupReason: null, log: [], placed: [] };
      observe(m, rt.last(), 'start(inbound)');
      fc.modelRun(() => ({ model: m, real: rt }), cmds);
      endsWithTheCarrierUnreachable(m);
    }),
    { numRuns: RUNS, ...SEED },
  );
});
