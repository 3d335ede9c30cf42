// Model test of the conversation machine (machines/conversation.ts) as the agent engine
// drives it (test/model/conversation-driver.ts: a real actor, effects recorded, XState's
// simulated clock). fast-check generates sequences of named commands, one class per
// thing that can happen on a call: the caller's voice activity starting and stopping,
// interim and final words (real words, backchannels, empty), the recogniser's utterance
// end and its failure, the reply's first audio, its end (played out or cut) and its
// failure (model or speech, retryable or not), the end-call tool, time passing (a little
// or a lot), and a persist-restore (the snapshot through JSON, a new actor started from
// it), and (issue 9) keypad entries, the model naming tools during a reply and the
// tools answering or failing, the model calling the transfer tool, and the transfer's
// outcome (the person is reached: the conversation closes; or not: the agent says so). The engine's side is honest: reply events only for a reply
// that is live, the recogniser silent once failed, and an interruption answered at once
// with REPLY.ENDED carrying what was heard (as voice/conversation/reply.ts does). After
// every command the model holds the machine to:
// - one reply at a time: startReply only when no reply is live (a cancelled,
//   interrupted, ended or failed one is not); a reply is live exactly while the machine
//   thinks or speaks, its audio started exactly while it speaks; each reply is asked
//   with every line so far;
// - playback: paused exactly while the machine is in speaking.paused (a reply that ends
//   under a pause must not leave the next one silent);
// - the floor: the states that wait for the caller to stop (listening.hearing, the two
//   overlaps) only while voice activity says they speak, the silent waits (idle,
//   waitingForWords) only while it says they do not;
// - hang-up: asked at most once, with nothing live, for a reason the model allows:
//   silence only when the caller is quiet, no reply is live and silence_hangup has
//   passed since either; agent_hangup only after END_CALL, when a reply ends; provider
//   errors only after a provider failed;
// - the transcript: every recorded line non-empty and the context's lines exactly the
//   recorded ones, in order; the context JSON as is, free of interim words, and small;
// - tools: the model is only asked for an answer once every tool of the last round has
//   answered (its request carries the answers), a filler only while a tool runs, every
//   round's tools started once, and the machine waits on a tool only while one runs;
// - transfers: asked of the engine (requestTransfer) only after the model called the
//   transfer tool during a reply that then played (an interruption or a cancel drops
//   it), with nothing live; while the caller holds, no reply starts and no hang-up is
//   asked, silence included; a failed transfer brings the agent back at once with the
//   `transfer_failed` reply; a connected one closes the conversation, and nothing is
//   said or asked after it;
// - backchannels (issue 24): once a final backchannel has come for the caller's speech
//   over a playing reply (during it, or before voice activity reported its start, up to
//   BACKCHANNEL_CLAIM_MS before), no pause outlives it: one it finds ends in the same
//   step (the engine's playout resumes on its next 20 ms tick) and none starts for that
//   speech, whether its final comes before, during or after voice activity's speech start
//   and the threshold (the Backchannel command plays each order), until real words or
//   the speech's end;
// - a restore: same state value, same context.
// After the commands, either the call hangs up (nothing may happen after), or the caller
// goes quiet and the engine plays every reply out: the conversation must end by itself
// (no dead air for ever).
// A restore keeps the pending delays beside the snapshot (XState does not persist them,
// statelyai/xstate#5331; the driver stores what is left of each and arms them again), and
// a run with restores must end exactly as the same run without them: the same hang-up,
// the same transcript, the same transfers, the same final state.
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { isBackchannel, type ConversationEndReason, type ConversationEvent, type ConversationInput, type ReplyKind } from '../../machines/conversation.ts';
import { BACKCHANNEL_CLAIM_MS, hasWords } from '../../machines/barge-in.ts';
import { ConversationDriver, type Effect } from './conversation-driver.ts';

// ---- the words ----

/** Words only ever heard as interim results: none may reach the context. */
const INTERIM_ONLY = ['wondering', 'perhaps', 'somewhere'] as const;
const INTERIM_WORDS = ['I was wondering', 'perhaps we could', 'somewhere near the'];
const FINAL_WORDS = ['book a table for two', 'tomorrow at noon', 'cancel my order', 'what are your opening hours'];
const BACKCHANNEL_WORDS = ['uh-huh', 'okay', 'yeah'];

const REPLY_TEXT: Record<ReplyKind, string> = {
  greeting: 'Hello, this is Acme, how can I help you today?',
  answer: 'Sure, we have a table at seven, shall I book it?',
  fallback: 'Sorry, I did not catch that.',
  apology: 'Sorry, something went wrong on my side.',
  filler: 'One moment while I check that.',
  transfer_failed: 'Sorry, nobody answered there.',
};

/** Replies the model makes (the only ones that can name tools). */
const MODEL_KINDS: ReadonlySet<ReplyKind> = new Set<ReplyKind>(['greeting', 'answer']);

/** The first `fraction` of a text's words (what a caller heard of a cut reply). */
function prefix(text: string, fraction: number): string {
  const words = text.split(' ');
  return words.slice(0, Math.floor(words.length * fraction)).join(' ');
}

// ---- the model ----

