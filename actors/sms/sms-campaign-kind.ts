// SMS campaigns as the runtime's third kind: the campaign machine, its event schema, the
// writer that projects a snapshot onto the campaign's row (and cancels its unsent
// recipients in the cancelling commit), its one effect, and how it comes back after a
// restart. Nothing here is runtime code: it plugs into actors/runtime/ through ActorKind.
import type { Storage } from '../../storage/index.ts';
import type { ActorKind, EffectHandler, PersistedActor } from '../runtime/actor-kind.ts';
import { SMS_CAMPAIGN_MACHINE_VERSION, smsCampaignMachine, smsCampaignStatusOf, type SmsCampaignContext } from '../../machines/sms-campaign.ts';
import { smsCampaignEventSchema } from '../../machines/sms-campaign-events.ts';

export const SMS_CAMPAIGN_KIND = 'sms-campaign';

export interface SmsCampaignKindDeps {
  storage: Storage;
  send: EffectHandler<SmsCampaignContext>;
  settled?: (ctx: SmsCampaignContext, status: string, live: boolean) => void;
}

export function smsCampaignKind(deps: SmsCampaignKindDeps): ActorKind<typeof smsCampaignMachine> {
  const { storage } = deps;
  return {
    kind: SMS_CAMPAIGN_KIND,
    machine: smsCampaignMachine,
    version: SMS_CAMPAIGN_MACHINE_VERSION,
    eventSchema: smsCampaignEventSchema,
    accountOf: (ctx) => ctx.accountId,
    write(snap, w) {
      // The first commit inserts the row itself (sms-system.ts `create`), after this.
      if (w.first) return;
      const status = smsCampaignStatusOf(snap);
      // Nothing more is sent once it is cancelled: its unsent recipients turn cancelled in this commit.
      if (status === 'cancelled') storage.smsCampaigns.cancelUnsent(snap.context.id, w.now);
      storage.smsCampaigns.project(snap.context.id, { status, startedAt: snap.context.startedAt, finishedAt: snap.context.finishedAt });
    },
    effects: { send: deps.send },
    // One version so far: anything else cannot be trusted to resume exactly.
    migrate: (p: PersistedActor) => (p.version === SMS_CAMPAIGN_MACHINE_VERSION ? p : null),
    restoreOrder: (snap) => snap.context.createdAt,
    // The live view's progress: counts only, never a recipient.
    counters: ({ context: c }) => ({ total: c.total, asked: c.cursor, accepted: c.accepted, failed: c.failed, in_flight: c.inFlight === null ? 0 : 1 }),
    onRestore: (_snap, now) => [{ type: 'RESTORED', at: now }],
    settled: (snap, live) => deps.settled?.(snap.context, smsCampaignStatusOf(snap), live),
    abandon(p, _accountId, actorId, now) {
      const ctx = p.context as Partial<SmsCampaignContext>;
      storage.smsCampaigns.cancelUnsent(actorId, now);
      storage.smsCampaigns.project(actorId, { status: 'cancelled', startedAt: ctx.startedAt ?? null, finishedAt: now });
    },
  };
}
