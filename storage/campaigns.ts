// Batch campaigns and their recipients (migration 011). Creation writes the campaign and
// every recipient in the caller's one transaction (10,000 rows: one prepared INSERT run
// per row, inside it). The campaign actor's snapshot is projected onto its row
// (`project`); a recipient row changes state only inside the commits that change the
// world: `placed` in the first commit of the call placed for it, an end state in that
// call's last commit, `cancelled` in the campaign's cancelling commit. The counts the API
// shows are the rows counted by state. Every query of the API is scoped by account.
import type { Db } from './db.ts';
import type { SecretBox } from './secret-box.ts';

export type CampaignStatus = 'scheduled' | 'running' | 'completed' | 'cancelled' | 'failed';
export type RecipientState = 'pending' | 'placed' | 'completed' | 'voicemail' | 'failed' | 'cancelled';

export interface CampaignRow {
  id: string;
  account_id: string;
  agent_id: string;
  name: string | null;
  from_number: string;
  prompt: Buffer;
  status: CampaignStatus;
  schedule_type: 'now' | 'schedule';
  scheduled_date: string | null;
  window_start_minutes: number | null;
  window_end_minutes: number | null;
  window_days: string | null;
  timezone: string;
  max_concurrent: number | null;
  total_count: number;
  valid_count: number;
  invalid_count: number;
  invalid: string;
  error: string | null;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
}

export interface NewCampaign {
  id: string;
  accountId: string;
  agentId: string;
  name: string | null;
  fromNumber: string;
  prompt: string;
  status: CampaignStatus;
  /** Set when it runs from its first commit. */
  startedAt: number | null;
  scheduleType: 'now' | 'schedule';
  scheduledDate: string | null;
  windowStartMinutes: number | null;
  windowEndMinutes: number | null;
  windowDays: readonly string[] | null;
  timezone: string;
  maxConcurrent: number | null;
  totalCount: number;
  invalid: readonly { phone: string | null; reason: string; row_index: number }[];
  createdAt: number;
  recipients: readonly NewRecipient[];
}

export interface NewRecipient {
  rowIndex: number;
  phone: string;
  variables?: Readonly<Record<string, unknown>> | null | undefined;
  promptOverride?: string | null | undefined;
}

export interface RecipientRow {
  campaign_id: string;
  seq: number;
  row_index: number;
  account_id: string;
  phone: string;
  state: RecipientState;
  call_id: string | null;
  attempts: number;
  ended_reason: string | null;
  placed_at: number | null;
  ended_at: number | null;
}

/** A recipient with what only the call placed for it may read (unsealed). */
export interface RecipientToDial extends RecipientRow {
  variables: Record<string, unknown>;
  promptOverride: string | null;
}

export interface CampaignCounts {
  pending: number;
  placed: number;
  completed: number;
  voicemail: number;
  failed: number;
  cancelled: number;
}

export interface CampaignProjection {
  status: CampaignStatus;
  startedAt: number | null;
  completedAt: number | null;
  error: string | null;
}

const ZERO: CampaignCounts = { pending: 0, placed: 0, completed: 0, voicemail: 0, failed: 0, cancelled: 0 };

