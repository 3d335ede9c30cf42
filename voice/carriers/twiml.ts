// The TwiML documents the service answers carrier A's voice webhook with (carriers.md
// §3): connect the call to our media websocket, refuse it, hang up, or dial a number.
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

/** What a mid-call transfer adds to `<Dial>` (carriers.md §3): the service hears how it went. */
export interface DialOptions {
  /** POSTed with `DialCallStatus` when the dial ends; its answer is the call's next TwiML. */
  action?: string;
  /** Seconds the number rings before the dial ends `no-answer`. */
  timeout?: number;
  /** The number's leg reports its answer here (`statusCallbackEvent="answered"`). */
  statusCallback?: string;
  /** Fetched when the number answers: its TwiML (the whisper) plays to the answerer only, before the two are connected. */
  whisperUrl?: string;
}

/**
 * Hands the call to another number (a cold transfer): the carrier answers and dials
 * `number` (E.164) with the caller's own caller id; the service has no part in the call
 * afterwards. Used for the pre-call gate's `transfer` (no options) and, with options,
 * for the agent's transfers during a call (actors/calls/transfer-effects.ts).
 */
export function dialNumber(number: string, opts: DialOptions = {}): string {
  const dial = attrs({ action: opts.action, method: opts.action ? 'POST' : undefined, timeout: opts.timeout?.toString() });
  const noun = attrs({
    url: opts.whisperUrl,
    method: opts.whisperUrl ? 'POST' : undefined,
    statusCallback: opts.statusCallback,
    statusCallbackEvent: opts.statusCallback ? 'answered' : undefined,
    statusCallbackMethod: opts.statusCallback ? 'POST' : undefined,
  });
  return `${DECLARATION}<Response><Dial${dial}><Number${noun}>${escapeXml(number)}</Number></Dial></Response>`;
}

/** Speaks `text` with the carrier's voice (the whisper a transfer's target hears), then ends the document. */
export function say(text: string): string {
  return `${DECLARATION}<Response><Say>${escapeXml(text)}</Say></Response>`;
}

/** An empty document: the carrier goes on (after a whisper URL: the two parties are connected). */
export function empty(): string {
  return `${DECLARATION}<Response></Response>`;
}

function attrs(values: Record<string, string | undefined>): string {
  return Object.entries(values)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => ` ${k}="${escapeXml(v)}"`)
    .join('');
}

/** Escapes the five XML special characters, valid in both text and attribute values. */
export function escapeXml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => XML_ENTITIES[c] ?? c);
}

const XML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
