// Runtime configuration: every environment variable the service reads, validated
// once at start so a typo fails loudly instead of running on a silent default.
import { z } from 'zod';
import { MEDIA_ENGINES, type MediaEngineName } from './voice/engine/engine.ts';
import type { BucketConfig } from './voice/recording/bucket-client.ts';

const bool = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1');
const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** s3://bucket[/prefix]: a bucket name as S3 allows it, a prefix of plain key characters. */
const BUCKET_URL = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/([A-Za-z0-9._\/-]*))?$/;

const envSchema = z.object({
  PORT: int(0, 65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATA_DIR: z.string().min(1).default('./data'),
  PUBLIC_BASE_URL: z.url().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TWILIO_API_BASE: z.url().default('https://api.twilio.com'),
  TELNYX_API_BASE: z.url().default('https://api.telnyx.com'),
  LLM_BASE_URL: z.url().default('https://api.openai.com/v1'),
  LLM_API_KEY: z.string().optional(),
  LLM_MODEL: z.string().default('gpt-4o-mini'),
  // The CRM's REST API (bookings and the post-call contact sync of a number's CRM integration);
  // operator configuration, not a customer URL, so http is allowed (tests: the simulator).
  CRM_BASE_URL: z.url().default('https://services.leadconnectorhq.com'),
  STT_PROVIDER: z.enum(['deepgram']).default('deepgram'),
  DEEPGRAM_API_KEY: z.string().optional(),
  DEEPGRAM_BASE_URL: z.url().default('wss://api.deepgram.com'),
  DEEPGRAM_MODEL: z.string().default('nova-3'),
  TTS_PROVIDER: z.enum(['openai', 'cartesia']).default('openai'),
  TTS_BASE_URL: z.url().default('https://api.openai.com/v1'),
  TTS_API_KEY: z.string().optional(),
  TTS_MODEL: z.string().default('gpt-4o-mini-tts'),
  CARTESIA_API_KEY: z.string().optional(),
  CARTESIA_BASE_URL: z.url().default('wss://api.cartesia.ai'),
  // sonic-3 and later honour a numeric speed (speaking_rate); older models only slow/fast.
  CARTESIA_MODEL: z.string().default('sonic-3'),
  SECRETS_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (32 bytes)')
    .optional(),
  ALLOW_PRIVATE_NETWORK_TARGETS: bool.default(false),
  // The durable scheduler's longest sleep between looks at the clock (deadlines fire at their time; this bounds lateness after a clock step).
  SCHEDULER_INTERVAL_MS: int(10, 60_000).default(1000),
  CALL_STARTED_DELAY_MS: int(0, 600_000).default(2000),
  // A web call's one-time access token (POST /v1/web-calls) opens its browser socket within this many seconds, or the call ends no-answer.
  WEB_CALL_TOKEN_TTL_SECONDS: int(1, 3600).default(60),
  // api.md Limits: 1 message per second per sending number (the carrier's default); a number the carrier allows more can go faster.
  SMS_SEND_INTERVAL_MS: int(0, 60_000).default(1000),
  // A text whose send answer was lost is sent again only once the carrier's list has not shown it for this long (its lists can lag).
  SMS_RESEND_AFTER_MS: int(0, 3_600_000).default(60_000),
  // One webhook delivery attempt, look-up to the answer's last byte (contract.md §9: 15 s).
  WEBHOOK_TIMEOUT_MS: int(100, 600_000).default(15_000),
  // Test knob: the waits between delivery attempts, comma-separated milliseconds, in place
  // of the production schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h).
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'must be comma-separated whole numbers of milliseconds, e.g. 100,200,400')
    .transform((v) => v.split(',').map(Number))
    .optional(),
  // Post-call analysis: one model request's whole exchange, and (a test knob) the waits
  // between its attempts in place of the production 5 s, 30 s (three attempts in all).
  ANALYSIS_TIMEOUT_MS: int(100, 600_000).default(30_000),
  ANALYSIS_RETRY_SCHEDULE_MS: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'must be comma-separated whole numbers of milliseconds, e.g. 100,200')
    .transform((v) => v.split(',').map(Number))
    .optional(),
  // Call recordings are deleted this many days after they were saved (api.md: 90), by a
  // sweep of the calls table at start and every RECORDING_SWEEP_INTERVAL_MS.
  RECORDING_RETENTION_DAYS: int(1, 36_500).default(90),
  RECORDING_SWEEP_INTERVAL_MS: int(100, 86_400_000).default(3_600_000),
  // Recordings kept in an S3-compatible bucket instead of DATA_DIR/recordings (voice/recording/bucket-client.ts).
  // Operator configuration like TWILIO_API_BASE: no address check applies to the endpoint.
  RECORDINGS_BUCKET_URL: z
    .string()
    .regex(BUCKET_URL, 'must be s3://<bucket> or s3://<bucket>/<prefix> (prefix of letters, digits and . _ - /)')
    .optional(),
  RECORDINGS_BUCKET_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. https://s3.eu-central-003.backblazeb2.com' }).optional(),
  RECORDINGS_BUCKET_REGION: z.string().min(1).default('us-east-1'),
  RECORDINGS_BUCKET_ACCESS_KEY_ID: z.string().min(1).optional(),
  RECORDINGS_BUCKET_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  // Test knob: the waits between upload/delete attempts on the bucket, in place of the
  // production 2 s, 10 s, 30 s, 1 min, 5 min, then every 10 min (the last wait repeats: never given up).
  RECORDINGS_BUCKET_RETRY_SCHEDULE_MS: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'must be comma-separated whole numbers of milliseconds, e.g. 200,400')
    .transform((v) => v.split(',').map(Number))
    .optional(),
  RATE_LIMIT_READS_PER_MIN: int(1, 100_000_000).default(600),
  RATE_LIMIT_WRITES_PER_MIN: int(1, 100_000_000).default(120),
  KEY_CREATION_PER_HOUR_PER_IP: int(1, 100_000_000).default(10),
  // Per client IP, outside /v1: recording links (a player's range requests), and carrier
  // webhooks. Carriers send every call's events from a few addresses; a throttled event is
  // a lost call state, so the default (500/s) sits five times above what one process at its
  // capacity receives (600 calls at once lasting a minute, ~10 events each: 6000 a minute).
  RATE_LIMIT_RECORDINGS_PER_MIN: int(1, 100_000_000).default(300),
  RATE_LIMIT_CARRIER_PER_MIN: int(1, 100_000_000).default(30_000),
  MAX_BODY_BYTES: int(1024, 64 * 1024 * 1024).default(5 * 1024 * 1024),
  // All request bodies being read at once share this bound, so slow or abusive uploads
  // cannot take the process's memory; beyond it requests get 503 with Retry-After.
  MAX_INFLIGHT_BODY_BYTES: int(1024, 4 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  // Behind a reverse proxy the client address is the first X-Forwarded-For entry;
  // trusting it without a proxy would let any client pick its own rate-limit bucket.
  TRUST_PROXY: bool.default(false),
  SHUTDOWN_GRACE_MS: int(0, 600_000).default(10_000),
  // How long a write waits for a lock held by another connection (Litestream, a backup,
  // the admin command) before it fails; a failed commit changes nothing and is retried.
  SQLITE_BUSY_TIMEOUT_MS: int(0, 600_000).default(5000),
  MEDIA_ENGINE: z.enum(MEDIA_ENGINES).default('agent'),
});