interface LiveReply {
  kind: ReplyKind;
  text: string;
  /** Its first audio frame went out (REPLY.AUDIO sent). */
  audio: boolean;
  /** Its model named tools (TOOL.CALLS sent; they come once, at the end of the model's stream). */
  namedTools: boolean;
}

type Delivering = ConversationEvent['type'] | 'TIME' | 'START' | null;

interface Model {
  input: ConversationInput;
  callerSpeaking: boolean;
  sttFailed: boolean;
  /** The reply the engine is making, as the engine knows it. */
  reply: LiveReply | null;
  /** The playout is paused (pause sets it; resume, and the clear of a cut, cancelled or failed reply, unset it). */
  paused: boolean;
  /**
   * A final backchannel came for the caller's speech over this playing reply, at `at`:
   * during the speech (`speaking`), or while voice activity reported none yet (the speech
   * start that follows within BACKCHANNEL_CLAIM_MS is its). Real words, the speech's end
   * or another reply end it.
   */
  settled: { at: number; speaking: boolean; reply: LiveReply } | null;
  /** Since when neither the caller spoke nor a reply was live (ms, simulated). */
  quietSince: number;
  endCallSent: boolean;
  providerFailed: boolean;
  hangups: ConversationEndReason[];
  /** The calls of the last tool round, as the engine runs them. */
  tools: { id: string; answered: boolean }[];
  toolSeq: number;
  /** The model called the transfer tool during the live reply (the machine transfers once it has played). */
  transferAsked: boolean;
  /** The engine is transferring the caller (requestTransfer seen, no outcome yet). */
  transferring: boolean;
  /** The transfer connected: the conversation is closed and the run is over. */
  over: boolean;
  /** This run may persist and restore (runs that do not are held to the liveness check). */
  mayRestore: boolean;
  restored: boolean;
  /** What is being delivered to the machine now (effects fire inside it). */
  delivering: Delivering;
  /** A broken rule seen inside an effect, reported after the step. */
  broken: string | null;
  log: string[];
}

type Real = ConversationDriver;

function fail(m: Model, d: Real, what: string): never {
  const steps = m.log.length > 40 ? [m.log[0]!, `… ${m.log.length - 40} more steps …`, ...m.log.slice(-39)] : m.log;
  throw new Error(`${what}\n  input: ${JSON.stringify(m.input)}\n  state: ${JSON.stringify(d.value)} at ${d.now} ms\n  steps:\n    ${steps.join('\n    ')}`);
}

function hold(m: Model, d: Real, ok: boolean, what: string): void {
  if (!ok) fail(m, d, what);
}

/** Inside an effect: note the first broken rule (throwing inside an XState action would be swallowed as an actor error). */
function expectThat(m: Model, ok: boolean, what: string): void {
  if (!ok && m.broken === null) m.broken = what;
}

/** The engine's side of each effect, at the moment the machine asks for it (actors/agent/agent-engine.ts). */
function engineSees(m: Model, e: Effect, d: Real): void {
  switch (e.type) {
    case 'startReply':
      expectThat(m, m.reply === null, `startReply(${e.request.kind}) while the ${m.reply?.kind} reply is live`);
      expectThat(m, !m.transferring, `startReply(${e.request.kind}) while the caller holds for a transfer`);
      if (m.delivering === 'TRANSFER.FAILED') expectThat(m, e.request.kind === 'transfer_failed', `a failed transfer was followed by a ${e.request.kind} reply`);
      expectThat(m, JSON.stringify(e.request.lines) === JSON.stringify(d.recorded()), `startReply(${e.request.kind}) without every line so far`);
      m.reply = { kind: e.request.kind, text: REPLY_TEXT[e.request.kind], audio: false, namedTools: false };
      if (e.request.kind === 'answer') {
        expectThat(m, m.tools.every((t) => t.answered), 'an answer was asked for while a tool still runs');
        expectThat(m, e.request.toolRounds.every((r) => !r.results.includes(null)), 'an answer was asked for with a tool round missing an answer');
      }
      if (e.request.kind === 'filler') expectThat(m, m.tools.some((t) => !t.answered), 'a filler with no tool running');
      return;
    case 'runTools':
      expectThat(m, m.delivering === 'TOOL.CALLS', `runTools while delivering ${m.delivering}`);
      m.tools = e.calls.map((c) => ({ id: c.id, answered: false }));
      return;
    case 'cancelReply':
      expectThat(m, m.reply !== null && !m.reply.audio, 'cancelReply for no reply, or for one already playing');
      m.reply = null;
      m.transferAsked = false;
      m.paused = false;
      m.quietSince = d.now;
      return;
    case 'interruptReply': {
      expectThat(m, m.reply !== null && m.reply.audio, 'interruptReply for no reply, or for one that never played');
      const heard = m.reply ? prefix(m.reply.text, 0.5) : '';
      m.reply = null;
      // The caller cut in: the model hears them out before any transfer it announced.
      m.transferAsked = false;
      m.paused = false;
      m.quietSince = d.now;
      // The reply stops and reports what was heard at once; the actor takes it after this step.
      d.actor.send({ type: 'REPLY.ENDED', heard, complete: false });
      return;
    }
    case 'pausePlayback':
      expectThat(m, m.reply !== null && m.reply.audio, 'pausePlayback with no reply playing');
      expectThat(m, settledSpeech(m) === null, `pausePlayback for speech whose final backchannel came ${d.now - (m.settled?.at ?? 0)} ms before`);
      m.paused = true;
      return;
    case 'resumePlayback':
      m.paused = false;
      return;
    case 'recordLine':
      expectThat(m, e.line.text.trim() !== '', `an empty ${e.line.speaker} line was recorded`);
      return;
    case 'requestTransfer':
      expectThat(m, m.transferAsked, 'requestTransfer without the transfer tool called for the reply that played');
      expectThat(m, m.reply === null && m.delivering === 'REPLY.ENDED', `requestTransfer while delivering ${m.delivering}${m.reply ? ` with the ${m.reply.kind} reply live` : ''}`);
      expectThat(m, JSON.stringify(e.lines) === JSON.stringify(d.recorded()), 'requestTransfer without every line so far (the briefing is written from them)');
      m.transferAsked = false;
      m.transferring = true;
      return;
    case 'requestHangup': {
      expectThat(m, m.hangups.length === 0, `requestHangup(${e.reason}) after requestHangup(${m.hangups[0]})`);
      expectThat(m, !m.transferring, `requestHangup(${e.reason}) while the caller holds for a transfer`);
      expectThat(m, m.reply === null, `requestHangup(${e.reason}) while the ${m.reply?.kind} reply is live`);
      const quietFor = d.now - m.quietSince;
      const allowed =
        e.reason === 'silence_timeout'
          ? !m.callerSpeaking && m.reply === null && quietFor >= m.input.silenceHangupMs
          : e.reason === 'agent_hangup'
            ? m.endCallSent && m.delivering === 'REPLY.ENDED'
            : m.providerFailed && (m.delivering === 'REPLY.ENDED' || m.delivering === 'REPLY.FAILED');
      expectThat(m, allowed, `requestHangup(${e.reason}) not allowed: caller ${m.callerSpeaking ? 'speaking' : `quiet for ${quietFor} ms`}, delivering ${m.delivering}, END_CALL ${m.endCallSent}, provider failed ${m.providerFailed}`);
      m.hangups.push(e.reason);
      return;
    }
  }
}

