// What the API asks of SMS campaigns: create (the campaign, every recipient and its
// actor's first snapshot in one transaction), launch, cancel and edit, each carried to the
// campaign's actor (sms-campaign-kind.ts) as an event; the actor's status decides.
import type { Logger } from 'pino';
import { initialTransition } from 'xstate';
import type { Storage } from '../../storage/index.ts';
import type { NewSmsCampaign, SmsCampaignEdit, SmsRecipient } from '../../storage/sms-campaigns.ts';
import type { Supervisor } from '../runtime/supervisor.ts';
import { smsCampaignMachine, smsCampaignStatusOf, type SmsCampaignSnapshot } from '../../machines/sms-campaign.ts';
import type { SmsCampaignInput } from '../../machines/sms-campaign-events.ts';
import { SMS_CAMPAIGN_KIND } from './sms-campaign-kind.ts';

export type SmsLaunchResult = 'launched' | 'not_found' | 'already_running' | 'already_done' | 'no_recipients' | 'commit_failed';
export type SmsCancelResult = { cancelled: number } | 'not_found' | 'already_done' | 'commit_failed';
export type SmsPatchResult = 'patched' | 'not_found' | 'not_editable' | 'commit_failed';

export function createSmsCampaignOps(deps: { storage: Storage; supervisor: Supervisor; clock: () => number; log: Logger }) {
  const { storage, supervisor, clock, log } = deps;

  const liveStatus = (id: string) => {
    const snap = supervisor.snapshotOf(id) as SmsCampaignSnapshot | null;
    return snap === null ? null : smsCampaignStatusOf(snap);
  };

  return {
    /**
     * Commits the campaign, every recipient and its actor's first snapshot (with its first
     * intents and deadlines) in one transaction, with `extra` (the route's idempotent
     * answer). Throws when it fails; then nothing exists.
     */
    create(c: Omit<NewSmsCampaign, 'status' | 'startedAt'>, extra?: (status: string) => void): SmsCampaignSnapshot {
      const input: SmsCampaignInput = { id: c.id, accountId: c.accountId, total: c.recipients.length, scheduleType: c.scheduleType, scheduledAt: c.scheduledAt, createdAt: c.createdAt };
      const [first] = initialTransition(smsCampaignMachine, input) as [SmsCampaignSnapshot, unknown];
      const status = smsCampaignStatusOf(first);
      return supervisor.start(SMS_CAMPAIGN_KIND, c.id, input, () => {
        storage.smsCampaigns.create({ ...c, status, startedAt: first.context.startedAt });
        extra?.(status);
      }) as SmsCampaignSnapshot;
    },

    launch(accountId: string, id: string): SmsLaunchResult {
      const row = storage.smsCampaigns.get(accountId, id);
      if (!row) return 'not_found';
      const status = liveStatus(id) ?? row.status;
      if (status === 'running') return 'already_running';
      if (status !== 'draft' && status !== 'scheduled') return 'already_done';
      if (row.total_count === 0) return 'no_recipients';
      const result = supervisor.send(id, { type: 'LAUNCH', at: clock() });
      return result === 'commit_failed' ? 'commit_failed' : 'launched';
    },

    cancel(accountId: string, id: string): SmsCancelResult {
      const row = storage.smsCampaigns.get(accountId, id);
      if (!row) return 'not_found';
      const status = liveStatus(id) ?? row.status;
      if (status !== 'draft' && status !== 'scheduled' && status !== 'running') return 'already_done';
      const before = storage.smsCampaigns.counts(id, row.total_count).cancelled;
      const result = supervisor.send(id, { type: 'CANCEL', at: clock() });
      if (result === 'commit_failed') return 'commit_failed';
      if (result !== 'taken') log.warn({ campaign_id: id, result }, 'cancelling an SMS campaign found its actor gone');
      return { cancelled: storage.smsCampaigns.counts(id, row.total_count).cancelled - before };
    },

    /**
     * PATCH: while draft or scheduled every editable field; once launched (running, done,
     * cancelled) only context_prompt, which still shapes the answers to replies. The row and the actor's PATCH (total, scheduled_at) commit together.
     */
    patch(accountId: string, id: string, edit: SmsCampaignEdit, recipients?: readonly SmsRecipient[]): SmsPatchResult {
      const row = storage.smsCampaigns.get(accountId, id);
      if (!row) return 'not_found';
      const status = liveStatus(id) ?? row.status;
      const onlyContext = Object.keys(edit).every((k) => k === 'contextPrompt') && recipients === undefined;
      const editable = status === 'draft' || status === 'scheduled';
      if (!editable && !onlyContext) return 'not_editable';
      if (!editable || !supervisor.isLive(id)) {
        try {
          storage.smsCampaigns.edit(id, edit);
          return 'patched';
        } catch {
          return 'commit_failed';
        }
      }
      let result: string = 'commit_failed';
      try {
        storage.tx(() => {
          storage.smsCampaigns.edit(id, edit, recipients);
          const event = { type: 'PATCH', at: clock(), ...(recipients ? { total: recipients.length } : {}), ...(edit.scheduledAt !== undefined ? { scheduledAt: edit.scheduledAt } : {}) };
          result = supervisor.send(id, event);
          if (result === 'commit_failed') throw new Error('the campaign’s actor did not take the edit');
        });
      } catch {
        return 'commit_failed';
      }
      return result === 'taken' ? 'patched' : 'commit_failed';
    },

    /** The live actor's status, or null when it is not live (finished, or not yet restored). */
    liveStatus,
  };
}
