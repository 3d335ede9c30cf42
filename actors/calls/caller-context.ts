// The caller context record as the callers API shows it (`context`) and the pre-call gate
// sends it: only the fields that are set, with the engine's `last_call` (stored as JSON
// text) as an object; a value that is not one is left out. One place, so the API and the
// gate never disagree on what a caller's record is.
import { CONTEXT_FIELDS, ENGINE_FIELDS, type CallerRow } from '../../storage/callers.ts';
import { parseLastCall, type LastCall } from '../../voice/analysis/caller-memory.ts';

export function callerContext(row: CallerRow | undefined): Record<string, string | LastCall> {
  const out: Record<string, string | LastCall> = {};
  if (!row) return out;
  for (const f of [...CONTEXT_FIELDS, ...ENGINE_FIELDS]) {
    const v = row[f];
    if (v === null) continue;
    if (f === 'last_call') {
      const last = parseLastCall(v);
      if (last !== null) out[f] = last;
    } else out[f] = v;
  }
  return out;
}
