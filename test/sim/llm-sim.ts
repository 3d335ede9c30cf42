// Simulator of an OpenAI-compatible chat completions endpoint for tests and
// `npm run sim`: `POST /v1/chat/completions` validated as the API validates it, the
// Bearer key checked when the simulator has one, and the reply streamed as the API
// streams it: `chat.completion.chunk` events, the role first, the text word by word
// in `delta.content`, each tool call as a first fragment with its id and name then its
// arguments JSON in small pieces, a last chunk with `finish_reason`, then
// `data: [DONE]`. Replies are scripted (`reply`) or, when none is queued, a short
// deterministic one quoting the caller's last words, so a conversation test can
// follow who said what. `max_tokens` is honoured (a word is a token here): a longer
// reply is cut with `finish_reason: "length"`. Scripted replies answer streamed requests
// only (the conversation's turns): a non-streamed one (post-call analysis, which may
// arrive at any moment after a call ends) is answered by `respond` and never takes a
// reply a test queued for the next turn. A request that asks for structured output
// (`response_format`: post-call analysis) is kept apart altogether: it is listed in
// `structuredRequests`, not `requests`, takes no queued fault, is answered from its own
// script (`replyStructured`), else by `respond`, else with the simplest JSON its schema
// allows, so conversation tests counting requests or queueing faults never see the
// analysis of an earlier call.
import type { ServerResponse } from 'node:http';
import type { LlmMessage, LlmTool } from '../../voice/providers/llm.ts';
import {
  checkBearer,
  sendError,
  startStreamSim,
  whileOpen,
  type MidStreamFault,
  type StreamSimFault,
  type StreamSimRequest,
} from './stream-sim-http.ts';

/** The chat completion request as the client sent it. */
export interface ChatCompletionBody {
  model: string;
  messages: LlmMessage[];
  tools?: LlmTool[];
  temperature?: number;
  max_tokens?: number;
  stream?: boolean;
  [field: string]: unknown;
}

export type LlmSimRequest = StreamSimRequest<ChatCompletionBody>;

export interface LlmSimReply {
  text?: string;
  /** `arguments` is sent as JSON text; a string is sent as it is (so tests can send invalid JSON). */
  toolCalls?: { name: string; arguments: unknown }[];
}

export type LlmSimScript = LlmSimReply | ((req: LlmSimRequest) => LlmSimReply);

export interface LlmSimLatency {
  /** From the request to the first token. */
  firstTokenMs?: number;
  /** Between tokens. */
  tokenMs?: number;
}

export interface LlmSimOptions extends LlmSimLatency {
  /** 0 (a free port) in tests; a fixed one for `npm run sim`. */
  port?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** The answer when no scripted reply is queued (default `defaultLlmReply`). */
  respond?: (body: ChatCompletionBody) => LlmSimReply;
}

export interface LlmSim {
  /** `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  /** Every request received, with its parsed body and headers, in order, except those asking for structured output. */
  readonly requests: LlmSimRequest[];
  /** The requests that asked for structured output (`response_format`), in order. */
  readonly structuredRequests: LlmSimRequest[];
  /** Queues replies for the next streamed requests, in order. */
  reply(...replies: LlmSimScript[]): void;
  /** Queues replies for the next requests asking for structured output, in order. */
  replyStructured(...replies: LlmSimScript[]): void;
  setLatency(latency: LlmSimLatency): void;
  /** Queues a fault for the next request(s); mid-stream faults count tokens (words, argument pieces). */
  fail(fault: StreamSimFault): void;
  /** How many requests the client cancelled before the reply was complete. */
  readonly aborted: number;
  close(): Promise<void>;
}

const isStructured = (body: ChatCompletionBody | undefined): boolean =>
  body !== null && typeof body === 'object' && (body as { response_format?: unknown }).response_format !== undefined;

/**
 * The simplest value a JSON schema allows: null where null is allowed, else the first
 * enum value, "simulated" for a string, 0 for a number, true for a boolean, and every
 * required property of an object.
 */
