// SMS on the runtime the calls kind owns: one paced sender per sending number shared by
// every outbound text (single sends, campaign rows, auto-replies, in-call texts), SMS
// campaigns as the third actor kind, and what the carriers' SMS webhooks mean (a text
// received, STOP and START, a delivery status). Every outbound text is committed before
// it leaves and sent exactly once (sms-sender.ts).
import type { Logger } from 'pino';
import { initialTransition } from 'xstate';
import type { Storage } from '../../storage/index.ts';
import type { Metrics } from '../../metrics.ts';
import type { Config } from '../../config.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import type { NewSmsCampaign, SmsCampaignEdit, SmsRecipient } from '../../storage/sms-campaigns.ts';
import type { SmsRow, SmsStatus } from '../../storage/sms-messages.ts';
import { newPrefixedId } from '../../storage/ids.ts';
import type { CallSystem } from '../calls/call-system.ts';
import { createTwilioSms } from '../../voice/carriers/twilio-sms.ts';
import { createTelnyxSms } from '../../voice/carriers/telnyx-sms.ts';
import type { CarrierSms } from '../../voice/carriers/sms.ts';
import { smsCampaignMachine, smsCampaignStatusOf, type SmsCampaignSnapshot } from '../../machines/sms-campaign.ts';
import type { SmsCampaignInput } from '../../machines/sms-campaign-events.ts';
import { createPacer } from './paced-sender.ts';
import { createSmsSender, REPORT_QUIET_MS, type DeliverMode } from './sms-sender.ts';
import { sendRecipientEffect } from './send-recipient.ts';
import { smsCampaignKind, SMS_CAMPAIGN_KIND } from './sms-campaign-kind.ts';
import { keywordOf, OPT_IN_CONFIRMATION, OPT_OUT_CONFIRMATION } from './opt-out.ts';
import type { SmsAgent } from './sms-agent.ts';

export interface SmsSystemDeps {
  storage: Storage;
  calls: CallSystem;
  config: Pick<Config, 'publicBaseUrl' | 'twilioApiBase' | 'telnyxApiBase' | 'smsSendIntervalMs' | 'smsResendAfterMs'>;
  clock: () => number;
  log: Logger;
  metrics: Metrics;
  /** Answers texts on numbers with sms_reply_enabled; null when no model is configured (texts stay unanswered, logged). */
  agent: SmsAgent | null;
  /** Waits; the pacing test passes a manual clock's. */
  sleep?: (ms: number) => Promise<void>;
}

export type SmsLaunchResult = 'launched' | 'not_found' | 'already_running' | 'already_done' | 'no_recipients' | 'commit_failed';
export type SmsCancelResult = { cancelled: number } | 'not_found' | 'already_done' | 'commit_failed';
export type SmsPatchResult = 'patched' | 'not_found' | 'not_editable' | 'commit_failed';

const realSleep = (ms: number) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    t.unref();
  });

