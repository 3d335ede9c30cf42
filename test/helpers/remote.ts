// A server in another process (a child the test or the bench started), driven over HTTP
// through the same shape as the in-process TestServer, so the shared fixtures work on it.
// No vitest here: the benches use it too.
import type { TestResponse, TestServer } from './server.ts';

/** Just enough of a TestServer, over HTTP, for the shared helpers to drive a child process. */
export function remote(url: string): TestServer {
  async function request(method: string, path: string, o: { key?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<TestResponse> {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key) headers['authorization'] = `Bearer ${o.key}`;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url + path, { method, headers, ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }) });
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: res.status, headers: res.headers, body, text };
  }
  return {
    url,
    request,
    async newAccount() {
      const res = await request('POST', '/v1/keys');
      if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
      return { key: `${res.body.key_id}:${res.body.key_secret}`, keyId: res.body.key_id, accountId: res.body.account_id };
    },
  } as unknown as TestServer;
}
