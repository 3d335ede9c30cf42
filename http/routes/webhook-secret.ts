// The account's webhook signing secret: read it (made on first read) and rotate it.
// Stored sealed. After a rotation the old secret keeps signing for 24 hours beside the
// new one (two signatures in webhook-signature), so receivers can switch without a gap.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, ok, type RouteDef } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { webhookSecret } from './integration-schemas.ts';

/** How long a rotated-out secret keeps signing deliveries beside the new one. */
export const PREVIOUS_SECRET_KEPT_MS = 24 * 3_600_000;

export function webhookSecretRoutes({ storage, clock }: AppDeps): RouteDef<any, any>[] {
  const repo = storage.integrations;
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/webhooks/secret',
      summary: 'The webhook signing secret of the account',
      tag: 'Webhooks',
      responses: {
        200: {
          description: 'The current secret; the first read creates it, later reads return the same one until it is rotated.',
          schema: webhookSecret,
        },
      },
      errors: [],
      handler: ({ auth }) => {
        const secret = repo.webhookSecret(auth!.accountId);
        // Authentication found the account, so it exists; anything else is a server fault.
        if (secret === undefined) throw new ApiError('server_error');
        return ok({ secret });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/webhooks/secret/rotate',
      summary: 'Replace the webhook signing secret',
      tag: 'Webhooks',
      // No body needed (nor a Content-Type); an empty JSON object is accepted too.
      body: z.object({}).strict(),
      responses: {
        200: {
          description:
            'The new secret. For the next 24 hours every delivery attempt (retries of earlier events included) carries two signatures in `webhook-signature`, space-separated: `v1,<signature with the new secret> v1,<signature with the old one>`, so a receiver still verifying with the old secret keeps accepting while it switches; Standard Webhooks verifiers accept a header with several signatures. After 24 hours only the new secret signs. Rotating again within the 24 hours drops the oldest secret at once.',
          schema: webhookSecret,
        },
      },
      errors: [],
      handler: ({ auth }) => ok({ secret: repo.rotateWebhookSecret(auth!.accountId, clock(), PREVIOUS_SECRET_KEPT_MS) }),
    }),
  ];
}
