// What the conversation machine (machines/conversation.ts) holds and hears: its input,
// context and events, the reply requests it hands the engine, and the transcript lines
// and tool rounds it keeps. Plain JSON throughout, so a snapshot survives a restore.
import type { OverlapHeard } from './barge-in.ts';

/** What the agent is asked to say next; the engine turns each into text. */
export type ReplyKind =
  /** The opening line: the welcome message, or a model-made greeting with dynamic_greeting. */
  | 'greeting'
  /** The model's answer to the conversation so far. */
  | 'answer'
  /** `fallback_message`: the caller spoke but no words were recognised. */
  | 'fallback'
  /** A short apology after a provider failure the engine could not retry away. */
  | 'apology'
  /** The transfer did not reach the person (busy, no answer…): the agent says so; the engine knows why. */
  | 'transfer_failed'
  /** A short line said while a tool runs ("One moment while I check that."). */
  | 'filler';


/** One tool call of the model's that the engine runs (a custom function, the in-call webhook). */
export interface ToolCall {
  /** The model's id of the call (unique within its round). */
  id: string;
  name: string;
  /** The arguments as the model wrote them (JSON text, possibly invalid). */
  arguments: string;
}

/** The tool calls of one model reply and their answers, which the model sees again on every later request. */
export interface ToolRound {
  /** Where the round sits: after the first `at` lines (the words of the reply that made the calls, if heard, are line `at`). */
  at: number;
  calls: ToolCall[];
  /** The answer to `calls[i]` as the model is given it (JSON text); null while it runs. */
  results: (string | null)[];
  /**
   * The reply that named the tools was heard saying something (then it is line `at`, and
   * the model sees it as the words of its tool-calling message); null until that reply ends.
   */
  words: boolean | null;
}

/** Why the conversation asks the call to end. */
export type ConversationEndReason = 'agent_hangup' | 'silence_timeout' | 'provider_error';

export interface ConversationInput {
  aiSpeaksFirst: boolean;
  /** When the agent does not speak first: how long it waits for the caller before greeting. */
  pickupDelayMs: number;
  /** response_eagerness. */
  eagernessMs: number;
  /** Overlapping caller speech that pauses the agent. */
  interruptMs: number;
  /** Caller silence (while the agent is not speaking) that ends the call. */
  silenceHangupMs: number;
  /** A pause with no words within this resumes the agent (a false interruption). */
  resumeAfterMs: number;
}

/** What a reply is made from. */
export interface ReplyRequest {
  kind: ReplyKind;
  /** The conversation so far, the caller's last words included. */
  lines: readonly TranscriptLine[];
  /** The greeting has been played (a caller who spoke first is greeted in the answer). */
  greeted: boolean;
  /** Every tool round so far, answered (a model reply is only asked for once the last round is answered). */
  toolRounds: readonly ToolRound[];
}

export interface TranscriptLine {
  speaker: 'agent' | 'caller';
  text: string;
}

export interface ConversationContext extends ConversationInput {
  lines: TranscriptLine[];
  /** The caller's final words of the turn being heard, not answered yet. */
  callerText: string;
  /** The caller was heard speaking (voice activity) during the current turn. */
  heardSpeech: boolean;
  /**
   * Voice activity says the caller is speaking now (SPEECH.START not yet followed by
   * SPEECH.END), whichever state the events came in: a state entered later (a reply
   * that ends while the caller talks) must neither run the silence timer nor wait for
   * a SPEECH.END that already came.
   */
  callerSpeaking: boolean;
  /** What was heard of the caller's speech over the agent (machines/barge-in.ts). */
  overlapHeard: OverlapHeard;
  greeted: boolean;
  replyKind: ReplyKind;
  /** Provider failures in a row (a reply that plays resets it). */
  failures: number;
  /** Set by the end-call tool or a give-up: the call ends once the current reply has played. */
  endAfterReply: ConversationEndReason | null;
  endReason: ConversationEndReason | null;
  toolRounds: ToolRound[];
  /** The last tool round has not been replied to yet (the model must be asked again with its answers). */
  toolReplyDue: boolean;
  /** Fillers said while the last tool round runs. */
  fillers: number;
  /** The model called the transfer tool: once the current reply has played, the caller is transferred. */
  transferAfterReply: boolean;
}

export type ConversationEvent =
  /** Voice activity: the caller started / stopped speaking. */
  | { type: 'SPEECH.START' }
  | { type: 'SPEECH.END' }
  /**
   * Recognised words. `final` words are settled; `endOfTurn` says the recogniser (or
   * voice activity) also judged the utterance finished.
   */
  | { type: 'WORDS'; text: string; final: boolean; endOfTurn: boolean }
  /** The recogniser saw the utterance end by its word timing. */
  | { type: 'UTTERANCE.END' }
  /** Speech recognition is gone for good (reconnection failed). */
  | { type: 'STT.FAILED' }
  /** The first audio frame of the current reply went to the carrier. */
  | { type: 'REPLY.AUDIO' }
  /**
   * The current reply is over: played to the end (`complete`), or cut by an
   * interruption; `heard` is the text the caller actually heard.
   */
  | { type: 'REPLY.ENDED'; heard: string; complete: boolean }
  /** The reply could not be made; `retryable` says whether asking again may help. */
  | { type: 'REPLY.FAILED'; provider: 'llm' | 'tts'; retryable: boolean }
  /** The model called the end-call tool: the call ends once this reply has played. */
  | { type: 'END_CALL' }
  /** The current reply's model asked for tools the engine runs (sent before the reply ends). */
  | { type: 'TOOL.CALLS'; calls: ToolCall[] }
  /** A tool answered; `result` is what the model is given (JSON text). */
  | { type: 'TOOL.DONE'; id: string; result: string }
  /** A tool failed (timeout, refused address, error status, answer too big): the model is told `error`. */
  | { type: 'TOOL.FAILED'; id: string; error: string }
  /** A keypad entry (the digits grouped by machines/keypad.ts). */
  | { type: 'KEYPAD'; digits: string }
  /** The model called the transfer tool: once this reply has played, the engine transfers (and the caller holds). */
  | { type: 'TRANSFER' }
  /** The transfer did not reach the person: the caller is back, the agent tells them. */
  | { type: 'TRANSFER.FAILED' }
  /** The call is over (hang-up, media gone): stop everything. */
  | { type: 'HANGUP' };