export function createCampaignsRepo(db: Db, secrets: SecretBox) {
  const insertCampaign = db.prepare(
    `INSERT INTO batch_campaigns (id, account_id, agent_id, name, from_number, prompt, status, schedule_type, scheduled_date,
       window_start_minutes, window_end_minutes, window_days, timezone, max_concurrent, total_count, valid_count, invalid_count, invalid, created_at, started_at)
     VALUES (@id, @accountId, @agentId, @name, @fromNumber, @prompt, @status, @scheduleType, @scheduledDate,
       @windowStartMinutes, @windowEndMinutes, @windowDays, @timezone, @maxConcurrent, @totalCount, @validCount, @invalidCount, @invalid, @createdAt, @startedAt)`,
  );
  const insertRecipient = db.prepare('INSERT INTO campaign_recipients (campaign_id, seq, row_index, account_id, phone, details) VALUES (?, ?, ?, ?, ?, ?)');
  const one = db.prepare<[string, string], CampaignRow>('SELECT * FROM batch_campaigns WHERE account_id = ? AND id = ?');
  const byId = db.prepare<[string], CampaignRow>('SELECT * FROM batch_campaigns WHERE id = ?');
  const list = db.prepare<[string, number, number], CampaignRow>('SELECT * FROM batch_campaigns WHERE account_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?');
  const countOf = db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM batch_campaigns WHERE account_id = ?');
  const project = db.prepare('UPDATE batch_campaigns SET status = ?, started_at = ?, completed_at = ?, error = ? WHERE id = ?');
  const counts = db.prepare<[string], { state: RecipientState; n: number }>('SELECT state, COUNT(*) AS n FROM campaign_recipients WHERE campaign_id = ? GROUP BY state');
  const recipient = db.prepare<[string, number], RecipientRow & { details: Buffer | null }>('SELECT * FROM campaign_recipients WHERE campaign_id = ? AND seq = ?');
  const markPlaced = db.prepare("UPDATE campaign_recipients SET state = 'placed', call_id = ?, placed_at = ?, attempts = attempts + 1 WHERE campaign_id = ? AND seq = ? AND state = 'pending'");
  const endByCall = db.prepare<[string, string | null, number, string], { seq: number }>(
    "UPDATE campaign_recipients SET state = ?, ended_reason = ?, ended_at = ? WHERE call_id = ? AND state = 'placed' RETURNING seq",
  );
  const giveBack = db.prepare<[string, number], { seq: number }>(
    "UPDATE campaign_recipients SET state = 'pending', call_id = NULL, placed_at = NULL WHERE call_id = ? AND state = 'placed' AND attempts < ? RETURNING seq",
  );
  const cancelPending = db.prepare("UPDATE campaign_recipients SET state = 'cancelled', ended_at = ? WHERE campaign_id = ? AND state = 'pending'");

  return {
    /** The campaign and all its recipients; call it inside the creating transaction. */
    create(c: NewCampaign): void {
      insertCampaign.run({
        id: c.id,
        accountId: c.accountId,
        agentId: c.agentId,
        name: c.name,
        fromNumber: c.fromNumber,
        prompt: secrets.seal(c.prompt),
        status: c.status,
        scheduleType: c.scheduleType,
        scheduledDate: c.scheduledDate,
        windowStartMinutes: c.windowStartMinutes,
        windowEndMinutes: c.windowEndMinutes,
        windowDays: c.windowDays === null ? null : JSON.stringify(c.windowDays),
        timezone: c.timezone,
        maxConcurrent: c.maxConcurrent,
        totalCount: c.totalCount,
        validCount: c.recipients.length,
        invalidCount: c.invalid.length,
        invalid: JSON.stringify(c.invalid),
        createdAt: c.createdAt,
        startedAt: c.startedAt,
      });
      c.recipients.forEach((r, seq) => {
        const hasDetails = (r.variables && Object.keys(r.variables).length > 0) || (r.promptOverride ?? null) !== null;
        const details = hasDetails ? secrets.seal(JSON.stringify({ variables: r.variables ?? {}, prompt_override: r.promptOverride ?? null })) : null;
        insertRecipient.run(c.id, seq, r.rowIndex, c.accountId, r.phone, details);
      });
    },
    get(accountId: string, id: string): CampaignRow | undefined {
      return one.get(accountId, id);
    },
    /** The campaign whatever its account: the actor's own look-ups (it knows its id). */
    byId(id: string): CampaignRow | undefined {
      return byId.get(id);
    },
    list(accountId: string, limit: number, offset: number): { rows: CampaignRow[]; total: number } {
      return { rows: list.all(accountId, limit, offset), total: countOf.get(accountId)!.n };
    },
    promptOf(row: CampaignRow): string {
      return secrets.openText(row.prompt);
    },
    /** Writes the actor's snapshot onto its row (inside the actor's commit). */
    project(id: string, p: CampaignProjection): void {
      project.run(p.status, p.startedAt, p.completedAt, p.error, id);
    },
    counts(id: string): CampaignCounts {
      const out = { ...ZERO };
      for (const r of counts.all(id)) out[r.state] = r.n;
      return out;
    },
    /** The recipient at `seq`, with its variables and prompt override opened; undefined past the end. */
    recipientToDial(campaignId: string, seq: number): RecipientToDial | undefined {
      const row = recipient.get(campaignId, seq);
      if (!row) return undefined;
      const { details, ...rest } = row;
      const d = details ? (JSON.parse(secrets.openText(details)) as { variables?: Record<string, unknown>; prompt_override?: string | null }) : {};
      return { ...rest, variables: d.variables ?? {}, promptOverride: d.prompt_override ?? null };
    },
    /**
     * The recipient is placed: inside the first commit of its call. Throws when the row is
     * not pending (placed already), which rolls that commit back: no second call.
     */
    markPlaced(campaignId: string, seq: number, callId: string, at: number): void {
      if (markPlaced.run(callId, at, campaignId, seq).changes !== 1) throw new Error(`recipient ${seq} of ${campaignId} is not pending`);
    },
    /** The call placed for a recipient ended: inside the call's last commit. Its seq; undefined when no placed recipient has this call. */
    endByCall(callId: string, state: 'completed' | 'voicemail' | 'failed', endedReason: string | null, at: number): number | undefined {
      return endByCall.get(state, endedReason, at, callId)?.seq;
    },
    /**
     * The call placed for a recipient was never placed at the carrier (its dial's answer
     * was lost and the carrier has no such call): the recipient is pending again, to be
     * dialed for the first time, unless it had `maxAttempts` such calls already. Inside the
     * call's last commit. Its seq; undefined when the row was not given back.
     */
    giveBack(callId: string, maxAttempts: number): number | undefined {
      return giveBack.get(callId, maxAttempts)?.seq;
    },
    /** Cancels every recipient not yet placed; how many. Inside the campaign's cancelling commit. */
    cancelPending(campaignId: string, at: number): number {
      return cancelPending.run(at, campaignId).changes;
    },
  };
}

export type CampaignsRepo = ReturnType<typeof createCampaignsRepo>;
