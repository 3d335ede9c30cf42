// The signing headers, checked by the standardwebhooks package (an independent
// implementation): one secret, two after a rotation, and a changed body refused.
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret } from '../../storage/integrations.ts';
import { signatureHeaders } from './webhook-signing.ts';

const verify = (secret: string, body: string, headers: Record<string, string>): boolean => {
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  }
};

describe('signatureHeaders', () => {
  const body = JSON.stringify({ event: 'webhook.test', phone_number: '+14155550100', sent_at: '2026-01-01T00:00:00.000Z' });
  const ts = Math.floor(Date.now() / 1000);

  it('signs "id.timestamp.body" with the whsec_ secret, as Standard Webhooks verifiers expect', () => {
    const secret = newWebhookSecret();
    const headers = signatureHeaders([secret], 'whd_abc', ts, body);
    expect(headers['webhook-id']).toBe('whd_abc');
    expect(headers['webhook-timestamp']).toBe(String(ts));
    expect(headers['webhook-signature']).toBe(new Webhook(secret).sign('whd_abc', new Date(ts * 1000), body));
    expect(verify(secret, body, headers)).toBe(true);
    expect(verify(secret, body + ' ', headers)).toBe(false);
    expect(verify(newWebhookSecret(), body, headers)).toBe(false);
  });

  it('with two secrets, carries two space-separated signatures, each verifying on its own', () => {
    const [fresh, old] = [newWebhookSecret(), newWebhookSecret()];
    const headers = signatureHeaders([fresh, old], 'whd_xyz', ts, body);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verify(fresh, body, headers)).toBe(true);
    expect(verify(old, body, headers)).toBe(true);
  });
});
