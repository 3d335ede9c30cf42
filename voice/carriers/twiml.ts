// The three TwiML documents the service answers carrier A's voice webhook with
// (carriers.md §3): connect the call to our media websocket, refuse it, or hang up.
// Each returns a whole document, to send with `content-type: text/xml`. Every value
// is XML-escaped, so URLs and parameter values may hold any characters.

const DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

/**
 * Answers the call and opens a bidirectional media stream to `url` (a `wss://` URL;
 * the carrier drops its query string, so pass data as `params`, which arrive in the
 * stream's `start.customParameters`). When the socket closes the call ends, as no verb follows.
 */
export function connectStream(url: string, params: Readonly<Record<string, string>> = {}): string {
  const parameters = Object.entries(params)
    .map(([name, value]) => `<Parameter name="${escapeXml(name)}" value="${escapeXml(value)}"/>`)
    .join('');
  return `${DECLARATION}<Response><Connect><Stream url="${escapeXml(url)}">${parameters}</Stream></Connect></Response>`;
}

/**
 * Refuses an incoming call without answering it (not billed). The carrier ends the
 * call as `busy` for `busy` and as `no-answer` for `rejected`.
 */
export function reject(reason: 'busy' | 'rejected' = 'rejected'): string {
  return `${DECLARATION}<Response><Reject reason="${reason}"/></Response>`;
}

/** Ends a call; as an answer to an incoming call it is answered first (and billed). */
export function hangup(): string {
  return `${DECLARATION}<Response><Hangup/></Response>`;
}

/** Escapes the five XML special characters, valid in both text and attribute values. */
export function escapeXml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => XML_ENTITIES[c] ?? c);
}

const XML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
