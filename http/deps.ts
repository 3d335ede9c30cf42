// What route handlers may use. Built once in server.ts; tests build the same thing
// through the real server, never a stand-in.
import type { Config } from '../config.ts';
import type { Storage } from '../storage/index.ts';
import type { Metrics } from '../metrics.ts';
import type { CallSystem } from '../actors/calls/call-system.ts';
import type { CampaignSystem } from '../actors/campaigns/campaign-system.ts';
import type { SmsSystem } from '../actors/sms/sms-system.ts';
import type { WebhookOutbox } from '../actors/outbox/webhook-outbox.ts';
import type { LiveActorSource } from '../actors/runtime/inspection.ts';
import type { ProviderStatus } from '../actors/agent/providers.ts';
import type { CarrierKeys } from '../actors/agent/engine-keypad.ts';
import type { BucketTransfers } from '../actors/recordings/bucket-transfers.ts';
import type { BucketClient } from '../voice/recording/bucket-client.ts';

export interface AppDeps {
  config: Config;
  storage: Storage;
  metrics: Metrics;
  clock: () => number;
  /** The call supervisor: live call actors, concurrency slots, deadlines. */
  calls: CallSystem;
  /** Batch campaigns: created, launched and cancelled here; their actors run on the calls' runtime. */
  campaigns: CampaignSystem;
  /** SMS: single sends, campaigns, received texts and delivery statuses. */
  sms: SmsSystem;
  /** The webhook outbox's worker (the webhook.test endpoint sends through it). */
  webhooks: WebhookOutbox;
  /** The live machine view: the account's live actors and their inspection events, redacted. */
  inspection: LiveActorSource;
  /** Which conversation providers are configured (GET /readyz `providers`). */
  providers: ProviderStatus;
  /** Keys carriers report as call events (carrier B), for the live conversation of their call. */
  carrierKeys?: CarrierKeys;
  /**
   * Where recordings are kept beyond DATA_DIR: the bucket's client (the links stream from it;
   * null without RECORDINGS_BUCKET_URL) and its worker (erasures run their bucket deletes through it).
   */
  recordings: { bucket: BucketClient | null; transfers: BucketTransfers };
  /** True once storage is open and every unfinished actor is restored. */
  isReady: () => boolean;
}
