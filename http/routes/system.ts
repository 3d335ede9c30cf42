// Operator and machine endpoints: the OpenAPI document, liveness, readiness, metrics.
import { z } from 'zod';
import { defineRoute, ok, type RouteDef } from '../route.ts';
import { buildOpenApi } from '../openapi.ts';
import type { AppDeps } from '../deps.ts';

const okSchema = z.object({ ok: z.boolean() });
const providerSchema = z.object({ configured: z.boolean(), model: z.string() });
const readySchema = z.object({
  ok: z.boolean(),
  providers: z
    .object({
      llm: providerSchema,
      stt: providerSchema.extend({ provider: z.enum(['deepgram']) }),
      tts: providerSchema.extend({ provider: z.enum(['openai', 'cartesia']) }),
    })
    .meta({
      description:
        'The conversation providers and whether each has credentials. Readiness does not depend on them: without them the service runs, and calls end at once with `provider_not_configured`.',
    }),
});

export function systemRoutes(deps: AppDeps, allRoutes: () => RouteDef<any, any>[]) {
  let openapi: string | null = null;
  const writable = deps.storage.db.prepare('SELECT 1 FROM pragma_user_version');
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/openapi.json',
      summary: 'This document (OpenAPI 3.1)',
      tag: 'System',
      auth: 'none',
      responses: { 200: { description: 'The machine-readable description of every endpoint.' } },
      errors: [],
      handler: () => {
        openapi ??= JSON.stringify(buildOpenApi(allRoutes(), deps.config.publicBaseUrl));
        return { status: 200, body: openapi };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/healthz',
      summary: 'Liveness: the process is up',
      tag: 'System',
      auth: 'none',
      responses: { 200: { description: 'Up.', schema: okSchema } },
      errors: [],
      handler: () => ok({ ok: true }),
    }),
    defineRoute({
      method: 'GET',
      path: '/readyz',
      summary: 'Readiness: the database answers and every unfinished actor is restored',
      tag: 'System',
      auth: 'none',
      responses: { 200: { description: 'Ready.', schema: readySchema }, 503: { description: 'Not ready yet.', schema: readySchema } },
      errors: [],
      handler: () => {
        let dbOk = true;
        try {
          writable.get();
          dbOk = deps.storage.db.open && !deps.storage.db.readonly;
        } catch {
          dbOk = false;
        }
        const ready = dbOk && deps.isReady();
        return { status: ready ? 200 : 503, body: { ok: ready, providers: deps.providers } };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/metrics',
      summary: 'Prometheus metrics',
      tag: 'System',
      auth: 'none',
      responses: { 200: { description: 'Prometheus text exposition format.' } },
      errors: [],
      handler: () => ({ status: 200, body: deps.metrics.render(), contentType: 'text/plain; version=0.0.4; charset=utf-8' }),
    }),
  ];
}
