// The model client against the chat completions simulator on loopback: what the
// model receives, text streamed as it is written, tool calls assembled from their
// fragments, every failure as the ProviderError the engine decides on, barge-in
// cancelling the request at the provider, and the event-stream parser fed the same
// bytes cut at every possible place.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { closedPort } from '../../test/sim/sim-http.ts';
import { startLlmSim, type LlmSim } from '../../test/sim/llm-sim.ts';
import { ProviderError, type ProviderErrorKind } from './errors.ts';
import type { LlmChunk, LlmClient, LlmRequest, LlmTool } from './llm.ts';
import { createOpenAiLlm } from './openai-llm.ts';
import { createSseParser } from './sse.ts';

const KEY = 'sk-test-1234567890';
let sim: LlmSim;
let llm: LlmClient;

beforeAll(async () => {
  sim = await startLlmSim({ apiKey: KEY, firstTokenMs: 5, tokenMs: 2 });
  llm = createOpenAiLlm({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test', firstTokenTimeoutMs: 2000, stallTimeoutMs: 2000 });
});
afterAll(() => sim.close());
afterEach(() => sim.setLatency({ firstTokenMs: 5, tokenMs: 2 }));

const request = (text: string, extra: Partial<LlmRequest> = {}): LlmRequest => ({
  messages: [
    { role: 'system', content: 'You are a helpful receptionist.' },
    { role: 'user', content: text },
  ],
  temperature: 0.4,
  maxTokens: 120,
  ...extra,
});

async function collect(client: LlmClient, req: LlmRequest): Promise<LlmChunk[]> {
  const out: LlmChunk[] = [];
  for await (const chunk of client.stream(req)) out.push(chunk);
  return out;
}

/** The ProviderError the stream ends with (fails the test if it ends normally). */
async function failure(client: LlmClient, req: LlmRequest): Promise<{ error: ProviderError; chunks: LlmChunk[] }> {
  const chunks: LlmChunk[] = [];
  try {
    for await (const chunk of client.stream(req)) chunks.push(chunk);
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    return { error: error as ProviderError, chunks };
  }
  throw new Error(`expected a failure, got ${JSON.stringify(chunks)}`);
}

const textOf = (chunks: LlmChunk[]) => chunks.map((c) => (c.type === 'text' ? c.text : '')).join('');
const last = <T>(xs: T[]): T | undefined => xs[xs.length - 1];

const endCall: LlmTool = {
  type: 'function',
  function: { name: 'end_call', description: 'Ends the call after the goodbye.', parameters: { type: 'object', properties: { reason: { type: 'string' } } } },
};

describe('what the model receives', () => {
  it('posts the model, prompt, temperature and token budget with the Bearer key, streaming, no tools when there are none', async () => {
    const before = sim.requests.length;
    await collect(llm, request('What are your opening hours?'));
    const req = sim.requests[before]!;
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.authorization).toBe(`Bearer ${KEY}`);
    expect(req.body).toEqual({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'You are a helpful receptionist.' },
        { role: 'user', content: 'What are your opening hours?' },
      ],
      temperature: 0.4,
      max_tokens: 120,
      stream: true,
    });
  });

  it('sends tools in the OpenAI function format', async () => {
    const before = sim.requests.length;
    await collect(llm, request('Bye!', { tools: [endCall] }));
    expect(sim.requests[before]!.body.tools).toEqual([endCall]);
  });
});