const inState = (d: Real, value: Parameters<Real['matches']>[0]) => d.matches(value);

/** The final backchannel that settles the caller's current speech over the playing reply, if one does. */
function settledSpeech(m: Model): Model['settled'] {
  const s = m.settled;
  return s !== null && s.reply === m.reply && m.reply.audio && s.speaking === m.callerSpeaking ? s : null;
}

/** After a step: logs it and holds the machine to every invariant. */
function observe(m: Model, d: Real, label: string, from: number): void {
  m.log.push(`${label} → ${JSON.stringify(d.value)} @${d.now}${d.effects.length > from ? ` [${d.typesSince(from).join(', ')}]` : ''}`);
  if (m.broken !== null) fail(m, d, m.broken);
  if (d.snapshot.status === 'error') fail(m, d, `the actor failed: ${String(d.snapshot.error)}`);
  const ctx = d.context;

  // The transcript: what was recorded is what the context keeps, line for line.
  const recorded = d.recorded();
  hold(m, d, recorded.every((l) => l.text.trim() !== ''), 'an empty line was recorded');
  hold(m, d, JSON.stringify(ctx.lines) === JSON.stringify(recorded), `context lines ${JSON.stringify(ctx.lines)} ≠ recorded ${JSON.stringify(recorded)}`);

  // The context: JSON as is, no interim words, small (its lines and pending words, plus a fixed part).
  const json = JSON.stringify(ctx);
  expect(JSON.parse(json)).toEqual(ctx);
  for (const w of INTERIM_ONLY) hold(m, d, !json.includes(w), `the interim word "${w}" reached the context`);
  hold(m, d, json.length <= 600 + JSON.stringify(ctx.lines).length + ctx.callerText.length + JSON.stringify(ctx.toolRounds).length, `the context grew to ${json.length} characters`);

  // Hang-up: once at most, and the machine is then ending (or the call is over).
  const ending = inState(d, 'ending');
  hold(m, d, ending === (m.hangups.length === 1) || d.snapshot.status === 'done', `in ending: ${ending}, hang-ups asked: ${m.hangups.length}`);
  if (d.snapshot.status !== 'active' || ending) return;

  // One reply, live exactly while the machine thinks or speaks; audio exactly while it speaks.
  const replying = inState(d, 'thinking') || inState(d, 'speaking');
  hold(m, d, replying === (m.reply !== null), `the machine is ${JSON.stringify(d.value)} but the engine has ${m.reply ? `a live ${m.reply.kind} reply` : 'no reply'}`);
  hold(m, d, inState(d, 'speaking') === (m.reply?.audio === true), `speaking: ${inState(d, 'speaking')}, reply audio started: ${m.reply?.audio === true}`);
  hold(m, d, m.paused === inState(d, { speaking: 'paused' }), `the playout is ${m.paused ? '' : 'not '}paused in ${JSON.stringify(d.value)}`);

  // Who has the floor agrees with voice activity: the states that wait for the caller to
  // stop are only ever in while they speak, the silent waits only while they do not.
  const waitsForSpeechEnd =
    inState(d, { listening: 'hearing' }) || inState(d, { thinking: 'overlap' }) || inState(d, { speaking: 'overlap' }) || inState(d, { speaking: 'acknowledged' });
  const waitsInSilence = inState(d, { listening: 'idle' }) || inState(d, { listening: 'waitingForWords' }) || inState(d, { speaking: 'acknowledgedAhead' });
  hold(m, d, !waitsForSpeechEnd || m.callerSpeaking, `${JSON.stringify(d.value)} waits for the caller to stop, but they are not speaking`);
  hold(m, d, !waitsInSilence || !m.callerSpeaking, `${JSON.stringify(d.value)} counts silence while the caller speaks`);

  // Transfers: the machine holds the caller exactly while the engine transfers.
  hold(m, d, inState(d, 'transferring') === m.transferring, `in transferring: ${inState(d, 'transferring')}, the engine transferring: ${m.transferring}`);

  // Tools: the machine waits on a tool only while one runs.
  hold(m, d, !inState(d, 'waitingForTool') || m.tools.some((t) => !t.answered), 'waitingForTool with every tool answered');
}

