// What the engine remembers of a caller from their last call on a number: `last_call`
// `{at, summary, outcome}` (stored as JSON text in the caller's record) and
// `open_item`. Written after each analysed conversation; read back by the callers API
// (as an object) and by the next call's prompt (as a sentence). Pure.

export type LastCallOutcome = 'successful' | 'unsuccessful' | 'unknown';

export interface LastCall {
  /** When the call connected (ISO 8601 UTC). */
  at: string;
  /** The analysis's summary; null when the analysis failed. */
  summary: string | null;
  /** The analysis's verdict; `unknown` when it failed. */
  outcome: LastCallOutcome;
}

/** The memory of a call that connected at `at` (ms): from its analysis, or null when the analysis failed. */
export function lastCallOf(at: number, analysis: { summary: string; successful: boolean } | null): LastCall {
  return {
    at: new Date(at).toISOString(),
    summary: analysis?.summary ?? null,
    outcome: analysis === null ? 'unknown' : analysis.successful ? 'successful' : 'unsuccessful',
  };
}

/** The stored text as a LastCall; null when empty or not one (a record from before this shape). */
export function parseLastCall(text: string | null | undefined): LastCall | null {
  if (typeof text !== 'string' || text.trim() === '') return null;
  try {
    const v = JSON.parse(text) as Partial<LastCall> | null;
    if (v === null || typeof v !== 'object' || typeof v.at !== 'string') return null;
    const outcome: LastCallOutcome = v.outcome === 'successful' || v.outcome === 'unsuccessful' ? v.outcome : 'unknown';
    return { at: v.at, summary: typeof v.summary === 'string' ? v.summary : null, outcome };
  } catch {
    return null;
  }
}

const OUTCOME_WORDS: Record<LastCallOutcome, string> = {
  successful: 'it achieved its purpose',
  unsuccessful: 'it did not achieve its purpose',
  unknown: 'its outcome is not known',
};

/**
 * The last call as one line for the model: "Tuesday, May 6, 2025 at 3:04 PM: <summary>
 * (it achieved its purpose)". `formatAt` renders the time in the agent's zone. Text that
 * is not a stored LastCall is given as it is.
 */
export function lastCallLine(text: string, formatAt: (ms: number) => string): string {
  const last = parseLastCall(text);
  if (last === null) return text.trim();
  const ms = Date.parse(last.at);
  const when = Number.isNaN(ms) ? last.at : formatAt(ms);
  return `${when}: ${last.summary ?? 'no summary'} (${OUTCOME_WORDS[last.outcome]})`;
}
