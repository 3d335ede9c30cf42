// Ordered schema migrations. Each has a version; `user_version` records the last one
// applied. Never edit a released migration: add the next one.
import { foundation } from './001-foundation.ts';
import { configuration } from './002-configuration.ts';
import { calls } from './003-calls.ts';
import { durableRuntime } from './004-durable-runtime.ts';
import { webhookOutbox } from './005-webhook-outbox.ts';
import { callAnalysis } from './006-call-analysis.ts';
import { precall } from './007-precall.ts';
import { bookingConfirmation } from './008-booking-confirmation.ts';
import { recordings } from './009-recordings.ts';
import { crmDeliveries } from './010-crm-deliveries.ts';
import { batchCampaigns } from './011-batch-campaigns.ts';
import { sms } from './012-sms.ts';
import { recordingBucket } from './013-recording-bucket.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: Migration[] = [foundation, configuration, calls, durableRuntime, webhookOutbox, callAnalysis, precall, bookingConfirmation, recordings, crmDeliveries, batchCampaigns, sms, recordingBucket];
