// Prefixed random identifiers and secrets (contract.md section 2): URL-safe base62,
// drawn with rejection sampling so every character is equally likely.
import { createHash, randomBytes, randomUUID } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = randomBytes(length * 2);
    for (const b of bytes) {
      // 248 = 62 * 4: bytes at or above it would bias the first characters.
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const newKeyId = (): string => `key_${randomBase62(24)}`;
/** `sk_` + 61 base62 characters: 64 in all, about 363 bits of entropy. */
export const newKeySecret = (): string => `sk_${randomBase62(61)}`;
export const newAccountId = (): string => `acct_${randomBase62(24)}`;
export const newPrefixedId = (prefix: string, length = 24): string => `${prefix}_${randomBase62(length)}`;
export const newUuid = (): string => randomUUID();

/**
 * A prefixed id derived from `seed` (SHA-256, 24 base62 characters): the same seed gives
 * the same id, so an effect run again after a crash finds what it made. As unguessable as
 * the seed's own random part.
 */
export function derivedPrefixedId(prefix: string, seed: string): string {
  const digest = createHash('sha256').update(seed).digest();
  let out = '';
  for (let i = 0; out.length < 24; i++) out += ALPHABET[digest[i]! % 62];
  return `${prefix}_${out}`;
}