// ---- commands ----

abstract class ConversationCommand implements fc.Command<Model, Real> {
  /** Once the conversation asked to end, nothing it could still do matters: the run stops. */
  check(m: Readonly<Model>): boolean {
    return m.hangups.length === 0 && !m.over && this.applies(m);
  }
  protected applies(_m: Readonly<Model>): boolean {
    return true;
  }
  run(m: Model, d: Real): void {
    const from = d.effects.length;
    this.act(m, d);
    m.delivering = null;
    observe(m, d, this.toString(), from);
  }
  protected abstract act(m: Model, d: Real): void;
  abstract toString(): string;
}

/** One event from the engine to the machine. */
abstract class EventCommand extends ConversationCommand {
  protected abstract event(m: Model): ConversationEvent;
  protected before(_m: Model, _d: Real): void {}
  protected act(m: Model, d: Real): void {
    const e = this.event(m);
    this.before(m, d);
    m.delivering = e.type;
    d.send(e);
  }
}

class SpeechStarts extends EventCommand {
  protected override applies(m: Readonly<Model>) {
    return !m.callerSpeaking;
  }
  protected event(): ConversationEvent {
    return { type: 'SPEECH.START' };
  }
  protected override before(m: Model, d: Real) {
    m.callerSpeaking = true;
    // A final backchannel just before is this speech's (voice activity behind the recogniser); an older one is not.
    if (m.settled && !m.settled.speaking) m.settled = d.now - m.settled.at < BACKCHANNEL_CLAIM_MS ? { ...m.settled, speaking: true } : null;
  }
  toString() {
    return 'SpeechStarts()';
  }
}

class SpeechEnds extends EventCommand {
  protected override applies(m: Readonly<Model>) {
    return m.callerSpeaking;
  }
  protected event(): ConversationEvent {
    return { type: 'SPEECH.END' };
  }
  protected override before(m: Model, d: Real) {
    m.callerSpeaking = false;
    m.quietSince = Math.max(m.quietSince, d.now);
    if (m.settled?.speaking) m.settled = null;
  }
  toString() {
    return 'SpeechEnds()';
  }
}

/** Recognised words; a final's endOfTurn as the engine computes it (the recogniser's speech_final, or voice activity quiet). */
class Words extends EventCommand {
  constructor(
    readonly text: string,
    readonly final: boolean,
    readonly speechFinal: boolean,
  ) {
    super();
  }
  protected override applies(m: Readonly<Model>) {
    return !m.sttFailed;
  }
  protected event(m: Model): ConversationEvent {
    return { type: 'WORDS', text: this.text, final: this.final, endOfTurn: this.final && (this.speechFinal || !m.callerSpeaking) };
  }
  protected override before(m: Model, d: Real) {
    const backchannel = this.final && isBackchannel(this.text);
    // Heard while paused for speech that has ended, it is that speech's: it claims no speech to come.
    if (backchannel && m.reply?.audio) m.settled = m.callerSpeaking || !m.paused ? { at: d.now, speaking: m.callerSpeaking, reply: m.reply } : null;
    else if (hasWords(this.text) && !isBackchannel(this.text)) m.settled = null;
  }
  protected override act(m: Model, d: Real): void {
    super.act(m, d);
    // A pause it finds ends with it, whatever state the pause was decided in.
    if (this.final && isBackchannel(this.text) && m.reply?.audio) expectThat(m, !m.paused, `the playout is still paused after the final backchannel ${JSON.stringify(this.text)}`);
  }
  toString() {
    return `Words(${JSON.stringify(this.text)}, ${this.final ? 'final' : 'interim'}${this.final && this.speechFinal ? ', speech_final' : ''})`;
  }
}

/**
 * One backchannel over the playing reply, with voice activity and the recogniser apart
 * (issue 24): its final words come `when` before voice activity reports the speech start
 * (voice activity behind, by up to BACKCHANNEL_CLAIM_MS), between the start and the
 * threshold, or after the threshold (a pause may have begun); voice activity's end comes
 * before or after the final, and an interim of the same words may come first. Played as
 * the single events above with the time between them; from the final on, the playout must
 * not be paused, and no pause may start for the speech.
 */
