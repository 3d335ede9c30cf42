// The per-call prompt of an outbound call (api.md: "used for this call only"), kept
// while the call is queued or live so a restart does not lose it, sealed with
// SECRETS_KEY, and deleted in the transaction that ends the call.
import type { Db } from './db.ts';
import type { SecretBox } from './secret-box.ts';

export function createCallPromptsRepo(db: Db, secrets: SecretBox) {
  const put = db.prepare('INSERT OR REPLACE INTO call_prompts (internal_id, account_id, sealed) VALUES (?, ?, ?)');
  const get = db.prepare<[string], { sealed: Buffer }>('SELECT sealed FROM call_prompts WHERE internal_id = ?');
  const remove = db.prepare('DELETE FROM call_prompts WHERE internal_id = ?');
  return {
    put(internalId: string, accountId: string, prompt: string): void {
      put.run(internalId, accountId, secrets.seal(prompt));
    },
    get(internalId: string): string | null {
      const row = get.get(internalId);
      return row ? secrets.openText(row.sealed) : null;
    },
    erase(internalId: string): void {
      remove.run(internalId);
    },
  };
}

export type CallPromptsRepo = ReturnType<typeof createCallPromptsRepo>;
