// The model, as the conversation engine sees it: one streamed chat completion per
// turn, cancellable, yielding text and tool calls as they arrive. The OpenAI-compatible
// client (openai-llm.ts) is the one implementation; the simulator speaks its protocol.

export interface LlmToolCall {
  /** The provider's id of this call, echoed back in the tool result message. */
  id: string;
  name: string;
  /** The arguments as the model wrote them (a JSON text; may be invalid JSON). */
  arguments: string;
}

export type LlmMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** A tool in the OpenAI function format. */
export interface LlmTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface LlmRequest {
  messages: LlmMessage[];
  tools?: LlmTool[];
  temperature: number;
  /** Upper bound of the reply's tokens (`max_tokens`). */
  maxTokens: number;
  /** Aborting it cancels the HTTP request (barge-in, hang-up); the stream then ends with an `aborted` ProviderError. */
  signal?: AbortSignal;
}

export type LlmChunk =
  /** A piece of the reply's text, in order. */
  | { type: 'text'; text: string }
  /** A complete tool call (emitted once its arguments are complete, i.e. at the end of the stream). */
  | { type: 'tool_call'; call: LlmToolCall }
  /** The stream ended normally. */
  | { type: 'done'; finishReason: string | null };

export interface LlmClient {
  /**
   * Streams one completion. The iterator throws a ProviderError on failure (HTTP error,
   * first token not within the timeout, stream stalled, unreadable event, abort).
   */
  stream(req: LlmRequest): AsyncIterable<LlmChunk>;
}
