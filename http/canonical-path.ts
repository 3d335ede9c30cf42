// A request path's one canonical form, decided once before routing, authentication,
// rate limits and idempotency, so that every later step sees the same path. A path that
// two readers could take differently is refused rather than repaired: an empty segment
// (`//v1/keys` once skipped authentication because one check used `startsWith('/v1/')`
// and the router dropped empty segments), a `.` or `..` segment, plain or encoded, and
// an encoded slash or backslash inside a segment. One trailing slash is dropped.

export type CanonicalPath = { ok: true; path: string } | { ok: false; reason: string };

// Anything that needs a closer look; most paths have none of it and return at once.
const SUSPECT = /\/\/|\/\.|%|\\/;

export function canonicalPath(raw: string): CanonicalPath {
  if (raw.charCodeAt(0) !== 47 /* / */) return { ok: false, reason: 'the path must start with /' };
  if (!SUSPECT.test(raw)) return { ok: true, path: raw.length > 1 && raw.endsWith('/') ? raw.slice(0, -1) : raw };
  const path = raw.length > 1 && raw.endsWith('/') ? raw.slice(0, -1) : raw;
  if (path === '/') return { ok: true, path };
  const segments = path.split('/');
  for (let i = 1; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg === '') return { ok: false, reason: 'it has an empty segment (two slashes in a row)' };
    let decoded = seg;
    if (seg.includes('%')) {
      try {
        decoded = decodeURIComponent(seg);
      } catch {
        // Not an escape, so it cannot hide a slash or a dot: the router keeps such a
        // segment as it is and the route's own validation answers it.
        decoded = seg;
      }
    }
    if (decoded === '.' || decoded === '..') return { ok: false, reason: 'it has a "." or ".." segment' };
    if (decoded.includes('/') || decoded.includes('\\')) return { ok: false, reason: 'a segment holds an encoded slash or a backslash' };
  }
  return { ok: true, path };
}
