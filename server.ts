// Wires config, logger, storage and HTTP into one running service, and handles
// SIGTERM/SIGINT: stop accepting, finish in-flight requests, close the database.
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino, { type Logger } from 'pino';
import { loadConfig, type Config } from './config.ts';
import { openDatabase } from './storage/db.ts';
import { createStorage, type Storage } from './storage/index.ts';
import { createSecretBox, loadSecretsKey } from './storage/secret-box.ts';
import { createAuthenticator } from './http/auth.ts';
import { Metrics } from './metrics.ts';
import { createPipeline } from './http/pipeline.ts';
import { RateLimits } from './http/rate-limit.ts';
import { allRoutes } from './http/routes/index.ts';
import { startHttpServer, type HttpServer } from './http/uws-adapter.ts';
import { registerMediaSockets, type MediaSocketDeps, type MediaSockets } from './http/media-ws.ts';
import { registerDebugSockets, type DebugSocketDeps, type DebugSockets } from './http/debug-ws.ts';
import { registerWebMediaSockets, type WebMediaSockets } from './http/web-media-ws.ts';
import type { MediaBindings } from './voice/media/bindings.ts';
import { selectEngine } from './voice/engine/engine.ts';
import { createProviders } from './actors/agent/providers.ts';
import { startConversationRuntime, type ConversationRuntime } from './actors/agent/conversation-runtime.ts';
import { createCarrierKeys } from './actors/agent/engine-keypad.ts';
import type { AppDeps } from './http/deps.ts';
import { createCallSystem } from './actors/calls/call-system.ts';
import { createCampaignSystem } from './actors/campaigns/campaign-system.ts';
import { createSmsSystem } from './actors/sms/sms-system.ts';
import { createSmsAgent } from './actors/sms/sms-agent.ts';
import { createInspectionHub, redactEvent, type InspectionHub } from './actors/runtime/inspection-hub.ts';
import { createWebhookOutbox } from './actors/outbox/webhook-outbox.ts';
import { DEFAULT_RETRY_SCHEDULE_MS } from './actors/outbox/webhook-retry.ts';
import { createCallAnalysisWorker } from './actors/post-call/call-analysis.ts';
import { createPlatformRecordings } from './actors/recordings/platform-recordings.ts';
import { createRecordingRetention } from './actors/recordings/recording-retention.ts';
import { createProviderRecordings } from './actors/recordings/provider-recordings.ts';
import { createBucketTransfers } from './actors/recordings/bucket-transfers.ts';
import { createBucketClient } from './voice/recording/bucket-client.ts';
import { createAnalysisModel } from './voice/analysis/analysis-client.ts';
import { Agent as HttpsAgent } from 'node:https';
import type { TemplatedApp } from 'uWebSockets.js';

export interface Switchboard {
  port: number;
  url: string;
  storage: Storage;
  http: HttpServer;
  log: Logger;
  /** The live machine view's hub: what the supervisor publishes and the debug routes read. */
  inspection: InspectionHub;
  stop(): Promise<void>;
}

export interface StartOptions {
  log?: Logger;
  clock?: () => number;
  configure?: (app: TemplatedApp) => void;
  /**
   * Who media websockets claim their call from; overrides the call supervisor. Tests
   * and the media benchmark hand out their own tokens with it (the media path alone,
   * without call setup).
   */
  mediaBindings?: MediaBindings;
  /**
   * Limits on media sockets that have not claimed a call yet (http/media-ws.ts): how long
   * one may wait (default 5 s) and how many may wait at once (default 500). Tests lower them.
   */
  media?: Pick<MediaSocketDeps, 'unclaimedTimeoutMs' | 'maxUnclaimed'>;
  /** The live machine view's websocket: a viewer's backlog bound and how often keys are checked again (http/debug-ws.ts). Tests lower them. */
  debug?: Pick<DebugSocketDeps, 'maxBufferedBytes' | 'recheckMs'>;
  /**
   * The https agent webhook deliveries go through. In-process tests pass one that trusts
   * their receiver's self-signed CA (a child process uses NODE_EXTRA_CA_CERTS instead).
   */
  webhookAgent?: HttpsAgent;
}

/**
 * Open connections kept per receiver host: as many as the events lane sends at once
 * (actors/outbox/delivery-lanes.ts), so the agent never queues one account's delivery behind
 * another account's hanging ones when both use the same receiver host.
 */
const WEBHOOK_SOCKETS_PER_RECEIVER = 32;

/**
 * Secrets, phone numbers and transcripts never reach the log in clear. Personal data
 * is logged only under these top-level keys (no wildcards: a wildcard path makes the
 * redactor walk every field of every line, and the request line is on the hot path).
 */
