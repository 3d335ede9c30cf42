// The conversation as the model reads it again on every request: the transcript lines
// as user and assistant messages, with each round of tool calls where it happened (an
// assistant message carrying the `tool_calls`, then one `tool` message per call with
// its answer), as the OpenAI chat format requires. Pure.
import type { LlmMessage } from '../providers/llm.ts';

// The shapes of the conversation machine's lines and tool rounds (machines/conversation.ts),
// restated here: voice/ does not import the machines beyond their event schemas.
export interface HistoryLine {
  speaker: 'agent' | 'caller';
  text: string;
}

export interface HistoryRound {
  /** After the first `at` lines. */
  at: number;
  calls: readonly { id: string; name: string; arguments: string }[];
  /** The answer to `calls[i]`; null while it runs. */
  results: readonly (string | null)[];
  /** The words of the reply that made the calls were heard (they are line `at`). */
  words: boolean | null;
}

/** Said to the model for a call whose answer never came (a request must answer every call). */
const NO_ANSWER = JSON.stringify({ error: 'the tool gave no answer' });

export function conversationMessages(lines: readonly HistoryLine[], rounds: readonly HistoryRound[]): LlmMessage[] {
  const out: LlmMessage[] = [];
  let r = 0;
  for (let i = 0; i <= lines.length; i++) {
    let merged = false;
    while (r < rounds.length && rounds[r]!.at <= i) {
      const round = rounds[r++]!;
      // The words the tool-calling reply was heard saying are that message's content.
      const line = lines[i];
      const own = round.words === true && line?.speaker === 'agent' && !merged && (r === rounds.length || rounds[r]!.at > i);
      if (own) merged = true;
      out.push({
        role: 'assistant',
        content: own ? line!.text : null,
        tool_calls: round.calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
      });
      round.calls.forEach((c, j) => out.push({ role: 'tool', tool_call_id: c.id, content: round.results[j] ?? NO_ANSWER }));
    }
    const line = lines[i];
    if (line && !merged) out.push(line.speaker === 'agent' ? { role: 'assistant', content: line.text } : { role: 'user', content: line.text });
  }
  return out;
}
