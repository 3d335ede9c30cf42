// Outbox benchmark (issue 10, acceptance 6): how many signed deliveries per second the
// webhook outbox's worker sends to a local HTTPS receiver. Everything is real: a SQLite
// file in a temp folder, the outbox rows committed first, the worker (signing with the
// account's `whsec_` secret, committing each attempt before it leaves and its outcome
// after), TLS to a receiver on loopback with a throwaway CA (test/sim/webhook-receiver.ts),
// and the receiver checking every signature with the `standardwebhooks` package.
//
// Each round enqueues `deliveries` call.completed-sized payloads in one transaction and
// times until the last is recorded delivered. It runs the worker two ways, alternating,
// so their ratio comes from one run: with a keep-alive https agent (the service's way:
// one TLS handshake per receiver, reused) and with a fresh connection per attempt. The
// receiver shares this process (and its core): the figures are a floor.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { createWebhookOutbox } from '../actors/outbox/webhook-outbox.ts';
import { openDatabase } from '../storage/db.ts';
import { createStorage } from '../storage/index.ts';
import { createSecretBox } from '../storage/secret-box.ts';
import { makeTestCa, startWebhookReceiver } from '../test/sim/webhook-receiver.ts';

export interface OutboxBenchOptions {
  deliveries: number;
  rounds: number;
}

interface RoundResult {
  mode: 'keep-alive' | 'new connection';
  perSecond: number;
  signaturesChecked: number;
}

/** A payload the size of a call.completed with a few minutes of transcript (~3 KB). */
function payload(i: number): Record<string, unknown> {
  const transcript = Array.from({ length: 30 }, (_, k) => (k % 2 ? `Caller: line ${k} of call ${i}, asking about an appointment.` : `Agent: line ${k}, happy to help with that.`)).join('\n');
  return { event: 'call.completed', call_id: `CAbench${i}`, agent_id: 'agent_bench', direction: 'inbound', from: '+14155550100', to: '+14155550199', status: 'completed', transcript, summary: 'A caller asked about an appointment.', bookings: [] };
}

export async function runOutboxBench(o: OutboxBenchOptions): Promise<RoundResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-outbox-bench-'));
  const ca = makeTestCa();
  const receiver = await startWebhookReceiver(ca);
  const db = openDatabase(join(dir, 'switchboard.db'));
  const storage = createStorage(db, createSecretBox(Buffer.alloc(32, 7)));
  const clock = () => Date.now();
  const accountId = 'acct_bench';
  storage.accounts.createAccount(accountId, clock());
  const secret = storage.integrations.webhookSecret(accountId)!;
  const verifier = new Webhook(secret);
  let checked = 0;
  let bad = 0;
  const log = pino({ level: 'silent' });
  const results: RoundResult[] = [];

  console.log(`\nOutbox: ${o.deliveries} signed deliveries per round to a local HTTPS receiver (same process), every signature verified with standardwebhooks; rounds alternate keep-alive / new connection`);
  console.log('mode              deliveries/s');
  try {
    for (let round = 0; round < o.rounds * 2; round++) {
      const keepAlive = round % 2 === 0;
      const agent = new Agent({ ca: ca.caPem, keepAlive, maxSockets: keepAlive ? 8 : Infinity });
      const outbox = createWebhookOutbox({ storage, clock, log, allowPrivate: true, timeoutMs: 15_000, schedule: [5_000], agent });
      const path = `/bench/${round}`;
      const url = receiver.url(path);
      const before = receiver.requests.length;
      storage.tx(() => {
        for (let i = 0; i < o.deliveries; i++) {
          storage.webhookDeliveries.enqueue({ accountId, callId: `CAbench${round}_${i}`, event: 'call.completed', urls: [url], payload: payload(i), now: clock() });
        }
      });
      const t0 = performance.now();
      outbox.start();
      while (outbox.backlog() > 0) await new Promise((r) => setTimeout(r, 5));
      const seconds = (performance.now() - t0) / 1000;
      await outbox.stop();
      agent.destroy();
      for (const q of receiver.requests.slice(before)) {
        try {
          verifier.verify(q.body, q.headers);
          checked++;
        } catch {
          bad++;
        }
      }
      const r: RoundResult = { mode: keepAlive ? 'keep-alive' : 'new connection', perSecond: o.deliveries / seconds, signaturesChecked: checked };
      results.push(r);
      console.log(`${r.mode.padEnd(16)}  ${r.perSecond.toFixed(0).padStart(12)}`);
    }
    if (bad > 0) throw new Error(`${bad} deliveries failed signature verification`);
    const median = (mode: RoundResult['mode']) => {
      const xs = results.filter((r) => r.mode === mode).map((r) => r.perSecond).sort((a, b) => a - b);
      return xs[Math.floor(xs.length / 2)]!;
    };
    console.log(`medians: keep-alive ${median('keep-alive').toFixed(0)}/s, new connection ${median('new connection').toFixed(0)}/s, ratio ${(median('keep-alive') / median('new connection')).toFixed(2)}; ${checked} signatures verified, none bad`);
  } finally {
    db.close();
    await receiver.close();
    ca.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
  return results;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await runOutboxBench({ deliveries: Number(process.env['BENCH_OUTBOX_DELIVERIES'] ?? 2000), rounds: Number(process.env['BENCH_ROUNDS'] ?? 3) });
}
