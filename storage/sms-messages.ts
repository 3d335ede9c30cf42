// SMS messages in and out (migrations 1 and 12). An outbound row is its own effect intent
// (see the migration): `queue` commits it before anything leaves, `markSending` right
// before the carrier request, `settle` with what the carrier answered or called back.
// Statuses only move forward (queued → sending → sent → delivered | undelivered | failed),
// so a late or repeated callback never undoes a newer one. A campaign message's recipient
// row follows its message inside the same statement's transaction (sms-campaigns.ts), so
// the campaign's counts are never out of step with its messages.
import type { Db } from './db.ts';
import { transactional } from './db.ts';

export type SmsStatus = 'queued' | 'sending' | 'sent' | 'delivered' | 'undelivered' | 'failed' | 'cancelled' | 'received';
export type SmsOrigin = 'api' | 'campaign' | 'reply' | 'call' | 'booking' | 'opt_out' | 'inbound';
export type SmsCarrier = 'twilio' | 'telnyx';

export interface SmsRow {
  message_id: string;
  account_id: string;
  direction: 'inbound' | 'outbound';
  from_number: string;
  to_number: string;
  body: string;
  status: SmsStatus;
  created_at: number;
  agent_id: string | null;
  origin: SmsOrigin;
  campaign_id: string | null;
  campaign_seq: number | null;
  call_id: string | null;
  carrier: SmsCarrier | null;
  carrier_message_id: string | null;
  error_code: string | null;
  error_message: string | null;
  attempts: number;
  attempted_at: number | null;
  sent_at: number | null;
  updated_at: number | null;
  reply_state: 'pending' | 'answered' | 'failed' | 'none' | null;
}

export interface NewOutbound {
  messageId: string;
  accountId: string;
  from: string;
  to: string;
  body: string;
  origin: Exclude<SmsOrigin, 'inbound'>;
  agentId: string | null;
  carrier: SmsCarrier;
  campaignId?: string | null;
  campaignSeq?: number | null;
  callId?: string | null;
  /** `failed` for a message refused before it could be sent (an unsubscribed recipient). */
  status?: 'queued' | 'failed';
  errorCode?: string | null;
  errorMessage?: string | null;
  now: number;
}

export interface NewInbound {
  messageId: string;
  accountId: string;
  from: string;
  to: string;
  body: string;
  agentId: string | null;
  carrier: SmsCarrier;
  carrierMessageId: string;
  replyState: 'pending' | 'none';
  now: number;
}

/** Where a status stands: a settle never moves a message back. */
const RANK: Record<SmsStatus, number> = { queued: 0, sending: 1, sent: 2, delivered: 3, undelivered: 3, failed: 3, cancelled: 3, received: 3 };

/** The recipient state a campaign message's status gives its row. */
export function recipientStateOf(status: SmsStatus): 'pending' | 'delivered' | 'failed' | 'cancelled' {
  if (status === 'sent' || status === 'delivered') return 'delivered';
  if (status === 'failed' || status === 'undelivered') return 'failed';
  if (status === 'cancelled') return 'cancelled';
  return 'pending';
}

export interface SmsListFilter {
  phoneNumber?: string | undefined;
  direction?: 'inbound' | 'outbound' | undefined;
  since?: number | undefined;
  until?: number | undefined;
  limit: number;
  offset: number;
}