export function simplestJson(schema: unknown): unknown {
  const s = (schema ?? {}) as { type?: string | string[]; enum?: unknown[]; properties?: Record<string, unknown>; required?: string[] };
  const types = Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type];
  if (types.includes('null')) return null;
  if (s.enum && s.enum.length > 0) return s.enum[0];
  switch (types[0]) {
    case 'object':
      return Object.fromEntries((s.required ?? Object.keys(s.properties ?? {})).map((k) => [k, simplestJson(s.properties?.[k])]));
    case 'array':
      return [];
    case 'string':
      return 'simulated';
    case 'number':
    case 'integer':
      return 0;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

/** The default answer to a structured request: the simplest JSON its `json_schema` allows, or `{}` in JSON mode. */
function structuredReply(body: ChatCompletionBody): LlmSimReply {
  const format = body.response_format as { json_schema?: { schema?: unknown } } | undefined;
  return { text: JSON.stringify(format?.json_schema?.schema ? simplestJson(format.json_schema.schema) : {}) };
}

/** The default reply: what a test can predict from the conversation alone. */
export function defaultLlmReply(body: ChatCompletionBody): LlmSimReply {
  const lastUser = [...body.messages].reverse().find((m) => m.role === 'user');
  return { text: lastUser ? `You said: ${lastUser.content}` : 'Hello! How can I help you today?' };
}

export async function startLlmSim(opts: LlmSimOptions = {}): Promise<LlmSim> {
  const latency = { firstTokenMs: opts.firstTokenMs ?? 30, tokenMs: opts.tokenMs ?? 10 };
  const scripts: LlmSimScript[] = [];
  const structuredScripts: LlmSimScript[] = [];
  let served = 0;

  const server = await startStreamSim<ChatCompletionBody>(
    opts.port ?? 0,
    (req, res, fault) => {
      if (req.method !== 'POST' || req.path !== '/v1/chat/completions') return sendError(res, 404, `Unknown request URL: ${req.method} ${req.path}.`);
      if (!checkBearer(res, req.authorization, opts.apiKey)) return;
      const invalid = validate(req.body);
      if (invalid) return sendError(res, 400, invalid);
      const structured = isStructured(req.body);
      const script = structured ? structuredScripts.shift() : req.body.stream === true ? scripts.shift() : undefined;
      const fallback = opts.respond ?? (structured ? structuredReply : defaultLlmReply);
      const reply = script === undefined ? fallback(req.body) : typeof script === 'function' ? script(req) : script;
      const answer = render(reply, req.body, `chatcmpl-sim${++served}`);
      if (req.body.stream === true) stream(res, answer, fault, { ...latency }, server.drop);
      else whileOpen(res, latency.firstTokenMs, () => sendJson(res, answer));
    },
    (body) => !isStructured(body),
  );

  return {
    baseUrl: server.baseUrl,
    get requests() {
      return server.requests.filter((r) => !isStructured(r.body));
    },
    get structuredRequests() {
      return server.requests.filter((r) => isStructured(r.body));
    },
    reply(...replies) {
      scripts.push(...replies);
    },
    replyStructured(...replies) {
      structuredScripts.push(...replies);
    },
    setLatency(l) {
      if (l.firstTokenMs !== undefined) latency.firstTokenMs = l.firstTokenMs;
      if (l.tokenMs !== undefined) latency.tokenMs = l.tokenMs;
    },
    fail: server.fail,
    get aborted() {
      return server.aborted;
    },
    close: server.close,
  };
}

/** What the API would refuse with 400. */
function validate(body: ChatCompletionBody | undefined): string | null {
  if (body === undefined || body === null || typeof body !== 'object') return 'We could not parse the JSON body of your request.';
  if (typeof body.model !== 'string' || body.model === '') return "you must provide a model parameter";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "'messages' must be a non-empty array";
  for (const m of body.messages) {
    if (!m || !['system', 'user', 'assistant', 'tool'].includes(m.role)) return `invalid message role ${JSON.stringify(m?.role)}`;
    if (m.role === 'tool' && typeof m.tool_call_id !== 'string') return "messages with role 'tool' must have a 'tool_call_id'";
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools) || body.tools.length === 0) return "'tools' must be a non-empty array when present";
    for (const t of body.tools) {
      if (t?.type !== 'function' || typeof t.function?.name !== 'string') return "each tool must be {type: 'function', function: {name, ...}}";
    }
  }
  if (body.temperature !== undefined && !(typeof body.temperature === 'number' && body.temperature >= 0 && body.temperature <= 2)) {
    return `${JSON.stringify(body.temperature)} is not a valid temperature (0 to 2)`;
  }
  if (body.max_tokens !== undefined && !(Number.isInteger(body.max_tokens) && body.max_tokens > 0)) return "'max_tokens' must be a positive integer";
  return null;
}

