// Caller context records under one of the account's numbers: merge (PUT), read, list,
// erase, and bulk import. An unknown or foreign number is 404 phone_number_not_found.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, ok } from '../route.ts';
import { E164, isoTime, page, paginationQuery } from '../schemas.ts';
import { importCallersBody, putCallerBody } from './caller-input.ts';
import type { CallerRow, ContextPatch } from '../../storage/callers.ts';
import type { AppDeps } from '../deps.ts';
import { callerContext } from '../../actors/calls/caller-context.ts';

const contextSchema = z
  .object({
    name: z.string().optional(),
    email: z.string().optional(),
    phone: z.string().optional(),
    location: z.string().optional(),
    reference_id: z.string().optional(),
    preference: z.string().optional(),
    last_call: z
      .object({
        at: z.string().meta({ description: 'When the call connected (ISO 8601).' }),
        summary: z.string().nullable().meta({ description: "The call's analysis summary; null when its analysis failed." }),
        outcome: z.enum(['successful', 'unsuccessful', 'unknown']).meta({ description: 'Whether the call achieved its purpose, per its analysis; `unknown` when the analysis failed.' }),
      })
      .optional()
      .meta({ description: 'Engine-written after each analysed conversation with this caller on this number; read-only.' }),
    open_item: z.string().optional().meta({ description: 'Engine-written: what was still to be done for the caller after their last call (absent when nothing is); read-only.' }),
  })
  .meta({ description: 'The whole record: customer fields that are set plus what the engine has learned. Unset fields are absent, not null.' });

const callerSchema = z.object({
  phone_number: z.string().meta({ description: 'Your number (E.164).' }),
  caller_number: z.string().meta({ description: "The caller's number (E.164)." }),
  context: contextSchema,
  updated_at: z.string().meta({ description: 'Last write by you or the engine.' }),
});

const view = (r: CallerRow) => ({
  phone_number: r.phone_number,
  caller_number: r.caller_number,
  context: callerContext(r),
  updated_at: isoTime(r.updated_at),
});

/** The caller in the path must already be E.164 (only the import adds a missing +). */
function callerParam(params: Record<string, string>): string {
  const caller = params['caller_number']!;
  if (!E164.test(caller)) {
    throw new ApiError('invalid_phone_format', `caller_number '${caller}' in the path is not E.164, e.g. +14155550123 (encode + as %2B).`, {
      field: 'caller_number',
    });
  }
  return caller;
}

export function callerRoutes({ storage, clock }: AppDeps) {
  /** The path's number, if it is imported on this account; otherwise a 404 that says nothing more. */
  function ownNumber(accountId: string, params: Record<string, string>): string {
    const number = params['phone_number']!;
    if (!storage.callers.numberOwned(accountId, number)) {
      throw new ApiError('phone_number_not_found', `No phone number ${number} on your account.`, { field: 'phone_number' });
    }
    return number;
  }

  const base = '/v1/phone-numbers/{phone_number}/callers';
  const tag = 'Caller context';

  return [
    defineRoute({
      method: 'PUT',
      path: `${base}/{caller_number}`,
      summary: "Create or merge a caller's context record",
      tag,
      body: putCallerBody,
      responses: {
        200: {
          description:
            'The record after the merge. A field left out keeps its value, null removes it, and "" or whitespace-only never erases (it counts as not sent); ' +
            'a body that sets or removes nothing is missing_field. Also carries updated_at, as GET does. Takes effect on the next call or text.',
          schema: z.object({ caller: callerSchema }),
        },
      },
      errors: ['phone_number_not_found', 'invalid_phone_format', 'engine_only_field', 'unknown_field', 'invalid_request', 'missing_field', 'invalid_email', 'field_too_long'],
      handler: ({ auth, params, body }) => {
        const accountId = auth!.accountId;
        const number = ownNumber(accountId, params);
        const caller = callerParam(params);
        const row = storage.callers.upsert(accountId, number, caller, body as ContextPatch, clock());
        if (!row) throw new ApiError('phone_number_not_found', `No phone number ${number} on your account.`, { field: 'phone_number' });
        return ok({ caller: view(row) });
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${base}/{caller_number}`,
      summary: "A caller's context record",
      tag,
      responses: { 200: { description: 'The record.', schema: z.object({ caller: callerSchema }) } },
      errors: ['phone_number_not_found', 'invalid_phone_format', 'caller_not_found'],
      handler: ({ auth, params }) => {
        const accountId = auth!.accountId;
        const number = ownNumber(accountId, params);
        const row = storage.callers.get(accountId, number, callerParam(params));
        if (!row) throw new ApiError('caller_not_found');
        return ok({ caller: view(row) });
      },
    }),
    defineRoute({
      method: 'GET',
      path: base,
      summary: 'The context records of a number',
      tag,
      query: paginationQuery,
      responses: {
        200: {
          description: 'Most recently updated first (ties by caller_number). count is the total number of records on the number, not the page size.',
          schema: z.object({ callers: z.array(callerSchema), count: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
        },
      },
      errors: ['phone_number_not_found', 'invalid_request'],
      handler: ({ auth, params, query }) => {
        const accountId = auth!.accountId;
        const number = ownNumber(accountId, params);
        const { limit, offset } = page(query);
        const { callers, count } = storage.callers.list(accountId, number, limit, offset);
        return ok({ callers: callers.map(view), count, limit, offset });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${base}/{caller_number}`,
      summary: "Erase a caller's context record on this number",
      tag,
      responses: {
        200: {
          description: 'Customer fields and engine-learned data are gone for this number only; the engine starts learning again from the next call.',
          schema: z.object({ phone_number: z.string(), caller_number: z.string(), deleted: z.literal(true) }),
        },
      },
      errors: ['phone_number_not_found', 'invalid_phone_format', 'caller_not_found'],
      handler: ({ auth, params }) => {
        const accountId = auth!.accountId;
        const number = ownNumber(accountId, params);
        const caller = callerParam(params);
        if (!storage.callers.delete(accountId, number, caller)) throw new ApiError('caller_not_found');
        return ok({ phone_number: number, caller_number: caller, deleted: true });
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${base}/import`,
      summary: 'Import or merge up to 1000 caller context records at once',
      tag,
      body: importCallersBody,
      responses: {
        200: {
          description:
            'Every row is checked before anything is written; one bad row rejects the whole request with a message starting `Row <n>: ` (counting from 1) ' +
            'and details {row, field}. Rows merge into existing records in file order, with the same rules as PUT, so a repeated caller ends on its last row. ' +
            'imported is the number of distinct callers written.',
          schema: z.object({ phone_number: z.string(), imported: z.number().int() }),
        },
      },
      errors: ['phone_number_not_found', 'invalid_body', 'too_many_rows', 'missing_field', 'engine_only_field', 'unknown_field', 'invalid_request', 'invalid_email', 'field_too_long', 'invalid_phone_format'],
      handler: ({ auth, params, body }) => {
        const accountId = auth!.accountId;
        const number = ownNumber(accountId, params);
        const rows = body.callers.map(({ caller_number, ...patch }) => ({ caller_number, patch: patch as ContextPatch }));
        const imported = storage.callers.importMany(accountId, number, rows, clock());
        return ok({ phone_number: number, imported });
      },
    }),
  ];
}
