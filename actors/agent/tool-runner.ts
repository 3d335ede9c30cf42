// Runs one HTTP tool call of the model (a custom function, the in-call webhook) as
// contract.md 9 says: POST `{call_id, agent_id, name, arguments}` as JSON, signed the
// Standard Webhooks way with the account's secret, 10 s for the whole exchange, at most
// 32 KB of answer read, https only, the resolved address checked at connect time
// (voice/target-request.ts). The outcome is what the model is told: the JSON answer, or
// an error object saying what went wrong in words a model can relay ("the tool did not
// answer in time"). Never throws; nothing here is logged with the call's content.
import type { Agent } from 'node:https';
import { newPrefixedId } from '../../storage/ids.ts';
import { requestTarget, toTargetError } from '../../voice/target-request.ts';
import { signatureHeaders } from '../outbox/webhook-signing.ts';

export const TOOL_TIMEOUT_MS = 10_000;
export const TOOL_MAX_ANSWER_BYTES = 32 * 1024;

export type ToolOutcome =
  /** `result`: the answer as the model is given it (compact JSON text). */
  | { ok: true; result: string; status: number }
  /** `error`: why there is no answer, for the model; `kind` for logs and metrics. */
  | { ok: false; error: string; kind: 'bad_arguments' | 'timeout' | 'refused_address' | 'status' | 'too_large' | 'connection_failed' | 'tls_error' | 'invalid_url'; status: number | null };

export interface ToolRunDeps {
  /** ALLOW_PRIVATE_NETWORK_TARGETS. */
  allowPrivate: boolean;
  /** The account's signing secrets now (current first); empty: sent unsigned. */
  secretsOf(accountId: string, now: number): string[];
  clock: () => number;
  timeoutMs?: number;
  /** An https agent of the caller's (tests trust a throwaway CA with one); default: a connection per call. */
  agent?: Agent;
}

export interface ToolRunRequest {
  url: string;
  accountId: string;
  /** The call's public id. */
  callId: string;
  agentId: string | null;
  name: string;
  /** The arguments as the model wrote them (JSON text). */
  arguments: string;
  signal?: AbortSignal;
}

/** The model's arguments as an object: `{}` for none, null when they are not a JSON object. */
function argumentsOf(text: string): Record<string, unknown> | null {
  if (text.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export async function runHttpTool(deps: ToolRunDeps, req: ToolRunRequest): Promise<ToolOutcome> {
  const args = argumentsOf(req.arguments);
  // The model wrote something that is not an arguments object: say so, and let it try again.
  if (args === null) return { ok: false, kind: 'bad_arguments', error: 'the arguments were not a JSON object; call the tool again with valid JSON arguments', status: null };
  const body = JSON.stringify({ call_id: req.callId, agent_id: req.agentId, name: req.name, arguments: args });
  const now = deps.clock();
  const secrets = deps.secretsOf(req.accountId, now);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    'user-agent': 'switchboard-tools/1',
    ...(secrets.length > 0 ? signatureHeaders(secrets, newPrefixedId('tool'), Math.floor(now / 1000), body) : {}),
  };
  let res;
  try {
    res = await requestTarget(req.url, {
      headers,
      body,
      timeoutMs: deps.timeoutMs ?? TOOL_TIMEOUT_MS,
      maxResponseBytes: TOOL_MAX_ANSWER_BYTES,
      allowPrivate: deps.allowPrivate,
      ...(deps.agent ? { agent: deps.agent } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    });
  } catch (err) {
    const e = toTargetError(err);
    const seconds = Math.max(1, Math.round((deps.timeoutMs ?? TOOL_TIMEOUT_MS) / 1000));
    const error =
      e.kind === 'timeout'
        ? `the tool did not answer within ${seconds} second${seconds === 1 ? '' : 's'}`
        : e.kind === 'too_large'
          ? `the tool's answer was larger than ${TOOL_MAX_ANSWER_BYTES / 1024} KB`
          : e.kind === 'refused_address' || e.kind === 'invalid_url'
            ? 'the tool could not be reached (its address is not allowed)'
            : 'the tool could not be reached';
    return { ok: false, kind: e.kind, error, status: e.status };
  }
  if (res.status < 200 || res.status > 299) return { ok: false, kind: 'status', error: `the tool answered with an error (HTTP ${res.status})`, status: res.status };
  return { ok: true, result: answerText(res.body), status: res.status };
}

/**
 * The answer as the model sees it: its JSON, compacted. Decisions: an empty answer (a
 * 204, say) is `{"ok":true}`; an answer that is not JSON (automation services often
 * reply "Accepted") is passed on as `{"answer": "<its text>"}` rather than dropped.
 */
function answerText(body: Buffer): string {
  const text = body.toString('utf8').trim();
  if (text === '') return '{"ok":true}';
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return JSON.stringify({ answer: text });
  }
}
