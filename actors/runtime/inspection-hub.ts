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
import { CALL_STATUSES, ENDED_REASONS, HANGUP_REASONS } from '../../machines/call-events.ts';
import { TRANSFER_FAILURES, TRANSFER_MODES } from '../../machines/transfer-events.ts';
import { CAMPAIGN_REFUSALS, RECIPIENT_ENDINGS } from '../../machines/batch-campaign-events.ts';
import { SMS_SEND_OUTCOMES } from '../../machines/sms-campaign-events.ts';
import type { ActorView, InspectionEvent, LiveActorSource, RedactedEvent } from './inspection.ts';

// ---------------------------------------------------------------------------------------
// Redaction: an allowlist (issue 18). A list of sensitive names always missed the next
// field (a booking's `attendee_name` and `service` went out as they were), so the rule is
// the other way round: a value leaves only when it is structural by what it is, and
// everything else becomes "[redacted]".
//
// - `type` stays when it reads as an event type (a code-made identifier).
// - A field stays only when its key is in FIELDS and its value passes that key's check:
//   a time, duration or count (a number), a flag (a boolean), an enumerated word from
//   the machines' own vocabulary (a status, a reason, a timer's name, who spoke), or a
//   carrier's id of the call or leg (one token with a letter in it: never a phone number).
// - Any other field, and any object or array whatever its key (a booking, a caller's
//   context, a carrier's error, tool arguments), is "[redacted]" whole: nested keys may
//   be personal too. `null` stays null (it holds nothing).
// Keys themselves show: events are parsed by their kind's schema before they get here,
// so a key is a name the code chose. State values and tags show when they read as names.
// The result passes the same rule unchanged, so redacting twice (supervisor, then hub)
// changes nothing.

export const REDACTED = '[redacted]';

type Check = (v: unknown) => boolean;
const isNumber: Check = (v) => typeof v === 'number' && Number.isFinite(v);
const isBoolean: Check = (v) => typeof v === 'boolean';
function oneOf(...lists: readonly (readonly string[])[]): Check {
  const words = new Set(lists.flat());
  return (v) => typeof v === 'string' && words.has(v);
}
/** A carrier's call or leg id (`CA…`, `v3:…`, a UUID): one token, and a letter in it, so no phone number passes. */
const isCarrierId: Check = (v) => typeof v === 'string' && /^[A-Za-z0-9][\w:.-]{0,199}$/.test(v) && /[A-Za-z]/.test(v);

const CARRIER_STATUSES = [...CALL_STATUSES, 'active', 'unknown'];

/**
 * Every field that may leave the hub, with what its value must be. The call machine's
 * events (machines/call-events.ts, transfer-events.ts) first, then what the conversation
 * machines' events carry, should they ever be inspected. Adding a key here is deciding
 * that nothing personal can ever be under it.
 */
