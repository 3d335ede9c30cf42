// Encryption at rest for carrier credentials, integration tokens and stored
// idempotent responses: AES-256-GCM, a fresh 12-byte nonce per value, stored as
// nonce | tag | ciphertext. The key comes from SECRETS_KEY or a file generated once
// into the data directory (mode 0600).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface SecretBox {
  seal(plain: string | Buffer): Buffer;
  open(sealed: Buffer): Buffer;
  openText(sealed: Buffer): string;
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('the secrets key must be 32 bytes');
  return {
    seal(plain) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([nonce, cipher.getAuthTag(), body]);
    },
    open(sealed) {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
      decipher.setAuthTag(sealed.subarray(12, 28));
      return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]);
    },
    openText(sealed) {
      return this.open(sealed).toString('utf8');
    },
  };
}

/** SECRETS_KEY when set, else the key in DATA_DIR/secrets.key, created on first start. */
export function loadSecretsKey(dataDir: string, hex: string | undefined): Buffer {
  if (hex) return Buffer.from(hex, 'hex');
  const file = join(dataDir, 'secrets.key');
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/i.test(text)) throw new Error(`${file} does not hold 64 hex characters`);
    return Buffer.from(text, 'hex');
  }
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}
