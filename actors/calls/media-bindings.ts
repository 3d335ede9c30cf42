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

export function createMediaBindings(calls: CallsRepo, targets: BindingTargets, log: Logger): MediaBindings {
  return {
    claim(provider, token): MediaBinding | null {
      const claimed = calls.claimMediaToken(provider, token);
      if (!claimed) return null;
      const ctx = targets.contextOf(claimed.internalId);
      // A finished call expects no stream: its token is spent all the same.
      if (!ctx || !targets.isLive(claimed.internalId) || ctx.accountId !== claimed.accountId) return null;
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
            log.error({ err, call_id: callId }, 'media event delivery failed');
          }
        },
      };
    },
    expects(provider, token): boolean {
      const id = calls.mediaTokenHolder(provider, token);
      return id !== null && targets.isLive(id);
    },
  };
}
