// API keys: create (a new account without credentials, another key with them), list,
// revoke. The secret is returned once and stored only as its SHA-256.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { created, defineRoute, ok } from '../route.ts';
import { hashSecret } from '../auth.ts';
import { isoOrNull, isoTime } from '../schemas.ts';
import { newAccountId, newKeyId, newKeySecret } from '../../storage/ids.ts';
import type { AppDeps } from '../deps.ts';
import type { KeyRow } from '../../storage/accounts.ts';

const createKeyBody = z
  .object({
    name: z.string().max(100).nullable().optional().meta({ description: 'A label, e.g. "production".' }),
    email: z.email().max(254).nullable().optional().meta({ description: 'A contact address for the key.' }),
  })
  .strict();

const keyCreated = z.object({
  message: z.string(),
  key_id: z.string().meta({ example: 'key_3x9QeYbJw1mZkR2aTt8uVn4s' }),
  key_secret: z.string().meta({ description: 'Shown once; store it now.' }),
  account_id: z.string(),
});

const keyView = z.object({
  key_id: z.string(),
  name: z.string().nullable(),
  email: z.string().nullable(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});

const view = (k: KeyRow) => ({
  key_id: k.id,
  name: k.name,
  email: k.email,
  created_at: isoTime(k.created_at),
  last_used_at: isoOrNull(k.last_used_at),
  revoked_at: isoOrNull(k.revoked_at),
});

export function keyRoutes({ storage, clock }: AppDeps) {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/keys',
      summary: 'Create an API key',
      tag: 'Keys',
      auth: 'optional',
      rateLimit: 'key_creation',
      body: createKeyBody,
      responses: {
        201: {
          description:
            'Without an Authorization header: a new account and its first key. With a valid key: another key on the same account. 10 per hour per client IP.',
          schema: keyCreated,
        },
      },
      errors: ['invalid_request', 'invalid_api_key', 'key_secret_required', 'rate_limit_exceeded'],
      handler: ({ body, auth }) => {
        const now = clock();
        const accountId = auth?.accountId ?? storage.accounts.createAccount(newAccountId(), now).id;
        const keyId = newKeyId();
        const secret = newKeySecret();
        storage.accounts.createKey({
          id: keyId,
          accountId,
          name: body.name ?? null,
          email: body.email ?? null,
          secretHash: hashSecret(secret),
          now,
        });
        return created({
          message: auth ? 'API key created. Store the secret now: it is shown only once.' : 'Account and API key created. Store the secret now: it is shown only once.',
          key_id: keyId,
          key_secret: secret,
          account_id: accountId,
        });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/keys',
      summary: "List the account's API keys (revoked ones included, secrets never)",
      tag: 'Keys',
      responses: { 200: { description: 'Every key of the account, newest first.', schema: z.object({ keys: z.array(keyView), count: z.number().int() }) } },
      errors: [],
      handler: ({ auth }) => {
        const keys = storage.accounts.listKeys(auth!.accountId).map(view);
        return ok({ keys, count: keys.length });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/keys/{key_id}',
      summary: 'Revoke an API key; it stops working at once',
      tag: 'Keys',
      responses: { 200: { description: 'The key is revoked.', schema: z.object({ key_id: z.string(), revoked: z.literal(true) }) } },
      errors: ['key_not_found', 'last_active_key'],
      handler: ({ auth, params }) => {
        const keyId = params['key_id']!;
        const result = storage.accounts.revokeKey(auth!.accountId, keyId, clock());
        if (result === 'not_found') throw new ApiError('key_not_found');
        if (result === 'last_active_key') throw new ApiError('last_active_key');
        return ok({ key_id: keyId, revoked: true });
      },
    }),
  ];
}
