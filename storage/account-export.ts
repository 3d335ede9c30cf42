// One account's data as one JSON document, for data-portability requests (the operator's
// `export-account`). Every column is named, never `SELECT *`: a column added later stays
// out until someone decides it belongs here, so a new secret cannot leak by default.
// Left out on purpose: API key hashes, webhook signing secrets, carrier credentials,
// integration tokens, carrier B's events tokens, media tokens, and every value stored
// sealed (batch campaign prompts, recipients' variables and prompt overrides, per-call
// prompts) — the API never returns those either. Read in one transaction: one snapshot
// of the account, whatever the running service writes meanwhile.
import type { Db } from './db.ts';
import { AGENT_DEFAULTS } from './agents.ts';

export const EXPORT_FORMAT = 'switchboard.account-export/1';

export const NOT_EXPORTED =
  'API key hashes, webhook signing secrets, carrier credentials, integration tokens, events and media tokens, ' +
  'and values stored sealed (batch campaign prompts, recipients’ variables and prompt overrides, per-call prompts)';

type Row = Record<string, unknown>;

const { name: _name, is_active: _active, ...SETTING_DEFAULTS } = AGENT_DEFAULTS;

const iso = (ms: unknown): string | null => (typeof ms === 'number' ? new Date(ms).toISOString() : null);
const bool = (v: unknown): boolean | null => (v === null || v === undefined ? null : v === 1);
/** A JSON column as its value; text that is not JSON stays text. */
function json(v: unknown): unknown {
  if (typeof v !== 'string') return v ?? null;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}

/** Applies per-column conversions to every row: times to ISO 8601, flags to booleans, JSON parsed. */
function shape(rows: Row[], kinds: { times?: string[]; flags?: string[]; json?: string[] }): Row[] {
  return rows.map((r) => {
    const out: Row = { ...r };
    for (const k of kinds.times ?? []) out[k] = iso(r[k]);
    for (const k of kinds.flags ?? []) out[k] = bool(r[k]);
    for (const k of kinds.json ?? []) out[k] = json(r[k]);
    return out;
  });
}

/** Groups rows by `key`, dropping it from each row. */
function groupBy(rows: Row[], key: string): Map<unknown, Row[]> {
  const out = new Map<unknown, Row[]>();
  for (const { [key]: k, ...rest } of rows) {
    const list = out.get(k) ?? [];
    list.push(rest);
    out.set(k, list);
  }
  return out;
}

