// How a persisted call snapshot of another machine version, or one naming a state this
// machine lacks, comes back: pure functions of the snapshot, kept beside the machine so
// that no state name is matched outside machines/ (actors/calls/call-kind.ts registers them).
import { CALL_MACHINE_VERSION, callMachine, phaseOf } from './call.ts';
import type { CallContext } from './call-outcome.ts';

/** A snapshot as stored: the machine version that wrote it, its state value and context. */
export interface PersistedCall {
  version: number;
  value: unknown;
  context: unknown;
}

const KNOWN_STATES = new Set(Object.keys(callMachine.config.states ?? {}));

/**
 * Where a call stands when its snapshot names a state this machine lacks (or is of an
 * older version): decided from what its context proves, then the RESTORED event asks
 * the carrier wherever the carrier may know more.
 */
export function placeCall(ctx: CallContext): unknown {
  if (ctx.endedAt !== null) return 'post-call';
  // A web call has no carrier leg: waiting for its browser, or on the line (RESTORED then ends it media_lost).
  if (ctx.provider === 'web') return ctx.hangupReason !== null ? 'hanging-up' : ctx.startedAt === null ? 'awaiting-browser' : { 'in-progress': 'listening' };
  if (ctx.carrierCallId === null) return ctx.queued && ctx.dialedAt === null ? 'queued' : ctx.direction === 'inbound' ? { 'in-progress': 'listening' } : { 'dial-unknown': 'asking' };
  if (ctx.hangupReason !== null) return 'hanging-up';
  // A transfer that was running: the carrier is asked where it stands (never sent again).
  if (ctx.transfer?.outcome === 'pending') return { 'in-progress': { transferring: 'checking' } };
  if (ctx.startedAt !== null) return { 'in-progress': 'listening' };
  return ctx.callStatus === 'ringing' ? 'ringing' : 'initiated';
}

/** Version 1 (issue 4) → 2: new context fields; an invoked dial cut off by the restart is an unknown dial. 2 → 3: the transcript and latency fields. 3 → 4: the transfer field. */
export function migrateCallSnapshot(p: PersistedCall): PersistedCall | null {
  if (p.context === null || typeof p.context !== 'object') return null;
  const old = p.context as Partial<CallContext>;
  if (typeof old.id !== 'string' || typeof old.accountId !== 'string') return null;
  const ctx: CallContext = {
    ...(old as CallContext),
    dialOutcome: old.dialOutcome ?? (old.carrierCallId ? 'accepted' : null),
    restored: false,
    hangupAttempts: old.hangupAttempts ?? 0,
    transcript: old.transcript ?? null,
    latencyTotalMs: old.latencyTotalMs ?? 0,
    latencyTurns: old.latencyTurns ?? 0,
    transfer: old.transfer ?? null,
  };
  const state = phaseOf(p.value);
  let value: unknown = p.value;
  if (p.version === 1 && state === 'dialing') {
    ctx.dialOutcome = 'unknown';
    value = { 'dial-unknown': 'asking' };
  } else if (!KNOWN_STATES.has(state) || p.version < 0) {
    value = placeCall(ctx);
  }
  return { version: CALL_MACHINE_VERSION, value, context: ctx };
}

