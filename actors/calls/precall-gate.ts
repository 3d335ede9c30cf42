// The pre-call gate (contract.md 9): before the agent answers an inbound call, the
// customer's pre-call URL (the number's, else its agent's) is POSTed
// `{event:"call.precall", call_id, agent_id, from, to, direction, caller}`, signed the
// Standard Webhooks way, and has 3 s to answer `{action, transfer_number?, custom_prompt?,
// dynamic_vars?}`. Anything but a valid answer in time (a timeout, a refused address, a
// connection error, a non-2xx, more than 32 KB, not JSON, not the schema) lets the call
// through: the gate can only hold a call back when the customer clearly says so.
// Nothing here is durable: the decision is written with the call's row by actors/calls/inbound.ts.
import { z } from 'zod';
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import { requestTarget, TargetRequestError } from '../../voice/target-request.ts';
import { fillPrompt, referencedVars } from '../../voice/conversation/fill-prompt.ts';
import { signatureHeaders } from '../outbox/webhook-signing.ts';
import { callerContext } from './caller-context.ts';

export const PRECALL_TIMEOUT_MS = 3000;
export const PRECALL_MAX_ANSWER_BYTES = 32 * 1024;
/** The call prompt built from custom_prompt and dynamic_vars: the outbound call prompt's limit. */
export const PRECALL_MAX_PROMPT = 32_000;

const E164 = /^\+[1-9]\d{7,14}$/;
const varValue = z.union([z.string(), z.number(), z.boolean()]).transform(String);

/** The answer the customer's pre-call URL must give; unknown fields are ignored. */
export const precallAnswerSchema = z
  .object({
    action: z.enum(['allow', 'reject', 'transfer']),
    transfer_number: z.string().nullish(),
    custom_prompt: z.string().max(16_000).nullish(),
    dynamic_vars: z.record(z.string().min(1).max(100), varValue).nullish(),
  })
  .superRefine((a, ctx) => {
    if (a.action === 'transfer' && !(typeof a.transfer_number === 'string' && E164.test(a.transfer_number))) {
      ctx.addIssue({ code: 'custom', path: ['transfer_number'], message: 'transfer needs transfer_number in E.164 (e.g. +14155550123)' });
    }
  });

export type PrecallAction = 'allow' | 'reject' | 'transfer';

/** What the gate decided, kept on the call (`precall` on the call record). */
export interface PrecallRecord {
  /** Whose URL was asked: the number's own, or its agent's. */
  source: 'number' | 'agent';
  /** What was done with the call. */
  action: PrecallAction;
  /** `answered`: a valid answer in time; `timeout`: none within 3 s; `error`: anything else (then `allow`). */
  outcome: 'answered' | 'timeout' | 'error';
  /** Why an answer did not count (`error`/`timeout`), never the answer's content. */
  error: string | null;
  /** The HTTP status of the answer, when there was one. */
  status_code: number | null;
  /** From the request leaving to the decision, ms. */
  latency_ms: number;
  transfer_number: string | null;
  /** True when custom_prompt and/or dynamic_vars were applied to the call's conversation. */
  prompt_applied: boolean;
  /** When the gate was asked (epoch ms). */
  asked_at: number;
}

export interface PrecallDecision {
  record: PrecallRecord;
  /** The call's own prompt (custom_prompt with dynamic_vars filled in), or null. */
  prompt: string | null;
}

export interface PrecallCall {
  accountId: string;
  agentId: string;
  phoneNumber: string;
  /** The carrier's call id: the call's public call_id. */
  carrierCallId: string;
  from: string;
  to: string;
}

export interface PrecallGateDeps {
  storage: Storage;
  /** ALLOW_PRIVATE_NETWORK_TARGETS. */
  allowPrivate: boolean;
  clock: () => number;
  timeoutMs?: number;
}

export type PrecallGate = (call: PrecallCall, log: Logger) => Promise<PrecallDecision | null>;

/** The URL to ask: the number's pre-call integration, else the agent's; null when neither is set. */
export function precallTarget(storage: Storage, accountId: string, phoneNumber: string, agentId: string): { url: string; source: 'number' | 'agent' } | null {
  const urlOf = (config: Record<string, unknown> | undefined) => (typeof config?.['url'] === 'string' && config['url'] !== '' ? (config['url'] as string) : null);
  const own = urlOf(storage.integrations.get(accountId, 'precall', { phoneNumber })?.config);
  if (own !== null) return { url: own, source: 'number' };
  const agents = urlOf(storage.integrations.get(accountId, 'precall', { agentId })?.config);
  return agents === null ? null : { url: agents, source: 'agent' };
}


/**
 * The call's prompt: custom_prompt with `{name}` filled from dynamic_vars (the outbound
 * call's rule), then the variables it does not name, listed, so none is silently lost.
 */