export function createAccountExport(db: Db) {
  const q = (sql: string) => db.prepare<[string], Row>(sql);
  const account = q('SELECT id AS account_id, plan, concurrency_limit, created_at FROM accounts WHERE id = ?');
  const keys = q('SELECT id AS key_id, name, email, created_at, last_used_at, revoked_at FROM api_keys WHERE account_id = ? ORDER BY created_at, id');
  const agents = q('SELECT agent_id, name, is_active, settings, created_at, updated_at FROM agents WHERE account_id = ? ORDER BY created_at, agent_id');
  const numbers = q(
    `SELECT phone_number, agent_id, provider, source, carrier_number_sid, inbound_enabled, outbound_enabled, custom_prompt, voice_id,
            sms_reply_enabled, sms_prompt, web_prompt, speaking_rate, dtmf_enabled, record_call, voicemail_leave_enabled, voicemail_message,
            require_booking_confirmation, created_at, updated_at
       FROM phone_numbers WHERE account_id = ? ORDER BY created_at, phone_number`,
  );
  const integrations = q(
    'SELECT kind, phone_number, agent_id, config, created_at, updated_at FROM integrations WHERE account_id = ? ORDER BY created_at, kind',
  );
  const functions = q(
    'SELECT id AS function_id, phone_number, name, url, description, parameters, created_at FROM custom_functions WHERE account_id = ? ORDER BY created_at, id',
  );
  const callers = q(
    `SELECT phone_number, caller_number, name, email, phone, location, reference_id, preference, last_call, open_item, created_at, updated_at
       FROM callers WHERE account_id = ? ORDER BY phone_number, caller_number`,
  );
  const calls = q(
    `SELECT call_id, agent_id, direction, call_status, from_number, to_number, phone_number, provider, carrier_call_id, campaign_id,
            created_at, started_at, ended_at, duration_ms, ended_reason, charged_minutes, transcript, summary, sentiment, successful,
            extracted, bookings, analysis_status, voicemail_detected, avg_latency_ms, recording_url, recording_duration_seconds, precall
       FROM calls WHERE account_id = ? ORDER BY COALESCE(started_at, created_at), rowid`,
  );
  const batches = q(
    `SELECT id AS campaign_id, agent_id, name, from_number, status, schedule_type, scheduled_date, window_start_minutes, window_end_minutes,
            window_days, timezone, max_concurrent, total_count, valid_count, invalid_count, invalid, error, created_at, started_at, completed_at
       FROM batch_campaigns WHERE account_id = ? ORDER BY created_at, id`,
  );
  // A recipient's call by its public id (the row keeps the actor's internal one).
  const batchRecipients = q(
    `SELECT r.campaign_id, r.seq, r.row_index, r.phone, r.state, c.call_id, r.attempts, r.ended_reason, r.placed_at, r.ended_at
       FROM campaign_recipients r LEFT JOIN calls c ON c.internal_id = r.call_id
      WHERE r.account_id = ? ORDER BY r.campaign_id, r.seq`,
  );
  const smsCampaigns = q(
    `SELECT id AS campaign_id, agent_id, from_number, name, message_template, context_prompt, reply_window_hours, schedule_type,
            scheduled_at, status, total_count, source, created_at, started_at, finished_at
       FROM sms_campaigns WHERE account_id = ? ORDER BY created_at, id`,
  );
  const smsRecipients = q(
    `SELECT r.campaign_id, r.seq, r.phone, r.variables, r.state, r.message_id
       FROM sms_recipients r JOIN sms_campaigns c ON c.id = r.campaign_id
      WHERE c.account_id = ? ORDER BY r.campaign_id, r.seq`,
  );
  const messages = q(
    `SELECT message_id, direction, from_number, to_number, body, status, origin, agent_id, campaign_id, campaign_seq, call_id, carrier,
            carrier_message_id, error_code, error_message, created_at, sent_at, updated_at
       FROM sms_messages WHERE account_id = ? ORDER BY created_at, message_id`,
  );
  const optOuts = q('SELECT number, phone, created_at FROM sms_opt_outs WHERE account_id = ? ORDER BY created_at, number, phone');

  const read = db.transaction((accountId: string, now: number) => {
    const a = account.get(accountId);
    if (!a) return null;
    const batchRecipientsOf = groupBy(shape(batchRecipients.all(accountId), { times: ['placed_at', 'ended_at'] }), 'campaign_id');
    const smsRecipientsOf = groupBy(shape(smsRecipients.all(accountId), { json: ['variables'] }), 'campaign_id');
    return {
      format: EXPORT_FORMAT,
      exported_at: iso(now),
      not_included: NOT_EXPORTED,
      account: shape([a], { times: ['created_at'] })[0]!,
      api_keys: shape(keys.all(accountId), { times: ['created_at', 'last_used_at', 'revoked_at'] }),
      // Settings over the defaults, as the agents repository reads them: a setting added later shows on older agents too.
      agents: agents.all(accountId).map(({ agent_id, name, is_active, settings, created_at, updated_at }) => ({
        agent_id,
        name,
        is_active: bool(is_active),
        ...SETTING_DEFAULTS,
        ...(json(settings) as Row),
        created_at: iso(created_at),
        updated_at: iso(updated_at),
      })),
      phone_numbers: shape(numbers.all(accountId), {
        times: ['created_at', 'updated_at'],
        flags: ['inbound_enabled', 'outbound_enabled', 'sms_reply_enabled', 'dtmf_enabled', 'record_call', 'voicemail_leave_enabled', 'require_booking_confirmation'],
      }),
      integrations: shape(integrations.all(accountId), { times: ['created_at', 'updated_at'], json: ['config'] }),
      custom_functions: shape(functions.all(accountId), { times: ['created_at'], json: ['parameters'] }),
      callers: shape(callers.all(accountId), { times: ['created_at', 'updated_at'], json: ['last_call'] }),
      calls: shape(calls.all(accountId), {
        times: ['created_at', 'started_at', 'ended_at'],
        flags: ['successful', 'voicemail_detected'],
        json: ['extracted', 'bookings', 'precall'],
      }),
      batch_campaigns: shape(batches.all(accountId), { times: ['created_at', 'started_at', 'completed_at'], json: ['window_days', 'invalid'] }).map((c) => ({
        ...c,
        recipients: batchRecipientsOf.get(c['campaign_id']) ?? [],
      })),
      sms_campaigns: shape(smsCampaigns.all(accountId), { times: ['scheduled_at', 'created_at', 'started_at', 'finished_at'] }).map((c) => ({
        ...c,
        recipients: smsRecipientsOf.get(c['campaign_id']) ?? [],
      })),
      sms_messages: shape(messages.all(accountId), { times: ['created_at', 'sent_at', 'updated_at'] }),
      sms_opt_outs: shape(optOuts.all(accountId), { times: ['created_at'] }),
    };
  });

  return {
    /** The account's document, or null when there is no such account. */
    exportAccount(accountId: string, now: number) {
      return read(accountId, now);
    },
  };
}

export type AccountExport = NonNullable<ReturnType<ReturnType<typeof createAccountExport>['exportAccount']>>;
