// The account's webhook signing secret: read it (made on first read) and rotate it.
// Stored sealed; deliveries are signed with whichever secret is current when sent.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, ok, type RouteDef } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { webhookSecret } from './integration-schemas.ts';

export function webhookSecretRoutes({ storage }: AppDeps): RouteDef<any, any>[] {
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
          description: 'The new secret. The old one stops at once: every delivery attempt from now on, retries of earlier events included, is signed with the new one.',
          schema: webhookSecret,
        },
      },
      errors: [],
      handler: ({ auth }) => ok({ secret: repo.rotateWebhookSecret(auth!.accountId) }),
    }),
  ];
}
