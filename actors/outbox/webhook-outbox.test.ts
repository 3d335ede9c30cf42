// The outbox worker's timer (actors/outbox/webhook-outbox.ts): a delivery that falls due while
// the worker looks at the table is still sent when due, not after the worker's longest
// sleep (MAX_SLEEP_MS, 10 s). Seen on a loaded 2-core machine as a CRM retry due 150 ms
// later that was not attempted for 8 s (test/crm-sync.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { expect, it } from 'vitest';
import { openDatabase } from '../../storage/db.ts';
import { createStorage } from '../../storage/index.ts';
import { createSecretBox } from '../../storage/secret-box.ts';
import { createWebhookOutbox } from './webhook-outbox.ts';

it('sends a delivery that falls due between two reads of the clock when it is due', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-timer-'));
  const db = openDatabase(join(dir, 'switchboard.db'));
  try {
    const storage = createStorage(db, createSecretBox(Buffer.alloc(32, 7)));
    const base = Date.now();
    const accountId = 'acct_timer';
    db.prepare('INSERT INTO accounts (id, plan, concurrency_limit, created_at) VALUES (?, ?, ?, ?)').run(accountId, 'payg', 10, base);
    // A clock that ticks 1 ms at every read, and a delivery due 2 ms after the first: it
    // falls due while the worker looks (the worker once read the clock for each lane, then
    // again for the next due time: 0, 1, 2), as it does when a timer fires a little early
    // by the wall clock or the process is preempted between the reads.
    const [id] = storage.webhookDeliveries.enqueue({
      accountId,
      callId: 'call_timer',
      event: 'recording.fetch',
      urls: ['https://127.0.0.1:9/bucket/a.mp3'],
      payload: { internal_id: 'call_timer', provider: 'telnyx', duration_seconds: 1 },
      now: base,
      dueAt: base + 2,
      kind: 'recording',
    });
    let reads = 0;
    const outbox = createWebhookOutbox({
      storage,
      clock: () => base + reads++,
      log: pino({ level: 'silent' }),
      allowPrivate: true,
      timeoutMs: 1000,
      schedule: [60_000],
      // No publicBaseUrl: this process does not fetch recordings, so the one attempt
      // fails the delivery for good at once; its status shows that it was attempted.
    });
    outbox.start();
    try {
      const t0 = performance.now();
      while (storage.webhookDeliveries.get(id!)?.status === 'pending' && performance.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 10));
      expect(storage.webhookDeliveries.get(id!)).toMatchObject({ status: 'failed', attempts: 1 });
      expect(performance.now() - t0).toBeLessThan(3000);
    } finally {
      await outbox.stop();
    }
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