class Backchannel extends ConversationCommand {
  constructor(
    readonly text: string,
    readonly when: 'before' | 'during' | 'after',
    /** Where in its range the final comes, 0..1. */
    readonly at: number,
    /** Voice activity's end, from the final (negative: before it). */
    readonly endFromFinalMs: number,
    /** An interim of the same words this long before the final (null: none). */
    readonly interimLeadMs: number | null,
  ) {
    super();
  }
  protected override applies(m: Readonly<Model>) {
    // Not while paused for speech that has ended: what comes then is that speech's (see Words).
    return m.reply?.audio === true && !m.callerSpeaking && !m.paused && !m.sttFailed;
  }
  protected act(m: Model, d: Real): void {
    const threshold = m.input.interruptMs;
    // Times from voice activity's speech start.
    const finalAt =
      this.when === 'before'
        ? -1 - Math.floor(this.at * (BACKCHANNEL_CLAIM_MS - 2))
        : this.when === 'during'
          ? Math.floor(this.at * threshold)
          : threshold + Math.floor(this.at * 1500);
    const endAt = Math.max(0, finalAt + this.endFromFinalMs);
    const steps: { at: number; order: number; command: ConversationCommand }[] = [
      { at: 0, order: 0, command: new SpeechStarts() },
      { at: finalAt, order: 2, command: new Words(this.text, true, true) },
      { at: endAt, order: 3, command: new SpeechEnds() },
    ];
    if (this.interimLeadMs !== null) steps.push({ at: finalAt - this.interimLeadMs, order: 1, command: new Words(this.text, false, false) });
    steps.sort((a, b) => a.at - b.at || a.order - b.order);
    let clock = steps[0]!.at;
    let finalEffect: number | null = null;
    for (const step of steps) {
      if (step.at > clock) new TimePasses(step.at - clock).run(m, d);
      clock = step.at;
      if (!step.command.check(m)) continue;
      step.command.run(m, d);
      if (step.order === 2) {
        finalEffect = d.effects.length;
        hold(m, d, !m.paused, `paused after the final ${JSON.stringify(this.text)}`);
      }
    }
    const paused = finalEffect === null ? [] : d.effects.slice(finalEffect).filter((e) => e.type === 'pausePlayback');
    hold(m, d, paused.length === 0, `a pause started ${paused[0] ? paused[0].at - d.now : 0} ms from the end, after the final ${JSON.stringify(this.text)}`);
  }
  toString() {
    return `Backchannel(${JSON.stringify(this.text)}, final ${this.when} the speech start at ${this.at.toFixed(2)}, end ${this.endFromFinalMs} ms from it${this.interimLeadMs === null ? '' : `, interim ${this.interimLeadMs} ms ahead`})`;
  }
}

class UtteranceEnds extends EventCommand {
  protected override applies(m: Readonly<Model>) {
    return !m.sttFailed;
  }
  protected event(): ConversationEvent {
    return { type: 'UTTERANCE.END' };
  }
  toString() {
    return 'UtteranceEnds()';
  }
}

class SttFails extends EventCommand {
  protected override applies(m: Readonly<Model>) {
    return !m.sttFailed;
  }
  protected event(): ConversationEvent {
    return { type: 'STT.FAILED' };
  }
  protected override before(m: Model) {
    m.sttFailed = true;
    m.providerFailed = true;
  }
  toString() {
    return 'SttFails()';
  }
}

class ReplyAudio extends EventCommand {
  protected override applies(m: Readonly<Model>) {
    return m.reply !== null && !m.reply.audio;
  }
  protected event(): ConversationEvent {
    return { type: 'REPLY.AUDIO' };
  }
  protected override before(m: Model) {
    m.reply!.audio = true;
  }
  toString() {
    return 'ReplyAudio()';
  }
}

/** The reply is over: played out, or cut (the playout cleared) after `fraction` of it was heard. */
class ReplyEnds extends EventCommand {
  constructor(
    readonly complete: boolean,
    readonly fraction: number,
  ) {
    super();
  }
  protected override applies(m: Readonly<Model>) {
    return m.reply !== null;
  }
  protected event(m: Model): ConversationEvent {
    const r = m.reply!;
    const heard = !r.audio ? '' : this.complete ? r.text : prefix(r.text, this.fraction);
    return { type: 'REPLY.ENDED', heard, complete: this.complete };
  }
  protected override before(m: Model, d: Real) {
    m.reply = null;
    // A cut clears the playout (un-pausing it); a reply played out leaves it as it was.
    if (!this.complete) m.paused = false;
    m.quietSince = Math.max(m.quietSince, d.now);
  }
  toString() {
    return this.complete ? 'ReplyEnds(complete)' : `ReplyEnds(cut at ${this.fraction})`;
  }
}

class ReplyFails extends EventCommand {
  constructor(
    readonly provider: 'llm' | 'tts',
    readonly retryable: boolean,
  ) {
    super();
  }
  protected override applies(m: Readonly<Model>) {
    return m.reply !== null;
  }
  protected event(): ConversationEvent {
    return { type: 'REPLY.FAILED', provider: this.provider, retryable: this.retryable };
  }
  protected override before(m: Model, d: Real) {
    m.reply = null;
    m.paused = false; // the failed reply clears the playout
    m.providerFailed = true;
    m.quietSince = Math.max(m.quietSince, d.now);
  }
  toString() {
    return `ReplyFails(${this.provider}, ${this.retryable ? 'retryable' : 'final'})`;
  }
}

