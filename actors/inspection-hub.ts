// The live machine view's hub (issue 7): the supervisor publishes every transition of
// every live actor here, and the debug routes (`GET /v1/debug/actors` and its
// websocket) read the list and subscribe, strictly per account. The hub is the
// redaction boundary: whatever a publisher hands it, nothing leaves it unredacted.
//
// It sits on the call path, so it never slows the publisher: `publish` is synchronous,
// returns at once when nobody of the account watches, redacts once per event (not per
// listener) otherwise, and a listener that throws is caught and counted.
// Listeners must not block either (the debug websocket only queues a send and drops a
// viewer whose backlog is too large).
import type { ActorView, InspectionEvent, LiveActorSource, RedactedEvent } from './inspection.ts';

export const REDACTED = '[redacted]';

// ---------------------------------------------------------------------------------------
// Redaction. Conservative by construction: a field is removed when its name says it may
// carry a phone number, a key press, a prompt, a carrier's error text or other personal
// data, and any string anywhere that looks like a phone number is masked whatever its
// field is called. Only plain JSON (objects, arrays, strings, numbers, booleans, null)
// passes; anything else (an Error, an actor reference) becomes "[redacted]".

/** Field names (lower-cased, without `_` and `-`) whose value is always removed. */
const SENSITIVE_EXACT = new Set([
  'from',
  'to',
  'caller',
  'callee',
  'ani',
  'dnis',
  'msisdn',
  'uri',
  'sipuri',
  'address',
  'name',
  'body',
  'text',
  'content',
  'message',
  'error',
  'errors',
  'cause',
  'utterance',
  'speech',
  'sms',
  // A transfer's briefing to its target: what the caller said, in other words.
  'whisper',
  'briefing',
]);
/** Field names containing one of these are removed too (`to_number`, `customPrompt`, `carrier_error`, `digits`…). */
const SENSITIVE_PARTS = ['phone', 'number', 'prompt', 'digit', 'dtmf', 'carriererror', 'transcript', 'secret', 'token', 'password', 'email', 'apikey'];

const normalize = (key: string): string => key.toLowerCase().replace(/[_-]/g, '');

function sensitiveKey(key: string): boolean {
  const k = normalize(key);
  if (SENSITIVE_EXACT.has(k)) return true;
  for (const part of SENSITIVE_PARTS) if (k.includes(part)) return true;
  return false;
}

/**
 * A run that looks like a phone number: optional `+`, then digits with the usual
 * separators, 7 digits or more, not glued to letters or digits on either side (so the
 * hex and base62 of ids, and ISO dates, are left alone; a `sip:+1415…@host` is not).
 */
const PHONEISH = /(?<![0-9A-Za-z])\+?\d[\d ().-]{5,22}\d(?![0-9A-Za-z])/g;
const MAX_STRING = 500;
const MAX_DEPTH = 8;
const MAX_ITEMS = 100;

function redactString(s: string): string {
  const clipped = s.length > MAX_STRING ? `${s.slice(0, MAX_STRING)}…` : s;
  PHONEISH.lastIndex = 0;
  if (!PHONEISH.test(clipped)) return clipped;
  return clipped.replace(PHONEISH, (m) => (m.replace(/\D/g, '').length >= 7 ? REDACTED : m));
}

function isPlainObject(v: object): v is Record<string, unknown> {
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Any JSON-ish value with every sensitive field and phone-like string replaced by "[redacted]". */
export function redactValue(v: unknown, depth = 0): unknown {
  if (v === null || v === undefined) return v ?? null;
  switch (typeof v) {
    case 'string':
      return redactString(v);
    case 'number':
    case 'boolean':
      return v;
    case 'object':
      break;
    default:
      return REDACTED; // functions, symbols, bigints
  }
  if (depth >= MAX_DEPTH) return REDACTED;
  if (Array.isArray(v)) {
    const out = v.slice(0, MAX_ITEMS).map((x) => redactValue(x, depth + 1));
    if (v.length > MAX_ITEMS) out.push(`…${v.length - MAX_ITEMS} more`);
    return out;
  }
  if (!isPlainObject(v)) return REDACTED; // Error, Date, actor refs, class instances
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(v)) {
    const value = v[key];
    if (value === undefined) continue;
    out[key] = sensitiveKey(key) && value !== null ? REDACTED : redactValue(value, depth + 1);
  }
  return out;
}

