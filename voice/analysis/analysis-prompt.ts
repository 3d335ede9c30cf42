// What the model is told to analyse a finished call: the instructions, what the agent
// was for (its prompt, shortened), how the call ended, what was still open for the
// caller from before, the extraction fields, and the transcript. Pure: the call's data
// comes in as parameters. The transcript is the last part of the call when it is very
// long: the outcome and what is left to do are at its end.
import type { ExtractionField } from '../../storage/agents.ts';
import type { LlmMessage } from '../providers/llm.ts';

/** The agent's prompt is context, not the subject: a long one is cut. */
const MAX_AGENT_PROMPT_CHARS = 4000;
/** About 15,000 tokens of transcript: hours of conversation, and well inside any model's window. */
export const MAX_TRANSCRIPT_CHARS = 60_000;

export interface AnalysisInput {
  transcript: string;
  direction: 'inbound' | 'outbound';
  /** The agent's system prompt, when the agent still exists. */
  agentPrompt: string | null;
  endedReason: string | null;
  /** What the caller's record said was still open before this call. */
  previousOpenItem: string | null;
  fields: readonly ExtractionField[];
}

const INSTRUCTIONS = [
  'You analyse a phone call that has ended, between an AI phone agent ("Agent") and a person ("Caller"). Answer with one JSON object and nothing else.',
  '- summary: what happened on the call, in two or three plain sentences, in the language the caller spoke.',
  '- sentiment: the caller\'s mood over the call: "happy", "neutral" or "frustrated".',
  '- successful: true when the call achieved its purpose (the caller got what they called for, or the agent did what it called for), otherwise false.',
  '- open_item: what is still to be done for this caller after this call (a promised callback, a missing document, an unanswered question), in one short sentence; null when nothing is. If something was open from before and this call settled it, it is no longer open.',
].join('\n');

function cut(text: string, max: number, keep: 'start' | 'end'): string {
  if (text.length <= max) return text;
  return keep === 'start' ? `${text.slice(0, max)}…` : `…${text.slice(text.length - max)}`;
}

export function analysisMessages(a: AnalysisInput): LlmMessage[] {
  const system: string[] = [INSTRUCTIONS];
  if (a.fields.length > 0) {
    const lines = a.fields.map((f) => `  - ${f.name} (${f.type}${f.enum ? `, one of ${f.enum.map((v) => JSON.stringify(v)).join(', ')}` : ''}): ${f.description}`);
    system.push(`- extracted: an object with exactly these keys; a value the call did not tell is null:\n${lines.join('\n')}`);
  }
  const context: string[] = [`Direction: ${a.direction === 'inbound' ? 'the caller called the agent' : 'the agent called this person'}.`];
  if (a.endedReason) context.push(`How the call ended: ${a.endedReason}.`);
  if (a.previousOpenItem) context.push(`Still open for this caller before this call: ${a.previousOpenItem}`);
  if (a.agentPrompt && a.agentPrompt.trim() !== '') context.push(`The agent's instructions (for what the call was for):\n"""\n${cut(a.agentPrompt.trim(), MAX_AGENT_PROMPT_CHARS, 'start')}\n"""`);
  return [
    { role: 'system', content: system.join('\n') },
    { role: 'user', content: `${context.join('\n')}\n\nTranscript:\n"""\n${cut(a.transcript, MAX_TRANSCRIPT_CHARS, 'end')}\n"""` },
  ];
}

/** True when the transcript has something of the caller's to analyse (a greeting alone is not a conversation). */
export function hasConversation(transcript: string | null): boolean {
  if (transcript === null) return false;
  return transcript.split('\n').some((line) => line.startsWith('Caller:') && line.slice('Caller:'.length).trim() !== '');
}
