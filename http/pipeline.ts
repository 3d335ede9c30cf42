// The request pipeline, free of uWS, in two steps. `begin` runs on the request line and
// headers alone: canonical path → route → authenticate → rate limit → declared body
// size. Only a request it admits has its body read; `complete` then runs idempotency →
// content type and JSON → validation → handler → envelope. Every response of a
// rate-limited route carries X-RateLimit-* headers; every response carries X-Request-Id
// and X-Content-Type-Options: nosniff.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Storage } from '../storage/index.ts';
import { ApiError } from './errors.ts';
import { rateLimitExceeded, rateLimitHeaders, type RateDecision, type RateLimits } from './rate-limit.ts';
import { Router } from './router.ts';
import type { FileRegion, HandlerContext, HandlerResult, RouteDef } from './route.ts';
import type { Authenticator, AuthContext } from './auth.ts';
import { parseWith } from './validation.ts';
import { canonicalPath } from './canonical-path.ts';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from './json-depth.ts';
import type { Metrics } from '../metrics.ts';
import { createRequestLog } from './request-log.ts';

export interface RawRequest {
  method: string;
  /** As received; `begin` replaces it with its canonical form. */
  path: string;
  query: string;
  /** Lower-cased names. */
  headers: Record<string, string>;
  ip: string;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  /** JSON or other text; empty when `file` is the body. */
  body: string;
  /** A file region the adapter streams as the body (a recording). */
  file?: FileRegion;
}

export interface PipelineDeps {
  storage: Storage;
  auth: Authenticator;
  metrics: Metrics;
  log: Logger;
  routes: RouteDef<any, any>[];
  /** The service's one set of buckets, shared with the websocket upgrades (debug-ws.ts). */
  limits: RateLimits;
  clock: () => number;
  /** The largest body any route accepts (413 above it). */
  maxBodyBytes: number;
}

const MUTATIONS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

interface StoredResponse {
  b: string;
  h?: Record<string, string>;
}