export type Env = z.input<typeof envSchema>;

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  publicBaseUrl: string;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  twilioApiBase: string;
  telnyxApiBase: string;
  llm: { baseUrl: string; apiKey: string | undefined; model: string };
  /** CRM_BASE_URL: the CRM's REST API for bookings (voice/providers/crm-calendar.ts) and the post-call sync (actors/outbox/crm-sync-out.ts). */
  crmBaseUrl: string;
  stt: { provider: 'deepgram'; apiKey: string | undefined; baseUrl: string; model: string };
  tts:
    | { provider: 'openai'; baseUrl: string; apiKey: string | undefined; model: string }
    | { provider: 'cartesia'; baseUrl: string; apiKey: string | undefined; model: string };
  secretsKeyHex: string | undefined;
  allowPrivateNetworkTargets: boolean;
  schedulerIntervalMs: number;
  /** Shortest time between two texts' sends on one number. */
  smsSendIntervalMs: number;
  /** How long a text whose answer was lost must stay missing from the carrier's list before it is sent again. */
  smsResendAfterMs: number;
  recordings: {
    retentionDays: number;
    sweepIntervalMs: number;
    /** RECORDINGS_BUCKET_*: where recordings are kept instead of DATA_DIR/recordings; null keeps them there. */
    bucket: BucketConfig | null;
    /** The waits between bucket upload/delete attempts; null: the production schedule (actors/recordings/bucket-transfers.ts). */
    bucketRetryScheduleMs: number[] | null;
  };
  callStartedDelayMs: number;
  /** Web calls (POST /v1/web-calls): how long the access token stays valid (the browser's time to connect). */
  webCallTokenTtlMs: number;
  webhooks: {
    /** The whole exchange of one delivery attempt. */
    timeoutMs: number;
    /** The waits between attempts; null: the production schedule (actors/outbox/webhook-retry.ts). */
    retryScheduleMs: number[] | null;
  };
  analysis: {
    /** One request to the model, start to the answer's last byte. */
    timeoutMs: number;
    /** The waits between attempts; null: the production schedule (actors/post-call/analysis-plan.ts). */
    retryScheduleMs: number[] | null;
  };
  rateLimits: { readsPerMin: number; writesPerMin: number; keyCreationPerHourPerIp: number; recordingsPerMin: number; carrierPerMin: number };
  maxBodyBytes: number;
  maxInflightBodyBytes: number;
  trustProxy: boolean;
  shutdownGraceMs: number;
  sqliteBusyTimeoutMs: number;
  /** What talks on a call's media stream: `agent` (the conversation), `listen` (silent) or `echo` (line test). */
  mediaEngine: MediaEngineName;
}