/** The model called the end-call tool (only ever during a reply). */
class EndCall extends EventCommand {
  protected override applies(m: Readonly<Model>) {
    return m.reply !== null;
  }
  protected event(): ConversationEvent {
    return { type: 'END_CALL' };
  }
  protected override before(m: Model) {
    m.endCallSent = true;
  }
  toString() {
    return 'EndCall()';
  }
}

/** The reply's model named tools (at the end of its stream, so at most once per reply). */
class ToolCalls extends EventCommand {
  constructor(readonly count: number) {
    super();
  }
  protected override applies(m: Readonly<Model>) {
    return m.reply !== null && MODEL_KINDS.has(m.reply.kind) && !m.reply.namedTools;
  }
  protected event(m: Model): ConversationEvent {
    const calls = Array.from({ length: this.count }, (_, i) => ({ id: `call_${m.toolSeq + i}`, name: i === 0 ? 'lookup_order' : 'automation_webhook', arguments: '{}' }));
    return { type: 'TOOL.CALLS', calls };
  }
  protected override before(m: Model) {
    m.reply!.namedTools = true;
    m.toolSeq += this.count;
  }
  toString() {
    return `ToolCalls(${this.count})`;
  }
}

/** The first tool still running answers, or fails. */
class ToolAnswers extends EventCommand {
  constructor(readonly ok: boolean) {
    super();
  }
  protected override applies(m: Readonly<Model>) {
    return m.tools.some((t) => !t.answered);
  }
  protected event(m: Model): ConversationEvent {
    const id = m.tools.find((t) => !t.answered)!.id;
    return this.ok ? { type: 'TOOL.DONE', id, result: '{"status":"shipped"}' } : { type: 'TOOL.FAILED', id, error: 'timed out' };
  }
  protected override before(m: Model) {
    m.tools.find((t) => !t.answered)!.answered = true;
  }
  toString() {
    return `ToolAnswers(${this.ok ? 'done' : 'failed'})`;
  }
}

/** A keypad entry (grouped by the keypad machine). */
class Keypad extends EventCommand {
  constructor(readonly digits: string) {
    super();
  }
  protected event(): ConversationEvent {
    return { type: 'KEYPAD', digits: this.digits };
  }
  toString() {
    return `Keypad(${this.digits})`;
  }
}

/** The model calls the transfer tool during its reply (the engine sends TRANSFER). */
class TransferTool extends EventCommand {
  protected override applies(m: Readonly<Model>) {
    return m.reply !== null && MODEL_KINDS.has(m.reply.kind);
  }
  protected event(): ConversationEvent {
    return { type: 'TRANSFER' };
  }
  protected override before(m: Model) {
    m.transferAsked = true;
  }
  toString() {
    return 'TransferTool()';
  }
}

/** The transfer did not reach the person (busy, no answer, refused): the caller is back. */
class TransferFails extends EventCommand {
  protected override applies(m: Readonly<Model>) {
    return m.transferring;
  }
  protected event(): ConversationEvent {
    return { type: 'TRANSFER.FAILED' };
  }
  protected override before(m: Model) {
    m.transferring = false;
  }
  protected override act(m: Model, d: Real): void {
    const from = d.effects.length;
    super.act(m, d);
    hold(m, d, d.of('startReply').slice(-1)[0]?.request.kind === 'transfer_failed' && d.effects.length > from, `a failed transfer did not bring the agent back (${d.typesSince(from).join(', ')})`);
  }
  toString() {
    return 'TransferFails()';
  }
}

/** The person answered and the caller is bridged to them: the engine closes the conversation. */
class TransferConnects extends ConversationCommand {
  protected override applies(m: Readonly<Model>) {
    return m.transferring;
  }
  protected act(m: Model, d: Real): void {
    const from = d.effects.length;
    m.transferring = false;
    m.over = true;
    m.delivering = 'HANGUP';
    d.send({ type: 'HANGUP' });
    hold(m, d, d.snapshot.status === 'done', `a connected transfer left the conversation ${JSON.stringify(d.value)}`);
    hold(m, d, d.effects.length === from, `a connected transfer was followed by ${d.typesSince(from).join(', ')}`);
    const after = d.effects.length;
    d.advance(2 * (m.input.silenceHangupMs + m.input.pickupDelayMs));
    hold(m, d, d.effects.length === after, `after the transfer the machine still asked for ${d.typesSince(after).join(', ')}`);
  }
  toString() {
    return 'TransferConnects()';
  }
}

class TimePasses extends ConversationCommand {
  constructor(readonly ms: number) {
    super();
  }
  protected act(m: Model, d: Real): void {
    m.delivering = 'TIME';
    d.advance(this.ms);
  }
  toString() {
    return `TimePasses(${this.ms})`;
  }
}

