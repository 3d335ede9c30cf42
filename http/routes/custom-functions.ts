// Custom functions of a number: https tools the model may call mid-call. Create (name
// unique per number), list, delete; the URL passes the same target checks as webhooks.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { created, defineRoute, ok, type RouteDef } from '../route.ts';
import { isoTime } from '../schemas.ts';
import type { AppDeps } from '../deps.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import type { CustomFunctionRow } from '../../storage/integrations.ts';
import { assertSafeUrls, customFunctionView, targetUrl, URL_RULES } from './integration-schemas.ts';

export const FUNCTION_NAME = /^[a-z0-9_]+$/;
export const MAX_PARAMETERS_BYTES = 16_384;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The arguments' JSON Schema. Checked only as far as a mistake would break the tool:
 * the root is `type: "object"`, `properties` maps names to schema objects, and every
 * name in `required` is one of them. Other keywords pass through untouched.
 */
const parameters = z
  .looseObject({})
  .superRefine((p, ctx) => {
    const issue = (path: string[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    if (p['type'] !== 'object') return issue(['type'], 'parameters.type must be "object": parameters is a JSON Schema of the arguments object.');
    const props = p['properties'];
    if (props !== undefined) {
      if (!isPlainObject(props)) return issue(['properties'], 'parameters.properties must be an object mapping argument names to JSON Schemas.');
      for (const [name, schema] of Object.entries(props)) {
        if (!isPlainObject(schema)) return issue(['properties', name], `parameters.properties.${name} must be a JSON Schema object, e.g. {"type": "string"}.`);
      }
    }
    const required = p['required'];
    if (required !== undefined) {
      if (!Array.isArray(required) || !required.every((r) => typeof r === 'string')) return issue(['required'], 'parameters.required must be an array of argument names.');
      // Own properties only: `in` would find "toString" on every object's prototype.
      const missing = required.find((r) => !isPlainObject(props) || !Object.hasOwn(props, r));
      if (missing !== undefined) return issue(['required'], `parameters.required names "${missing}", which is not in parameters.properties.`);
    }
    if (Buffer.byteLength(JSON.stringify(p)) > MAX_PARAMETERS_BYTES) issue([], `parameters can be at most ${MAX_PARAMETERS_BYTES} bytes of JSON.`);
  })
  .meta({
    description: `JSON Schema of the arguments: an object schema (\`type: "object"\`), \`properties\` mapping names to schemas, \`required\` naming some of them; at most ${MAX_PARAMETERS_BYTES} bytes.`,
    example: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
  });

const createBody = z
  .object({
    name: z
      .string()
      .max(64)
      .regex(FUNCTION_NAME, 'use snake_case: lowercase letters, digits and underscores only')
      .meta({ description: 'snake_case (lowercase letters, digits, underscores), 1 to 64 characters, unique on the number.', example: 'lookup_order' }),
    url: targetUrl(
      'The https endpoint the service POSTs `{call_id, agent_id, name, arguments}` to when the model calls the function, signed like webhooks ' +
        '(`webhook-id`, `webhook-timestamp`, `webhook-signature` with the account secret). It has 10 s to answer; at most 32 KB of the answer is read. ' +
        'A 2xx JSON answer goes back to the model as the result; a timeout, an error status, a larger answer or a refused address is told to the model as an error.',
    ),
    description: z
      .string()
      .max(1024)
      .nullable()
      .optional()
      .meta({ description: 'What the tool does and when to use it, for the model. At most 1024 characters. Without one the model is told only the name.' }),
    parameters: parameters.nullable().optional(),
  })
  .strict();

const view = (f: CustomFunctionRow) => ({
  id: f.id,
  name: f.name,
  url: f.url,
  description: f.description,
  parameters: f.parameters,
  created_at: isoTime(f.created_at),
});

export function customFunctionRoutes({ storage, clock, config }: AppDeps): RouteDef<any, any>[] {
  const repo = storage.integrations;
  const base = '/v1/integrations/custom-functions/number/{phone_number}';
  const tag = 'Integrations';
  const assertNumber = (accountId: string, phone: string): void => {
    if (!repo.numberOwned(accountId, phone)) throw new ApiError('number_not_found');
  };

  return [
    defineRoute({
      method: 'POST',
      path: base,
      summary: 'Add a custom function to a number',
      tag,
      body: createBody,
      fieldCodes: {
        name: { too_big: 'invalid_function_name', invalid_format: 'invalid_function_name' },
        url: { too_big: 'invalid_url' },
      },
      async: true,
      responses: {
        201: {
          description: `The new function. description and parameters read back null when not given. ${URL_RULES}`,
          schema: z.object({ function: customFunctionView }),
        },
      },
      errors: ['number_not_found', 'invalid_function_name', 'invalid_url', 'function_exists', 'missing_field', 'invalid_request'],
      handler: async ({ auth, params, body }) => {
        const accountId = auth!.accountId;
        const phone = params['phone_number']!;
        assertNumber(accountId, phone);
        await assertSafeUrls([['url', body.url]], config.allowPrivateNetworkTargets);
        const row: CustomFunctionRow = {
          id: newPrefixedId('fn'),
          account_id: accountId,
          phone_number: phone,
          name: body.name,
          url: body.url,
          description: body.description ?? null,
          parameters: body.parameters ?? null,
          created_at: clock(),
        };
        storage.tx(() => {
          // The URL check awaited DNS; the number may have gone meanwhile.
          assertNumber(accountId, phone);
          if (repo.createFunction(row) === 'exists') {
            throw new ApiError('function_exists', `This number already has a custom function named ${body.name}.`, { field: 'name' });
          }
        });
        return created({ function: view(row) });
      },
    }),
    defineRoute({
      method: 'GET',
      path: base,
      summary: "List a number's custom functions",
      tag,
      responses: {
        200: {
          description: 'Every custom function of the number, oldest first (the order they are offered to the model); not paginated.',
          schema: z.object({ functions: z.array(customFunctionView), count: z.number().int() }),
        },
      },
      errors: ['number_not_found'],
      handler: ({ auth, params }) => {
        const phone = params['phone_number']!;
        assertNumber(auth!.accountId, phone);
        const functions = repo.listFunctions(auth!.accountId, phone).map(view);
        return ok({ functions, count: functions.length });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${base}/{function_id}`,
      summary: 'Delete a custom function',
      tag,
      responses: {
        200: {
          description: 'Deleted; the model no longer sees the tool on new calls. An id that is not a function of this number is 404 function_not_found.',
          schema: z.object({ function_id: z.string(), deleted: z.literal(true) }),
        },
      },
      errors: ['number_not_found', 'function_not_found'],
      handler: ({ auth, params }) => {
        const phone = params['phone_number']!;
        const id = params['function_id']!;
        assertNumber(auth!.accountId, phone);
        if (!repo.deleteFunction(auth!.accountId, phone, id)) throw new ApiError('function_not_found');
        return ok({ function_id: id, deleted: true });
      },
    }),
  ];
}
