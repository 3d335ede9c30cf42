// Batch campaigns as the runtime's second real kind: the campaign machine, its event
// schema, the writer that projects a snapshot onto the campaign's row (and cancels its
// pending recipients in the cancelling commit), its one effect, and how it comes back
// after a restart. Nothing here is runtime code: it plugs into actors/runtime/ through
// the ActorKind interface alone.
import type { Storage } from '../../storage/index.ts';
import type { ActorKind, EffectHandler, PersistedActor } from '../runtime/actor-kind.ts';
import { CAMPAIGN_MACHINE_VERSION, campaignMachine, campaignStatusOf, type CampaignContext } from '../../machines/batch-campaign.ts';
import { campaignEventSchema } from '../../machines/batch-campaign-events.ts';

export const CAMPAIGN_KIND = 'campaign';

export interface CampaignKindDeps {
  storage: Storage;
  place: EffectHandler<CampaignContext>;
  /** After every committed step (the campaign's gauges). */
  settled?: (ctx: CampaignContext, status: string, live: boolean) => void;
}

export function campaignKind(deps: CampaignKindDeps): ActorKind<typeof campaignMachine> {
  const { storage } = deps;
  return {
    kind: CAMPAIGN_KIND,
    machine: campaignMachine,
    version: CAMPAIGN_MACHINE_VERSION,
    eventSchema: campaignEventSchema,
    accountOf: (ctx) => ctx.accountId,
    write(snap, w) {
      // The first commit inserts the row itself (campaign-system.ts `create`), after this.
      if (w.first) return;
      const ctx = snap.context;
      const status = campaignStatusOf(snap);
      // Not one recipient more is placed once the campaign is cancelled: in this same commit.
      if (status === 'cancelled') storage.campaigns.cancelPending(ctx.id, w.now);
      storage.campaigns.project(ctx.id, {
        status,
        startedAt: ctx.startedAt,
        completedAt: ctx.completedAt,
        error: ctx.error === null ? null : JSON.stringify(ctx.error),
      });
    },
    effects: { place: deps.place },
    // One version so far: anything else cannot be trusted to resume exactly.
    migrate: (p: PersistedActor) => (p.version === CAMPAIGN_MACHINE_VERSION ? p : null),
    restoreOrder: (snap) => snap.context.createdAt,
    // The live view's progress bar: counts only (never a recipient).
    counters: ({ context: c }) => ({
      total: c.total,
      waiting: c.returned.length + (c.total - c.cursor),
      placing: c.placing,
      placed: c.placed,
      ended: c.ended,
      in_use: c.placing + c.placed - c.ended,
      max_concurrent: c.maxConcurrent,
    }),
    // Its `place` intents come back by themselves; the window and the slots are looked at again.
    onRestore: (_snap, now) => [{ type: 'RESTORED', at: now }],
    settled: (snap, live) => deps.settled?.(snap.context, campaignStatusOf(snap), live),
    abandon(p, _accountId, actorId, now) {
      const ctx = p.context as Partial<CampaignContext>;
      storage.campaigns.project(actorId, {
        status: 'failed',
        startedAt: ctx.startedAt ?? null,
        completedAt: now,
        error: JSON.stringify({ code: 'campaign_launch_failed', message: 'the campaign could not be restored after an upgrade' }),
      });
    },
  };
}
