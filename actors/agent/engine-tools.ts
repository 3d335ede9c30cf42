// The HTTP tools of one call's conversation (issue 9): which of the model's tool calls
// the engine runs (the number's custom functions and the in-call webhook, named in the
// call's setup), the round of them the conversation machine is told about
// (TOOL.CALLS), running each when the machine asks (`runTools`) and answering it
// (TOOL.DONE / TOOL.FAILED), the tools offered on each request (none of these after
// MAX_TOOL_ROUNDS_PER_TURN rounds without the caller speaking, so a model cannot loop),
// and the filler lines. A hang-up aborts the requests in flight.
import type { ConversationEvent, ReplyRequest, ToolCall } from '../../machines/conversation.ts';
import type { LlmTool, LlmToolCall } from '../../voice/providers/llm.ts';
import { fillerText, MAX_TOOL_ROUNDS_PER_TURN, type HttpTool } from '../../voice/conversation/tools.ts';
import { runHttpTool, type ToolOutcome, type ToolRunDeps } from './tool-runner.ts';

/** Tools the engine runs in-process (the booking tools, actors/agent/engine-bookings.ts; send_sms, engine-sms.ts), in the same rounds as the HTTP ones. */
export interface LocalTools {
  handles(name: string): boolean;
  run(call: ToolCall, signal: AbortSignal): Promise<{ ok: true; result: string } | { ok: false; error: string }>;
}

/** Several in-process tool sets (bookings, texts) as one; undefined when there are none. */
export function combineLocalTools(sets: readonly (LocalTools | null)[]): LocalTools | undefined {
  const present = sets.filter((t): t is LocalTools => t !== null);
  if (present.length <= 1) return present[0];
  return {
    handles: (name) => present.some((t) => t.handles(name)),
    run: (call, signal) => present.find((t) => t.handles(call.name))!.run(call, signal),
  };
}

export interface EngineToolsDeps {
  httpTools: readonly HttpTool[];
  /** Every tool the model is offered (the HTTP ones among them). */
  allTools: readonly LlmTool[];
  accountId: string;
  identity: { callId: string; agentId: string | null };
  runner: ToolRunDeps;
  local?: LocalTools;
  send(event: ConversationEvent): void;
  isClosed(): boolean;
  /** Each finished run (for metrics and an operator's log line; no content). */
  onRun?(name: string, outcome: ToolOutcome, ms: number): void;
  now: () => number;
}

export interface EngineTools {
  /** The model's calls of one reply: the HTTP ones become a round (TOOL.CALLS). */
  onModelCalls(calls: readonly LlmToolCall[]): void;
  /** The machine's `runTools`. */
  run(calls: readonly ToolCall[]): void;
  /** The tools offered with this request. */
  offered(request: ReplyRequest): LlmTool[];
  /** The text of the next filler. */
  nextFiller(): string;
  close(): void;
}

export function createEngineTools(deps: EngineToolsDeps): EngineTools {
  const byName = new Map(deps.httpTools.map((t) => [t.name, t]));
  const inFlight = new Set<AbortController>();
  let fillers = 0;
  const local = deps.local;
  const ours = (name: string): boolean => byName.has(name) || (local?.handles(name) ?? false);
  const withoutHttp = deps.allTools.filter((t) => !ours(t.function.name));

  return {
    onModelCalls(calls) {
      const seen = new Set<string>();
      const round: ToolCall[] = [];
      for (const c of calls) {
        if (!ours(c.name)) continue; // end_call, transfers and unknown names are not ours
        // The model's ids answer its calls; one used twice in a round would answer both.
        let id = c.id || `call_${round.length}`;
        while (seen.has(id)) id = `${id}_${round.length}`;
        seen.add(id);
        round.push({ id, name: c.name, arguments: c.arguments });
      }
      if (round.length === 0) return;
      fillers = 0;
      deps.send({ type: 'TOOL.CALLS', calls: round });
    },

    run(calls) {
      for (const c of calls) {
        if (local?.handles(c.name)) {
          const abort = new AbortController();
          inFlight.add(abort);
          void local.run(c, abort.signal).then((outcome) => {
            inFlight.delete(abort);
            if (deps.isClosed()) return;
            deps.send(outcome.ok ? { type: 'TOOL.DONE', id: c.id, result: outcome.result } : { type: 'TOOL.FAILED', id: c.id, error: outcome.error });
          });
          continue;
        }
        const tool = byName.get(c.name);
        if (!tool) {
          queueMicrotask(() => deps.send({ type: 'TOOL.FAILED', id: c.id, error: `there is no tool named ${c.name}` }));
          continue;
        }
        const abort = new AbortController();
        inFlight.add(abort);
        const startedAt = deps.now();
        void runHttpTool(deps.runner, {
          url: tool.url,
          accountId: deps.accountId,
          callId: deps.identity.callId,
          agentId: deps.identity.agentId,
          name: c.name,
          arguments: c.arguments,
          signal: abort.signal,
        }).then((outcome) => {
          inFlight.delete(abort);
          if (deps.isClosed()) return;
          deps.onRun?.(c.name, outcome, deps.now() - startedAt);
          deps.send(outcome.ok ? { type: 'TOOL.DONE', id: c.id, result: outcome.result } : { type: 'TOOL.FAILED', id: c.id, error: outcome.error });
        });
      }
    },

    offered(request) {
      let lastCaller = -1;
      request.lines.forEach((l, i) => {
        if (l.speaker === 'caller') lastCaller = i;
      });
      const roundsThisTurn = request.toolRounds.filter((r) => r.at > lastCaller).length;
      return roundsThisTurn >= MAX_TOOL_ROUNDS_PER_TURN ? withoutHttp : [...deps.allTools];
    },

    nextFiller() {
      return fillerText(fillers++);
    },

    close() {
      for (const a of inFlight) a.abort();
      inFlight.clear();
    },
  };
}
