// The model client: one streamed OpenAI-compatible chat completion per turn
// (`POST {baseUrl}/chat/completions`, `stream: true`), read as server-sent events.
// Text deltas are yielded the moment they arrive so the engine can speak the first
// sentence while the model still writes the rest; tool calls arrive as fragments
// keyed by `index` (id and name first, the arguments JSON in pieces) and are yielded
// whole at the end, then `done`. Two deadlines keep a dead model from leaving the
// caller in silence: the first token within `firstTokenTimeoutMs` of the request, and
// no gap longer than `stallTimeoutMs` afterwards. Time the engine spends holding a
// chunk (between our yield and its next pull) is not counted against the provider.
import { errorOfStatus, errorOfThrow, type OwnAbort } from './http-failure.ts';
import { kindOfStatus, ProviderError } from './errors.ts';
import type { LlmChunk, LlmClient, LlmRequest, LlmToolCall } from './llm.ts';
import { createSseParser } from './sse.ts';

export interface OpenAiLlmOptions {
  /** E.g. `https://api.openai.com/v1`; a trailing slash is ignored. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; omitted for local servers that need none. */
  apiKey?: string | undefined;
  model: string;
  firstTokenTimeoutMs?: number;
  stallTimeoutMs?: number;
}

const WHAT = 'llm POST /chat/completions';

export function createOpenAiLlm(opts: OpenAiLlmOptions): LlmClient {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const firstTokenTimeoutMs = opts.firstTokenTimeoutMs ?? 10_000;
  const stallTimeoutMs = opts.stallTimeoutMs ?? 10_000;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;

  return {
    stream(req) {
      const body = JSON.stringify({
        model: opts.model,
        messages: req.messages,
        ...(req.tools && req.tools.length > 0 ? { tools: req.tools } : {}),
        temperature: req.temperature,
        max_tokens: req.maxTokens,
        stream: true,
      });
      return streamCompletion(url, headers, body, req.signal, firstTokenTimeoutMs, stallTimeoutMs);
    },
  };
}

/** A tool call being assembled from its fragments. */
interface PartialCall {
  id: string | undefined;
  name: string;
  arguments: string;
}

