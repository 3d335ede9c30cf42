// Everything a completed call sends out, committed in one place: `call.completed` to the
// number's webhooks, the agent's `webhook_url` and the automation `post_call_url` (one
// delivery per distinct URL, signed, actors/outbox/call-events-out.ts), and the CRM sync of a
// number with a CRM integration (actors/outbox/crm-sync-out.ts). Call it INSIDE the transaction
// that records the call's analysis outcome (done or failed): it only INSERTs outbox
// rows, so the deliveries exist exactly when the outcome does and survive any crash after.
import type { Storage } from '../../storage/index.ts';
import { callEventPayload, callEventUrls } from './call-events-out.ts';
import { enqueueCrmSync } from './crm-sync-out.ts';

export interface CallCompletedOptions {
  /** CRM_BASE_URL (config.crmBaseUrl). */
  crmBaseUrl: string;
}

/** The ids of the deliveries committed (none when nothing is configured or the call is unknown). */
export function enqueueCallCompleted(storage: Storage, internalId: string, now: number, opts: CallCompletedOptions): string[] {
  const call = storage.calls.getByInternalId(internalId);
  if (!call) return [];
  const ids: string[] = [];
  const urls = callEventUrls(storage, call.account_id, call, 'call.completed');
  if (urls.length > 0) {
    ids.push(
      ...storage.webhookDeliveries.enqueue({
        accountId: call.account_id,
        callId: call.call_id,
        event: 'call.completed',
        urls,
        payload: callEventPayload(call, 'call.completed'),
        now,
      }),
    );
  }
  ids.push(...enqueueCrmSync(storage, call, now, opts.crmBaseUrl));
  return ids;
}