interface RenderedCall {
  id: string;
  name: string;
  arguments: string;
}

interface Answer {
  id: string;
  model: string;
  created: number;
  /** The text as the tokens it streams as: words with their leading space. */
  tokens: string[];
  calls: RenderedCall[];
  finishReason: 'stop' | 'length' | 'tool_calls';
}

function render(reply: LlmSimReply, body: ChatCompletionBody, id: string): Answer {
  let tokens: string[] = reply.text ? (reply.text.match(/\s*\S+/g) ?? []) : [];
  let calls = (reply.toolCalls ?? []).map((c, i) => ({
    id: `call_${id.slice(-6)}${i}`,
    name: c.name,
    arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}),
  }));
  let finishReason: Answer['finishReason'] = calls.length > 0 ? 'tool_calls' : 'stop';
  if (body.max_tokens !== undefined && tokens.length > body.max_tokens) {
    tokens = tokens.slice(0, body.max_tokens);
    calls = [];
    finishReason = 'length';
  }
  return { id, model: body.model, created: Math.floor(Date.now() / 1000), tokens, calls, finishReason };
}

/**
 * The SSE events of an answer as the API sends them: a first chunk with the role and
 * empty content, one chunk per token (a word, a piece of a tool call), a last chunk
 * with `finish_reason` and empty delta.
 */
function events(a: Answer): { preamble: string; tokens: string[]; finish: string } {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
    `data: ${JSON.stringify({
      id: a.id,
      object: 'chat.completion.chunk',
      created: a.created,
      model: a.model,
      system_fingerprint: 'fp_sim',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    })}\n\n`;
  const tokens: string[] = a.tokens.map((content) => chunk({ content }));
  a.calls.forEach((c, index) => {
    tokens.push(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }));
    // The API streams arguments in pieces of a few characters.
    for (let i = 0; i < c.arguments.length; i += 7) {
      tokens.push(chunk({ tool_calls: [{ index, function: { arguments: c.arguments.slice(i, i + 7) } }] }));
    }
  });
  return { preamble: chunk({ role: 'assistant', content: '', refusal: null }), tokens, finish: chunk({}, a.finishReason) };
}

function stream(res: ServerResponse, answer: Answer, fault: MidStreamFault | undefined, latency: Required<LlmSimLatency>, drop: (res: ServerResponse) => void): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.flushHeaders();
  const { preamble, tokens, finish } = events(answer);
  const cutAt = fault ? Math.min(fault.after ?? 0, tokens.length) : Infinity;
  let i = 0;
  const next = (): void => {
    if (i === cutAt && fault) {
      if (fault.kind === 'drop') drop(res);
      else if (fault.kind === 'garbage') res.write('data: {"id":"chatcmpl-sim","object":"chat.completion.chu\n\n');
      // `stall`: nothing more; the connection stays open until the client gives up.
      return;
    }
    if (i === tokens.length) {
      res.end(`${i === 0 ? preamble : ''}${finish}data: [DONE]\n\n`);
      return;
    }
    res.write(i === 0 ? preamble + tokens[i++]! : tokens[i++]!);
    whileOpen(res, latency.tokenMs, next);
  };
  whileOpen(res, latency.firstTokenMs, next);
}

function sendJson(res: ServerResponse, a: Answer): void {
  const text = a.tokens.join('');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: a.id,
      object: 'chat.completion',
      created: a.created,
      model: a.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text === '' ? null : text,
            ...(a.calls.length > 0 ? { tool_calls: a.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
          },
          finish_reason: a.finishReason,
        },
      ],
      usage: { prompt_tokens: 0, completion_tokens: a.tokens.length, total_tokens: a.tokens.length },
    }),
  );
}
