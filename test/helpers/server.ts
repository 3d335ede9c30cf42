// Starts the real service for a test: a real SQLite file in a fresh temp folder, a
// real uWS server on a random loopback port, real HTTP through fetch.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../config.ts';
import { startSwitchboard, type StartOptions, type Switchboard } from '../../server.ts';

export interface TestServer extends Switchboard {
  dataDir: string;
  /** Sends a request; `key` is `KEY_ID:KEY_SECRET`. */
  request(method: string, path: string, opts?: RequestOptions): Promise<TestResponse>;
  /** Creates a new account and returns its key as `KEY_ID:KEY_SECRET`. */
  newAccount(ip?: string): Promise<{ key: string; keyId: string; accountId: string }>;
  close(): Promise<void>;
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  /** Sent as-is, no JSON encoding, no content type unless given. */
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export async function startTestServer(env: Record<string, string> = {}, opts: StartOptions = {}): Promise<TestServer> {
  // Pass DATA_DIR to restart on the files of a stopped server.
  const dataDir = env['DATA_DIR'] ?? mkdtempSync(join(tmpdir(), 'switchboard-test-'));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    // Tests share one loopback IP; they opt back into the real per-IP limit where they test it.
    KEY_CREATION_PER_HOUR_PER_IP: '100000',
    TRUST_PROXY: 'true',
    SHUTDOWN_GRACE_MS: '2000',
    ...env,
  });
  const sb = await startSwitchboard(config, { log: pino({ level: 'silent' }), ...opts });
  const base = `http://127.0.0.1:${sb.port}`;

  async function request(method: string, path: string, o: RequestOptions = {}): Promise<TestResponse> {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key) headers['authorization'] = `Bearer ${o.key}`;
    let body: string | Uint8Array | undefined;
    if (o.rawBody !== undefined) body = o.rawBody;
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(base + path, { method, headers, body: body as BodyInit | undefined });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  async function newAccount(ip?: string) {
    const res = await request('POST', '/v1/keys', ip ? { headers: { 'x-forwarded-for': ip } } : {});
    if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
    return { key: `${res.body.key_id}:${res.body.key_secret}`, keyId: res.body.key_id as string, accountId: res.body.account_id as string };
  }

  return {
    ...sb,
    dataDir,
    request,
    newAccount,
    async close() {
      await sb.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Asserts the error envelope; returns the body for further checks. */
export function expectError(res: TestResponse, status: number, type: string, code: string): void {
  if (res.status !== status || res.body?.error?.type !== type || res.body?.error?.code !== code) {
    throw new Error(`expected ${status} ${type}/${code}, got ${res.status} ${res.text}`);
  }
  if (typeof res.body.error.message !== 'string' || res.body.error.message.length === 0) {
    throw new Error('error message is empty');
  }
}
