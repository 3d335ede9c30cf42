// Schemas shared by many routes: pagination, query booleans and dates, E.164.
import { z } from 'zod';

/** A query integer: the text must be a whole number; the pipe checks the range. */
export const queryInt = () =>
  z
    .string()
    .regex(/^-?\d+$/, 'must be a whole number')
    .transform(Number)
    .meta({ type: 'integer' });

/**
 * A query boolean: exactly `true` or `false` on the wire. The document says plain
 * `type: boolean` (the OpenAPI form style writes booleans as that text), so the enum
 * check sits behind a pipe from a string, whose input schema carries no string enum.
 */
export const queryBool = () =>
  z
    .string()
    .pipe(z.enum(['true', 'false']))
    .transform((v) => v === 'true')
    .meta({ type: 'boolean' });

export const queryDate = () =>
  z
    .string()
    .refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date or date-time')
    .transform((s) => Date.parse(s))
    .meta({ type: 'string', format: 'date-time' });

export const MAX_PAGE = 100;

/** limit: default 25, above 100 clamped to 100, below 1 rejected; offset >= 0. */
export const pagination = {
  limit: queryInt()
    .pipe(z.number().int().min(1, 'limit must be at least 1'))
    .transform((n) => Math.min(n, MAX_PAGE))
    .optional()
    .meta({ description: 'Page size, 1 to 100 (larger values are clamped to 100). Default 25.' }),
  offset: queryInt()
    .pipe(z.number().int().min(0, 'offset must be 0 or more'))
    .optional()
    .meta({ description: 'Items to skip. Default 0.' }),
};

export const paginationQuery = z.object(pagination);

export function page(q: { limit?: number | undefined; offset?: number | undefined }): { limit: number; offset: number } {
  return { limit: q.limit ?? 25, offset: q.offset ?? 0 };
}

export const E164 = /^\+[1-9]\d{7,14}$/;
export const e164 = () => z.string().regex(E164, 'must be E.164, e.g. +14155550123');

export const isoTime = (ms: number): string => new Date(ms).toISOString();
export const isoOrNull = (ms: number | null | undefined): string | null => (ms == null ? null : isoTime(ms));

/** The error envelope, for the OpenAPI document. */
export const errorEnvelope = z.object({
  error: z.object({
    type: z.string(),
    code: z.string(),
    message: z.string(),
    doc_url: z.string().optional(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});