export function createPipeline(deps: PipelineDeps) {
  const { storage, metrics, log, clock } = deps;
  const router = new Router<RouteDef<any, any>>();
  for (const r of deps.routes) router.add(r.method, r.path, r);
  const { limits } = deps;
  const inFlight = new Set<string>();
  const requestLog = createRequestLog(log);
  const idPrefix = Math.random().toString(36).slice(2, 8);
  let idCounter = 0;

  function rateLimit(d: RateDecision, headers: Record<string, string>): void {
    Object.assign(headers, rateLimitHeaders(d));
    if (!d.allowed) throw rateLimitExceeded(d);
  }

  /** Authenticates and applies the bucket of the request's class; throws 401/429. */
  function gate(route: RouteDef | null, req: RawRequest, now: number, headers: Record<string, string>): AuthContext | null {
    const header = req.headers['authorization'];
    if (route?.rateLimit === 'key_creation') {
      rateLimit(limits.keyCreation(req.ip, now), headers);
      return deps.auth.authenticate(header, now);
    }
    let auth: AuthContext | null = null;
    let failure: unknown = null;
    if (route?.auth !== 'none') {
      try {
        auth = deps.auth.authenticate(header, now);
      } catch (e) {
        failure = e;
      }
    }
    // Requests without a working key count against their IP, so guessing keys is throttled
    // too: in one bucket with the websocket upgrades' attempts (rate-limit.ts).
    rateLimit(auth ? limits.keyed(auth.keyId, MUTATIONS.has(req.method), now) : limits.anonymous(req.ip, now), headers);
    if (failure) throw failure;
    if (!auth && route?.auth !== 'none') throw new ApiError('invalid_api_key');
    return auth;
  }

  function parseJsonBody(route: RouteDef, req: RawRequest, raw: Buffer | null): unknown {
    let body: unknown;
    if (raw && raw.length > 0) {
      if (!JSON_TYPE.test(req.headers['content-type'] ?? '')) throw new ApiError('invalid_content_type');
      if (jsonNestsDeeperThan(raw, MAX_JSON_DEPTH)) {
        throw new ApiError('invalid_request', `The JSON body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep.`);
      }
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new ApiError('invalid_json', 'The request body is not valid JSON. Check for trailing commas and unquoted keys.');
      }
    }
    if (!route.body) return undefined;
    if (body === undefined) body = {};
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new ApiError('invalid_request', 'The request body must be a JSON object.');
    }
    if (route.ignoreFields) {
      body = { ...(body as Record<string, unknown>) };
      for (const f of route.ignoreFields) delete (body as Record<string, unknown>)[f];
    }
    return parseWith(route.body, body, route.fieldCodes);
  }

  function parseQuery(route: RouteDef, params: URLSearchParams): unknown {
    if (!route.query) return undefined;
    const obj: Record<string, string> = {};
    for (const [k, v] of params) if (!Object.hasOwn(obj, k)) obj[k] = v;
    return parseWith(route.query, obj, route.fieldCodes);
  }

  function serialize(result: HandlerResult): string {
    return typeof result.body === 'string' ? result.body : JSON.stringify(result.body);
  }

  /**
   * One request's bookkeeping. A class, not closures made per request: the request path
   * is hot, and its methods live once on the prototype. `begin` makes it; when it was
   * answered from the headers alone, `response` holds the answer and the body is never
   * read; otherwise the adapter reads the body and calls `complete`.
   */
  class Exchange {
    readonly started = performance.now();
    readonly now = clock();
    readonly requestId = `req_${idPrefix}${(idCounter++).toString(36)}`;
    // nosniff: a browser never reads a recording or an error as anything but its declared type.
    readonly headers: Record<string, string> = { 'X-Request-Id': this.requestId, 'X-Content-Type-Options': 'nosniff' };
    auth: AuthContext | null = null;
    flightKey: string | null = null;
    idem: { scope: string; key: string; hash: Buffer } | null = null;
    route: RouteDef | null = null;
    params: Record<string, string> = {};
    isV1 = false;
    /** Set when the request was answered before its body. */
    response: RawResponse | null = null;

    constructor(
      readonly req: RawRequest,
      public pattern: string,
    ) {}

    finish(status: number, body: string, file?: FileRegion): RawResponse {
      if (this.flightKey) inFlight.delete(this.flightKey);
      const seconds = (performance.now() - this.started) / 1000;
      metrics.observeRequest(this.req.method, this.pattern, status, seconds);
      requestLog({
        method: this.req.method,
        route: this.pattern,
        status,
        durationMs: Math.round(seconds * 1e5) / 100,
        accountId: this.auth?.accountId,
        requestId: this.requestId,
      });
      return file ? { status, headers: this.headers, body, file } : { status, headers: this.headers, body };
    }

    save(st: number, b: string, h?: Record<string, string>): void {
      const idem = this.idem;
      // 5xx answers are not stored (a retry may succeed), except a route's provider errors
      // that record an effect already attempted (an outbound dial's 502): replaying those
      // is what keeps a retry from acting twice.
      if (!idem || (st >= 500 && !(st === 502 && this.route?.storesProviderErrors))) return;
      const sealed = storage.secrets.seal(JSON.stringify(h ? { b, h } : { b }));
      storage.idempotency.save(idem.scope, this.req.method, this.req.path, idem.key, idem.hash, st, sealed, this.now);
    }

    fail(e: unknown): RawResponse {
      this.headers['Content-Type'] = 'application/json';
      if (e instanceof ApiError) {
        const body = JSON.stringify(e.toBody());
        if (e.headers) Object.assign(this.headers, e.headers);
        this.save(e.status, body, e.headers);
        return this.finish(e.status, body);
      }
      log.error({ err: e, request_id: this.requestId, route: this.pattern }, 'unhandled error in request');
      return this.finish(500, JSON.stringify(new ApiError('server_error', undefined, { request_id: this.requestId }).toBody()));
    }

    succeed(result: HandlerResult, body: string): RawResponse {
      if (result.headers) Object.assign(this.headers, result.headers);
      this.headers['Content-Type'] = result.contentType ?? 'application/json';
      return this.finish(result.status, result.file ? '' : body, result.file);
    }

    /** Answers before the body is read; the adapter discards whatever body follows. */
    reject(e: unknown): this {
      this.response = this.fail(e);
      return this;
    }

    /**
     * Runs the rest of the pipeline on the body. Answers synchronously when the route's
     * handler is synchronous (the adapter then writes inside the uWS callback, corked with
     * the read); returns a promise only for async routes.
     */
    complete(raw: Buffer | null): RawResponse | Promise<RawResponse> {
      const { req, headers, now } = this;
      const r = this.route!;
      try {
        const idemKey = req.headers['idempotency-key'];
        if (idemKey !== undefined && MUTATIONS.has(req.method) && this.isV1) {
          const scope = this.auth ? this.auth.accountId : `ip:${req.ip}`;
          const hash = createHash('sha256').update(raw ?? Buffer.alloc(0)).digest();
          const stored = storage.idempotency.find(scope, req.method, req.path, idemKey, now);
          if (stored) {
            if (!stored.body_hash.equals(hash)) throw new ApiError('idempotency_key_reused');
            const saved = JSON.parse(storage.secrets.openText(stored.response)) as StoredResponse;
            Object.assign(headers, saved.h, { 'Idempotent-Replayed': 'true' });
            headers['Content-Type'] ??= 'application/json';
            return this.finish(stored.status, saved.b);
          }
          const fk = `${scope}\n${req.method}\n${req.path}\n${idemKey}`;
          if (inFlight.has(fk)) throw new ApiError('idempotency_key_in_use');
          inFlight.add(fk);
          this.flightKey = fk;
          this.idem = { scope, key: idemKey, hash };
        }

        const searchParams = new URLSearchParams(req.query);
        const ctx: HandlerContext<unknown, unknown> = {
          method: req.method,
          path: req.path,
          searchParams,
          headers: req.headers,
          ip: req.ip,
          requestId: this.requestId,
          log,
          params: this.params,
          body: r.rawBody ? raw : parseJsonBody(r, req, raw),
          query: parseQuery(r, searchParams),
          auth: this.auth,
          idempotency: this.idem ? { store: (status: number, body: unknown) => this.save(status, JSON.stringify(body)) } : null,
        };

        if (r.async) {
          return Promise.resolve()
            .then(() => r.handler(ctx))
            .then((result) => {
              const body = result.file ? '' : serialize(result);
              this.save(result.status, body, result.headers);
              return this.succeed(result, body);
            })
            .catch((e: unknown) => this.fail(e));
        }
        if (!MUTATIONS.has(req.method)) {
          const result = r.handler(ctx) as HandlerResult;
          return this.succeed(result, result.file ? '' : serialize(result));
        }
        // One transaction holds the handler's writes and the stored idempotent reply.
        let body = '';
        const result = storage.tx(() => {
          const out = r.handler(ctx) as HandlerResult;
          if (out instanceof Promise) throw new Error(`route ${r.method} ${r.path} is async but not marked async`);
          body = serialize(out);
          this.save(out.status, body, out.headers);
          return out;
        });
        return this.succeed(result, body);
      } catch (e) {
        return this.fail(e);
      }
    }
  }

  /**
   * Everything that can be decided from the request line and headers, before a byte of
   * the body is read: a request without a working key, over its rate limit, to no route
   * or declaring too large a body is answered here, so its body is never buffered.
   * `declaredLength` is the Content-Length, or null when the body is chunked or absent.
   */
  function begin(req: RawRequest, declaredLength: number | null): Exchange {
    const canon = canonicalPath(req.path);
    if (!canon.ok) {
      return new Exchange(req, 'unmatched').reject(new ApiError('invalid_path', `The path is not in canonical form: ${canon.reason}. Use single slashes, no "." or ".." segments and no encoded slashes.`));
    }
    req.path = canon.path;
    const m = router.match(req.method, req.path);
    const x = new Exchange(req, m.kind === 'not_found' ? 'unmatched' : m.pattern);
    // The same canonical path decides both this and the route, so no spelling of a /v1
    // path can reach a /v1 handler without the gate.
    x.isV1 = req.path === '/v1' || req.path.startsWith('/v1/');
    try {
      if (x.isV1) x.auth = gate(m.kind === 'found' ? m.value : null, req, x.now, x.headers);
      if (m.kind === 'not_found') throw new ApiError('route_not_found', `No route ${req.method} ${req.path}.`);
      if (m.kind === 'method_not_allowed') {
        throw new ApiError('method_not_allowed', `${req.method} is not supported on ${m.pattern}; use ${m.allowed.join(', ')}.`, undefined, { Allow: m.allowed.join(', ') });
      }
      // Public routes outside /v1 (recording links, carrier webhooks) are limited per client IP.
      const cls = m.value.rateLimit;
      if (cls === 'recordings' || cls === 'carrier') rateLimit(limits.perIp(cls, req.ip, x.now), x.headers);
      if (declaredLength !== null && declaredLength > deps.maxBodyBytes) throw new ApiError('payload_too_large');
      const idemKey = req.headers['idempotency-key'];
      if (idemKey !== undefined && MUTATIONS.has(req.method) && x.isV1 && (idemKey.length < 1 || idemKey.length > 255)) {
        throw new ApiError('invalid_idempotency_key');
      }
      x.route = m.value;
      x.params = m.params;
      return x;
    } catch (e) {
      return x.reject(e);
    }
  }

  /** Answers a request the adapter refused from its framing alone (nothing routed). */
  function refuse(req: RawRequest, e: ApiError): RawResponse {
    return new Exchange(req, 'unmatched').fail(e);
  }

  return { begin, refuse };
}

export type Pipeline = ReturnType<typeof createPipeline>;
export type Exchange = ReturnType<Pipeline['begin']>;
