// Carrier B (Telnyx) webhook signatures, carriers.md §5 [TXN]: Ed25519 over the bytes
// `${telnyx-timestamp}|${raw body}`, base64 in `telnyx-signature-ed25519`, checked with
// the account's public key (base64 of the 32 raw bytes, as the carrier portal shows it).
// Same checks as team-telnyx/telnyx-node src/lib/webhooks.ts (commit 1432ecd5): digits-only
// timestamp at most 300 s from now either way, 64-byte signature, 32-byte key.
//
// Used by the service's `POST /carrier/telnyx/events/{token}`:
//   verifyTelnyx(<public_key of the number the event names>, rawBody, headers['telnyx-signature-ed25519'],
//                headers['telnyx-timestamp'], Math.floor(clock() / 1000))  → boolean
// and by the carrier B simulator (`signTelnyx`) and tests (`generateTelnyxKeyPair`).

import { createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

/** How far the timestamp may be from the receiver's clock, in seconds (either direction). */
export const TELNYX_SIGNATURE_TOLERANCE_SEC = 300;

// DER SubjectPublicKeyInfo header of an Ed25519 key (RFC 8410); the 32 raw bytes follow it.
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const TIMESTAMP = /^\d{1,15}$/;

// Parsed keys by their base64 form: every webhook of a number carries the same key.
const keyCache = new Map<string, KeyObject | null>();
const KEY_CACHE_MAX = 1000;

function strictBase64(value: string): Buffer | null {
  return value.length > 0 && STRICT_BASE64.test(value) ? Buffer.from(value, 'base64') : null;
}

function publicKeyFrom(base64: string): KeyObject | null {
  const cached = keyCache.get(base64);
  if (cached !== undefined) return cached;
  const raw = strictBase64(base64.trim());
  let key: KeyObject | null = null;
  if (raw !== null && raw.length === 32) {
    try {
      key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
    } catch {
      key = null;
    }
  }
  if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
  keyCache.set(base64, key);
  return key;
}

function signedBytes(rawBody: string | Uint8Array, timestamp: string): Buffer {
  // The raw bytes as received: re-encoding a decoded string could change them.
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  return Buffer.concat([Buffer.from(`${timestamp}|`, 'utf8'), body]);
}

/**
 * True when `signatureB64` is the carrier's Ed25519 signature of `${timestamp}|${rawBody}`
 * under `publicKeyBase64` and `timestamp` (Unix seconds) is within 300 s of `nowSec`.
 * Never throws: a missing header, a malformed key or signature is simply false.
 */
export function verifyTelnyx(
  publicKeyBase64: string,
  rawBody: string | Uint8Array,
  signatureB64: string | null | undefined,
  timestamp: string | null | undefined,
  nowSec: number,
): boolean {
  if (typeof signatureB64 !== 'string' || typeof timestamp !== 'string') return false;
  if (!TIMESTAMP.test(timestamp)) return false;
  if (Math.abs(nowSec - Number(timestamp)) > TELNYX_SIGNATURE_TOLERANCE_SEC) return false;
  const signature = strictBase64(signatureB64.trim());
  if (signature === null || signature.length !== 64) return false;
  const key = publicKeyFrom(publicKeyBase64);
  if (key === null) return false;
  try {
    return verify(null, signedBytes(rawBody, timestamp), key, signature);
  } catch {
    return false;
  }
}

/** The `telnyx-signature-ed25519` header value the carrier would send (simulator side). */
export function signTelnyx(privateKey: KeyObject, rawBody: string | Uint8Array, timestamp: string | number): string {
  return sign(null, signedBytes(rawBody, String(timestamp)), privateKey).toString('base64');
}

export interface TelnyxKeyPair {
  /** Base64 of the 32 raw bytes: what a customer pastes as `telnyx_public_key`. */
  publicKey: string;
  privateKey: KeyObject;
}

export function generateTelnyxKeyPair(): TelnyxKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return { publicKey: der.subarray(ED25519_SPKI_PREFIX.length).toString('base64'), privateKey };
}
