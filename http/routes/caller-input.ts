// Request bodies of the caller-context routes. They answer with the spec's own codes
// (unknown_field, not the generic invalid_request of .strict()), so each body is checked
// by hand in a fixed order before its documented zod schema sees the normalized value:
// engine_only_field, unknown_field, types, missing_field, then lengths, email and format.
import { z } from 'zod';
import { ApiError, type ErrorCode } from '../errors.ts';
import { E164 } from '../schemas.ts';
import { CONTEXT_FIELDS, ENGINE_FIELDS, type ContextField, type ContextPatch } from '../../storage/callers.ts';

export const FIELD_MAX: Record<ContextField, number> = {
  name: 120,
  email: 120,
  phone: 40,
  location: 120,
  reference_id: 64,
  preference: 200,
};

export const MAX_IMPORT_ROWS = 1000;

const FIELD_DOCS: Record<ContextField, string> = {
  name: 'Full name.',
  email: 'A valid email address.',
  phone: 'A contact number other than the one they call from (free text).',
  location: 'Free text.',
  reference_id: 'Account, order or booking reference.',
  preference: 'Short preference text.',
};

const UNSET_RULE = 'null removes the field; "" or whitespace only leaves it unchanged; left out keeps it.';

const fieldDoc = (f: ContextField) => {
  const base = z.string().max(FIELD_MAX[f]);
  return (f === 'email' ? base.meta({ format: 'email' }) : base)
    .nullable()
    .optional()
    .meta({ description: `${FIELD_DOCS[f]} At most ${FIELD_MAX[f]} characters; ${UNSET_RULE}` });
};

