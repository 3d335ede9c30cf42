// What a route is: a plain table entry `{method, path, body, query, handler}` with its
// zod schemas, documented responses and error codes. Handlers never see uWS types;
// the OpenAPI document is generated from these same entries.
import type { z } from 'zod';
import type { Logger } from 'pino';
import type { ErrorCode } from './errors.ts';
import type { AuthContext } from './auth.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RequestInfo {
  method: string;
  path: string;
  searchParams: URLSearchParams;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  ip: string;
  requestId: string;
  log: Logger;
}

export interface HandlerContext<B, Q> extends RequestInfo {
  params: Record<string, string>;
  body: B;
  query: Q;
  auth: AuthContext | null;
  /**
   * Set when the request carries an Idempotency-Key: stores an answer under it now, for a
   * handler that must make it durable inside its own transaction (before it acts), so a
   * retry after a crash replays it instead of acting again. The final answer replaces it.
   */
  idempotency: { store(status: number, body: unknown): void } | null;
}

export interface HandlerResult {
  status: number;
  /** Serialized as JSON unless it is already a string; ignored when `file` is set. */
  body: unknown;
  headers?: Record<string, string>;
  contentType?: string;
  /**
   * Bytes of a file as the body, streamed by the adapter with backpressure (a recording can
   * be hundreds of MB: it is never read whole, and a HEAD request never opens it).
   */
  file?: FileRegion;
}

/**
 * Bytes `start` to `end` (inclusive, as in Content-Range; `end` is `start - 1` for none) of
 * the file at `path`, or of what `stream` yields (a recording in the bucket, opened only when
 * the body is sent: a HEAD request never opens it).
 */
export type FileRegion = { start: number; end: number } & ({ path: string } | { stream: (signal: AbortSignal) => AsyncIterable<Uint8Array> });

export interface ResponseDoc {
  description: string;
  schema?: z.ZodType;
}

export type RateLimitClass = 'default' | 'key_creation' | 'recordings' | 'carrier' | 'none';

export interface RouteDef<B = unknown, Q = unknown> {
  method: Method;
  /** OpenAPI-style pattern, e.g. `/v1/keys/{key_id}`. */
  path: string;
  summary: string;
  tag: string;
  /** `required` (default for /v1), `optional` (POST /v1/keys), `none` (public). */
  auth?: 'required' | 'optional' | 'none';
  /**
   * Which rate-limit bucket (http/rate-limit.ts), checked before the body is read:
   * `default` (every /v1 route) is per key by read/write class, and per client IP for
   * attempts without a working key; `key_creation` is the per-IP hourly bucket of POST
   * /v1/keys; `recordings` and `carrier` are per client IP for the public links and the
   * carriers' webhooks; `none` is not limited (outside /v1 only). Unset: `default` under
   * /v1, not limited elsewhere (health, metrics). The OpenAPI document states each bucket.
   */
  rateLimit?: RateLimitClass;
  body?: z.ZodType<B>;
  /** Read-only response fields an update ignores, so a fetched object can be sent back. */
  ignoreFields?: string[];
  /** Carrier endpoints read the raw bytes themselves (form bodies, signatures). */
  rawBody?: boolean;
  query?: z.ZodType<Q>;
  /** Maps a failing zod issue on a given field to a more specific code. */
  fieldCodes?: Record<string, Partial<Record<string, ErrorCode>>>;
  responses: Record<number, ResponseDoc>;
  errors: ErrorCode[];
  /** `*_not_found` codes this route answers with 400 for an id named in the body. */
  referenceErrors?: ErrorCode[];
  /**
   * Handlers that touch only SQLite are synchronous and run inside one transaction
   * together with the stored idempotent response; async handlers (carrier calls)
   * manage their own transactions.
   */
  async?: boolean;
  /** Store 502 answers under the Idempotency-Key too: they report an effect that was attempted. */
  storesProviderErrors?: boolean;
  handler: (ctx: HandlerContext<B, Q>) => HandlerResult | Promise<HandlerResult>;
}

/** Keeps the body and query types of a route tied to its schemas. */
export function defineRoute<B = undefined, Q = undefined>(def: RouteDef<B, Q>): RouteDef<B, Q> {
  return def;
}

export const ok = (body: unknown, headers?: Record<string, string>): HandlerResult =>
  headers ? { status: 200, body, headers } : { status: 200, body };
export const created = (body: unknown): HandlerResult => ({ status: 201, body });
