// The batch campaign's one effect, `place`: recipient `seq`'s call, placed by the calls
// kind's one placing operation (actors/calls/place-outbound-call.ts), so the dialing
// number, its credentials, slots and dial outcomes follow the rules of every outbound
// call. The campaign's intent to place `seq` was committed before this runs; the
// recipient's row turns `placed` (with the call's id) inside the call's own first commit,
// so a recipient has a call exactly when its row says so. The call's id is derived from
// the intent's, so, run again after a crash, the effect finds the call it placed and
// reports it, never placing a second one (even when that call has ended meanwhile and
// given its recipient back: see campaign-system.ts).
// Pull, not push: a call is placed only when the account has a slot free for it, one
// slot kept for inbound calls (INBOUND_RESERVE); otherwise the recipient goes back in line.
import type { Storage } from '../../storage/index.ts';
import { derivedPrefixedId } from '../../storage/ids.ts';
import type { EffectHandler } from '../runtime/actor-kind.ts';
import type { CallSystem } from '../calls/call-system.ts';
import { placeOutboundCall } from '../calls/place-outbound-call.ts';
import { precallPrompt } from '../calls/precall-gate.ts';
import type { CampaignContext } from '../../machines/batch-campaign.ts';
import type { CampaignEvent } from '../../machines/batch-campaign-events.ts';
import { isWindowOpen } from '../../machines/calling-window.ts';

/**
 * Slots of an account a campaign leaves free for inbound calls (when its limit is at
 * least two): a campaign running at the limit would otherwise answer every inbound
 * caller busy.
 */
export const INBOUND_RESERVE = 1;

/** The slots a campaign may fill on an account with this limit. */
export const campaignSlotsOf = (limit: number): number => (limit >= 2 ? limit - INBOUND_RESERVE : limit);

export interface PlaceRecipientDeps {
  storage: Storage;
  calls: Pick<CallSystem, 'concurrency' | 'start' | 'dialOutcome'>;
  clock: () => number;
}

/**
 * The id of the call an intent places: `call_` and 24 base62 characters of a hash of the
 * intent's id (which holds the campaign's random id), as unguessable as the campaign's.
 */
export const campaignCallId = (intentId: string): string => derivedPrefixedId('call', `campaign-call:${intentId}`);

/** Variables as the prompt lists them: every value as text. */
function asText(variables: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(variables)) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  return out;
}

export function placeRecipientEffect(deps: PlaceRecipientDeps): EffectHandler<CampaignContext> {
  const { storage, calls, clock } = deps;
  return {
    async run({ intent, context }): Promise<CampaignEvent> {
      const { seq } = intent.params as { seq: number };
      const at = clock();
      const callId = campaignCallId(intent.id);
      // Placed before a restart (its call committed, this outcome not): report that call.
      if (storage.calls.getByInternalId(callId)) return { type: 'PLACED', at, seq, callId, outcome: 'accepted' };
      const campaign = storage.campaigns.byId(context.id);
      let recipient: ReturnType<typeof storage.campaigns.recipientToDial>;
      let campaignPrompt: string;
      try {
        recipient = storage.campaigns.recipientToDial(context.id, seq);
        campaignPrompt = campaign ? storage.campaigns.promptOf(campaign) : '';
      } catch {
        // Sealed with another key: retrying cannot help, and nothing can be dialed.
        const message = 'the campaign’s prompt or recipients cannot be decrypted: the service runs with another SECRETS_KEY than the one it was created with';
        return { type: 'REFUSED', at, seq, code: 'campaign_unreadable', message };
      }
      // Not pending any more (cancelled meanwhile): nothing to place.
      if (!campaign || !recipient || recipient.state !== 'pending' || campaign.status !== 'running') return { type: 'SKIPPED', at, seq };
      if (!isWindowOpen(at, context.window)) return { type: 'DEFERRED', at, seq, reason: 'window_closed' };
      const limit = storage.accounts.getAccount(context.accountId)?.concurrency_limit ?? 0;
      const taken = calls.concurrency.held(context.accountId) + calls.concurrency.queued(context.accountId);
      if (taken >= campaignSlotsOf(limit)) return { type: 'DEFERRED', at, seq, reason: 'no_slot' };

      const prompt = precallPrompt(recipient.promptOverride ?? campaignPrompt, asText(recipient.variables)) ?? '';
      const placed = await placeOutboundCall(
        { storage, calls, clock },
        { accountId: context.accountId, agentId: campaign.agent_id, toNumber: recipient.phone, fromNumber: campaign.from_number, prompt, campaignId: context.id, callId },
        {
          // In the call's first commit: the campaign still runs (a cancel that committed
          // meanwhile rolls this call back), and the row turns placed (a second placing
          // of the same recipient finds it placed and rolls back too).
          inCommit: ({ callId }) => {
            if (storage.campaigns.byId(context.id)?.status !== 'running') throw new Error('the campaign no longer runs');
            storage.campaigns.markPlaced(context.id, seq, callId, at);
          },
        },
      );
      if (placed.kind === 'refused') return { type: 'REFUSED', at: clock(), seq, code: placed.code, message: placed.message };
      return { type: 'PLACED', at: clock(), seq, callId: placed.callId, outcome: placed.kind };
    },
  };
}
