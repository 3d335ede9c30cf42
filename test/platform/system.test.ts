// Liveness, readiness and Prometheus metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('health', () => {
  it('answers /healthz and /readyz without a key', async () => {
    expect((await server.request('GET', '/healthz')).body).toEqual({ ok: true });
    const ready = await server.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    // No provider credentials in this test: the service is ready all the same and says which are missing.
    expect(ready.body).toEqual({ ok: true, providers: { llm: { configured: false, model: 'gpt-4o-mini' }, stt: { configured: false, provider: 'deepgram', model: 'nova-3' }, tts: { configured: false, provider: 'openai', model: 'gpt-4o-mini-tts' } } });
  });

  it('is not ready once the database is closed', async () => {
    const other = await startTestServer();
    try {
      other.storage.db.close();
      const res = await other.request('GET', '/readyz');
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ ok: false });
    } finally {
      await other.http.close(0);
    }
  });
});

describe('metrics', () => {
  it('counts requests by method, route pattern and status, with a latency histogram', async () => {
    const a = await server.newAccount();
    await server.request('GET', '/v1/account', { key: a.key });
    await server.request('DELETE', '/v1/keys/key_AAAAAAAAAAAAAAAAAAAAAAAA', { key: a.key });
    const res = await server.request('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(res.text).toContain('# TYPE switchboard_http_requests_total counter');
    expect(res.text).toMatch(/switchboard_http_requests_total\{method="GET",route="\/v1\/account",status="200"\} 1\n/);
    expect(res.text).toMatch(/switchboard_http_requests_total\{method="DELETE",route="\/v1\/keys\/\{key_id\}",status="404"\} 1\n/);
    expect(res.text).toMatch(/switchboard_http_request_duration_seconds_bucket\{method="GET",route="\/v1\/account",le="\+Inf"\} 1\n/);
    expect(res.text).toMatch(/switchboard_http_request_duration_seconds_count\{method="GET",route="\/v1\/account"\} 1\n/);
    // Raw paths never become labels: ids would explode the series count.
    expect(res.text).not.toContain('key_AAAAAAAAAAAAAAAAAAAAAAAA');
  });
});
