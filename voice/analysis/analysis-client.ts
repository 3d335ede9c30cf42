// The post-call analysis request: one non-streamed OpenAI-compatible chat completion
// (`POST {baseUrl}/chat/completions`, `stream: false`) asked for structured JSON
// (`response_format`), answered with the message's text. Nothing waits on it live, so
// it is a plain request under one deadline for the whole exchange. The SMS agent asks
// the same way for plain text (no `response_format`, its own length and temperature). Whether the text is
// a valid analysis is decided by analysis-schema.ts, not here.
import { errorOfStatus, errorOfThrow, type OwnAbort } from '../providers/http-failure.ts';
import { ProviderError } from '../providers/errors.ts';
import type { LlmMessage } from '../providers/llm.ts';

export interface AnalysisModelOptions {
  /** E.g. `https://api.openai.com/v1`; a trailing slash is ignored. */
  baseUrl: string;
  apiKey?: string | undefined;
  model: string;
  /** The whole exchange, request to the answer's last byte (default 30 s). */
  timeoutMs?: number;
  /** What the requests are for, in error messages (default "analysis"). */
  purpose?: string;
}

export interface AnalysisRequest {
  messages: LlmMessage[];
  /** Structured output; left out, the answer is plain text. */
  responseFormat?: Record<string, unknown>;
  /** Default MAX_TOKENS. */
  maxTokens?: number;
  /** Default 0. */
  temperature?: number;
  signal?: AbortSignal;
}

export interface AnalysisModel {
  /** The model's answer text. Throws a ProviderError when there is none (HTTP error, timeout, cut answer). */
  complete(req: AnalysisRequest): Promise<string>;
}

const whatOf = (purpose: string): string => `llm POST /chat/completions (${purpose})`;
/** Enough for a summary, an open item and a few dozen extracted values. */
const MAX_TOKENS = 1200;

export function createAnalysisModel(opts: AnalysisModelOptions): AnalysisModel {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const what = whatOf(opts.purpose ?? 'analysis');
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;

  return {
    async complete(req) {
      const body = JSON.stringify({
        model: opts.model,
        messages: req.messages,
        ...(req.responseFormat ? { response_format: req.responseFormat } : {}),
        // The same call analysed twice should read the same.
        temperature: req.temperature ?? 0,
        max_tokens: req.maxTokens ?? MAX_TOKENS,
        stream: false,
      });
      const controller = new AbortController();
      let own: OwnAbort = null;
      const onCallerAbort = () => {
        own ??= { reason: 'caller' };
        controller.abort();
      };
      req.signal?.addEventListener('abort', onCallerAbort, { once: true });
      const timer = setTimeout(() => {
        own ??= { reason: 'timeout', message: `no answer within ${timeoutMs} ms` };
        controller.abort();
      }, timeoutMs);
      timer.unref();
      try {
        let res: Response;
        try {
          res = await fetch(url, { method: 'POST', headers, body, signal: controller.signal });
        } catch (err) {
          throw errorOfThrow('llm', what, err, own);
        }
        if (!res.ok) {
          try {
            throw await errorOfStatus('llm', what, res);
          } catch (err) {
            throw own ? errorOfThrow('llm', what, err, own) : err;
          }
        }
        let json: unknown;
        try {
          json = await res.json();
        } catch (err) {
          if (own) throw errorOfThrow('llm', what, err, own);
          throw new ProviderError('llm', 'protocol', `${what}: the answer is not a JSON chat completion`);
        }
        return contentOf(json, what);
      } finally {
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onCallerAbort);
      }
    },
  };
}

/** `choices[0].message.content`, refusing an answer that was cut off or refused. */
function contentOf(json: unknown, what: string): string {
  const choice = (json as { choices?: { message?: { content?: unknown; refusal?: unknown }; finish_reason?: unknown }[] } | null)?.choices?.[0];
  if (!choice) throw new ProviderError('llm', 'protocol', `${what}: the answer has no choices`);
  if (choice.finish_reason === 'length') throw new ProviderError('llm', 'protocol', `${what}: the answer was cut off at max_tokens`);
  const content = choice.message?.content;
  if (typeof content !== 'string' || content.trim() === '') {
    const refusal = choice.message?.refusal;
    throw new ProviderError('llm', 'protocol', `${what}: ${typeof refusal === 'string' ? `the model refused: ${refusal.slice(0, 200)}` : 'the answer has no text'}`);
  }
  return content;
}