const FIELDS = new Map<string, Check>([
  // Times (epoch ms), durations, counts.
  ['at', isNumber],
  ['endedAt', isNumber],
  ['dueAt', isNumber],
  ['durationSec', isNumber],
  ['latencyMs', isNumber],
  ['attempt', isNumber],
  // Flags.
  ['answered', isBoolean],
  ['mediaBack', isBoolean],
  ['final', isBoolean],
  ['endOfTurn', isBoolean],
  ['complete', isBoolean],
  ['retryable', isBoolean],
  // Enumerations: only the words the machines define.
  ['status', oneOf(CALL_STATUSES)],
  ['carrierStatus', oneOf(CARRIER_STATUSES)],
  ['hangupSource', oneOf(['caller', 'callee', 'unknown'])],
  ['reason', oneOf(ENDED_REASONS, HANGUP_REASONS, TRANSFER_FAILURES, ['no_slot', 'window_closed'])],
  ['result', oneOf(['human', 'machine', 'fax', 'unknown'])],
  ['mode', oneOf(TRANSFER_MODES)],
  ['speaker', oneOf(['agent', 'caller'])],
  // A TIMER's name; never a person's (any other word is redacted).
  ['name', oneOf(['queue_check', 'stale', 'retry', 'give_up', 'transfer'])],
  ['provider', oneOf(['llm', 'tts'])],
  ['verdict', oneOf(['human', 'voicemail', 'unsure'])],
  ['source', oneOf(['stream', 'event', 'tone'])],
  // The carrier's ids, shown so a developer can find the call in the carrier's console.
  ['carrierCallId', isCarrierId],
  ['legId', isCarrierId],
  // A batch campaign's events (machines/batch-campaign-events.ts): a recipient's place in
  // the dial order, the call placed for it (our call_… id), how its placing and its call
  // went, and the calls kind's refusal code. Never the recipient's number or variables.
  ['seq', isNumber],
  ['callId', isCarrierId],
  // An SMS campaign's events add how a recipient's text went, and a PATCH's new count and date.
  ['outcome', oneOf(['accepted', 'queued', 'rejected', 'unknown'], SMS_SEND_OUTCOMES)],
  ['total', isNumber],
  ['scheduledAt', isNumber],
  ['ending', oneOf(RECIPIENT_ENDINGS)],
  ['code', oneOf(CAMPAIGN_REFUSALS)],
]);

/** An event type (`CARRIER.ENDED`, `xstate.init`) or a state name or tag (`in-progress`, `holdsSlot`). */
const EVENT_TYPE = /^@?[A-Za-z][\w.:-]{0,99}$/;
const STATE_NAME = /^[A-Za-z][\w.-]{0,99}$/;

/** An event with every field that is not structural replaced by "[redacted]"; `type` always survives (as a string). */
export function redactEvent(_kind: string, event: { type: string }): RedactedEvent {
  const out: RedactedEvent = { type: typeof event.type === 'string' && EVENT_TYPE.test(event.type) ? event.type : REDACTED };
  for (const key of Object.keys(event)) {
    if (key === 'type') continue;
    const value = (event as Record<string, unknown>)[key];
    if (value === undefined) continue;
    out[key] = value === null ? null : FIELDS.get(key)?.(value) === true ? value : REDACTED;
  }
  return out;
}

/** A state value (`"ringing"`, `{ "in-progress": "listening" }`) made of names only; else "[redacted]". */
function isStateValue(v: unknown, depth = 0): boolean {
  if (typeof v === 'string') return STATE_NAME.test(v);
  if (typeof v !== 'object' || v === null || Array.isArray(v) || depth >= 8) return false;
  for (const [k, sub] of Object.entries(v)) if (!STATE_NAME.test(k) || !isStateValue(sub, depth + 1)) return false;
  return true;
}
const redactState = (v: unknown): unknown => (isStateValue(v) ? v : REDACTED);
const redactTags = (tags: readonly string[]): string[] => tags.map((t) => (typeof t === 'string' && STATE_NAME.test(t) ? t : REDACTED));
const redactStatus = (s: string): string => (typeof s === 'string' && STATE_NAME.test(s) ? s : REDACTED);
/** A kind's counts: finite numbers under names that read as names; anything else is left out. */
export function redactCounters(counters: Record<string, unknown> | null | undefined): Record<string, number> | null {
  if (counters === null || counters === undefined || typeof counters !== 'object') return null;
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(counters)) if (COUNTER_NAME.test(k) && typeof v === 'number' && Number.isFinite(v)) out[k] = v;
  return out;
}
const COUNTER_NAME = /^[a-z][a-z_]{0,39}$/;

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
            snapshot: { value: redactState(e.snapshot.value), tags: redactTags(e.snapshot.tags), status: redactStatus(e.snapshot.status), counters: redactCounters(e.snapshot.counters) },
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
      return [...a.actors.values()].map((v) => ({
        ...v,
        value: redactState(v.value),
        tags: redactTags(v.tags),
        status: redactStatus(v.status),
        lastEvent: v.lastEvent ? redactEvent(v.kind, v.lastEvent) : null,
        counters: redactCounters(v.counters),
      }));
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
