// Carrier B webhook signatures: what verifyTelnyx accepts and refuses. The scheme
// (Ed25519 over `${timestamp}|${body}`, 300 s tolerance both ways, 64-byte signature,
// 32-byte base64 key) follows team-telnyx/telnyx-node src/lib/webhooks.ts.

import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateTelnyxKeyPair, signTelnyx, verifyTelnyx } from './telnyx-signature.ts';

const BODY = '{"data":{"record_type":"event","event_type":"call.answered","payload":{"call_control_id":"v3:abc"}}}';
const NOW = 1_760_000_000;
const keys = generateTelnyxKeyPair();
const signed = (body: string | Uint8Array = BODY, ts: string | number = NOW) => signTelnyx(keys.privateKey, body, ts);

describe('verifyTelnyx', () => {
  it('accepts the carrier signature of the exact body', () => {
    expect(verifyTelnyx(keys.publicKey, BODY, signed(), String(NOW), NOW)).toBe(true);
  });

  it('takes the body as bytes as well as text', () => {
    const bytes = Buffer.from(BODY, 'utf8');
    expect(verifyTelnyx(keys.publicKey, bytes, signed(), String(NOW), NOW)).toBe(true);
    const nonAscii = '{"text":"café ☎"}';
    expect(verifyTelnyx(keys.publicKey, Buffer.from(nonAscii), signed(nonAscii), String(NOW), NOW)).toBe(true);
  });

  it('is independent of how the key pair was made: a plain node Ed25519 key works', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'jwk' }).x!;
    const b64 = Buffer.from(raw, 'base64url').toString('base64');
    const sig = sign(null, Buffer.from(`${NOW}|${BODY}`), privateKey).toString('base64');
    expect(verifyTelnyx(b64, BODY, sig, String(NOW), NOW)).toBe(true);
  });

  it('publishes the 32 raw key bytes in base64 (44 characters), matching the private key', () => {
    expect(keys.publicKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const fromPrivate = createPublicKey(keys.privateKey).export({ format: 'jwk' }).x!;
    expect(Buffer.from(keys.publicKey, 'base64').equals(Buffer.from(fromPrivate, 'base64url'))).toBe(true);
  });

  it('refuses a tampered body', () => {
    const tampered = BODY.replace('call.answered', 'call.hangup');
    expect(verifyTelnyx(keys.publicKey, tampered, signed(), String(NOW), NOW)).toBe(false);
    expect(verifyTelnyx(keys.publicKey, `${BODY} `, signed(), String(NOW), NOW)).toBe(false);
  });

  it('refuses a signature made with another key', () => {
    const other = generateTelnyxKeyPair();
    expect(verifyTelnyx(other.publicKey, BODY, signed(), String(NOW), NOW)).toBe(false);
  });

  it('refuses a timestamp header that differs from the signed one', () => {
    expect(verifyTelnyx(keys.publicKey, BODY, signed(BODY, NOW), String(NOW + 1), NOW)).toBe(false);
  });

  it('accepts timestamps up to 300 s off either way and refuses beyond', () => {
    for (const skew of [-300, -1, 0, 1, 300]) {
      const ts = NOW + skew;
      expect(verifyTelnyx(keys.publicKey, BODY, signed(BODY, ts), String(ts), NOW)).toBe(true);
    }
    for (const skew of [-301, 301, -86_400]) {
      const ts = NOW + skew;
      expect(verifyTelnyx(keys.publicKey, BODY, signed(BODY, ts), String(ts), NOW)).toBe(false);
    }
  });

  it('refuses missing or malformed headers without throwing', () => {
    const sig = signed();
    expect(verifyTelnyx(keys.publicKey, BODY, undefined, String(NOW), NOW)).toBe(false);
    expect(verifyTelnyx(keys.publicKey, BODY, sig, undefined, NOW)).toBe(false);
    expect(verifyTelnyx(keys.publicKey, BODY, null, null, NOW)).toBe(false);
    expect(verifyTelnyx(keys.publicKey, BODY, sig, `${NOW}.5`, NOW)).toBe(false);
    expect(verifyTelnyx(keys.publicKey, BODY, sig, `-${NOW}`, NOW)).toBe(false);
    expect(verifyTelnyx(keys.publicKey, BODY, sig, ` ${NOW}`, NOW)).toBe(false);
    expect(verifyTelnyx(keys.publicKey, BODY, 'not base64!', String(NOW), NOW)).toBe(false);
    expect(verifyTelnyx(keys.publicKey, BODY, sig.slice(0, 40), String(NOW), NOW)).toBe(false);
    expect(verifyTelnyx(keys.publicKey, BODY, '', String(NOW), NOW)).toBe(false);
  });

  it('refuses a key that is not 32 base64 bytes', () => {
    const sig = signed();
    expect(verifyTelnyx('', BODY, sig, String(NOW), NOW)).toBe(false);
    expect(verifyTelnyx('short', BODY, sig, String(NOW), NOW)).toBe(false);
    expect(verifyTelnyx(Buffer.alloc(33, 1).toString('base64'), BODY, sig, String(NOW), NOW)).toBe(false);
    expect(verifyTelnyx('!'.repeat(44), BODY, sig, String(NOW), NOW)).toBe(false);
  });
});