const contextFieldsDoc = {
  name: fieldDoc('name'),
  email: fieldDoc('email'),
  phone: fieldDoc('phone'),
  location: fieldDoc('location'),
  reference_id: fieldDoc('reference_id'),
  preference: fieldDoc('preference'),
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isContextField = (k: string): k is ContextField => (CONTEXT_FIELDS as readonly string[]).includes(k);
const emailCheck = z.email();
const FIELD_LIST = CONTEXT_FIELDS.join(', ');

/** Throws the error; an import row's message starts `Row <n>: ` and its details carry the row. */
function fail(code: ErrorCode, reason: string, row: number | undefined, details: Record<string, unknown>): never {
  if (row === undefined) throw new ApiError(code, reason, details);
  throw new ApiError(code, `Row ${row}: ${reason}`, { row, ...details });
}

function checkNames(obj: Record<string, unknown>, extra: readonly string[], row: number | undefined): void {
  for (const f of ENGINE_FIELDS) {
    if (Object.hasOwn(obj, f)) fail('engine_only_field', `${f} is written by the engine from calls and cannot be set.`, row, { field: f });
  }
  for (const k of Object.keys(obj)) {
    if (!isContextField(k) && !extra.includes(k)) {
      const accepted = extra.length ? `${extra.join(', ')}, ${FIELD_LIST}` : FIELD_LIST;
      fail('unknown_field', `Unknown field '${k}'. Accepted fields: ${accepted}.`, row, { field: k });
    }
  }
}

function checkTypes(obj: Record<string, unknown>, row: number | undefined): void {
  for (const f of CONTEXT_FIELDS) {
    const v = obj[f];
    if (v !== undefined && v !== null && typeof v !== 'string') {
      fail('invalid_request', `${f} must be a string or null, not ${Array.isArray(v) ? 'an array' : typeof v}.`, row, { field: f });
    }
  }
}

/** Keeps what changes something: a string with content sets, null removes; empty is no change. */
function collectPatch(obj: Record<string, unknown>): ContextPatch {
  const patch: ContextPatch = {};
  for (const f of CONTEXT_FIELDS) {
    const v = obj[f];
    if (v === null) patch[f] = null;
    else if (typeof v === 'string' && v.trim() !== '') patch[f] = v;
  }
  return patch;
}

function nothingToSet(row: number | undefined): never {
  fail('missing_field', `Nothing to set: send at least one of ${FIELD_LIST} as a non-empty string, or null to remove it (empty values never erase).`, row, {
    fields: [...CONTEXT_FIELDS],
  });
}

function checkValues(patch: ContextPatch, row: number | undefined): void {
  for (const f of CONTEXT_FIELDS) {
    const v = patch[f];
    if (typeof v !== 'string') continue;
    if (v.length > FIELD_MAX[f]) fail('field_too_long', `${f} can be at most ${FIELD_MAX[f]} characters; it has ${v.length}.`, row, { field: f });
    if (f === 'email' && !emailCheck.safeParse(v).success) fail('invalid_email', `email '${v}' is not a valid address.`, row, { field: f });
  }
}

/** The PUT body as a merge patch; it sets or removes at least one field. */
export function parsePutBody(raw: unknown): ContextPatch {
  if (!isObject(raw)) throw new ApiError('invalid_request', 'The request body must be a JSON object.');
  checkNames(raw, [], undefined);
  checkTypes(raw, undefined);
  const patch = collectPatch(raw);
  if (Object.keys(patch).length === 0) nothingToSet(undefined);
  checkValues(patch, undefined);
  return patch;
}

export type ImportRowInput = ContextPatch & { caller_number: string };

function parseImportRow(raw: unknown, row: number): ImportRowInput {
  if (!isObject(raw)) fail('invalid_body', 'each row must be an object such as {"caller_number": "+14155550123", "name": "Ada"}.', row, { field: 'callers' });
  checkNames(raw, ['caller_number'], row);
  const number = raw['caller_number'];
  if (number !== undefined && number !== null && typeof number !== 'string') {
    fail('invalid_request', `caller_number must be a string, not ${Array.isArray(number) ? 'an array' : typeof number}.`, row, { field: 'caller_number' });
  }
  checkTypes(raw, row);
  const trimmed = typeof number === 'string' ? number.trim() : '';
  if (trimmed === '') fail('missing_field', 'caller_number is required.', row, { field: 'caller_number' });
  const patch = collectPatch(raw);
  if (Object.keys(patch).length === 0) nothingToSet(row);
  // Spreadsheets drop a leading +, so one is added before the E.164 check.
  const callerNumber = trimmed.startsWith('+') ? trimmed : `+${trimmed}`;
  if (!E164.test(callerNumber)) {
    fail('invalid_phone_format', `caller_number '${trimmed}' is not E.164, e.g. +14155550123.`, row, { field: 'caller_number' });
  }
  checkValues(patch, row);
  return { caller_number: callerNumber, ...patch };
}

/** The import body: 1 to 1000 rows, every one valid, before anything is written. */
export function parseImportBody(raw: unknown): { callers: ImportRowInput[] } {
  if (!isObject(raw)) throw new ApiError('invalid_request', 'The request body must be a JSON object.');
  for (const k of Object.keys(raw)) {
    if (k !== 'callers') throw new ApiError('unknown_field', `Unknown field '${k}'. The body is {"callers": [rows]}.`, { field: k });
  }
  const rows = raw['callers'];
  if (rows === undefined || rows === null) {
    throw new ApiError('invalid_body', `callers is required: an array of 1 to ${MAX_IMPORT_ROWS} rows such as {"caller_number": "+14155550123", "name": "Ada"}.`, { field: 'callers' });
  }
  if (!Array.isArray(rows)) throw new ApiError('invalid_body', 'callers must be an array of rows.', { field: 'callers' });
  if (rows.length === 0) throw new ApiError('invalid_body', `callers is empty; send 1 to ${MAX_IMPORT_ROWS} rows.`, { field: 'callers' });
  if (rows.length > MAX_IMPORT_ROWS) {
    throw new ApiError('too_many_rows', `callers has ${rows.length} rows; an import takes at most ${MAX_IMPORT_ROWS}. Split it into several requests.`, {
      field: 'callers',
      rows: rows.length,
      max: MAX_IMPORT_ROWS,
    });
  }
  return { callers: rows.map((r, i) => parseImportRow(r, i + 1)) };
}

// The documented shapes (what the OpenAPI document shows); each receives the value the
// hand checks above produced, so it never rejects anything itself.
const putCallerDoc = z.object(contextFieldsDoc).strict();

const importRowDoc = z
  .object({
    caller_number: z.string().meta({ description: 'E.164; a missing leading + is added.' }),
    ...contextFieldsDoc,
  })
  .strict();

const importDoc = z
  .object({
    callers: z.array(importRowDoc).min(1).max(MAX_IMPORT_ROWS).meta({
      description: `1 to ${MAX_IMPORT_ROWS} rows, merged in order: a caller repeated in the file ends on its last row. Each row needs caller_number and at least one field to set or remove.`,
    }),
  })
  .strict();

export const putCallerBody = z.preprocess(parsePutBody, putCallerDoc);
export const importCallersBody = z.preprocess(parseImportBody, importDoc);
