// Batch campaigns on the runtime the calls kind owns (its supervisor and durable
// scheduler): registers the campaign kind, commits a campaign with all its recipients and
// its actor's first snapshot in one transaction, and carries the API's launch and cancel
// to the actor. A call a campaign placed tells it of its end durably: in the transaction
// that ends the call's row, the recipient's row takes its end state and a deadline due at
// once carries CALL.ENDED to the campaign, so no end is lost to a crash between the two.
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { CampaignStatus, NewCampaign } from '../../storage/campaigns.ts';
import type { Metrics } from '../../metrics.ts';
import type { CallSystem } from '../calls/call-system.ts';
import { campaignKind, CAMPAIGN_KIND } from './campaign-kind.ts';
import { placeRecipientEffect } from './place-recipient.ts';
import { initialTransition } from 'xstate';
import { campaignMachine, campaignStatusOf, type CampaignSnapshot } from '../../machines/batch-campaign.ts';
import type { CampaignInput } from '../../machines/batch-campaign-events.ts';

export interface CampaignSystemDeps {
  storage: Storage;
  calls: CallSystem;
  clock: () => number;
  log: Logger;
  metrics: Metrics;
}

/** Calls a recipient may have that never reached the carrier before it is recorded failed. */
export const MAX_PLACINGS = 3;

export type LaunchResult = 'launched' | 'not_found' | 'already_running' | 'already_done' | 'commit_failed';
export type CancelResult = { cancelled: number } | 'not_found' | 'already_done' | 'commit_failed';

export function createCampaignSystem(deps: CampaignSystemDeps) {
  const { storage, calls, clock, log } = deps;
  const supervisor = calls.supervisor;
  let ended = 0;
  let placed = 0;
  const place = placeRecipientEffect({ storage, calls, clock });

  supervisor.register(
    campaignKind({
      storage,
      // Counted for /metrics: the rate of this counter is the campaigns' dial rate.
      place: {
        async run(r) {
          const outcome = await place.run(r);
          if (outcome.type === 'PLACED') placed++;
          return outcome;
        },
      },
      // Campaigns by how they ended (running and scheduled ones are the gauges below).
      settled: (_ctx, status, live) => {
        if (!live) deps.metrics.count('switchboard_campaigns_finished_total', 'Batch campaigns finished since the process started, by status.', 'status', status);
      },
    }),
  );

  // The end of a campaign's call, committed with the call's last commit (see the header).
  calls.onCallEnded((internalId, accountId, now, end) => {
    // Most calls are no campaign's: no read for them.
    if (end.campaignId === null) return;
    const call = storage.calls.getByInternalId(internalId);
    if (!call || call.campaign_id === null) return;
    // Never placed at the carrier: its recipient was not dialed, so while the campaign runs
    // it is dialed now, for the first time (a few such losses in a row and it fails).
    const given = end.neverPlaced && storage.campaigns.byId(call.campaign_id)?.status === 'running' ? storage.campaigns.giveBack(internalId, MAX_PLACINGS) : undefined;
    const ending = call.voicemail_detected ? 'voicemail' : call.call_status === 'completed' ? 'completed' : 'failed';
    const seq = given ?? storage.campaigns.endByCall(internalId, ending, call.ended_reason, now);
    if (seq === undefined) return;
    storage.deadlines.set({
      accountId,
      kind: CAMPAIGN_KIND,
      actorId: call.campaign_id,
      name: `ended:${internalId}`,
      event: given !== undefined ? { type: 'CALL.NEVER_PLACED', at: now, callId: internalId, seq } : { type: 'CALL.ENDED', at: now, callId: internalId, ending },
      dueAt: now,
    });
    ended++;
    // After the commit: the scheduler delivers it now rather than at its next look.
    queueMicrotask(() => calls.scheduler.poke());
  });

  const liveStatus = (id: string): ReturnType<typeof campaignStatusOf> | null => {
    const snap = supervisor.snapshotOf(id) as CampaignSnapshot | null;
    return snap === null ? null : campaignStatusOf(snap);
  };

  deps.metrics.gauge('switchboard_campaigns_running', 'Batch campaigns running now (dialing or paused outside their window).', () =>
    supervisor.list({ kind: CAMPAIGN_KIND }).filter((a) => campaignStatusOf(a.snapshot as CampaignSnapshot) === 'running').length,
  );
  deps.metrics.gauge('switchboard_campaigns_scheduled', 'Batch campaigns waiting for their date.', () =>
    supervisor.list({ kind: CAMPAIGN_KIND }).filter((a) => campaignStatusOf(a.snapshot as CampaignSnapshot) === 'scheduled').length,
  );
  deps.metrics.gauge('switchboard_campaign_calls_placed_total', 'Calls placed by batch campaigns since the process started (its rate is the dial rate).', () => placed);
  deps.metrics.gauge('switchboard_campaign_calls_ended_total', 'Calls placed by batch campaigns that have ended, since the process started.', () => ended);

  return {
    /**
     * Commits the campaign, every recipient and its actor's first snapshot (with its first
     * deadlines and intents) in one transaction, with `extra` (the route's idempotent
     * answer); throws when it fails, and then nothing exists. The rows go in the actor's
     * own first commit (not an outer transaction), so its first placings start only after
     * everything they read is committed.
     */
    create(campaign: Omit<NewCampaign, 'status' | 'startedAt'>, input: CampaignInput, extra?: (status: CampaignStatus) => void): CampaignSnapshot {
      // What the first commit will hold (pure): the row starts with the actor's status.
      const [first] = initialTransition(campaignMachine, input) as [CampaignSnapshot, unknown];
      const status = campaignStatusOf(first);
      return supervisor.start(CAMPAIGN_KIND, campaign.id, input, () => {
        storage.campaigns.create({ ...campaign, status, startedAt: first.context.startedAt });
        extra?.(status);
      }) as CampaignSnapshot;
    },
    /** POST …/launch: a scheduled campaign runs now. */
    launch(accountId: string, id: string): LaunchResult {
      const row = storage.campaigns.get(accountId, id);
      if (!row) return 'not_found';
      const status = liveStatus(id) ?? row.status;
      if (status === 'running') return 'already_running';
      if (status !== 'scheduled') return 'already_done';
      const result = supervisor.send(id, { type: 'LAUNCH', at: clock() });
      if (result === 'commit_failed') return 'commit_failed';
      return 'launched';
    },
    /** DELETE …: no new dial; calls already placed finish. */
    cancel(accountId: string, id: string): CancelResult {
      const row = storage.campaigns.get(accountId, id);
      if (!row) return 'not_found';
      const status = liveStatus(id) ?? row.status;
      if (status !== 'scheduled' && status !== 'running') return 'already_done';
      const before = storage.campaigns.counts(id).pending;
      const result = supervisor.send(id, { type: 'CANCEL', at: clock() });
      if (result === 'commit_failed') return 'commit_failed';
      if (result !== 'taken') log.warn({ campaign_id: id, result }, 'cancelling a campaign found its actor gone');
      return { cancelled: before - storage.campaigns.counts(id).pending };
    },
  };
}

export type CampaignSystem = ReturnType<typeof createCampaignSystem>;