/** The conversation is stored (through JSON) and a new actor starts from it. */
class PersistRestore extends ConversationCommand {
  protected override applies(m: Readonly<Model>) {
    return m.mayRestore;
  }
  protected act(m: Model, d: Real): void {
    const before = { value: d.value, context: d.context };
    const stored = d.restore() as { value: unknown; context: unknown };
    m.restored = true;
    expect(stored.value).toEqual(before.value);
    hold(m, d, JSON.stringify(d.value) === JSON.stringify(before.value), `restored into ${JSON.stringify(d.value)}, stored in ${JSON.stringify(before.value)}`);
    expect(d.context).toEqual(before.context);
  }
  toString() {
    return 'PersistRestore()';
  }
}

// ---- arbitraries ----

const weighted = (weight: number, arb: fc.Arbitrary<fc.Command<Model, Real>>) => Array.from({ length: weight }, () => arb);

const finalText = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...FINAL_WORDS) },
  { weight: 2, arbitrary: fc.constantFrom(...BACKCHANNEL_WORDS) },
  { weight: 1, arbitrary: fc.constant('') },
);
const interimText = fc.oneof(fc.constantFrom(...INTERIM_WORDS), fc.constantFrom(...BACKCHANNEL_WORDS));

// Endings (provider failures, the end-call tool, long silences) are rare, so most of a
// run is spent talking: barge-ins, pauses and resumes need several steps in a row.
const commands = [
  ...weighted(8, fc.constant(new SpeechStarts())),
  ...weighted(8, fc.constant(new SpeechEnds())),
  ...weighted(6, interimText.map((t) => new Words(t, false, false))),
  ...weighted(8, fc.tuple(finalText, fc.boolean()).map(([t, sf]) => new Words(t, true, sf))),
  ...weighted(2, fc.constant(new UtteranceEnds())),
  ...weighted(
    8,
    fc
      .tuple(
        fc.constantFrom(...BACKCHANNEL_WORDS, 'yeah, okay'),
        fc.constantFrom('before' as const, 'during' as const, 'after' as const),
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        fc.integer({ min: -600, max: 900 }),
        fc.option(fc.integer({ min: 1, max: 400 })),
      )
      .map(([text, when, at, end, interim]) => new Backchannel(text, when, at, end, interim)),
  ),
  ...weighted(10, fc.constant(new ReplyAudio())),
  ...weighted(4, fc.constant(new ReplyEnds(true, 1))),
  ...weighted(2, fc.constantFrom(0, 0.3, 0.6).map((f) => new ReplyEnds(false, f))),
  ...weighted(1, fc.tuple(fc.constantFrom('llm' as const, 'tts' as const), fc.boolean()).map(([p, r]) => new ReplyFails(p, r))),
  ...weighted(1, fc.constant(new EndCall())),
  ...weighted(1, fc.constant(new SttFails())),
  ...weighted(3, fc.integer({ min: 1, max: 2 }).map((n) => new ToolCalls(n))),
  ...weighted(4, fc.boolean().map((ok) => new ToolAnswers(ok))),
  ...weighted(2, fc.constantFrom('1', '42#', '*0').map((digits) => new Keypad(digits))),
  ...weighted(2, fc.constant(new TransferTool())),
  ...weighted(3, fc.constant(new TransferFails())),
  ...weighted(1, fc.constant(new TransferConnects())),
  ...weighted(12, fc.integer({ min: 0, max: 1_200 }).map((ms) => new TimePasses(ms))),
  // Long enough for any timer, silence included.
  ...weighted(1, fc.integer({ min: 1_500, max: 50_000 }).map((ms) => new TimePasses(ms))),
  ...weighted(3, fc.constant(new PersistRestore())),
];

const inputArb: fc.Arbitrary<ConversationInput> = fc.record({
  aiSpeaksFirst: fc.boolean(),
  pickupDelayMs: fc.constantFrom(5_000, 10_000),
  eagernessMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_000 })),
  interruptMs: fc.integer({ min: 100, max: 1_200 }),
  silenceHangupMs: fc.integer({ min: 5, max: 45 }).map((s) => s * 1_000),
  resumeAfterMs: fc.integer({ min: 1_000, max: 3_000 }),
});

// ---- the end of a run ----

/** The call hangs up: the engine cancels its reply and closes the conversation; nothing happens after. */
function callHangsUp(m: Model, d: Real): void {
  if (d.snapshot.status !== 'active') return;
  const at = d.effects.length;
  m.reply = null;
  m.transferring = false;
  d.send({ type: 'HANGUP' });
  m.log.push(`then: CallHangsUp() → ${JSON.stringify(d.value)} [${d.typesSince(at).join(', ')}]`);
  hold(m, d, d.actor.getSnapshot().status === 'done', `HANGUP left the conversation ${JSON.stringify(d.value)}`);
  // Leaving a pause un-pauses (harmless: the engine closes the playout next); nothing else.
  hold(m, d, d.typesSince(at).every((t) => t === 'resumePlayback'), `HANGUP asked for ${d.typesSince(at).join(', ')}`);
  const after = d.effects.length;
  d.advance(2 * (m.input.silenceHangupMs + m.input.pickupDelayMs));
  hold(m, d, d.effects.length === after, `after HANGUP the machine still asked for ${d.typesSince(after).join(', ')}`);
}

