// The `precall` object of the call record: what the pre-call gate decided for an inbound
// call (actors/calls/precall-gate.ts PrecallRecord, stored as JSON on the call's row).
import { z } from 'zod';
import { isoTime } from '../schemas.ts';
import type { PrecallRecord } from '../../actors/calls/precall-gate.ts';

export const precallView = z
  .object({
    source: z.enum(['number', 'agent']).meta({ description: "Whose pre-call URL was asked: the number's own, or its agent's." }),
    action: z.enum(['allow', 'reject', 'transfer']).meta({
      description: 'What was done: `allow` (answered by the agent, also whenever the webhook gave no usable answer), `reject`, `transfer`.',
    }),
    outcome: z.enum(['answered', 'timeout', 'error']).meta({
      description:
        '`answered`: a valid answer within 3 s. `timeout`: none within 3 s. `error`: a refused address, a connection or TLS error, a non-2xx, more than 32 KB, not JSON, or not the answer schema. `timeout` and `error` let the call through (`allow`).',
    }),
    error: z.string().nullable().meta({ description: 'Why the answer did not count (`timeout`/`error`); null when answered.' }),
    status_code: z.number().int().nullable().meta({ description: "The webhook's HTTP status, when it answered." }),
    latency_ms: z.number().int().meta({ description: 'From the request leaving to the decision.' }),
    transfer_number: z.string().nullable().meta({ description: 'The number the call was handed to (`transfer`).' }),
    prompt_applied: z.boolean().meta({ description: 'True when the answer’s custom_prompt and/or dynamic_vars were applied to this call’s conversation.' }),
    asked_at: z.string().meta({ description: 'When the webhook was asked (ISO 8601).' }),
  })
  .nullable()
  .meta({ description: 'The pre-call gate’s decision for an inbound call; null when no pre-call URL was set (and for outbound calls).' });

export function precallRecordView(json: string | null): z.infer<typeof precallView> {
  if (json === null) return null;
  const r = JSON.parse(json) as PrecallRecord;
  return {
    source: r.source,
    action: r.action,
    outcome: r.outcome,
    error: r.error,
    status_code: r.status_code,
    latency_ms: r.latency_ms,
    transfer_number: r.transfer_number,
    prompt_applied: r.prompt_applied,
    asked_at: isoTime(r.asked_at),
  };
}
