// The agent engine's side of a transfer (actors/agent/agent-engine.ts hooks it in): the model's
// call of the transfer tool is checked (voice/conversation/transfer-tool.ts); once the
// agent's last words have played (the conversation machine's `transferring`), the caller
// hears our hold chime, a warm transfer gets its whisper (transfer_whisper, else the
// briefing the model wrote with the tool call, else one asked of the model now), and the
// call actor is asked to transfer (TRANSFER.REQUESTED; the durable part is the call
// machine's, machines/call-transfer.ts). The engine then watches the call: a transfer
// that does not reach the person stops the chime and hands the floor back to the agent,
// who says so. On carrier A the caller's stream ends with the transfer and a failed one
// comes back on a new stream: its engine starts from `resume` (the conversation so far
// and why the transfer failed) and the agent speaks first.
import type { CallContext } from '../../machines/call-outcome.ts';
import type { TransferFailure } from '../../machines/transfer-events.ts';
import type { TranscriptLine } from '../../machines/conversation.ts';
import type { EngineCall } from '../../voice/engine/engine.ts';
import type { LlmClient, LlmMessage } from '../../voice/providers/llm.ts';
import { createHoldPlayer, type HoldPlayout } from '../../voice/conversation/hold-audio.ts';
import {
  BRIEFING_INSTRUCTION,
  FALLBACK_BRIEFING,
  MAX_BRIEFING,
  TRANSFER_TOOL,
  resolveTransfer,
  transferFailedNote,
  type TransferDecision,
  type TransferPolicy,
} from '../../voice/conversation/transfer-tool.ts';

/** A conversation that comes back on a new stream after a failed transfer (carrier A). */
export interface TransferResume {
  /** The conversation before the transfer, from the call's transcript. */
  lines: TranscriptLine[];
  failure: TransferFailure | null;
}

/** Watches a call's committed snapshots until `fn` returns true (null: the call is gone). */
export type CallWatcher = (callId: string, fn: (ctx: CallContext | null) => boolean) => void;

export interface EngineTransferDeps {
  call: EngineCall;
  policy: TransferPolicy | null;
  resume: TransferResume | null;
  llm: LlmClient;
  temperature: number;
  /** The call's playout, for the hold chime. */
  playout: HoldPlayout;
  clock: () => number;
  watchCall?: CallWatcher | undefined;
  /** Tells the conversation machine, after its current step. */
  send(event: { type: 'TRANSFER' } | { type: 'TRANSFER.FAILED' }): void;
  isClosed(): boolean;
}

export interface EngineTransfer {
  /** A tool the model called; true when it was the transfer tool (the conversation is told). */
  onToolCall(name: string, args: string): boolean;
  /** The conversation is `transferring`: `history` is what the model knows of it so far. */
  begin(history: LlmMessage[]): void;
  /** The note for the agent's reply after a failed transfer (or when resuming on a new stream). */
  failedNote(): string;
  /** On every playout tick. */
  tick(): void;
  close(): void;
}

/** How long the model may take to write a briefing before the fallback is used. */
export const BRIEFING_TIMEOUT_MS = 5_000;

/** The conversation of a call whose transfer failed, from its transcript, when its engine starts again. */
export function resumeAfterTransfer(ctx: CallContext | null): TransferResume | null {
  const t = ctx?.transfer;
  if (!ctx || !t || t.outcome !== 'failed') return null;
  const lines: TranscriptLine[] = [];
  for (const line of (ctx.transcript ?? '').split('\n')) {
    const m = /^(Agent|Caller): (.*)$/.exec(line);
    if (m) lines.push({ speaker: m[1] === 'Agent' ? 'agent' : 'caller', text: m[2]! });
  }
  return { lines, failure: t.failure };
}

export function createEngineTransfer(deps: EngineTransferDeps): EngineTransfer {
  const hold = createHoldPlayer(deps.playout);
  let asked: TransferDecision | null = null;
  let failure: string = deps.resume?.failure ?? 'failed';
  const abort = new AbortController();

  function failed(why: string): void {
    failure = why;
    hold.stop();
    queueMicrotask(() => {
      if (!deps.isClosed()) deps.send({ type: 'TRANSFER.FAILED' });
    });
  }

  async function writeBriefing(history: LlmMessage[]): Promise<string> {
    const signal = AbortSignal.any([abort.signal, AbortSignal.timeout(BRIEFING_TIMEOUT_MS)]);
    let text = '';
    try {
      for await (const chunk of deps.llm.stream({
        messages: [...history, { role: 'system', content: BRIEFING_INSTRUCTION }],
        temperature: deps.temperature,
        maxTokens: 120,
        signal,
      })) {
        if (chunk.type === 'text') text += chunk.text;
      }
    } catch {
      // The fallback line below: the transfer must not wait on a failing model.
    }
    const briefing = text.trim().slice(0, MAX_BRIEFING);
    return briefing === '' ? FALLBACK_BRIEFING : briefing;
  }

  async function begin(history: LlmMessage[]): Promise<void> {
    const decision = asked;
    asked = null;
    hold.start();
    const policy = deps.policy;
    if (policy === null || decision === null || !decision.ok) return failed(decision && !decision.ok ? decision.why : 'no number to transfer to was given');
    const whisper = policy.mode === 'warm' ? (policy.whisper ?? decision.briefing ?? (await writeBriefing(history))) : null;
    if (deps.isClosed()) return;
    const at = deps.clock();
    // After the conversation's step: the call's supervisor must not run inside its actions.
    queueMicrotask(() => deps.call.deliver({ type: 'TRANSFER.REQUESTED', at, to: decision.to, mode: policy.mode, whisper }));
    deps.watchCall?.(deps.call.callId, (ctx) => {
      if (deps.isClosed() || ctx === null || ctx.endedAt !== null) return true;
      const t = ctx.transfer;
      // Our request is the transfer that was asked for at `at`.
      if (t === null || t.requestedAt !== at) return false;
      if (t.outcome === 'failed') {
        failed(t.failure ?? 'failed');
        return true;
      }
      // Connected: the carrier takes the caller from our stream; nothing more to say.
      return t.outcome === 'connected';
    });
  }

  return {
    onToolCall(name, args) {
      if (name !== TRANSFER_TOOL || deps.policy === null) return false;
      asked = resolveTransfer(deps.policy, args);
      deps.send({ type: 'TRANSFER' });
      return true;
    },
    begin(history) {
      void begin(history);
    },
    failedNote: () => transferFailedNote(failure),
    tick: () => hold.tick(),
    close() {
      abort.abort();
      hold.stop();
    },
  };
}
