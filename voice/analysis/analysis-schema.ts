// The shape of a post-call analysis, twice from one source: the JSON schema the model
// is asked to answer in (`response_format: json_schema`, strict), and the zod schema
// its answer is held to before anything is stored. An answer that is not JSON, misses
// a field or has a wrong type is refused here, never repaired: the caller retries.
import { z } from 'zod';
import type { ExtractionField } from '../../storage/agents.ts';

export const SENTIMENTS = ['happy', 'neutral', 'frustrated'] as const;
export type Sentiment = (typeof SENTIMENTS)[number];

/** Bounds on what is stored: a model that writes an essay is asked again. */
export const ANALYSIS_LIMITS = { summary: 2000, openItem: 500, extractedString: 1000 } as const;

export interface Analysis {
  summary: string;
  sentiment: Sentiment;
  successful: boolean;
  /** What is still to be done for this caller after the call; null when nothing is. */
  open_item: string | null;
  /** One key per extraction field (null when the call did not tell); null when the agent has none. */
  extracted: Record<string, string | number | boolean | null> | null;
}

export type ParsedAnswer = { ok: true; analysis: Analysis } | { ok: false; reason: string };

function fieldJsonSchema(f: ExtractionField): Record<string, unknown> {
  const description = f.description;
  if (f.type === 'string' && f.enum) return { type: ['string', 'null'], enum: [...f.enum, null], description };
  return { type: [f.type, 'null'], description };
}

/** The `response_format` of the request: strict JSON schema, every key required (nullable where it may be empty). */
export function analysisResponseFormat(fields: readonly ExtractionField[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {
    summary: { type: 'string', description: 'What happened on the call, in two or three sentences.' },
    sentiment: { type: 'string', enum: [...SENTIMENTS], description: "The caller's mood over the call." },
    successful: { type: 'boolean', description: 'Whether the call achieved its purpose.' },
    open_item: { type: ['string', 'null'], description: 'What is still to be done for this caller, in one short sentence; null when nothing is.' },
  };
  if (fields.length > 0) {
    properties.extracted = {
      type: 'object',
      properties: Object.fromEntries(fields.map((f) => [f.name, fieldJsonSchema(f)])),
      required: fields.map((f) => f.name),
      additionalProperties: false,
    };
  }
  return {
    type: 'json_schema',
    json_schema: {
      name: 'call_analysis',
      strict: true,
      schema: { type: 'object', properties, required: Object.keys(properties), additionalProperties: false },
    },
  };
}

function fieldSchema(f: ExtractionField): z.ZodType<string | number | boolean | null> {
  switch (f.type) {
    case 'string':
      return (f.enum ? z.enum(f.enum as [string, ...string[]]) : z.string().max(ANALYSIS_LIMITS.extractedString)).nullable();
    case 'number':
      return z.number().nullable();
    case 'integer':
      return z.number().int().nullable();
    case 'boolean':
      return z.boolean().nullable();
  }
}

/** The zod schema an answer must pass. Unknown keys are dropped; every named key must be there with its type. */
export function analysisAnswerSchema(fields: readonly ExtractionField[]) {
  const base = {
    summary: z.string().trim().min(1).max(ANALYSIS_LIMITS.summary),
    sentiment: z.enum(SENTIMENTS),
    successful: z.boolean(),
    // An empty or blank open item means nothing is open.
    open_item: z
      .string()
      .trim()
      .max(ANALYSIS_LIMITS.openItem)
      .nullable()
      .transform((v) => (v === null || v === '' ? null : v)),
  };
  if (fields.length === 0) return z.object(base).transform((a): Analysis => ({ ...a, extracted: null }));
  const extracted = z.object(Object.fromEntries(fields.map((f) => [f.name, fieldSchema(f)])));
  return z.object({ ...base, extracted }).transform((a): Analysis => ({ ...a, extracted: a.extracted as Analysis['extracted'] }));
}

/**
 * The model's message content as an analysis. A JSON object wrapped in a Markdown code
 * fence is accepted (some models add one even in JSON mode); anything else that is
 * not JSON, or JSON that does not fit, is refused with the reason.
 */
export function parseAnalysisAnswer(content: string, fields: readonly ExtractionField[]): ParsedAnswer {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/i.exec(content);
  let json: unknown;
  try {
    json = JSON.parse(fenced ? fenced[1]! : content);
  } catch {
    return { ok: false, reason: 'the answer is not JSON' };
  }
  const parsed = analysisAnswerSchema(fields).safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, reason: `the answer does not fit the schema: ${issue.path.join('.') || '(root)'}: ${issue.message}` };
  }
  return { ok: true, analysis: parsed.data };
}
