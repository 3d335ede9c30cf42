// Turns zod failures into the API's errors: the first problem, named by its field,
// with the code a client can branch on (missing_field, invalid_request, or a route's
// more specific code such as prompt_too_long).
import type { z } from 'zod';
import { ApiError, type ErrorCode } from './errors.ts';

export type FieldCodes = Record<string, Partial<Record<string, ErrorCode>>>;

type Issue = z.core.$ZodIssue;

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let v: unknown = input;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

const fieldName = (path: PropertyKey[]): string => path.map(String).join('.');

function describe(issue: Issue, field: string): string {
  switch (issue.code) {
    case 'invalid_type':
      return `${field} must be ${issue.expected === 'int' ? 'a whole number' : `of type ${issue.expected}`}.`;
    case 'too_big':
      return issue.origin === 'string'
        ? `${field} can be at most ${issue.maximum} characters.`
        : issue.origin === 'array'
          ? `${field} can have at most ${issue.maximum} items.`
          : `${field} must be at most ${issue.maximum}.`;
    case 'too_small':
      return issue.origin === 'string'
        ? `${field} must be at least ${issue.minimum} characters.`
        : issue.origin === 'array'
          ? `${field} must have at least ${issue.minimum} items.`
          : `${field} must be at least ${issue.minimum}.`;
    case 'invalid_value':
      return `${field} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}.`;
    default:
      return `${field}: ${issue.message}`;
  }
}

/** Maps the first issue to an ApiError; unknown fields are reported before the rest. */
export function issueToError(issues: readonly Issue[], input: unknown, fieldCodes?: FieldCodes): ApiError {
  const unknown = issues.find((i) => i.code === 'unrecognized_keys');
  if (unknown && unknown.code === 'unrecognized_keys') {
    const field = fieldName([...unknown.path, unknown.keys[0]!]);
    return new ApiError('invalid_request', `Unknown field '${field}'.`, { field });
  }
  const issue = issues[0]!;
  const field = fieldName(issue.path);
  const specific = fieldCodes?.[field]?.[issue.code] ?? fieldCodes?.[field]?.['*'];
  // zod 4 reports a missing enum as invalid_value and a missing union as invalid_union.
  const missing =
    (issue.code === 'invalid_type' || issue.code === 'invalid_value' || issue.code === 'invalid_union') &&
    valueAt(input, issue.path) === undefined;
  if (specific) return new ApiError(specific, missing ? `${field} is required.` : describe(issue, field), { field });
  if (missing) return new ApiError('missing_field', `${field} is required.`, { field });
  if (issue.code === 'custom' && issue.message) return new ApiError('invalid_request', issue.message, { field });
  return new ApiError('invalid_request', describe(issue, field), { field });
}

export function parseWith<T>(schema: z.ZodType<T>, input: unknown, fieldCodes?: FieldCodes): T {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw issueToError(result.error.issues, input, fieldCodes);
}
