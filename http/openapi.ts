// The OpenAPI 3.1 document, generated from the route table and the same zod schemas
// the handlers validate with, so the description cannot drift from the behaviour.
import { z } from 'zod';
import { ERRORS, ERROR_CODES, type ErrorCode } from './errors.ts';
import type { RouteDef } from './route.ts';
import { errorEnvelope } from './schemas.ts';
import { loadConfig } from '../config.ts';

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete out['$schema'];
  return out;
}

/** The error envelope, whose `code` is one of the registry's (the ErrorCode component). */
function errorSchema(): Json {
  const out = jsonSchema(errorEnvelope, 'output') as { properties: { error: { properties: Record<string, Json> } } };
  out.properties.error.properties['code'] = { $ref: '#/components/schemas/ErrorCode' };
  return out;
}

const MUTATION_ERRORS: ErrorCode[] = [
  'invalid_json',
  'invalid_content_type',
  'payload_too_large',
  'invalid_idempotency_key',
  'idempotency_key_reused',
  'idempotency_key_in_use',
];

/** One bucket a request counts in: who it belongs to, how many a window allows, which variable sets it. */
interface Bucket {
  per: 'api_key' | 'client_ip';
  counts: string;
  limit: number;
  window_seconds: number;
  setting: string;
}

/** The limits of config.ts when no variable sets them: what the document states (a deployment may set others). */
const DEFAULT_LIMITS = loadConfig({}).rateLimits;

/**
 * The buckets a route's requests count in (route.ts `rateLimit`, applied by pipeline.ts),
 * at their default limits; none for an unlimited route.
 */
function rateLimitBuckets(r: RouteDef): Bucket[] {
  const d = DEFAULT_LIMITS;
  const minute = (per: Bucket['per'], counts: string, limit: number, setting: string): Bucket => ({ per, counts, limit, window_seconds: 60, setting });
  if (r.rateLimit === 'key_creation') {
    return [{ per: 'client_ip', counts: 'POST /v1/keys', limit: d.keyCreationPerHourPerIp, window_seconds: 3600, setting: 'KEY_CREATION_PER_HOUR_PER_IP' }];
  }
  if (r.path.startsWith('/v1/')) {
    const write = r.method !== 'GET';
    return [
      write
        ? minute('api_key', 'writes (POST, PUT, PATCH, DELETE) of the key', d.writesPerMin, 'RATE_LIMIT_WRITES_PER_MIN')
        : minute('api_key', 'reads (GET, HEAD) of the key, and its live machine view upgrades', d.readsPerMin, 'RATE_LIMIT_READS_PER_MIN'),
      minute('client_ip', 'every request and websocket upgrade without a working key, any method', d.readsPerMin, 'RATE_LIMIT_READS_PER_MIN'),
    ];
  }
  if (r.rateLimit === 'recordings') return [minute('client_ip', 'recording downloads (GET and HEAD, ranges included)', d.recordingsPerMin, 'RATE_LIMIT_RECORDINGS_PER_MIN')];
  if (r.rateLimit === 'carrier') return [minute('client_ip', 'carrier webhooks', d.carrierPerMin, 'RATE_LIMIT_CARRIER_PER_MIN')];
  return [];
}

function describeBuckets(buckets: Bucket[]): string {
  const each = buckets.map((b) => `${b.limit} per ${b.window_seconds === 60 ? 'minute' : 'hour'} per ${b.per === 'api_key' ? 'API key' : 'client IP'} for ${b.counts} (\`${b.setting}\`)`);
  return `Rate limited: ${each.join('; ')}. Over a limit the answer is 429 \`rate_limit_exceeded\` with \`Retry-After\` and \`details.retry_after\` (seconds); every answer carries X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset.`;
}

/** Codes every route can answer with besides its own. */
function commonErrors(r: RouteDef): ErrorCode[] {
  // Decided before routing, so every operation can answer them.
  const codes: ErrorCode[] = ['server_error', 'invalid_path', 'malformed_request'];
  if (r.method !== 'GET') codes.push('payload_too_large', 'server_busy');
  if (rateLimitBuckets(r).length > 0) codes.push('rate_limit_exceeded');
  if (r.path.startsWith('/v1/') && r.auth !== 'none') codes.push('invalid_api_key', 'key_secret_required');
  if (r.method !== 'GET' && r.path.startsWith('/v1/')) codes.push(...MUTATION_ERRORS);
  if (r.body || r.query) codes.push('invalid_request', 'missing_field');
  // Any body sent to a non-GET operation is read as JSON (content type, syntax, nesting depth).
  if (r.method !== 'GET' && !r.rawBody) codes.push('invalid_json', 'invalid_content_type', 'invalid_request');
  return codes;
}