export function precallPrompt(customPrompt: string | null, vars: Record<string, string>): string | null {
  const parts: string[] = [];
  const named = customPrompt ? referencedVars(customPrompt) : new Set<string>();
  if (customPrompt && customPrompt.trim() !== '') parts.push(fillPrompt(customPrompt.trim(), vars));
  const rest = Object.entries(vars).filter(([k]) => !named.has(k));
  if (rest.length > 0) parts.push(`Details about the caller:\n${rest.map(([k, v]) => `- ${k}: ${v}`).join('\n')}`);
  return parts.length === 0 ? null : parts.join('\n\n');
}

type Asked = { kind: 'answer'; status: number; body: Buffer } | { kind: 'failed'; timeout: boolean; error: string; status: number | null };

export function createPrecallGate(deps: PrecallGateDeps): PrecallGate {
  const { storage, clock } = deps;
  const timeoutMs = deps.timeoutMs ?? PRECALL_TIMEOUT_MS;

  async function ask(url: string, accountId: string, body: string): Promise<Asked> {
    const id = newPrefixedId('msg');
    const now = clock();
    const secrets = storage.integrations.signingSecrets(accountId, now);
    try {
      const res = await requestTarget(url, {
        body,
        headers: { 'content-type': 'application/json', 'user-agent': 'Switchboard-Precall/1', ...signatureHeaders(secrets, id, Math.floor(now / 1000), body) },
        timeoutMs,
        maxResponseBytes: PRECALL_MAX_ANSWER_BYTES,
        allowPrivate: deps.allowPrivate,
      });
      return { kind: 'answer', status: res.status, body: res.body };
    } catch (err) {
      if (err instanceof TargetRequestError) {
        // The category only: the socket's own message names addresses and ports (it is on the call record).
        const why = err.kind === 'too_large' ? `the answer is longer than ${PRECALL_MAX_ANSWER_BYTES} bytes` : err.kind === 'timeout' ? `no answer within ${timeoutMs} ms` : err.publicMessage;
        return { kind: 'failed', timeout: err.kind === 'timeout', error: why, status: err.status };
      }
      return { kind: 'failed', timeout: false, error: 'the request failed', status: null };
    }
  }

  return async (call, log) => {
    const target = precallTarget(storage, call.accountId, call.phoneNumber, call.agentId);
    if (target === null) return null;
    const payload = {
      event: 'call.precall',
      call_id: call.carrierCallId,
      agent_id: call.agentId,
      from: call.from,
      to: call.to,
      direction: 'inbound',
      caller: callerContext(storage.callers.get(call.accountId, call.phoneNumber, call.from)),
    };
    const askedAt = clock();
    const started = performance.now();
    const asked = await ask(target.url, call.accountId, JSON.stringify(payload));
    const latency = Math.round(performance.now() - started);

    const base = { source: target.source, latency_ms: latency, asked_at: askedAt, transfer_number: null, prompt_applied: false };
    const letThrough = (outcome: 'timeout' | 'error', error: string, status: number | null): PrecallDecision => {
      log.warn({ call_id: call.carrierCallId, source: target.source, outcome, error, status_code: status }, 'pre-call gate gave no usable answer; the call goes through');
      return { record: { ...base, action: 'allow', outcome, error, status_code: status }, prompt: null };
    };
    if (asked.kind === 'failed') return letThrough(asked.timeout ? 'timeout' : 'error', asked.error, asked.status);
    if (asked.status < 200 || asked.status > 299) return letThrough('error', `HTTP ${asked.status}`, asked.status);

    let json: unknown;
    try {
      json = JSON.parse(asked.body.toString('utf8'));
    } catch {
      return letThrough('error', 'the answer is not JSON', asked.status);
    }
    const parsed = precallAnswerSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return letThrough('error', `invalid answer: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'not the expected shape'}`, asked.status);
    }
    const a = parsed.data;
    if (a.action === 'reject') return { record: { ...base, action: 'reject', outcome: 'answered', error: null, status_code: asked.status }, prompt: null };
    if (a.action === 'transfer') {
      return { record: { ...base, action: 'transfer', outcome: 'answered', error: null, status_code: asked.status, transfer_number: a.transfer_number! }, prompt: null };
    }
    const prompt = precallPrompt(a.custom_prompt ?? null, a.dynamic_vars ?? {});
    if (prompt !== null && prompt.length > PRECALL_MAX_PROMPT) {
      return letThrough('error', `invalid answer: custom_prompt with dynamic_vars would be ${prompt.length} characters; at most ${PRECALL_MAX_PROMPT}`, asked.status);
    }
    return { record: { ...base, action: 'allow', outcome: 'answered', error: null, status_code: asked.status, prompt_applied: prompt !== null }, prompt };
  };
}