export const REDACT_PATHS = [
  'authorization',
  'key_secret',
  'secret',
  'auth_token',
  'api_key',
  'phone_number',
  'caller_number',
  'from',
  'to',
  'transcript',
  'body',
];

export function createLogger(level: Config['logLevel']): Logger {
  return pino(
    { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { service: 'switchboard' } },
    // Lines are gathered into writes of up to 12 KiB: one write per line would wake a
    // libuv thread per request. A timer flushes a quiet log every second; shutdown too.
    pino.destination({ dest: 1, sync: false, minLength: 12 * 1024 }),
  );
}

export async function startSwitchboard(config: Config, opts: StartOptions = {}): Promise<Switchboard> {
  const log = opts.log ?? createLogger(config.logLevel);
  const clock = opts.clock ?? Date.now;
  const db = openDatabase(join(config.dataDir, 'switchboard.db'), { busyTimeoutMs: config.sqliteBusyTimeoutMs });
  const storage = createStorage(db, createSecretBox(loadSecretsKey(config.dataDir, config.secretsKeyHex)));
  const metrics = new Metrics();
  let ready = false;
  // The live machine view (GET /v1/debug/actors, its websocket, /debug): per account, redacted.
  const inspection = createInspectionHub();
  const calls = createCallSystem({ storage, config, clock, log, metrics, inspection, redact: redactEvent });
  // Batch campaigns: the second kind on the calls' runtime, registered before actors are restored.
  const campaigns = createCampaignSystem({ storage, calls, clock, log, metrics });
  // SMS: single sends, replies and in-call texts through one paced sender per number, and SMS campaigns as the third kind.
  // Texts on numbers with sms_reply_enabled are answered by the SMS agent, with the model the calls use (none without LLM_API_KEY).
  const smsAgent = config.llm.apiKey ? createSmsAgent({ storage, llm: config.llm, clock }) : null;
  const sms = createSmsSystem({ storage, calls, config, clock, log, metrics, agent: smsAgent });
  // Deliveries keep their TLS connections to a receiver open and reuse them: a handshake
  // per delivery cut throughput to a quarter (BENCH_ONLY=outbox). Each socket's address
  // was checked when it connected (voice/target-request.ts), so reuse checks nothing less.
  const webhookAgent = opts.webhookAgent ?? new HttpsAgent({ keepAlive: true, maxSockets: WEBHOOK_SOCKETS_PER_RECEIVER });
  // Recordings in a bucket (RECORDINGS_BUCKET_URL), else under DATA_DIR: the bucket's worker
  // uploads what was written here (restarts included) and deletes what was erased or expired.
  const bucket = config.recordings.bucket === null ? null : createBucketClient(config.recordings.bucket);
  const bucketTransfers = createBucketTransfers({
    storage,
    bucket,
    publicBaseUrl: config.publicBaseUrl,
    clock,
    log,
    metrics,
    ...(config.recordings.bucketRetryScheduleMs ? { retryScheduleMs: config.recordings.bucketRetryScheduleMs } : {}),
  });
  // The webhook outbox's worker: sends what is pending (restarts included) once started below.
  const webhooks = createWebhookOutbox({
    storage,
    clock,
    log,
    metrics,
    allowPrivate: config.allowPrivateNetworkTargets,
    timeoutMs: config.webhooks.timeoutMs,
    schedule: config.webhooks.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS,
    agent: webhookAgent,
    publicBaseUrl: config.publicBaseUrl,
    recordingSources: { twilioApiBase: config.twilioApiBase, allowPrivate: config.allowPrivateNetworkTargets },
    recordingsToBucket: bucket !== null,
  });
  // Actors come back before the first request can reach them; the carrier is asked about
  // calls that were up while the server starts listening, and readiness waits for it.
  // Post-call analysis: runs the jobs each call's end committed (restarts included) once
  // started below, and records each outcome with call.completed and the caller's memory.
  // Platform recordings (recording_source `platform`): made by the conversation engine,
  // waited for by the analysis (the recording is saved before call.completed goes).
  const recordings = createPlatformRecordings({ storage, publicBaseUrl: config.publicBaseUrl, toBucket: bucket !== null, log, clock });
  const providerRecordings = createProviderRecordings({ storage, config, clock, log });
  const retention = createRecordingRetention({ storage, clock, log, ...config.recordings });
  const analysis = createCallAnalysisWorker({
    storage,
    clock,
    log,
    recordingUnderWay: recordings.underWay,
    model: config.llm.apiKey ? createAnalysisModel({ ...config.llm, timeoutMs: config.analysis.timeoutMs }) : null,
    ...(config.analysis.retryScheduleMs ? { retryScheduleMs: config.analysis.retryScheduleMs } : {}),
    crmBaseUrl: config.crmBaseUrl,
    metrics,
  });
  const restoring = calls.restore();
  // The conversation's providers: without credentials the service still starts, says so
  // once here and in GET /readyz, and ends calls it cannot serve (provider_not_configured).
  const providers = createProviders(config);
  let conversation: ConversationRuntime | null = null;
  // Keys carrier B reports as call events reach the call's conversation through this (the media stream's go to it directly).
  const carrierKeys = createCarrierKeys();
  if (config.mediaEngine === 'agent') {
    if (providers.missing.length > 0) {
      log.warn({ missing: providers.missing }, 'conversation providers not configured: calls will end at once with provider_not_configured');
    }
    conversation = await startConversationRuntime({ providers: providers.providers, storage, contextOf: calls.contextOf, watchCall: calls.watchContext, carrierKeys, recordings, providerRecordings, sms, config, clock, metrics, log });
  }
  const deps: AppDeps = {
    config,
    storage,
    metrics,
    clock,
    calls,
    campaigns,
    sms,
    webhooks,
    inspection,
    providers: providers.status,
    carrierKeys,
    recordings: { bucket, transfers: bucketTransfers },
    isReady: () => ready,
  };
  const routes = allRoutes(deps);
  let media: MediaSockets | null = null;
  let debug: DebugSockets | null = null;
  let webMedia: WebMediaSockets | null = null;
  const auth = createAuthenticator(storage.accounts);
  // One set of rate-limit buckets for HTTP and websocket upgrades alike: one budget per key, and per client IP without one.
  const limits = new RateLimits(config.rateLimits);
  const pipeline = createPipeline({
    storage,
    auth,
    metrics,
    log,
    routes,
    limits,
    clock,
    maxBodyBytes: config.maxBodyBytes,
  });
  const http = await startHttpServer({
    host: config.host,
    port: config.port,
    maxBodyBytes: config.maxBodyBytes,
    maxInflightBodyBytes: config.maxInflightBodyBytes,
    // A refused body is read (not kept) up to twice the limit, so clients that send it
    // whole before reading see the answer; longer ones get it with Connection: close.
    lingerBytes: 2 * config.maxBodyBytes,
    trustProxy: config.trustProxy,
    pipeline,
    log,
    websockets: (app) => {
      media = registerMediaSockets(app, {
        bindings: opts.mediaBindings ?? calls.bindings,
        engine: selectEngine(config.mediaEngine, () => conversation!.engine),
        clock,
        metrics,
        log,
        ...opts.media,
      });
      // Browsers' web calls (POST /v1/web-calls): the same engine as the carriers' streams.
      webMedia = registerWebMediaSockets(app, {
        bindings: calls.webBindings,
        engine: selectEngine(config.mediaEngine, () => conversation!.engine),
        watchCall: calls.watchContext,
        clock,
        metrics,
        log,
      });
      debug = registerDebugSockets(app, {
        source: inspection,
        auth,
        clock,
        metrics,
        log,
        trustProxy: config.trustProxy,
        limits,
        ...opts.debug,
      });
    },
    ...(opts.configure ? { configure: opts.configure } : {}),
  });
  const sweep = setInterval(() => storage.idempotency.sweep(clock()), 3_600_000);
  sweep.unref();
  // Log lines are written in 4 KiB batches; a quiet service still shows them within a second.
  const flush = setInterval(() => log.flush(), 1000);
  flush.unref();
  await restoring;
  calls.scheduler.start();
  sms.start();
  webhooks.start();
  analysis.start();
  bucketTransfers.start();
  retention.start();
  ready = true;
  log.info({ port: http.port, data_dir: resolve(config.dataDir) }, 'switchboard listening');
  log.flush();

  let stopping: Promise<void> | null = null;
  return {
    port: http.port,
    url: `http://127.0.0.1:${http.port}`,
    storage,
    http,
    log,
    inspection,
    stop() {
      stopping ??= (async () => {
        ready = false;
        clearInterval(sweep);
        clearInterval(flush);
        // Streams end while the database is open: their calls' actors record MEDIA.STOPPED.
        media?.closeAll();
        webMedia?.closeAll();
        debug?.closeAll();
        await http.close(config.shutdownGraceMs);
        calls.stop();
        sms.stop();
        await webhooks.stop();
        // Recordings of the calls the closed streams ended are encoded and attached first.
        await recordings.idle();
        await providerRecordings.idle();
        await retention.stop();
        // An upload cut short here stays committed: the next start sends it again.
        await bucketTransfers.stop();
        await analysis.stop();
        if (!opts.webhookAgent) webhookAgent.destroy();
        conversation?.stop();
        db.close();
      })();
      return stopping;
    },
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const sb = await startSwitchboard(config);
  const shutdown = (signal: string) => {
    sb.log.info({ signal }, 'shutting down');
    sb.stop()
      .then(() => sb.log.flush())
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
