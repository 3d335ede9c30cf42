// The OpenAPI document says which operations are rate-limited and how (issue 18): every
// limited operation lists its buckets in `x-rate-limit` (who is counted, the default limit,
// the window, the variable that sets it) and has a 429 answer that says the same in words;
// an unlimited one has neither. The recording links and carrier webhooks are among the
// limited since the fix.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let paths: Record<string, Record<string, { 'x-rate-limit'?: unknown[]; responses: Record<string, { description: string; headers?: Record<string, unknown> }> }>>;
beforeAll(async () => {
  server = await startTestServer();
  paths = (await server.request('GET', '/v1/openapi.json')).body.paths;
});
afterAll(() => server?.close());

describe('rate limits in the OpenAPI document', () => {
  it('describe the recording link: per client IP, 300 a minute by default, 429 with Retry-After', () => {
    const op = paths['/recordings/{file}']!['get']!;
    expect(op['x-rate-limit']).toEqual([expect.objectContaining({ per: 'client_ip', limit: 300, window_seconds: 60, setting: 'RATE_LIMIT_RECORDINGS_PER_MIN' })]);
    expect(op.responses['429']!.description).toContain('RATE_LIMIT_RECORDINGS_PER_MIN');
    expect(op.responses['429']!.description).toContain('rate_limit_exceeded');
    expect(op.responses['429']!.headers).toHaveProperty('Retry-After');
    expect(op.responses['206']).toBeDefined();
    expect(op.responses['416']).toBeDefined();
  });

  it('describe every carrier webhook: per client IP, at RATE_LIMIT_CARRIER_PER_MIN', () => {
    const carrier = Object.entries(paths).filter(([path]) => path.startsWith('/carrier/'));
    expect(carrier.length).toBeGreaterThan(3);
    for (const [path, ops] of carrier) {
      for (const op of Object.values(ops)) {
        expect(op['x-rate-limit'], path).toEqual([expect.objectContaining({ per: 'client_ip', limit: 30_000, setting: 'RATE_LIMIT_CARRIER_PER_MIN' })]);
        expect(op.responses['429'], path).toBeDefined();
      }
    }
  });

  it('describe /v1: per key by class, and one per-IP bucket for everything without a working key', () => {
    expect(paths['/v1/agents']!['post']!['x-rate-limit']).toEqual([
      expect.objectContaining({ per: 'api_key', limit: 120, setting: 'RATE_LIMIT_WRITES_PER_MIN' }),
      expect.objectContaining({ per: 'client_ip', limit: 600, setting: 'RATE_LIMIT_READS_PER_MIN' }),
    ]);
    expect(paths['/v1/agents']!['get']!['x-rate-limit']).toEqual([
      expect.objectContaining({ per: 'api_key', limit: 600, setting: 'RATE_LIMIT_READS_PER_MIN' }),
      expect.objectContaining({ per: 'client_ip', limit: 600, setting: 'RATE_LIMIT_READS_PER_MIN' }),
    ]);
    expect(paths['/v1/keys']!['post']!['x-rate-limit']).toEqual([expect.objectContaining({ per: 'client_ip', limit: 10, window_seconds: 3600, setting: 'KEY_CREATION_PER_HOUR_PER_IP' })]);
  });

  it('mark exactly the limited operations: a 429 answer where there is x-rate-limit, neither elsewhere', () => {
    for (const [path, ops] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(op.responses['429'] !== undefined, `${method} ${path}`).toBe(op['x-rate-limit'] !== undefined);
      }
    }
    expect(paths['/healthz']!['get']!['x-rate-limit']).toBeUndefined();
    expect(paths['/metrics']!['get']!.responses['429']).toBeUndefined();
  });
});