/**
 * The caller goes quiet and says nothing more; the engine plays every reply out. The
 * conversation must end by itself: no state may wait for ever on something that
 * cannot come.
 */
function endsByItself(m: Model, d: Real): void {
  if (m.over || d.snapshot.status !== 'active' || m.hangups.length > 0) return;
  const step = (label: string, act: () => void) => {
    const from = d.effects.length;
    act();
    m.delivering = null;
    observe(m, d, `then: ${label}`, from);
  };
  if (m.callerSpeaking) step('SpeechEnds()', () => {
    m.callerSpeaking = false;
    m.quietSince = d.now;
    d.send({ type: 'SPEECH.END' });
  });
  const longest = Math.max(m.input.silenceHangupMs, m.input.pickupDelayMs, m.input.resumeAfterMs, m.input.eagernessMs) + 1;
  for (let i = 0; i < 100 && m.hangups.length === 0 && d.snapshot.status === 'active'; i++) {
    const r = m.reply;
    const running = m.tools.find((t) => !t.answered);
    if (m.transferring) {
      // The carrier says how the transfer went; here, that nobody answered.
      step('TransferFails()', () => {
        m.transferring = false;
        m.delivering = 'TRANSFER.FAILED';
        d.send({ type: 'TRANSFER.FAILED' });
      });
    } else if (running) {
      step('ToolAnswers(done)', () => {
        running.answered = true;
        m.delivering = 'TOOL.DONE';
        d.send({ type: 'TOOL.DONE', id: running.id, result: '{}' });
      });
    } else if (r && !r.audio) {
      step('ReplyAudio()', () => {
        r.audio = true;
        m.delivering = 'REPLY.AUDIO';
        d.send({ type: 'REPLY.AUDIO' });
      });
    } else if (r && !inState(d, { speaking: 'paused' })) {
      step('ReplyEnds(complete)', () => {
        m.reply = null;
        m.quietSince = d.now;
        m.delivering = 'REPLY.ENDED';
        d.send({ type: 'REPLY.ENDED', heard: r.text, complete: true });
      });
    } else {
      step(`TimePasses(${longest})`, () => {
        m.delivering = 'TIME';
        d.advance(longest);
      });
    }
  }
  hold(m, d, m.hangups.length === 1, 'left alone by a quiet caller, the conversation never ended');
}

// CONVERSATION_MODEL_RUNS=20000 (and CONVERSATION_MODEL_SEED=…) for a deeper search.
const RUNS = Number(process.env['CONVERSATION_MODEL_RUNS'] ?? 1_000);
const SEED = process.env['CONVERSATION_MODEL_SEED'] === undefined ? {} : { seed: Number(process.env['CONVERSATION_MODEL_SEED']) };

it('one reply at a time, honest hang-ups, no silence hang-up over anyone, a transcript that matches, restores that keep everything', { timeout: 20_000 + RUNS * 10 }, () => {
  fc.assert(
    fc.property(inputArb, fc.constantFrom(false, false, true), fc.constantFrom('alone', 'alone', 'alone', 'hangup'), fc.commands(commands, { maxCommands: 60, size: 'max' }), (input, mayRestore, then, cmds) => {
      const m = newModel(input, mayRestore);
      const d = ConversationDriver.start(input, (e, driver) => engineSees(m, e, driver));
      m.delivering = null;
      observe(m, d, `start(${input.aiSpeaksFirst ? 'ai speaks first' : `pickup ${input.pickupDelayMs}`})`, 0);
      fc.modelRun(() => ({ model: m, real: d }), cmds);
      if (then === 'hangup') callHangsUp(m, d);
      else endsByItself(m, d);
      if (m.restored) sameEndingWithoutRestores(input, cmds, then, d);
    }),
    { numRuns: RUNS, ...SEED },
  );
});

function newModel(input: ConversationInput, mayRestore: boolean): Model {
  return {
    input,
    callerSpeaking: false,
    sttFailed: false,
    reply: null,
    paused: false,
    settled: null,
    quietSince: 0,
    endCallSent: false,
    providerFailed: false,
    hangups: [],
    tools: [],
    toolSeq: 0,
    transferAsked: false,
    transferring: false,
    over: false,
    mayRestore,
    restored: false,
    delivering: 'START',
    broken: null,
    log: [],
  };
}

/** The same commands without the restores, on a new actor: the ending must be the same. */
function sameEndingWithoutRestores(input: ConversationInput, cmds: Iterable<fc.Command<Model, Real>>, then: string, restored: Real): void {
  const m = newModel(input, false);
  const d = ConversationDriver.start(input, (e, driver) => engineSees(m, e, driver));
  m.delivering = null;
  for (const c of cmds) {
    if (c instanceof PersistRestore || !c.check(m)) continue;
    c.run(m, d);
  }
  if (then === 'hangup') callHangsUp(m, d);
  else endsByItself(m, d);
  const ending = (x: Real) => ({ value: x.value, hangups: x.hangups(), lines: x.recorded(), transfers: x.of('requestTransfer').length, replies: x.replies() });
  const a = ending(restored);
  const b = ending(d);
  if (JSON.stringify(a) !== JSON.stringify(b)) {
    fail(m, d, `with restores the conversation ended ${JSON.stringify(a)}, without them ${JSON.stringify(b)}`);
  }
}
