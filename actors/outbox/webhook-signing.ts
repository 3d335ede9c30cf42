// Standard Webhooks signing (https://www.standardwebhooks.com): the headers every
// delivery attempt carries. The signed content is "<webhook-id>.<webhook-timestamp>.<body>",
// the key is the base64 part of the `whsec_` secret, and each signature is
// `v1,<base64 HMAC-SHA256>`; several (after a rotation) are separated by spaces.
import { createHmac } from 'node:crypto';

const PREFIX = 'whsec_';

/** The HMAC key of a `whsec_…` secret: the bytes its base64 part encodes. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** One `v1,<base64>` signature of the message with one secret. */
export function sign(secret: string, id: string, timestampSec: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestampSec}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/**
 * The three Standard Webhooks headers. `secrets` is the current secret first, then any
 * still valid after a rotation; each signs the same content.
 */
export function signatureHeaders(secrets: readonly string[], id: string, timestampSec: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': secrets.map((s) => sign(s, id, timestampSec, body)).join(' '),
  };
}