export function createSmsMessagesRepo(db: Db) {
  const tx = transactional(db);
  const insertOut = db.prepare(
    `INSERT INTO sms_messages (message_id, account_id, direction, from_number, to_number, body, status, created_at, agent_id, origin,
                               campaign_id, campaign_seq, call_id, carrier, error_code, error_message, updated_at)
     VALUES (@messageId, @accountId, 'outbound', @from, @to, @body, @status, @now, @agentId, @origin,
             @campaignId, @campaignSeq, @callId, @carrier, @errorCode, @errorMessage, @now)`,
  );
  const insertIn = db.prepare(
    `INSERT INTO sms_messages (message_id, account_id, direction, from_number, to_number, body, status, created_at, agent_id, origin,
                               carrier, carrier_message_id, reply_state, updated_at)
     VALUES (@messageId, @accountId, 'inbound', @from, @to, @body, 'received', @now, @agentId, 'inbound',
             @carrier, @carrierMessageId, @replyState, @now)`,
  );
  const byIdStmt = db.prepare<[string], SmsRow>('SELECT * FROM sms_messages WHERE message_id = ?');
  const getStmt = db.prepare<[string, string], SmsRow>('SELECT * FROM sms_messages WHERE message_id = ? AND account_id = ?');
  const byCarrierStmt = db.prepare<[string, string], SmsRow>('SELECT * FROM sms_messages WHERE carrier = ? AND carrier_message_id = ?');
  const unsettledStmt = db.prepare<[string], SmsRow>(`SELECT * FROM sms_messages WHERE status = ? ORDER BY created_at, rowid`);
  const markSendingStmt = db.prepare(
    `UPDATE sms_messages SET status = 'sending', attempts = attempts + 1, attempted_at = ?, updated_at = ? WHERE message_id = ? AND status IN ('queued', 'sending')`,
  );
  const requeueStmt = db.prepare(`UPDATE sms_messages SET status = 'queued', updated_at = ? WHERE message_id = ? AND status = 'sending'`);
  const settleStmt = db.prepare(
    `UPDATE sms_messages
        SET status = @status,
            carrier_message_id = COALESCE(@carrierMessageId, carrier_message_id),
            error_code = COALESCE(@errorCode, error_code),
            error_message = COALESCE(@errorMessage, error_message),
            sent_at = CASE WHEN @accepted = 1 THEN COALESCE(sent_at, @now) ELSE sent_at END,
            updated_at = @now
      WHERE message_id = @messageId`,
  );
  const recipientFollows = db.prepare(`UPDATE sms_recipients SET state = ?, message_id = ? WHERE campaign_id = ? AND seq = ?`);
  const knownIdsStmt = db.prepare<[string, string, string, number], { carrier_message_id: string }>(
    `SELECT carrier_message_id FROM sms_messages
      WHERE carrier = ? AND from_number = ? AND to_number = ? AND created_at >= ? AND carrier_message_id IS NOT NULL`,
  );
  const threadStmt = db.prepare<[string, string, string, string, string, number], SmsRow>(
    `SELECT * FROM (
       SELECT * FROM sms_messages
        WHERE account_id = ? AND ((from_number = ? AND to_number = ?) OR (from_number = ? AND to_number = ?))
          AND status NOT IN ('queued', 'cancelled', 'failed')
        ORDER BY created_at DESC, rowid DESC LIMIT ?)
     ORDER BY created_at, message_id`,
  );
  const lastCampaignStmt = db.prepare<[string, string, string, number], { campaign_id: string; sent_at: number }>(
    `SELECT campaign_id, COALESCE(sent_at, created_at) AS sent_at FROM sms_messages
      WHERE account_id = ? AND from_number = ? AND to_number = ? AND campaign_id IS NOT NULL
        AND status IN ('sent', 'delivered') AND COALESCE(sent_at, created_at) >= ?
      ORDER BY COALESCE(sent_at, created_at) DESC LIMIT 1`,
  );
  const awaitingStmt = db.prepare<[number, number, number], SmsRow>(
    `SELECT * FROM sms_messages WHERE status = 'sent' AND created_at >= ? AND COALESCE(updated_at, created_at) < ? ORDER BY created_at LIMIT ?`,
  );
  const forgetRefusedStmt = db.prepare<[string]>(`DELETE FROM sms_messages WHERE message_id = ? AND status = 'failed' AND carrier_message_id IS NULL AND sent_at IS NULL`);
  const setReplyStmt = db.prepare(`UPDATE sms_messages SET reply_state = ?, updated_at = ? WHERE message_id = ?`);
  const pendingRepliesStmt = db.prepare<[], SmsRow>(`SELECT * FROM sms_messages WHERE reply_state = 'pending' ORDER BY created_at, rowid`);
  const cancelQueuedStmt = db.prepare<[number, string]>(
    `UPDATE sms_messages SET status = 'cancelled', updated_at = ? WHERE campaign_id = ? AND status = 'queued'`,
  );

  function follow(row: SmsRow, status: SmsStatus): void {
    if (row.campaign_id !== null && row.campaign_seq !== null) recipientFollows.run(recipientStateOf(status), row.message_id, row.campaign_id, row.campaign_seq);
  }

  return {
    /** Commits an outbound message (queued: its intent; or failed before sending). A campaign's recipient row follows. */
    queue(m: NewOutbound): void {
      const status = m.status ?? 'queued';
      insertOut.run({
        messageId: m.messageId,
        accountId: m.accountId,
        from: m.from,
        to: m.to,
        body: m.body,
        status,
        now: m.now,
        agentId: m.agentId,
        origin: m.origin,
        campaignId: m.campaignId ?? null,
        campaignSeq: m.campaignSeq ?? null,
        callId: m.callId ?? null,
        carrier: m.carrier,
        errorCode: m.errorCode ?? null,
        errorMessage: m.errorMessage ?? null,
      });
      if (m.campaignId != null && m.campaignSeq != null) recipientFollows.run(recipientStateOf(status), m.messageId, m.campaignId, m.campaignSeq);
    },

    /** Stores a received message; false when the carrier's id was stored before (a webhook delivered twice). */
    receive(m: NewInbound): boolean {
      if (byCarrierStmt.get(m.carrier, m.carrierMessageId)) return false;
      insertIn.run(m);
      return true;
    },

    byId: (messageId: string): SmsRow | undefined => byIdStmt.get(messageId),
    /** The account's message, or undefined (another account's id is not found). */
    get: (accountId: string, messageId: string): SmsRow | undefined => getStmt.get(messageId, accountId),
    byCarrierId: (carrier: SmsCarrier, carrierMessageId: string): SmsRow | undefined => byCarrierStmt.get(carrier, carrierMessageId),

    list(accountId: string, f: SmsListFilter): { rows: SmsRow[]; count: number } {
      const where = ['account_id = @accountId'];
      if (f.phoneNumber !== undefined) where.push('(from_number = @phone OR to_number = @phone)');
      if (f.direction !== undefined) where.push('direction = @direction');
      if (f.since !== undefined) where.push('created_at >= @since');
      if (f.until !== undefined) where.push('created_at < @until');
      const params = { accountId, phone: f.phoneNumber ?? null, direction: f.direction ?? null, since: f.since ?? null, until: f.until ?? null };
      const sql = where.join(' AND ');
      const count = (db.prepare(`SELECT COUNT(*) AS n FROM sms_messages WHERE ${sql}`).get(params) as { n: number }).n;
      const rows = db
        .prepare(`SELECT * FROM sms_messages WHERE ${sql} ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`)
        .all({ ...params, limit: f.limit, offset: f.offset }) as SmsRow[];
      return { rows, count };
    },

    /** Outbound messages waiting for their turn (`queued`) or whose request may have left (`sending`), oldest first. */
    unsettled: (status: 'queued' | 'sending'): SmsRow[] => unsettledStmt.all(status),

    /** Commits that the request is about to leave; false when the message is not waiting any more (settled, cancelled). */
    markSending(messageId: string, now: number): boolean {
      return markSendingStmt.run(now, now, messageId).changes === 1;
    },

    /** The request provably never left (or the carrier has no such message): waiting again. */
    requeue(messageId: string, now: number): void {
      requeueStmt.run(now, messageId);
    },

    /**
     * Records what the carrier said; ignored when the message already stands further on
     * (a late `sent` after `delivered`). A campaign message's recipient row follows.
     * Returns the row as it stands after.
     */
    settle(
      messageId: string,
      s: { status: Exclude<SmsStatus, 'queued' | 'sending' | 'received'>; carrierMessageId?: string | null; errorCode?: string | null; errorMessage?: string | null; now: number },
    ): SmsRow | undefined {
      return tx(() => {
        const row = byIdStmt.get(messageId);
        if (!row) return undefined;
        // Forward only; a final status may still turn `failed` (a delivery that failed after all).
        const forward = RANK[s.status] > RANK[row.status] || (row.status === 'delivered' && (s.status === 'failed' || s.status === 'undelivered'));
        if (!forward) return row;
        settleStmt.run({
          messageId,
          status: s.status,
          carrierMessageId: s.carrierMessageId ?? null,
          errorCode: s.errorCode ?? null,
          errorMessage: s.errorMessage ?? null,
          accepted: s.status === 'sent' || s.status === 'delivered' || s.carrierMessageId != null ? 1 : 0,
          now: s.now,
        });
        follow(row, s.status);
        return byIdStmt.get(messageId);
      });
    },

    /** Carrier ids of messages already known from `from` to `to` since `since`: a reconciliation never takes them for another. */
    knownCarrierIds(carrier: SmsCarrier, from: string, to: string, since: number): string[] {
      return knownIdsStmt.all(carrier, from, to, since).map((r) => r.carrier_message_id);
    },

    /** The latest messages between our number and a person, oldest first (what the SMS agent reads). */
    thread(accountId: string, ourNumber: string, phone: string, limit: number): SmsRow[] {
      return threadStmt.all(accountId, ourNumber, phone, phone, ourNumber, limit);
    },

    /** The campaign that texted `phone` from `ourNumber` most recently since `since`, if any. */
    lastCampaignTo(accountId: string, ourNumber: string, phone: string, since: number): { campaignId: string; sentAt: number } | null {
      const r = lastCampaignStmt.get(accountId, ourNumber, phone, since);
      return r ? { campaignId: r.campaign_id, sentAt: r.sent_at } : null;
    },

    /**
     * Texts the carrier took but whose final delivery report never came (it may have come
     * while the service was down): created since `since`, unchanged since `quietSince`.
     */
    awaitingReport(since: number, quietSince: number, limit: number): SmsRow[] {
      return awaitingStmt.all(since, quietSince, limit);
    },

    /**
     * Removes a single send the carrier refused while its request was still waiting: the
     * caller is answered with the refusal, so, as with any refused request, nothing stays.
     */
    forgetRefused(messageId: string): boolean {
      return forgetRefusedStmt.run(messageId).changes === 1;
    },

    setReplyState(messageId: string, state: 'answered' | 'failed', now: number): void {
      setReplyStmt.run(state, now, messageId);
    },
    pendingReplies: (): SmsRow[] => pendingRepliesStmt.all(),

    /** A cancelled campaign's messages still waiting for their turn never go. Returns how many. */
    cancelQueued(campaignId: string, now: number): number {
      return cancelQueuedStmt.run(now, campaignId).changes;
    },
  };
}

export type SmsMessagesRepo = ReturnType<typeof createSmsMessagesRepo>;
