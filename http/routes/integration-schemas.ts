// Request and response schemas the integration, custom-function and webhook-secret
// routes share, and the one place target URLs are checked before anything is stored.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import type { FieldCodes } from '../validation.ts';
import { checkTargetUrl } from '../../voice/url-safety.ts';

export const MAX_URL_LENGTH = 2048;

/** A target URL as the body carries it; `assertSafeUrls` does the real checks (they need DNS). */
export const targetUrl = (description: string) =>
  z.string().max(MAX_URL_LENGTH).meta({ description, format: 'uri', example: 'https://hooks.example.com/switchboard' });

/** Over-long URLs are `invalid_url` like every other bad URL; a missing one stays `missing_field`. */
export const urlFieldCodes = (...fields: string[]): FieldCodes =>
  Object.fromEntries(fields.map((f) => [f, { too_big: 'invalid_url' as const }]));

/**
 * Throws 400 `invalid_url` naming the first field whose URL is not https, not a URL,
 * carries credentials or points at a non-public address (unless `allowPrivate`).
 */
export async function assertSafeUrls(urls: Array<[field: string, url: string]>, allowPrivate: boolean): Promise<void> {
  const results = await Promise.all(urls.map(([, url]) => checkTargetUrl(url, { allowPrivate })));
  results.forEach((r, i) => {
    if (r.ok) return;
    const field = urls[i]![0];
    throw new ApiError('invalid_url', `${field} ${r.reason}.`, { field });
  });
}

/** A required text field that must not be blank; a blank one counts as missing. */
export const requiredText = (max: number, description: string) =>
  z
    .string()
    .max(max)
    .refine((s) => s.trim().length > 0, 'must not be empty')
    .meta({ description });

export const URL_RULES =
  'URLs must be https, without a user name or password, on a public host: the host is resolved when the setting is saved, and loopback, private, link-local, carrier-grade NAT and multicast addresses are refused with `invalid_url` unless the server runs with ALLOW_PRIVATE_NETWORK_TARGETS=true.';

// Responses.

export const deletedNumber = z.object({ phone_number: z.string(), deleted: z.literal(true) });
export const deletedAgent = z.object({ agent_id: z.string(), deleted: z.literal(true) });
export const isSet = z.boolean().meta({ description: 'False when nothing is configured; the setting fields are then null.' });

export const customFunctionView = z.object({
  id: z.string().meta({ example: 'fn_3x9QeYbJw1mZkR2aTt8uVn4s' }),
  name: z.string().meta({ description: 'snake_case, unique on the number; the name the model calls the tool by.' }),
  url: z.string().meta({ description: 'https endpoint the service POSTs `{call_id, agent_id, name, arguments}` to mid-call.' }),
  description: z.string().nullable().meta({ description: 'What the tool does, for the model; null when not given.' }),
  parameters: z.record(z.string(), z.unknown()).nullable().meta({ description: 'JSON Schema of the arguments (`type: "object"`); null when the tool takes none.' }),
  created_at: z.string(),
});

export const webhookSecret = z.object({
  secret: z.string().meta({
    description: 'The Standard Webhooks signing secret: `whsec_` + base64 of 32 random bytes.',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw0e8/x2Xb3Zc=',
  }),
});
