// API-key authentication: `Authorization: Bearer KEY_ID:KEY_SECRET`. Secrets are
// stored as SHA-256 and compared in constant time; a revoked key fails at once
// because the accounts repository drops its cached row when it revokes (and within a
// second when the operator's admin command revokes it from another process).
import { hash, timingSafeEqual } from 'node:crypto';
import type { AccountsRepo } from '../storage/accounts.ts';
import { ApiError } from './errors.ts';

export interface AuthContext {
  accountId: string;
  keyId: string;
}

export const hashSecret = (secret: string): Buffer => hash('sha256', secret, 'buffer') as unknown as Buffer;

const KEY_ID = /^key_[0-9A-Za-z]{24}$/;
const SECRET = /^sk_[0-9A-Za-z]{61}$/;
// last_used_at is written at most once a minute per key: a write per request would
// put a WAL commit on the hot read path.
const TOUCH_EVERY_MS = 60_000;

export function createAuthenticator(accounts: AccountsRepo) {
  const lastTouched = new Map<string, number>();

  return {
    /**
     * Returns the caller's account, null when no Authorization header was sent, and
     * throws `invalid_api_key` / `key_secret_required` for a header that does not work.
     */
    authenticate(header: string | undefined, now: number): AuthContext | null {
      if (header === undefined || header === '') return null;
      const m = /^Bearer\s+(.+)$/i.exec(header);
      if (!m) throw new ApiError('invalid_api_key');
      const token = m[1]!.trim();
      const colon = token.indexOf(':');
      const keyId = colon === -1 ? token : token.slice(0, colon);
      const secret = colon === -1 ? '' : token.slice(colon + 1);
      if (secret === '') {
        if (KEY_ID.test(keyId)) throw new ApiError('key_secret_required');
        throw new ApiError('invalid_api_key');
      }
      if (!KEY_ID.test(keyId) || !SECRET.test(secret)) throw new ApiError('invalid_api_key');
      const row = accounts.findKeyForAuth(keyId);
      // Hash even when the key is unknown so the timing does not tell ids apart.
      const given = hashSecret(secret);
      const stored = row?.secret_hash ?? given;
      const match = timingSafeEqual(given, stored);
      if (!row || !match || row.revoked_at !== null) throw new ApiError('invalid_api_key');
      const last = lastTouched.get(keyId) ?? 0;
      if (now - last >= TOUCH_EVERY_MS) {
        lastTouched.set(keyId, now);
        // Bookkeeping only: a database that refuses writes for a moment must not refuse the request.
        try {
          accounts.touchKey(keyId, now);
        } catch {
          lastTouched.delete(keyId);
        }
      }
      return { accountId: row.account_id, keyId };
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
