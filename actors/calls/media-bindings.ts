// The supervisor's side of a media websocket (voice/media/bindings.ts): the stream's
// one-time token is claimed in the call's row (cleared as it is read, so a second
// socket with the same token finds nothing), and the stream's coarse events go to the
// call's actor through the supervisor, parsed with the event schema on the way.
// `expects` is the same look-up without the claim: carrier B's websocket upgrade asks it,
// so an unknown URL token is refused before a socket exists and a known one stays claimable.
import type { Logger } from 'pino';
import type { CallsRepo } from '../../storage/calls.ts';
import type { CallContext } from '../../machines/call-outcome.ts';
import type { MediaBinding, MediaBindings } from '../../voice/media/bindings.ts';

export interface BindingTargets {
  contextOf(id: string): CallContext | null;
  isLive(id: string): boolean;
  send(id: string, event: unknown): boolean;
}

/** The binding of a claimed stream to its call: its coarse events go to the call's actor. */
function bindingOf(ctx: CallContext, targets: BindingTargets, log: Logger, what: string): MediaBinding {
  const callId = ctx.id;
  return {
    callId,
    accountId: ctx.accountId,
    direction: ctx.direction,
    agentId: ctx.agentId,
    deliver(event) {
      try {
        targets.send(callId, event);
      } catch (err) {
        log.error({ err, call_id: callId }, `${what} event delivery failed`);
      }
    },
  };
}

export function createMediaBindings(calls: CallsRepo, targets: BindingTargets, log: Logger): MediaBindings {
  return {
    claim(provider, token): MediaBinding | null {
      const claimed = calls.claimMediaToken(provider, token);
      if (!claimed) return null;
      const ctx = targets.contextOf(claimed.internalId);
      // A finished call expects no stream: its token is spent all the same.
      if (!ctx || !targets.isLive(claimed.internalId) || ctx.accountId !== claimed.accountId) return null;
      return bindingOf(ctx, targets, log, 'media');
    },
    expects(provider, token): boolean {
      const id = calls.mediaTokenHolder(provider, token);
      return id !== null && targets.isLive(id);
    },
  };
}

/** How a browser's websocket claims its web call (http/web-media-ws.ts). */
export interface WebMediaBindings {
  /**
   * The web call this access token opens, or null when the token is unknown, used,
   * expired (past the call's `connectBy`) or its call is over. One-time like a carrier's:
   * the token is spent by the first claim, whatever its outcome.
   */
  claim(token: string, at: number): MediaBinding | null;
}

export function createWebMediaBindings(calls: CallsRepo, targets: BindingTargets, log: Logger): WebMediaBindings {
  return {
    claim(token, at) {
      const claimed = calls.claimMediaToken('web', token);
      if (!claimed) return null;
      const ctx = targets.contextOf(claimed.internalId);
      if (!ctx || ctx.provider !== 'web' || !targets.isLive(claimed.internalId) || ctx.accountId !== claimed.accountId) return null;
      // Expired: the call's own deadline ends it (no-answer) at this instant, if it has not yet.
      if (ctx.connectBy !== undefined && at > ctx.connectBy) return null;
      return bindingOf(ctx, targets, log, 'web media');
    },
  };
}