export function createSmsSystem(deps: SmsSystemDeps) {
  const { storage, calls, config, clock, log, metrics } = deps;
  const supervisor = calls.supervisor;
  const sleep = deps.sleep ?? realSleep;
  const pacer = createPacer({ now: clock, sleep, intervalMs: config.smsSendIntervalMs });
  let sent = 0;
  let reportTimer: NodeJS.Timeout | null = null;

  function carrierFor(number: PhoneNumberRow): CarrierSms {
    const c = storage.numbers.openCredentials(number);
    if (c.provider === 'twilio') return createTwilioSms({ baseUrl: config.twilioApiBase, accountSid: c.account_sid, authToken: c.auth_token });
    return createTelnyxSms({ baseUrl: config.telnyxApiBase, apiKey: c.api_key });
  }
  const statusCallbackUrl = (number: PhoneNumberRow): string =>
    number.provider === 'twilio' ? `${config.publicBaseUrl}/carrier/twilio/sms/status` : `${config.publicBaseUrl}/carrier/telnyx/events/${number.events_token ?? ''}`;

  const sender = createSmsSender({ storage, pacer, carrierFor, statusCallbackUrl, clock, sleep, log, resendAfterMs: config.smsResendAfterMs });
  const send = sendRecipientEffect({ storage, sender, clock });

  supervisor.register(
    smsCampaignKind({
      storage,
      send: {
        async run(r) {
          const outcome = await send.run(r);
          if (outcome.type === 'SENT') sent++;
          return outcome;
        },
      },
      settled: (_ctx, status, live) => {
        if (!live) metrics.count('switchboard_sms_campaigns_finished_total', 'SMS campaigns finished since the process started, by status.', 'status', status);
      },
    }),
  );
  metrics.gauge('switchboard_sms_campaigns_running', 'SMS campaigns sending now.', () =>
    supervisor.list({ kind: SMS_CAMPAIGN_KIND }).filter((a) => smsCampaignStatusOf(a.snapshot as SmsCampaignSnapshot) === 'running').length,
  );
  metrics.gauge('switchboard_sms_campaign_messages_total', 'Messages SMS campaigns sent (accepted or refused) since the process started.', () => sent);
  metrics.gauge('switchboard_sms_waiting', 'Texts waiting for their turn on their number (1 per number per SMS_SEND_INTERVAL_MS).', () => pacer.waiting());

  const liveStatus = (id: string) => {
    const snap = supervisor.snapshotOf(id) as SmsCampaignSnapshot | null;
    return snap === null ? null : smsCampaignStatusOf(snap);
  };

  /** Commits an outbound text and starts it on its way; resolves with its row once it settles. */
  function queueText(
    m: { accountId: string; number: PhoneNumberRow; to: string; body: string; origin: 'api' | 'reply' | 'call' | 'booking' | 'opt_out'; agentId: string | null; callId?: string | null },
    mode: DeliverMode = { failFast: false },
    inCommit?: (row: SmsRow) => void,
  ) {
    const messageId = newPrefixedId('msg');
    if (inCommit) {
      storage.tx(() => {
        queueRow();
        inCommit(storage.sms.byId(messageId)!);
      });
    } else queueRow();
    function queueRow() {
      storage.sms.queue({ messageId, accountId: m.accountId, from: m.number.phone_number, to: m.to, body: m.body, origin: m.origin, agentId: m.agentId, carrier: m.number.provider, callId: m.callId ?? null, now: clock() });
    }
    // After the current synchronous work: a caller that wrapped this in a transaction has committed it by then
    // (one rolled back leaves no row, and nothing is sent).
    const settled = Promise.resolve().then(() => sender.deliver(messageId, mode));
    settled.catch((err: unknown) => log.error({ err, message_id: messageId }, 'sending an SMS failed'));
    return { messageId, settled };
  }

  /** Answers one received text with the agent (sms-agent.ts); a provider failure leaves it unanswered and logged. */
  async function answer(inbound: SmsRow): Promise<void> {
    const number = storage.numbers.get(inbound.account_id, inbound.to_number);
    if (!deps.agent || !number || !number.sms_reply_enabled || number.agent_id === null) {
      storage.sms.setReplyState(inbound.message_id, 'failed', clock());
      if (!deps.agent) log.warn({ message_id: inbound.message_id }, 'SMS auto-reply is on but no model is configured (LLM_API_KEY): the text stays unanswered');
      return;
    }
    let body: string | null;
    try {
      body = await deps.agent.answer(inbound, number);
    } catch (err) {
      log.warn({ err, message_id: inbound.message_id }, 'the model did not answer a text; it stays unanswered');
      storage.sms.setReplyState(inbound.message_id, 'failed', clock());
      return;
    }
    if (body === null || body.trim() === '') {
      storage.sms.setReplyState(inbound.message_id, 'answered', clock());
      return;
    }
    let reply: ReturnType<typeof queueText> | undefined;
    storage.tx(() => {
      // The reply and the inbound's answered mark commit together: a crash answers it again or not at all.
      reply = queueText({ accountId: inbound.account_id, number, to: inbound.from_number, body: body!.slice(0, 1600), origin: 'reply', agentId: number.agent_id });
      storage.sms.setReplyState(inbound.message_id, 'answered', clock());
    });
    await reply?.settled;
  }

  return {
    pacer,
    sender,

    /** Boot (after actors are restored): texts left queued or sending go on, texts left unanswered are answered. */
    start(): void {
      sender.resume();
      for (const row of storage.sms.pendingReplies()) void answer(row);
      // Delivery reports that came while the service was down are asked for now, and any lost since, every REPORT_QUIET_MS.
      const sweep = (quietSince?: number) => void sender.sweepReports(quietSince).catch((err: unknown) => log.error({ err }, 'the SMS delivery report sweep failed'));
      sweep(clock());
      reportTimer = setInterval(() => sweep(), REPORT_QUIET_MS);
      reportTimer.unref();
    },
    stop(): void {
      if (reportTimer) clearInterval(reportTimer);
      sender.stop();
    },

    /** POST /v1/sms: commits the text and waits a moment for its first attempt (a certain refusal is the API's error). */
    async sendOne(
      m: { accountId: string; number: PhoneNumberRow; to: string; body: string; agentId: string | null },
      waitMs: number,
      inCommit?: (row: SmsRow) => void,
    ): Promise<{ row: SmsRow; settled: boolean }> {
      // A request that never left fails the text while its sender still waits for the answer (502); after, it is tried again.
      const mode = { failFast: true };
      const { messageId, settled } = queueText({ ...m, origin: 'api' }, mode, inCommit);
      const first = await Promise.race([settled.then((r) => r ?? null), sleep(waitMs).then(() => null)]);
      mode.failFast = false;
      return { row: first ?? storage.sms.byId(messageId)!, settled: first !== null };
    },

    /** An in-call text (the agent's send_sms tool, a booking confirmation): committed, then paced like any text. */
    sendFromCall(m: { accountId: string; number: PhoneNumberRow; to: string; body: string; agentId: string | null; callId: string; origin: 'call' | 'booking' }): string {
      return queueText(m).messageId;
    },

    /** A text the carrier delivered to one of our numbers (its webhook verified). */
    receive(number: PhoneNumberRow, m: { from: string; body: string; carrierMessageId: string }): 'stored' | 'duplicate' {
      const now = clock();
      const keyword = keywordOf(m.body);
      const replies = number.sms_reply_enabled === 1 && number.agent_id !== null && keyword === null;
      const messageId = newPrefixedId('msg');
      let stored = false;
      storage.tx(() => {
        stored = storage.sms.receive({
          messageId,
          accountId: number.account_id,
          from: m.from,
          to: number.phone_number,
          body: m.body,
          agentId: number.agent_id,
          carrier: number.provider,
          carrierMessageId: m.carrierMessageId,
          replyState: replies ? 'pending' : 'none',
          now,
        });
        if (!stored || keyword === null) return;
        // STOP and START take effect in the commit that stores them; the confirmation goes like any text.
        if (keyword === 'stop') storage.smsOptOuts.optOut(number.account_id, number.phone_number, m.from, now);
        else storage.smsOptOuts.optIn(number.account_id, number.phone_number, m.from);
        queueText({ accountId: number.account_id, number, to: m.from, body: keyword === 'stop' ? OPT_OUT_CONFIRMATION : OPT_IN_CONFIRMATION, origin: 'opt_out', agentId: number.agent_id });
      });
      if (!stored) return 'duplicate';
      if (replies) void answer(storage.sms.byId(messageId)!);
      return 'stored';
    },

    /** A delivery status from the carrier; unknown messages are ignored. */
    status(
      number: PhoneNumberRow,
      carrierMessageId: string,
      status: Extract<SmsStatus, 'sent' | 'delivered' | 'undelivered' | 'failed'>,
      error: { code: string | null; message: string | null },
    ): SmsRow | undefined {
      const row = storage.sms.byCarrierId(number.provider, carrierMessageId);
      // Only a message of the account whose number the status was verified for.
      if (!row || row.account_id !== number.account_id) return undefined;
      return storage.sms.settle(row.message_id, { status, errorCode: error.code, errorMessage: error.message, now: clock() });
    },

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

    liveStatus,
  };
}

export type SmsSystem = ReturnType<typeof createSmsSystem>;