async function* streamCompletion(
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal | undefined,
  firstTokenTimeoutMs: number,
  stallTimeoutMs: number,
): AsyncGenerator<LlmChunk> {
  if (signal?.aborted) throw new ProviderError('llm', 'aborted', `${WHAT}: cancelled before it was sent`);

  const controller = new AbortController();
  let own: OwnAbort = null;
  const onCallerAbort = () => {
    own ??= { reason: 'caller' };
    controller.abort();
  };
  signal?.addEventListener('abort', onCallerAbort, { once: true });

  // One timer serves both deadlines: first the first-token one, then (re-armed once the
  // first token came) the stall one, refreshed on every event. While the engine holds a
  // chunk `holding` is set and a firing only postpones itself.
  let holding = false;
  let gotToken = false;
  const expire = () => {
    if (holding) {
      timer.refresh();
      return;
    }
    own ??= { reason: 'timeout', message: gotToken ? `stream stalled for ${stallTimeoutMs} ms` : `no first token within ${firstTokenTimeoutMs} ms` };
    controller.abort();
  };
  let timer = setTimeout(expire, firstTokenTimeoutMs);
  timer.unref();

  const out: LlmChunk[] = []; // chunks parsed from one network read, yielded before the next read
  const calls = new Map<number, PartialCall>();
  let finishReason: string | null = null;
  let sawDone = false;
  let streamError: ProviderError | null = null;

  const onEvent = (data: string): void => {
    if (streamError || sawDone) return;
    if (data === '[DONE]') {
      sawDone = true;
      return;
    }
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      streamError = new ProviderError('llm', 'protocol', `${WHAT}: unreadable event ${JSON.stringify(data.slice(0, 80))}`);
      return;
    }
    if (event === null || typeof event !== 'object') {
      streamError = new ProviderError('llm', 'protocol', `${WHAT}: event is not an object`);
      return;
    }
    const { error, choices } = event as { error?: unknown; choices?: unknown };
    if (error !== undefined) {
      streamError = streamedError(error);
      return;
    }
    // Usage-only and content-filter chunks carry no choices; they are not progress.
    if (!Array.isArray(choices) || choices.length === 0) return;
    const choice = choices[0] as { delta?: { content?: unknown; tool_calls?: unknown }; finish_reason?: unknown } | null;
    if (choice === null || typeof choice !== 'object') return;
    const delta = choice.delta;
    let progress = false;
    if (delta && typeof delta.content === 'string' && delta.content !== '') {
      out.push({ type: 'text', text: delta.content });
      progress = true;
    }
    if (delta && Array.isArray(delta.tool_calls)) {
      for (const fragment of delta.tool_calls as unknown[]) {
        const problem = addFragment(calls, fragment);
        if (problem) {
          streamError = new ProviderError('llm', 'protocol', `${WHAT}: ${problem}`);
          return;
        }
      }
      progress = delta.tool_calls.length > 0;
    }
    if (typeof choice.finish_reason === 'string') {
      finishReason = choice.finish_reason;
      progress = true;
    }
    if (progress && !gotToken) {
      gotToken = true;
      clearTimeout(timer);
      timer = setTimeout(expire, stallTimeoutMs);
      timer.unref();
    } else if (progress) {
      timer.refresh();
    }
  };
  const parser = createSseParser(onEvent);

  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  try {
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body, signal: controller.signal });
    } catch (err) {
      throw errorOfThrow('llm', WHAT, err, own);
    }
    if (!res.ok) {
      // The error body is read under the same deadline and cancellation.
      try {
        throw await errorOfStatus('llm', WHAT, res);
      } catch (err) {
        throw own ? errorOfThrow('llm', WHAT, err, own) : err;
      }
    }
    const type = res.headers.get('content-type') ?? '';
    if (type.includes('application/json') || !res.body) {
      await res.body?.cancel().catch(() => {});
      throw new ProviderError('llm', 'protocol', `${WHAT}: answered ${type || 'no body'} instead of an event stream`);
    }
    reader = res.body.getReader();
    const decoder = new TextDecoder();

    let ended = false;
    while (!sawDone && !ended) {
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch (err) {
        throw errorOfThrow('llm', WHAT, err, own);
      }
      // At the end an unfinished last event is dropped, as the event-stream format says.
      if (read.done) ended = true;
      else parser.push(decoder.decode(read.value, { stream: true }));
      // A caller abort during the read may have raced a successful read: never yield after it.
      if (own) throw errorOfThrow('llm', WHAT, new Error('aborted'), own);
      // What came before a bad event is still the model's words, in order.
      for (let i = 0; i < out.length; i++) {
        holding = true;
        yield out[i]!;
        holding = false;
        timer.refresh();
        if (own) throw errorOfThrow('llm', WHAT, new Error('aborted'), own);
      }
      out.length = 0;
      if (streamError) throw streamError;
    }
    if (!sawDone && finishReason === null) {
      throw new ProviderError('llm', 'unavailable', `${WHAT}: the stream ended before the reply was finished`);
    }

    clearTimeout(timer);
    const indexes = [...calls.keys()].sort((a, b) => a - b);
    for (const index of indexes) {
      const call = calls.get(index)!;
      const done: LlmToolCall = { id: call.id ?? `call_${index}`, name: call.name, arguments: call.arguments };
      yield { type: 'tool_call', call: done };
    }
    yield { type: 'done', finishReason };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onCallerAbort);
    if (reader && sawDone && !own) {
      // The reply is complete; reading the rest of the body (normally just the end of the
      // chunked encoding) lets the connection be reused, which saves the next turn a
      // TCP and TLS handshake.
      drain(reader, controller);
    } else {
      // The engine stopped early (break, barge-in) or we failed: let go of the connection.
      if (reader) reader.cancel().catch(() => {});
      controller.abort();
    }
  }
}

/** Reads a finished reply's body to its end in the background, giving up after a second. */
function drain(reader: ReadableStreamDefaultReader<Uint8Array>, controller: AbortController): void {
  const timer = setTimeout(() => controller.abort(), 1000);
  timer.unref();
  const next = (): void => {
    reader.read().then(
      (r) => (r.done ? clearTimeout(timer) : next()),
      () => clearTimeout(timer),
    );
  };
  next();
}

/**
 * Adds one `delta.tool_calls[i]` fragment: the first of an index brings `id`, `type`
 * and `function.name`; later ones append to `function.arguments`. Returns what is
 * wrong with it, or null.
 */
function addFragment(calls: Map<number, PartialCall>, fragment: unknown): string | null {
  if (fragment === null || typeof fragment !== 'object') return 'tool call fragment is not an object';
  const f = fragment as { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } };
  // A few compatible servers send whole calls without an index; they come one per fragment.
  const index = typeof f.index === 'number' ? f.index : calls.size;
  let call = calls.get(index);
  if (!call) {
    const name = f.function?.name;
    if (typeof name !== 'string' || name === '') return `tool call ${index} has no function name`;
    call = { id: undefined, name, arguments: '' };
    calls.set(index, call);
  }
  if (typeof f.id === 'string' && f.id !== '') call.id = f.id;
  const args = f.function?.arguments;
  if (typeof args === 'string') call.arguments += args;
  return null;
}

/** An error the provider streamed instead of a chunk (`data: {"error": {...}}`). */
function streamedError(error: unknown): ProviderError {
  const e = (error ?? {}) as { message?: unknown; code?: unknown; type?: unknown };
  const message = typeof e.message === 'string' ? e.message : typeof error === 'string' ? error : 'error event';
  const status = typeof e.code === 'number' ? e.code : undefined;
  // Without a status the provider broke down mid-reply: the same request may well succeed.
  const kind = status === undefined ? 'unavailable' : kindOfStatus(status);
  return new ProviderError('llm', kind, `${WHAT}: the stream reported an error: ${message}`, status === undefined ? {} : { status });
}
