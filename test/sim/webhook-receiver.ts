// A customer's webhook receiver: a real HTTPS server on loopback with a certificate
// made at test time by `openssl` (a throwaway CA and a leaf for 127.0.0.1 and
// localhost). The service trusts the CA through NODE_EXTRA_CA_CERTS (a child process)
// or an https agent with `ca` (a server in the test's own process). It records every
// request and answers each path from a script:
//   {status, headers?, delayMs?, body?}  answer this (after delayMs: a slow or hanging receiver; body default 'ok');
//   'destroy'                     cut the connection without an answer.
// Unscripted requests get 200; a responder function, when set, is asked first. `down()` closes the port (connections refused) and
// `up()` listens on the same port again, for receivers that are away for a while.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { Agent } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCa {
  /** PEM of the CA: what a client must trust. */
  caPem: string;
  /** A file holding caPem, for NODE_EXTRA_CA_CERTS. */
  caFile: string;
  certPem: string;
  keyPem: string;
  dispose(): void;
}

/** A throwaway CA and a server certificate for 127.0.0.1 and localhost, valid for a day. */
export function makeTestCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-ca-'));
  const at = (f: string) => join(dir, f);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  run(['req', '-x509', ...ec, '-keyout', at('ca.key'), '-out', at('ca.pem'), '-days', '1', '-subj', '/CN=Switchboard test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  run(['req', ...ec, '-keyout', at('leaf.key'), '-out', at('leaf.csr'), '-subj', '/CN=localhost']);
  writeFileSync(at('leaf.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  run(['x509', '-req', '-in', at('leaf.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial', '-out', at('leaf.pem'), '-days', '1', '-extfile', at('leaf.ext')]);
  return {
    caPem: readFileSync(at('ca.pem'), 'utf8'),
    caFile: at('ca.pem'),
    certPem: readFileSync(at('leaf.pem'), 'utf8'),
    keyPem: readFileSync(at('leaf.key'), 'utf8'),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** An https agent that trusts the test CA (for a service running in the test's process). */
export const agentTrusting = (ca: TestCa): Agent => new Agent({ ca: ca.caPem });

export type ScriptedAnswer = { status: number; headers?: Record<string, string>; delayMs?: number; body?: string } | 'destroy';

export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** When the request's body had arrived (Date.now()). */
  at: number;
  /** What was answered: an HTTP status, or null when the connection was cut or the answer never went out. */
  answered: number | null;
}

export interface WebhookReceiver {
  port: number;
  /** `https://127.0.0.1:<port><path>`; `host` 'localhost' for a URL that must be resolved. */
  url(path: string, host?: string): string;
  requests: ReceivedWebhook[];
  /** Answers for the next requests to `path`, in order; after them, 200. */
  script(path: string, ...answers: ScriptedAnswer[]): void;
  /** Asked first for every request: an answer, or undefined for the script's (null removes it). */
  respondWith(fn: ((path: string) => ScriptedAnswer | undefined) | null): void;
  /** The requests to `path` so far. */
  to(path: string): ReceivedWebhook[];
  /** Resolves once `count` requests to `path` have arrived. */
  waitFor(path: string, count?: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(ca: TestCa, port = 0): Promise<WebhookReceiver> {
  const requests: ReceivedWebhook[] = [];
  const scripts = new Map<string, ScriptedAnswer[]>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let responder: ((path: string) => ScriptedAnswer | undefined) | null = null;
  let server: Server | null = null;
  let boundPort = port;

  const make = (): Server => {
    const s = createServer({ cert: ca.certPem, key: ca.keyPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = (req.url ?? '/').split('?')[0]!;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
        const rec: ReceivedWebhook = { path, headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), answered: null };
        requests.push(rec);
        const answer = responder?.(path) ?? scripts.get(path)?.shift() ?? { status: 200 };
        if (answer === 'destroy') {
          req.socket.destroy();
          return;
        }
        const send = () => {
          if (res.destroyed || res.writableEnded) return;
          rec.answered = answer.status;
          res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
          res.end(answer.body ?? 'ok');
        };
        if (answer.delayMs) {
          const t = setTimeout(() => {
            timers.delete(t);
            send();
          }, answer.delayMs);
          timers.add(t);
        } else send();
      });
    });
    s.on('connection', (sock: Socket) => {
      sockets.add(sock);
      sock.on('close', () => sockets.delete(sock));
    });
    return s;
  };

  async function up(): Promise<void> {
    if (server) return;
    const s = make();
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(boundPort, '127.0.0.1', () => resolve());
    });
    boundPort = (s.address() as { port: number }).port;
    server = s;
  }

  async function down(): Promise<void> {
    const s = server;
    server = null;
    if (!s) return;
    for (const t of timers) clearTimeout(t);
    timers.clear();
    for (const sock of sockets) sock.destroy();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  await up();
  const to = (path: string) => requests.filter((r) => r.path === path);
  return {
    get port() {
      return boundPort;
    },
    url: (path, host = '127.0.0.1') => `https://${host}:${boundPort}${path}`,
    requests,
    script(path, ...answers) {
      scripts.set(path, [...(scripts.get(path) ?? []), ...answers]);
    },
    respondWith(fn) {
      responder = fn;
    },
    to,
    async waitFor(path, count = 1, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (to(path).length < count) {
        if (Date.now() > until) throw new Error(`receiver: ${to(path).length} of ${count} requests to ${path} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return to(path);
    },
    down,
    up,
    close: down,
  };
}
