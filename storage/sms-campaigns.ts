// SMS campaigns and their recipients (migration 12). Creation writes the campaign and
// every recipient in the caller's one transaction (10,000 rows: one prepared INSERT run
// per row). The campaign actor's status is projected onto its row (`project`); a
// recipient's state follows its message (sms-messages.ts) or turns `cancelled` in the
// campaign's cancelling commit. The counts the API shows are the rows counted by state:
// `delivered` (accepted by the carrier and not failed since), `failed`, and `pending`
// (everything else, cancelled rows included: never accepted), so they add up to the total.
import type { Db } from './db.ts';

export type SmsCampaignStatus = 'draft' | 'scheduled' | 'running' | 'done' | 'cancelled';

export interface SmsCampaignRow {
  id: string;
  account_id: string;
  agent_id: string;
  from_number: string;
  name: string;
  message_template: string;
  context_prompt: string | null;
  reply_window_hours: number;
  schedule_type: 'now' | 'schedule' | 'draft';
  scheduled_at: number | null;
  status: SmsCampaignStatus;
  total_count: number;
  source: string;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface SmsRecipient {
  phone: string;
  variables: Record<string, unknown> | null;
}

export interface NewSmsCampaign {
  id: string;
  accountId: string;
  agentId: string;
  fromNumber: string;
  name: string;
  messageTemplate: string;
  contextPrompt: string | null;
  replyWindowHours: number;
  scheduleType: 'now' | 'schedule' | 'draft';
  scheduledAt: number | null;
  status: SmsCampaignStatus;
  startedAt: number | null;
  source: string;
  createdAt: number;
  recipients: readonly SmsRecipient[];
}

export interface SmsCampaignCounts {
  total: number;
  delivered: number;
  failed: number;
  pending: number;
  cancelled: number;
}

/** Fields PATCH may change (recipients separately). */
export interface SmsCampaignEdit {
  name?: string;
  messageTemplate?: string;
  contextPrompt?: string | null;
  scheduledAt?: number | null;
  replyWindowHours?: number;
}

export function createSmsCampaignsRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO sms_campaigns (id, account_id, agent_id, from_number, name, message_template, context_prompt, reply_window_hours,
                                schedule_type, scheduled_at, status, total_count, source, created_at, started_at)
     VALUES (@id, @accountId, @agentId, @fromNumber, @name, @messageTemplate, @contextPrompt, @replyWindowHours,
             @scheduleType, @scheduledAt, @status, @total, @source, @createdAt, @startedAt)`,
  );
  const insertRecipient = db.prepare<[string, number, string, string | null]>(
    'INSERT INTO sms_recipients (campaign_id, seq, phone, variables) VALUES (?, ?, ?, ?)',
  );
  const deleteRecipients = db.prepare<[string]>('DELETE FROM sms_recipients WHERE campaign_id = ?');
  const setTotal = db.prepare<[number, string]>('UPDATE sms_campaigns SET total_count = ? WHERE id = ?');
  const getStmt = db.prepare<[string, string], SmsCampaignRow>('SELECT * FROM sms_campaigns WHERE id = ? AND account_id = ?');
  const byIdStmt = db.prepare<[string], SmsCampaignRow>('SELECT * FROM sms_campaigns WHERE id = ?');
  const listStmt = db.prepare<[string, number, number], SmsCampaignRow>(
    'SELECT * FROM sms_campaigns WHERE account_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?',
  );
  const countStmt = db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM sms_campaigns WHERE account_id = ?');
  const countsStmt = db.prepare<[string], { state: string; n: number }>('SELECT state, COUNT(*) AS n FROM sms_recipients WHERE campaign_id = ? GROUP BY state');
  const projectStmt = db.prepare(`UPDATE sms_campaigns SET status = @status, started_at = @startedAt, finished_at = @finishedAt WHERE id = @id`);
  const recipientStmt = db.prepare<[string, number], { phone: string; variables: string | null; state: string; message_id: string | null }>(
    'SELECT phone, variables, state, message_id FROM sms_recipients WHERE campaign_id = ? AND seq = ?',
  );
  const allRecipientsStmt = db.prepare<[string], { phone: string; variables: string | null }>('SELECT phone, variables FROM sms_recipients WHERE campaign_id = ? ORDER BY seq');
  const cancelRecipients = db.prepare<[string]>(
    `UPDATE sms_recipients SET state = 'cancelled'
      WHERE campaign_id = ? AND state = 'pending'
        AND (message_id IS NULL OR message_id IN (SELECT message_id FROM sms_messages WHERE status IN ('queued', 'cancelled')))`,
  );
  const cancelMessages = db.prepare<[number, string]>(`UPDATE sms_messages SET status = 'cancelled', updated_at = ? WHERE campaign_id = ? AND status = 'queued'`);

  return {
    /** Inserts the campaign and its recipients (seq in array order); run inside the caller's transaction. */
    create(c: NewSmsCampaign): void {
      insert.run({
        id: c.id,
        accountId: c.accountId,
        agentId: c.agentId,
        fromNumber: c.fromNumber,
        name: c.name,
        messageTemplate: c.messageTemplate,
        contextPrompt: c.contextPrompt,
        replyWindowHours: c.replyWindowHours,
        scheduleType: c.scheduleType,
        scheduledAt: c.scheduledAt,
        status: c.status,
        total: c.recipients.length,
        source: c.source,
        createdAt: c.createdAt,
        startedAt: c.startedAt,
      });
      c.recipients.forEach((r, seq) => insertRecipient.run(c.id, seq, r.phone, r.variables === null ? null : JSON.stringify(r.variables)));
    },

    /** The account's campaign, or undefined (another account's id is not found). */
    get: (accountId: string, id: string): SmsCampaignRow | undefined => getStmt.get(id, accountId),
    byId: (id: string): SmsCampaignRow | undefined => byIdStmt.get(id),

    list(accountId: string, limit: number, offset: number): { rows: SmsCampaignRow[]; count: number } {
      return { rows: listStmt.all(accountId, limit, offset), count: countStmt.get(accountId)!.n };
    },

    counts(id: string, total: number): SmsCampaignCounts {
      const by: Record<string, number> = {};
      for (const r of countsStmt.all(id)) by[r.state] = r.n;
      const delivered = by['delivered'] ?? 0;
      const failed = by['failed'] ?? 0;
      return { total, delivered, failed, pending: total - delivered - failed, cancelled: by['cancelled'] ?? 0 };
    },

    project(id: string, p: { status: SmsCampaignStatus; startedAt: number | null; finishedAt: number | null }): void {
      projectStmt.run({ id, ...p });
    },

    /** PATCH of a draft or scheduled campaign: the given fields, and the whole recipient list when given. */
    edit(id: string, e: SmsCampaignEdit, recipients?: readonly SmsRecipient[]): void {
      const sets: string[] = [];
      const params: Record<string, unknown> = { id };
      const columns: [keyof SmsCampaignEdit, string][] = [
        ['name', 'name'],
        ['messageTemplate', 'message_template'],
        ['contextPrompt', 'context_prompt'],
        ['scheduledAt', 'scheduled_at'],
        ['replyWindowHours', 'reply_window_hours'],
      ];
      for (const [key, column] of columns) {
        if (e[key] === undefined) continue;
        sets.push(`${column} = @${key}`);
        params[key] = e[key];
      }
      if (sets.length > 0) db.prepare(`UPDATE sms_campaigns SET ${sets.join(', ')} WHERE id = @id`).run(params);
      if (recipients) {
        deleteRecipients.run(id);
        recipients.forEach((r, seq) => insertRecipient.run(id, seq, r.phone, r.variables === null ? null : JSON.stringify(r.variables)));
        setTotal.run(recipients.length, id);
      }
    },

    /** Every recipient in send order (PATCH checks a new template against them). */
    recipientsOf(id: string): SmsRecipient[] {
      return allRecipientsStmt.all(id).map((r) => ({ phone: r.phone, variables: r.variables === null ? null : (JSON.parse(r.variables) as Record<string, unknown>) }));
    },

    recipient(id: string, seq: number): (SmsRecipient & { state: string; messageId: string | null }) | undefined {
      const r = recipientStmt.get(id, seq);
      if (!r) return undefined;
      return { phone: r.phone, variables: r.variables === null ? null : (JSON.parse(r.variables) as Record<string, unknown>), state: r.state, messageId: r.message_id };
    },

    /**
     * In the cancelling commit: recipients not sent (no message, or one still waiting its
     * turn) turn `cancelled`, their messages too. Returns how many recipients.
     */
    cancelUnsent(id: string, now: number): number {
      const n = cancelRecipients.run(id).changes;
      cancelMessages.run(now, id);
      return n;
    },
  };
}

export type SmsCampaignsRepo = ReturnType<typeof createSmsCampaignsRepo>;
