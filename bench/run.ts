// `npm run bench`: the long benchmarks, kept out of CI. BENCH_SECONDS and BENCH_ROUNDS
// trade time for steadier medians; BENCH_ONLY=http|outbound|media|vad|conversation|outbox|recording|batch|sms runs
// one of them, and BENCH_ONLY=unclaimed only the media bench's probe of 2,000 silent
// sockets; BENCH_MEDIA_SECONDS sets the length of each media step. The outbound-call
// bench runs BENCH_SECONDS of load with BENCH_OUTBOUND_CONCURRENCY requests in flight
// (default BENCH_CONNECTIONS) against an account whose limit is BENCH_OUTBOUND_LIMIT.
// The VAD bench: BENCH_VAD_CALLS (comma list) and BENCH_VAD_SECONDS. The conversation
// bench (conversation.ts): BENCH_CONVERSATION_STEPS (comma list of concurrent calls;
// `2` is a quick smoke run), BENCH_CONVERSATION_TURNS (caller turns per call),
// BENCH_CONVERSATION_RAMP_MS (calls of a step start spread over this), and
// BENCH_CONVERSATION_KEEP_GOING=1 to run every step past the first that misses the goal;
// the simulated providers' latencies: BENCH_STT_FINAL_MS, BENCH_LLM_FIRST_TOKEN_MS,
// BENCH_LLM_TOKEN_MS, BENCH_TTS_FIRST_AUDIO_MS, BENCH_TTS_SPEED; BENCH_PIN=0 leaves the
// server and the bench unbound to a CPU and at their normal priority. The outbox bench:
// BENCH_OUTBOX_DELIVERIES per round (BENCH_ROUNDS rounds of each connection mode).
// The batch campaign bench (batch.ts): BENCH_BATCH_RECIPIENTS per timed creation (10,000),
// BENCH_BATCH_CREATE_ROUNDS (5, after a cold one), BENCH_BATCH_VARIABLES=0 for rows
// without variables; the dialing campaign's BENCH_BATCH_DIAL_RECIPIENTS (2,000),
// BENCH_BATCH_CONCURRENT (its max_concurrent, 50), BENCH_BATCH_LIMIT (the account's
// concurrency limit, 1,000) and BENCH_BATCH_TIMEOUT_S (300); BENCH_PIN=0 as for the
// conversation bench. The SMS bench (sms.ts): BENCH_SMS_RECIPIENTS per timed creation
// (10,000), BENCH_SMS_CREATE_ROUNDS (5, after a cold one); sending BENCH_SMS_SEND_RECIPIENTS
// (2,000) per step of BENCH_SMS_STEPS (`twilio:1,telnyx:1,twilio:4`: carrier and sending
// numbers) with SMS_SEND_INTERVAL_MS=0, BENCH_SMS_TIMEOUT_S (300) each.
import { DEFAULT_LATENCIES, runConversationBench } from './conversation.ts';
import { runHttpBench } from './http.ts';
import { runMediaBench } from './media.ts';
import { runOutboundBench } from './outbound.ts';
import { runOutboxBench } from './outbox.ts';
import { runVadBench } from './vad.ts';
import { runBatchBench } from './batch.ts';
import { runRecordingBench } from './recording.ts';
import { parseSmsSteps, runSmsBench } from './sms.ts';

const ONLY = ['http', 'outbound', 'media', 'unclaimed', 'vad', 'conversation', 'outbox', 'recording', 'batch', 'sms'];
const only = process.env['BENCH_ONLY'];
if (only !== undefined && !ONLY.includes(only)) {
  throw new Error(`BENCH_ONLY must be one of ${ONLY.join(', ')}`);
}
const list = (name: string, fallback: string): number[] => (process.env[name] ?? fallback).split(',').map(Number);
const num = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);

const seconds = Number(process.env['BENCH_SECONDS'] ?? 5);
const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 50);

if (only === undefined || only === 'http') await runHttpBench({ seconds, rounds, connections });
if (only === undefined || only === 'outbound') {
  await runOutboundBench({
    seconds,
    concurrency: Number(process.env['BENCH_OUTBOUND_CONCURRENCY'] ?? connections),
    limit: Number(process.env['BENCH_OUTBOUND_LIMIT'] ?? 100_000),
    replays: 50,
  });
}
if (only === undefined || only === 'media' || only === 'unclaimed') {
  await runMediaBench({
    seconds: Number(process.env['BENCH_MEDIA_SECONDS'] ?? 5),
    steps: only === 'unclaimed' ? [] : [50, 100, 200, 300, 400, 500, 600, 800, 1000],
    p99LimitMs: 5,
    unclaimedProbe: 2000,
  });
}
if (only === undefined || only === 'vad') {
  await runVadBench(list('BENCH_VAD_CALLS', '50,100,200,300,400,600'), num('BENCH_VAD_SECONDS', 5));
}
if (only === undefined || only === 'conversation') {
  await runConversationBench({
    steps: list('BENCH_CONVERSATION_STEPS', '25,50,100,150,200,300,400'),
    turns: num('BENCH_CONVERSATION_TURNS', 3),
    p95LimitMs: 20,
    rampMs: num('BENCH_CONVERSATION_RAMP_MS', 8000),
    keepGoing: process.env['BENCH_CONVERSATION_KEEP_GOING'] === '1',
    latency: {
      sttFinalMs: num('BENCH_STT_FINAL_MS', DEFAULT_LATENCIES.sttFinalMs),
      llmFirstTokenMs: num('BENCH_LLM_FIRST_TOKEN_MS', DEFAULT_LATENCIES.llmFirstTokenMs),
      llmTokenMs: num('BENCH_LLM_TOKEN_MS', DEFAULT_LATENCIES.llmTokenMs),
      ttsFirstAudioMs: num('BENCH_TTS_FIRST_AUDIO_MS', DEFAULT_LATENCIES.ttsFirstAudioMs),
      ttsSpeedFactor: num('BENCH_TTS_SPEED', DEFAULT_LATENCIES.ttsSpeedFactor),
    },
  });
}
if (only === undefined || only === 'outbox') {
  await runOutboxBench({ deliveries: num('BENCH_OUTBOX_DELIVERIES', 2000), rounds });
}
if (only === undefined || only === 'recording') {
  await runRecordingBench({ seconds: num('BENCH_RECORDING_SECONDS', 600), rounds });
}
if (only === undefined || only === 'batch') {
  await runBatchBench({
    recipients: num('BENCH_BATCH_RECIPIENTS', 10_000),
    createRounds: num('BENCH_BATCH_CREATE_ROUNDS', 5),
    dialRecipients: num('BENCH_BATCH_DIAL_RECIPIENTS', 2000),
    maxConcurrent: num('BENCH_BATCH_CONCURRENT', 50),
    limit: num('BENCH_BATCH_LIMIT', 1000),
    timeoutS: num('BENCH_BATCH_TIMEOUT_S', 300),
    variables: process.env['BENCH_BATCH_VARIABLES'] !== '0',
  });
}
if (only === undefined || only === 'sms') {
  await runSmsBench({
    recipients: num('BENCH_SMS_RECIPIENTS', 10_000),
    createRounds: num('BENCH_SMS_CREATE_ROUNDS', 5),
    sendRecipients: num('BENCH_SMS_SEND_RECIPIENTS', 2000),
    steps: parseSmsSteps(process.env['BENCH_SMS_STEPS'] ?? 'twilio:1,telnyx:1,twilio:4'),
    timeoutS: num('BENCH_SMS_TIMEOUT_S', 300),
  });
}