/** An event with its sensitive fields redacted; `type` always survives (as a string). */
export function redactEvent(_kind: string, event: { type: string }): RedactedEvent {
  const out = redactValue(event) as Record<string, unknown>;
  return { ...out, type: typeof event.type === 'string' ? redactString(event.type) : 'unknown' };
}

/**
 * A call actor's event, redacted: phone numbers (`from`, `to`, `phoneNumber`,
 * `to_number`, and any phone-like string anywhere), DTMF digits (`digit`), prompts
 * (every field whose name contains "prompt") and carrier errors (`carrierError`,
 * `carrier_error`, an invoked effect's `error`).
 */
export const redactCallEvent = (event: { type: string }): RedactedEvent => redactEvent('call', event);

/** A call actor's context, redacted by the same rules (a snapshot's context, an `xstate.init` input). */
export const redactCallContext = (context: Record<string, unknown>): Record<string, unknown> => redactValue(context) as Record<string, unknown>;

// ---------------------------------------------------------------------------------------
// The hub.

export interface InspectionHub extends LiveActorSource {
  /** Hands an event to the account's listeners (redacted here); does nothing when none listens. */
  publish(accountId: string, e: InspectionEvent): void;
  /** Sets the list entry of a live actor (its `lastEvent` is redacted when read). */
  track(accountId: string, view: ActorView): void;
  /** Takes an actor off the list (it finished, failed or was forgotten). */
  drop(accountId: string, actorId: string): void;
  /** Listeners subscribed now, all accounts together. */
  listenerCount(): number;
  /** Listener calls that threw (caught; the publisher never sees them). */
  listenerErrors(): number;
}

interface Account {
  listeners: Set<(e: InspectionEvent) => void>;
  actors: Map<string, ActorView>;
}

export function createInspectionHub(): InspectionHub {
  const accounts = new Map<string, Account>();
  let listeners = 0;
  let errors = 0;

  function accountOf(accountId: string): Account {
    let a = accounts.get(accountId);
    if (!a) accounts.set(accountId, (a = { listeners: new Set(), actors: new Map() }));
    return a;
  }
  function tidy(accountId: string, a: Account): void {
    if (a.listeners.size === 0 && a.actors.size === 0) accounts.delete(accountId);
  }

  function publish(accountId: string, e: InspectionEvent): void {
    const a = accounts.get(accountId);
    if (!a || a.listeners.size === 0) return;
    // Once per event, whatever the number of listeners; idempotent if the publisher redacted already.
    const out: InspectionEvent =
      e.type === '@xstate.event'
        ? { type: e.type, kind: e.kind, actorId: e.actorId, seq: e.seq, at: e.at, event: redactEvent(e.kind, e.event) }
        : {
            type: e.type,
            kind: e.kind,
            actorId: e.actorId,
            seq: e.seq,
            at: e.at,
            event: e.event ? redactEvent(e.kind, e.event) : null,
            snapshot: { value: e.snapshot.value, tags: [...e.snapshot.tags], status: e.snapshot.status },
          };
    for (const listener of a.listeners) {
      try {
        listener(out);
      } catch {
        errors++;
      }
    }
  }

  function track(accountId: string, view: ActorView): void {
    accountOf(accountId).actors.set(view.id, view);
  }

  function drop(accountId: string, actorId: string): void {
    const a = accounts.get(accountId);
    if (!a || !a.actors.delete(actorId)) return;
    tidy(accountId, a);
  }

  return {
    list(accountId) {
      const a = accounts.get(accountId);
      if (!a) return [];
      return [...a.actors.values()].map((v) => ({ ...v, tags: [...v.tags], lastEvent: v.lastEvent ? redactEvent(v.kind, v.lastEvent) : null }));
    },
    subscribe(accountId, listener) {
      const a = accountOf(accountId);
      // Wrapped so the same function may subscribe twice and unsubscribe each once.
      const entry = (e: InspectionEvent) => listener(e);
      a.listeners.add(entry);
      listeners++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        a.listeners.delete(entry);
        listeners--;
        tidy(accountId, a);
      };
    },
    publish,
    track,
    drop,
    listenerCount: () => listeners,
    listenerErrors: () => errors,
  };
}
