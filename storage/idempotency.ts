// Stored responses of requests sent with an Idempotency-Key, kept 24 hours. The
// response is encrypted at rest: it can hold a freshly created key secret.
import type { Db } from './db.ts';

export interface IdempotencyRow {
  body_hash: Buffer;
  status: number;
  response: Buffer;
  created_at: number;
}

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export function createIdempotencyRepo(db: Db) {
  const select = db.prepare<[string, string, string, string, number], IdempotencyRow>(
    `SELECT body_hash, status, response, created_at FROM idempotency_keys
     WHERE scope = ? AND method = ? AND path = ? AND key = ? AND created_at > ?`,
  );
  const upsert = db.prepare(
    `INSERT OR REPLACE INTO idempotency_keys (scope, method, path, key, body_hash, status, response, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const sweep = db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?');

  return {
    find(scope: string, method: string, path: string, key: string, now: number): IdempotencyRow | undefined {
      return select.get(scope, method, path, key, now - IDEMPOTENCY_TTL_MS);
    },
    save(scope: string, method: string, path: string, key: string, bodyHash: Buffer, status: number, response: Buffer, now: number): void {
      upsert.run(scope, method, path, key, bodyHash, status, response, now);
    },
    /** Drops expired entries; returns how many went. */
    sweep(now: number): number {
      return sweep.run(now - IDEMPOTENCY_TTL_MS).changes;
    },
  };
}

export type IdempotencyRepo = ReturnType<typeof createIdempotencyRepo>;