export class ConfigError extends Error {}

/** The bucket settings, or null when RECORDINGS_BUCKET_URL is unset; credentials are required with it. */
function bucketConfig(e: z.infer<typeof envSchema>): BucketConfig | null {
  if (e.RECORDINGS_BUCKET_URL === undefined) {
    // A bucket half configured is a typo, not a choice: recordings would silently stay on the disk.
    const stray = (['RECORDINGS_BUCKET_ENDPOINT', 'RECORDINGS_BUCKET_ACCESS_KEY_ID', 'RECORDINGS_BUCKET_SECRET_ACCESS_KEY'] as const).filter((k) => e[k] !== undefined);
    if (stray.length > 0) throw new ConfigError(`Invalid configuration:\n  ${stray.map((k) => `${k}: set without RECORDINGS_BUCKET_URL`).join('\n  ')}`);
    return null;
  }
  const missing = (['RECORDINGS_BUCKET_ACCESS_KEY_ID', 'RECORDINGS_BUCKET_SECRET_ACCESS_KEY'] as const).filter((k) => e[k] === undefined);
  if (missing.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  ${missing.map((k) => `${k}: required with RECORDINGS_BUCKET_URL`).join('\n  ')}`);
  }
  const [, bucket, prefix] = BUCKET_URL.exec(e.RECORDINGS_BUCKET_URL)!;
  return {
    bucket: bucket!,
    prefix: (prefix ?? '').replace(/^\/+|\/+$/g, ''),
    endpoint: e.RECORDINGS_BUCKET_ENDPOINT?.replace(/\/+$/, '') ?? null,
    region: e.RECORDINGS_BUCKET_REGION,
    accessKeyId: e.RECORDINGS_BUCKET_ACCESS_KEY_ID!,
    secretAccessKey: e.RECORDINGS_BUCKET_SECRET_ACCESS_KEY!,
  };
}

/** Parses the environment; empty strings count as unset so `PORT=` means the default. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') present[key] = value;
  }
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  if (e.MAX_INFLIGHT_BODY_BYTES < e.MAX_BODY_BYTES) {
    throw new ConfigError('Invalid configuration:\n  MAX_INFLIGHT_BODY_BYTES: must be at least MAX_BODY_BYTES, or no body of the largest allowed size could ever be read');
  }
  const publicBase = e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`;
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    publicBaseUrl: publicBase.replace(/\/+$/, ''),
    logLevel: e.LOG_LEVEL,
    twilioApiBase: e.TWILIO_API_BASE.replace(/\/+$/, ''),
    telnyxApiBase: e.TELNYX_API_BASE.replace(/\/+$/, ''),
    llm: { baseUrl: e.LLM_BASE_URL.replace(/\/+$/, ''), apiKey: e.LLM_API_KEY, model: e.LLM_MODEL },
    crmBaseUrl: e.CRM_BASE_URL.replace(/\/+$/, ''),
    stt: { provider: e.STT_PROVIDER, apiKey: e.DEEPGRAM_API_KEY, baseUrl: e.DEEPGRAM_BASE_URL.replace(/\/+$/, ''), model: e.DEEPGRAM_MODEL },
    tts:
      e.TTS_PROVIDER === 'cartesia'
        ? { provider: 'cartesia', baseUrl: e.CARTESIA_BASE_URL.replace(/\/+$/, ''), apiKey: e.CARTESIA_API_KEY, model: e.CARTESIA_MODEL }
        : { provider: 'openai', baseUrl: e.TTS_BASE_URL.replace(/\/+$/, ''), apiKey: e.TTS_API_KEY ?? e.LLM_API_KEY, model: e.TTS_MODEL },
    secretsKeyHex: e.SECRETS_KEY,
    allowPrivateNetworkTargets: e.ALLOW_PRIVATE_NETWORK_TARGETS,
    schedulerIntervalMs: e.SCHEDULER_INTERVAL_MS,
    smsSendIntervalMs: e.SMS_SEND_INTERVAL_MS,
    smsResendAfterMs: e.SMS_RESEND_AFTER_MS,
    recordings: {
      retentionDays: e.RECORDING_RETENTION_DAYS,
      sweepIntervalMs: e.RECORDING_SWEEP_INTERVAL_MS,
      bucket: bucketConfig(e),
      bucketRetryScheduleMs: e.RECORDINGS_BUCKET_RETRY_SCHEDULE_MS ?? null,
    },
    callStartedDelayMs: e.CALL_STARTED_DELAY_MS,
    webCallTokenTtlMs: e.WEB_CALL_TOKEN_TTL_SECONDS * 1000,
    webhooks: { timeoutMs: e.WEBHOOK_TIMEOUT_MS, retryScheduleMs: e.WEBHOOK_RETRY_SCHEDULE_MS ?? null },
    analysis: { timeoutMs: e.ANALYSIS_TIMEOUT_MS, retryScheduleMs: e.ANALYSIS_RETRY_SCHEDULE_MS ?? null },
    rateLimits: {
      readsPerMin: e.RATE_LIMIT_READS_PER_MIN,
      writesPerMin: e.RATE_LIMIT_WRITES_PER_MIN,
      keyCreationPerHourPerIp: e.KEY_CREATION_PER_HOUR_PER_IP,
      recordingsPerMin: e.RATE_LIMIT_RECORDINGS_PER_MIN,
      carrierPerMin: e.RATE_LIMIT_CARRIER_PER_MIN,
    },
    maxBodyBytes: e.MAX_BODY_BYTES,
    maxInflightBodyBytes: e.MAX_INFLIGHT_BODY_BYTES,
    trustProxy: e.TRUST_PROXY,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    sqliteBusyTimeoutMs: e.SQLITE_BUSY_TIMEOUT_MS,
    mediaEngine: e.MEDIA_ENGINE,
  };
}