describe('streaming', () => {
  it('yields the text word by word as it is written, then done with the finish reason', async () => {
    sim.setLatency({ tokenMs: 25 });
    sim.reply({ text: 'We open at nine and close at six, Monday to Friday.' });
    const started = performance.now();
    const arrivals: number[] = [];
    const chunks: LlmChunk[] = [];
    for await (const chunk of llm.stream(request('When are you open?'))) {
      arrivals.push(performance.now() - started);
      chunks.push(chunk);
    }
    expect(textOf(chunks)).toBe('We open at nine and close at six, Monday to Friday.');
    expect(chunks.filter((c) => c.type === 'text').length).toBe(11);
    expect(last(chunks)).toEqual({ type: 'done', finishReason: 'stop' });
    // The first word came long before the last was written (11 words, 25 ms apart).
    expect(arrivals[arrivals.length - 1]! - arrivals[0]!).toBeGreaterThan(150);
  });

  it('quotes the caller by default, accents and emoji intact', async () => {
    const chunks = await collect(llm, request('Ça coûte combien, le café ☕ ?'));
    expect(textOf(chunks)).toBe('You said: Ça coûte combien, le café ☕ ?');
  });

  it('assembles tool calls from their fragments and yields them whole after the text', async () => {
    sim.reply({
      text: 'Goodbye!',
      toolCalls: [
        { name: 'end_call', arguments: { reason: 'the caller said goodbye and asked nothing more' } },
        { name: 'take_note', arguments: '{"note": "call back tomorrow"' },
      ],
    });
    const chunks = await collect(llm, request('Bye!', { tools: [endCall] }));
    expect(chunks[0]).toEqual({ type: 'text', text: 'Goodbye!' });
    const calls = chunks.filter((c) => c.type === 'tool_call').map((c) => c.call);
    expect(calls.map((c) => c.name)).toEqual(['end_call', 'take_note']);
    expect(JSON.parse(calls[0]!.arguments)).toEqual({ reason: 'the caller said goodbye and asked nothing more' });
    // Invalid JSON arrives as written: deciding what to do with it is the engine's job.
    expect(calls[1]!.arguments).toBe('{"note": "call back tomorrow"');
    expect(calls[0]!.id).toMatch(/^call_/);
    expect(calls[0]!.id).not.toBe(calls[1]!.id);
    expect(last(chunks)).toEqual({ type: 'done', finishReason: 'tool_calls' });
  });

  it('reports a reply cut by the token budget as finish reason "length"', async () => {
    sim.reply({ text: 'one two three four five six seven eight' });
    const chunks = await collect(llm, request('Count.', { maxTokens: 3 }));
    expect(textOf(chunks)).toBe('one two three');
    expect(last(chunks)).toEqual({ type: 'done', finishReason: 'length' });
  });

  it('does not count the time the engine holds a chunk against the stall deadline', async () => {
    const strict = createOpenAiLlm({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test', stallTimeoutMs: 100 });
    sim.reply({ text: 'slow reader here' });
    const chunks: LlmChunk[] = [];
    for await (const chunk of strict.stream(request('hi'))) {
      chunks.push(chunk);
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(textOf(chunks)).toBe('slow reader here');
  });
});

describe('failures', () => {
  const cases: { name: string; fault: Parameters<LlmSim['fail']>[0]; kind: ProviderErrorKind; retryable: boolean; status?: number; retryAfterMs?: number }[] = [
    { name: '500', fault: { kind: 'status', status: 500 }, kind: 'unavailable', retryable: true, status: 500 },
    { name: '503', fault: { kind: 'status', status: 503 }, kind: 'unavailable', retryable: true, status: 503 },
    { name: '429 with Retry-After', fault: { kind: 'status', status: 429, retryAfter: '2' }, kind: 'rate_limited', retryable: true, status: 429, retryAfterMs: 2000 },
    { name: '401', fault: { kind: 'status', status: 401 }, kind: 'auth', retryable: false, status: 401 },
    { name: '404 (unknown model)', fault: { kind: 'status', status: 404 }, kind: 'bad_request', retryable: false, status: 404 },
    { name: 'a reset connection', fault: { kind: 'reset' }, kind: 'unavailable', retryable: true },
  ];
  for (const c of cases) {
    it(`${c.name} -> ${c.kind}, ${c.retryable ? '' : 'not '}retryable`, async () => {
      sim.fail(c.fault);
      const { error } = await failure(llm, request('hello'));
      expect(error.provider).toBe('llm');
      expect(error.kind).toBe(c.kind);
      expect(error.retryable).toBe(c.retryable);
      expect(error.status).toBe(c.status);
      expect(error.retryAfterMs).toBe(c.retryAfterMs);
    });
  }

  it('a refused key is auth, with the provider message but never the key', async () => {
    const wrong = createOpenAiLlm({ baseUrl: sim.baseUrl, apiKey: 'sk-wrong-key-000000', model: 'gpt-test' });
    const { error } = await failure(wrong, request('hello'));
    expect(error.kind).toBe('auth');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('Incorrect API key');
    expect(error.message).not.toContain('sk-wrong-key-000000');
  });

  it('a request the provider refuses (temperature out of range) is bad_request', async () => {
    const { error } = await failure(llm, request('hello', { temperature: 3 }));
    expect(error.kind).toBe('bad_request');
    expect(error.message).toContain('temperature');
  });

  it('connection refused is unavailable', async () => {
    const down = createOpenAiLlm({ baseUrl: `http://127.0.0.1:${await closedPort()}/v1`, apiKey: KEY, model: 'gpt-test' });
    const { error } = await failure(down, request('hello'));
    expect(error.kind).toBe('unavailable');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('a stream cut after three words is unavailable, after yielding the three words', async () => {
    sim.fail({ kind: 'drop', after: 3 });
    sim.reply({ text: 'one two three four five' });
    const { error, chunks } = await failure(llm, request('hello'));
    expect(textOf(chunks)).toBe('one two three');
    expect(error.kind).toBe('unavailable');
    expect(error.retryable).toBe(true);
  });

  it('an unreadable event is protocol, not retryable', async () => {
    sim.fail({ kind: 'garbage', after: 2 });
    sim.reply({ text: 'one two three' });
    const { error, chunks } = await failure(llm, request('hello'));
    expect(textOf(chunks)).toBe('one two');
    expect(error.kind).toBe('protocol');
    expect(error.retryable).toBe(false);
  });

  it('no first token within the deadline is a timeout, and the request is cancelled at the provider', async () => {
    const impatient = createOpenAiLlm({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test', firstTokenTimeoutMs: 150 });
    sim.setLatency({ firstTokenMs: 1000 });
    const before = sim.requests.length;
    const started = performance.now();
    const { error, chunks } = await failure(impatient, request('hello'));
    const took = performance.now() - started;
    expect(chunks).toEqual([]);
    expect(error.kind).toBe('timeout');
    expect(error.retryable).toBe(true);
    expect(took).toBeGreaterThanOrEqual(140);
    expect(took).toBeLessThan(600);
    await vi.waitFor(() => expect(sim.requests[before]!.aborted).toBe(true));
  });

  it('a provider that never answers at all is a timeout too', async () => {
    const impatient = createOpenAiLlm({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test', firstTokenTimeoutMs: 150 });
    sim.fail({ kind: 'hang' });
    const before = sim.requests.length;
    const { error } = await failure(impatient, request('hello'));
    expect(error.kind).toBe('timeout');
    await vi.waitFor(() => expect(sim.requests[before]!.aborted).toBe(true));
  });

  it('a stream that stalls mid-reply is a timeout after the stall deadline', async () => {
    const impatient = createOpenAiLlm({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test', stallTimeoutMs: 150 });
    sim.fail({ kind: 'stall', after: 2 });
    sim.reply({ text: 'one two three' });
    const { error, chunks } = await failure(impatient, request('hello'));
    expect(textOf(chunks)).toBe('one two');
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('stalled');
  });
});

describe('cancellation', () => {
  it('aborting mid-stream (barge-in) ends the stream at once with aborted, and the provider sees the request cancelled', async () => {
    // Words 200 ms apart: "at once" is told apart from "when the next word came" even on a busy machine.
    sim.setLatency({ tokenMs: 200 });
    sim.reply({ text: 'This is a long answer that the caller will interrupt before it is finished.' });
    const before = sim.requests.length;
    const abort = new AbortController();
    const chunks: LlmChunk[] = [];
    let abortedAt = 0;
    let error: unknown;
    try {
      for await (const chunk of llm.stream(request('hello', { signal: abort.signal }))) {
        chunks.push(chunk);
        if (chunks.length === 2) {
          // Abort while the client waits for the next word, as a barge-in would.
          setTimeout(() => {
            abortedAt = performance.now();
            abort.abort();
          }, 10);
        }
      }
    } catch (err) {
      error = err;
    }
    const ended = performance.now();
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).kind).toBe('aborted');
    expect((error as ProviderError).retryable).toBe(false);
    expect(ended - abortedAt).toBeLessThan(100);
    expect(textOf(chunks)).toBe('This is');
    await vi.waitFor(() => expect(sim.requests[before]!.aborted).toBe(true));
  });

  it('an already aborted signal sends nothing', async () => {
    const before = sim.requests.length;
    const { error } = await failure(llm, request('hello', { signal: AbortSignal.abort() }));
    expect(error.kind).toBe('aborted');
    expect(sim.requests.length).toBe(before);
  });

  it('the engine leaving the loop early cancels the request too', async () => {
    sim.setLatency({ tokenMs: 40 });
    sim.reply({ text: 'one two three four five six' });
    const before = sim.requests.length;
    for await (const chunk of llm.stream(request('hello'))) {
      if (chunk.type === 'text') break;
    }
    await vi.waitFor(() => expect(sim.requests[before]!.aborted).toBe(true));
  });

  it('a completed reply is not counted as cancelled', async () => {
    const before = sim.aborted;
    await collect(llm, request('hello'));
    await new Promise((r) => setTimeout(r, 50));
    expect(sim.aborted).toBe(before);
  });
});

describe('event-stream framing', () => {
  // A stream as OpenAI-compatible servers write it, with the variations the format allows.
  const events = [
    '{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}',
    '{"choices":[{"index":0,"delta":{"content":"Grüß"},"finish_reason":null}]}',
    '{"choices":[{"index":0,"delta":{"content":" Gott 👋"},"finish_reason":null}]}',
    '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"end_call","arguments":""}}]},"finish_reason":null}]}',
    '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"reason\\":"}}]},"finish_reason":null}]}',
    '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"bye\\"}"}}]},"finish_reason":null}]}',
    '{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
  ];
  const wire = [
    ': OPENROUTER PROCESSING\n\n',
    `data: ${events[0]}\n\n`,
    `data:${events[1]}\r\n\r\n`, // no space after the colon, CR LF line ends
    `event: message\ndata: ${events[2]}\r\r`, // an event name, CR line ends
    `data: ${events[3]}\n\n`,
    ': keep-alive\n\n',
    // One event's JSON over two data lines (joined with a newline), CR LF line ends.
    `data: ${events[4]!.slice(0, 30)}\r\ndata: ${events[4]!.slice(30)}\r\n\r\n`,
    `data: ${events[5]}\n\n`,
    `data: ${events[6]}\n\n`,
    'data: [DONE]\n\n',
  ].join('');
  const bytes = new TextEncoder().encode(wire);

  it('the parser finds the same events however the bytes are cut', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 40 }), (cuts) => {
        const got: string[] = [];
        const parser = createSseParser((d) => got.push(d));
        const decoder = new TextDecoder();
        let from = 0;
        for (const at of [...cuts.sort((a, b) => a - b), bytes.length]) {
          parser.push(decoder.decode(bytes.subarray(from, at), { stream: true }));
          from = at;
        }
        expect(got.map((d) => (d === '[DONE]' ? d : JSON.parse(d)))).toEqual([...events.map((e) => JSON.parse(e)), '[DONE]']);
        expect(parser.pending()).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('the client reads a stream that arrives a few bytes at a time', async () => {
    const chunks = await withRawServer(bytes, (client) => collect(client, request('hi')));
    expect(chunks).toEqual([
      { type: 'text', text: 'Grüß' },
      { type: 'text', text: ' Gott 👋' },
      { type: 'tool_call', call: { id: 'call_1', name: 'end_call', arguments: '{"reason":"bye"}' } },
      { type: 'done', finishReason: 'tool_calls' },
    ]);
  });

  it('an error the provider streams mid-reply is unavailable, after the words before it', async () => {
    const wire = `data: ${events[1]}\n\ndata: {"error":{"message":"The server is overloaded","type":"server_error"}}\n\n`;
    const { error, chunks } = await withRawServer(new TextEncoder().encode(wire), (client) => failure(client, request('hi')));
    expect(chunks).toEqual([{ type: 'text', text: 'Grüß' }]);
    expect(error.kind).toBe('unavailable');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('overloaded');
  });

  it('a stream that ends cleanly but unfinished (no finish reason, no [DONE]) is unavailable', async () => {
    const wire = `data: ${events[1]}\n\ndata: ${events[2]!.slice(0, 20)}`;
    const { error, chunks } = await withRawServer(new TextEncoder().encode(wire), (client) => failure(client, request('hi')));
    expect(chunks).toEqual([{ type: 'text', text: 'Grüß' }]);
    expect(error.kind).toBe('unavailable');
  });
});

/**
 * Runs `fn` against a bare server that answers every request 200 with `wire`, dribbled
 * out in writes of 1 to 7 bytes, each in its own turn of the event loop.
 */
async function withRawServer<T>(wire: Uint8Array, fn: (client: LlmClient) => Promise<T>): Promise<T> {
  const server: Server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let at = 0;
    let size = 1;
    const next = () => {
      if (at >= wire.length) return res.end();
      res.write(wire.subarray(at, at + size));
      at += size;
      size = (size % 7) + 1;
      setTimeout(next, 0);
    };
    next();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    return await fn(createOpenAiLlm({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, model: 'm' }));
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}