function errorResponses(codes: ErrorCode[], references: ErrorCode[] = []): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  const add = (status: number, c: ErrorCode) => {
    const list = byStatus.get(status) ?? [];
    if (!list.includes(c)) byStatus.set(status, [...list, c]);
  };
  for (const c of new Set(codes)) add(ERRORS[c].status, c);
  for (const c of references) add(400, c);
  const out: Json = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = {
      description: list.map((c) => `\`${c}\`: ${ERRORS[c].message}`).join('\n\n'),
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/Error' },
              { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: list } } } } },
            ],
          },
        },
      },
    };
  }
  return out;
}

function parameters(r: RouteDef): Json[] {
  const params: Json[] = [];
  for (const m of r.path.matchAll(/\{(\w+)\}/g)) {
    params.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' }, description: m[1]!.includes('number') ? 'E.164; encode + as %2B.' : undefined });
  }
  if (r.query) {
    const q = jsonSchema(r.query, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      const { description, ...rest } = schema;
      params.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema: rest, description });
    }
  }
  return params;
}

export function buildOpenApi(routes: RouteDef<any, any>[], serverUrl: string): Json {
  const paths: Record<string, Json> = {};
  for (const r of routes) {
    const responses: Json = {};
    for (const [status, doc] of Object.entries(r.responses)) {
      responses[status] = doc.schema
        ? { description: doc.description, content: { 'application/json': { schema: jsonSchema(doc.schema, 'output') } } }
        : { description: doc.description };
    }
    Object.assign(responses, errorResponses([...r.errors, ...commonErrors(r)], r.referenceErrors));
    const buckets = rateLimitBuckets(r);
    const limited = responses['429'] as Json | undefined;
    if (buckets.length > 0 && limited) {
      limited['description'] = `${describeBuckets(buckets)}\n\n${limited['description'] as string}`;
      limited['headers'] = { 'Retry-After': { description: 'Seconds until the window resets.', schema: { type: 'integer', minimum: 1 } } };
    }
    const op: Json = {
      summary: r.summary,
      tags: [r.tag],
      operationId: `${r.method.toLowerCase()}${r.path.replace(/[{}]/g, '').replace(/[^a-zA-Z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      security: r.auth === 'none' || !r.path.startsWith('/v1/') ? [] : r.auth === 'optional' ? [{}, { apiKey: [] }] : [{ apiKey: [] }],
      parameters: parameters(r),
      responses,
    };
    if (buckets.length > 0) op['x-rate-limit'] = buckets;
    if (r.method !== 'GET' && r.path.startsWith('/v1/')) {
      op['parameters'] = [
        ...(op['parameters'] as Json[]),
        { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 }, description: 'Replays the stored response for 24 hours (scoped to the account, method and path).' },
      ];
    }
    if (r.body) op['requestBody'] = { required: false, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } };
    paths[r.path] = { ...(paths[r.path] ?? {}), [r.method.toLowerCase()]: op };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Switchboard API',
      version: '1.0.0',
      description:
        'Self-hosted voice AI agents on your own carrier numbers. Authenticate with `Authorization: Bearer KEY_ID:KEY_SECRET`. ' +
        'Every error is `{error:{type, code, message, details}}`; branch on `code`. Every response of a rate-limited operation carries ' +
        `X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset for its bucket (defaults: reads ${DEFAULT_LIMITS.readsPerMin}/min and ` +
        `writes ${DEFAULT_LIMITS.writesPerMin}/min per key; requests and websocket upgrades without a working key ${DEFAULT_LIMITS.readsPerMin}/min ` +
        `per client IP, together; POST /v1/keys ${DEFAULT_LIMITS.keyCreationPerHourPerIp}/hour per IP; recording links ` +
        `${DEFAULT_LIMITS.recordingsPerMin}/min and carrier webhooks ${DEFAULT_LIMITS.carrierPerMin}/min per client IP). ` +
        'Each operation states its buckets in `x-rate-limit` and in its 429 answer.',
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'KEY_ID:KEY_SECRET, joined by a colon.' },
      },
      schemas: {
        Error: errorSchema(),
        ErrorCode: {
          type: 'string',
          enum: ERROR_CODES,
          description: 'Every code the API answers with.',
          'x-error-registry': Object.fromEntries(ERROR_CODES.map((c) => [c, ERRORS[c]])),
        },
      },
    },
  };
}
