// The storage facade: one database, one repository per aggregate. Built once at
// start; every repository prepares its statements then.
import type { Db } from './db.ts';
import { transactional } from './db.ts';
import { createAccountsRepo } from './accounts.ts';
import { createAccountErasure } from './account-erasure.ts';
import { createIdempotencyRepo } from './idempotency.ts';
import { createUsageRepo } from './usage.ts';
import { createAgentsRepo } from './agents.ts';
import { createCallersRepo } from './callers.ts';
import { createIntegrationsRepo } from './integrations.ts';
import { createPhoneNumbersRepo } from './phone-numbers.ts';
import { createCallsRepo } from './calls.ts';
import { createSnapshotsRepo } from './snapshots.ts';
import { createDeadlinesRepo } from './deadlines.ts';
import { createIntentsRepo } from './intents.ts';
import { createCallPromptsRepo } from './call-prompts.ts';
import { createWebhookDeliveriesRepo } from './webhook-deliveries.ts';
import { createCallAnalysisRepo } from './call-analysis.ts';
import { createRecordingsRepo } from './recordings.ts';
import { createRecordingTransfersRepo } from './recording-transfers.ts';
import { createCampaignsRepo } from './campaigns.ts';
import { createSmsMessagesRepo } from './sms-messages.ts';
import { createSmsCampaignsRepo } from './sms-campaigns.ts';
import { createSmsOptOutsRepo } from './sms-opt-outs.ts';
import type { SecretBox } from './secret-box.ts';

export function createStorage(db: Db, secrets: SecretBox) {
  // One repository instance: erasure drops the rows authentication caches.
  const accounts = createAccountsRepo(db);
  return {
    db,
    secrets,
    tx: transactional(db),
    accounts,
    accountErasure: createAccountErasure(db, accounts),
    idempotency: createIdempotencyRepo(db),
    usage: createUsageRepo(db),
    numbers: createPhoneNumbersRepo(db, secrets),
    agents: createAgentsRepo(db),
    integrations: createIntegrationsRepo(db, secrets),
    callers: createCallersRepo(db),
    calls: createCallsRepo(db),
    snapshots: createSnapshotsRepo(db),
    deadlines: createDeadlinesRepo(db),
    intents: createIntentsRepo(db),
    callPrompts: createCallPromptsRepo(db, secrets),
    webhookDeliveries: createWebhookDeliveriesRepo(db),
    analysis: createCallAnalysisRepo(db),
    recordings: createRecordingsRepo(db),
    recordingTransfers: createRecordingTransfersRepo(db),
    campaigns: createCampaignsRepo(db, secrets),
    sms: createSmsMessagesRepo(db),
    smsCampaigns: createSmsCampaignsRepo(db),
    smsOptOuts: createSmsOptOutsRepo(db),
  };
}

export type Storage = ReturnType<typeof createStorage>;
