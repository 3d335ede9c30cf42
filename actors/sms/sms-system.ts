// SMS on the runtime the calls kind owns: one paced sender per sending number shared by
// every outbound text (single sends, campaign rows, auto-replies, in-call texts), SMS
// campaigns as the third actor kind, and what the carriers' SMS webhooks mean (a text
// received, STOP and START, a delivery status). Every outbound text is committed before
// it leaves and sent exactly once (sms-sender.ts).
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { Metrics } from '../../metrics.ts';
import type { Config } from '../../config.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import type { SmsRow, SmsStatus } from '../../storage/sms-messages.ts';
import type { CallSystem } from '../calls/call-system.ts';
import { createTwilioSms } from '../../voice/carriers/twilio-sms.ts';
import { createTelnyxSms } from '../../voice/carriers/telnyx-sms.ts';
import type { CarrierSms } from '../../voice/carriers/sms.ts';
import { smsCampaignStatusOf, type SmsCampaignSnapshot } from '../../machines/sms-campaign.ts';
import { createPacer } from './paced-sender.ts';
import { createSmsSender, REPORT_QUIET_MS } from './sms-sender.ts';
import { sendRecipientEffect } from './send-recipient.ts';
import { smsCampaignKind, SMS_CAMPAIGN_KIND } from './sms-campaign-kind.ts';
import { createOutboundTexts } from './outbound-texts.ts';
import { createInboundTexts } from './inbound-texts.ts';
import { createSmsCampaignOps } from './sms-campaign-ops.ts';
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

  const outbound = createOutboundTexts({ storage, sender, clock, sleep, log });
  const inbound = createInboundTexts({ storage, outbound, agent: deps.agent, clock, log });
  const campaigns = createSmsCampaignOps({ storage, supervisor, clock, log });

  return {
    pacer,
    sender,

    /** Boot (after actors are restored): texts left queued or sending go on, texts left unanswered are answered. */
    start(): void {
      sender.resume();
      inbound.resumeReplies();
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

    sendOne: outbound.sendOne,
    sendFromCall: outbound.sendFromCall,
    receive: inbound.receive,

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

    ...campaigns,
  };
}

export type { SmsCancelResult, SmsLaunchResult, SmsPatchResult } from './sms-campaign-ops.ts';
export type SmsSystem = ReturnType<typeof createSmsSystem>;
