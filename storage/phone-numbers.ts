// Imported phone numbers: their per-number settings and their carrier credentials,
// which go in and come out of this file only sealed (AES-256-GCM). Every query is
// scoped by account, except the two look-ups that must see across accounts.
import type { Db } from './db.ts';
import type { SecretBox } from './secret-box.ts';

export type Provider = 'twilio' | 'telnyx';
export type NumberSource = 'api' | 'dashboard';

export type CarrierCredentials =
  | { provider: 'twilio'; account_sid: string; auth_token: string }
  // public_key is required at import; null only in rows imported before it was (their events are refused).
  | { provider: 'telnyx'; api_key: string; connection_id: string; public_key: string | null };

export interface PhoneNumberRow {
  phone_number: string;
  account_id: string;
  agent_id: string | null;
  provider: Provider;
  source: NumberSource;
  carrier_number_sid: string | null;
  carrier_number_id: string | null;
  credentials: Buffer;
  events_token: string | null;
  inbound_enabled: number;
  outbound_enabled: number;
  custom_prompt: string | null;
  voice_id: string | null;
  sms_reply_enabled: number;
  sms_prompt: string | null;
  web_prompt: string | null;
  speaking_rate: number | null;
  dtmf_enabled: number | null;
  record_call: number | null;
  voicemail_leave_enabled: number | null;
  voicemail_message: string | null;
  /** Migration 011; null inherits the agent's. */
  require_booking_confirmation: number | null;
  created_at: number;
  updated_at: number;
}

/** Everything PATCH may change, in its API form (booleans, not SQLite integers). */
export interface NumberSettings {
  agent_id: string | null;
  inbound_enabled: boolean;
  outbound_enabled: boolean;
  custom_prompt: string | null;
  voice_id: string | null;
  sms_reply_enabled: boolean;
  sms_prompt: string | null;
  web_prompt: string | null;
  speaking_rate: number | null;
  dtmf_enabled: boolean | null;
  record_call: boolean | null;
  voicemail_leave_enabled: boolean | null;
  voicemail_message: string | null;
  require_booking_confirmation: boolean | null;
}

export interface ImportInput {
  accountId: string;
  phoneNumber: string;
  agentId: string;
  credentials: CarrierCredentials;
  source: NumberSource;
  carrierNumberSid: string | null;
  carrierNumberId: string | null;
  eventsToken: string | null;
  /** Only the switches the request sent; a re-import leaves the others as they are. */
  inboundEnabled: boolean | undefined;
  outboundEnabled: boolean | undefined;
  now: number;
}

/** Who holds a number now, as far as an import needs to know. */
export type ImportHolder =
  | { kind: 'none' }
  | { kind: 'same_agent'; row: PhoneNumberRow }
  | { kind: 'other_agent'; agentId: string | null }
  | { kind: 'other_account' };

export type ImportResult =
  | { kind: 'created' | 'updated'; row: PhoneNumberRow }
  | { kind: 'conflict'; holder: ImportHolder }
  | { kind: 'agent_gone' };

export const MAX_UNPAGINATED = 1000;

const bool = (v: boolean | null | undefined): number | null => (v == null ? null : v ? 1 : 0);

export function createPhoneNumbersRepo(db: Db, secrets: SecretBox) {
  const selectAgent = db.prepare<[string, string], { agent_id: string }>(
    'SELECT agent_id FROM agents WHERE agent_id = ? AND account_id = ?',
  );
  const selectOwn = db.prepare<[string, string], PhoneNumberRow>(
    'SELECT * FROM phone_numbers WHERE phone_number = ? AND account_id = ?',
  );
  // The number is unique across accounts, so an import has to see who else holds it.
  const selectHolder = db.prepare<[string], { account_id: string; agent_id: string | null }>(
    'SELECT account_id, agent_id FROM phone_numbers WHERE phone_number = ?',
  );
  const selectByToken = db.prepare<[string], PhoneNumberRow>('SELECT * FROM phone_numbers WHERE events_token = ?');
  const insert = db.prepare(
    `INSERT INTO phone_numbers (phone_number, account_id, agent_id, provider, source, carrier_number_sid,
       carrier_number_id, credentials, events_token, inbound_enabled, outbound_enabled, created_at, updated_at)
     VALUES (@phone_number, @account_id, @agent_id, @provider, @source, @carrier_number_sid,
       @carrier_number_id, @credentials, @events_token, @inbound_enabled, @outbound_enabled, @now, @now)`,
  );
  const updateImport = db.prepare(
    `UPDATE phone_numbers SET provider = @provider, carrier_number_sid = @carrier_number_sid,
       carrier_number_id = @carrier_number_id, credentials = @credentials, events_token = @events_token,
       inbound_enabled = COALESCE(@inbound_enabled, inbound_enabled),
       outbound_enabled = COALESCE(@outbound_enabled, outbound_enabled), updated_at = @now
     WHERE phone_number = @phone_number AND account_id = @account_id`,
  );
  const updateSettings = db.prepare(
    `UPDATE phone_numbers SET agent_id = @agent_id, inbound_enabled = @inbound_enabled,
       outbound_enabled = @outbound_enabled, custom_prompt = @custom_prompt, voice_id = @voice_id,
       sms_reply_enabled = @sms_reply_enabled, sms_prompt = @sms_prompt, web_prompt = @web_prompt,
       speaking_rate = @speaking_rate, dtmf_enabled = @dtmf_enabled, record_call = @record_call,
       voicemail_leave_enabled = @voicemail_leave_enabled, voicemail_message = @voicemail_message,
       require_booking_confirmation = @require_booking_confirmation, updated_at = @now
     WHERE phone_number = @phone_number AND account_id = @account_id`,
  );
  const remove = db.prepare('DELETE FROM phone_numbers WHERE phone_number = ? AND account_id = ?');
  // rowid breaks ties between numbers imported in the same millisecond: newest first still.
  const listAll = db.prepare<[string, number, number], PhoneNumberRow>(
    'SELECT * FROM phone_numbers WHERE account_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?',
  );
  const listByAgent = db.prepare<[string, string, number, number], PhoneNumberRow>(
    'SELECT * FROM phone_numbers WHERE account_id = ? AND agent_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?',
  );
  const countAll = db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM phone_numbers WHERE account_id = ?');
  const countByAgent = db.prepare<[string, string], { n: number }>(
    'SELECT COUNT(*) AS n FROM phone_numbers WHERE account_id = ? AND agent_id = ?',
  );

  function holder(accountId: string, phoneNumber: string, agentId: string): ImportHolder {
    const h = selectHolder.get(phoneNumber);
    if (!h) return { kind: 'none' };
    if (h.account_id !== accountId) return { kind: 'other_account' };
    if (h.agent_id !== agentId) return { kind: 'other_agent', agentId: h.agent_id };
    return { kind: 'same_agent', row: selectOwn.get(phoneNumber, accountId)! };
  }

  const importTx = db.transaction((i: ImportInput): ImportResult => {
    // Checked again here: the carrier calls ran outside any transaction, so another
    // import or an agent deletion may have landed in between.
    if (!selectAgent.get(i.agentId, i.accountId)) return { kind: 'agent_gone' };
    const h = holder(i.accountId, i.phoneNumber, i.agentId);
    if (h.kind === 'other_account' || h.kind === 'other_agent') return { kind: 'conflict', holder: h };
    const params = {
      phone_number: i.phoneNumber,
      account_id: i.accountId,
      agent_id: i.agentId,
      provider: i.credentials.provider,
      source: i.source,
      carrier_number_sid: i.carrierNumberSid,
      carrier_number_id: i.carrierNumberId,
      credentials: secrets.seal(JSON.stringify(i.credentials)),
      events_token: i.eventsToken,
      inbound_enabled: bool(i.inboundEnabled),
      outbound_enabled: bool(i.outboundEnabled),
      now: i.now,
    };
    if (h.kind === 'none') {
      insert.run({ ...params, inbound_enabled: params.inbound_enabled ?? 1, outbound_enabled: params.outbound_enabled ?? 1 });
      return { kind: 'created', row: selectOwn.get(i.phoneNumber, i.accountId)! };
    }
    updateImport.run(params);
    return { kind: 'updated', row: selectOwn.get(i.phoneNumber, i.accountId)! };
  });

  return {
    /** True when the agent exists on this account (a missing and a foreign agent look alike). */
    ownsAgent(accountId: string, agentId: string): boolean {
      return selectAgent.get(agentId, accountId) !== undefined;
    },
    get(accountId: string, phoneNumber: string): PhoneNumberRow | undefined {
      return selectOwn.get(phoneNumber, accountId);
    },
    /** Who holds the number, checked before an import bothers the carrier. */
    holder,
    /** Inserts, or for a re-import onto the same agent replaces the credentials and carrier ids. */
    import(input: ImportInput): ImportResult {
      return importTx(input);
    },
    /** Newest first; `total` counts every match, not just the page. */
    list(accountId: string, opts: { agentId?: string | undefined; limit: number; offset: number }): { rows: PhoneNumberRow[]; total: number } {
      if (opts.agentId !== undefined) {
        return {
          rows: listByAgent.all(accountId, opts.agentId, opts.limit, opts.offset),
          total: countByAgent.get(accountId, opts.agentId)!.n,
        };
      }
      return { rows: listAll.all(accountId, opts.limit, opts.offset), total: countAll.get(accountId)!.n };
    },
    /** Writes the whole settings set; callers merge a partial update onto the current row first. */
    saveSettings(accountId: string, phoneNumber: string, s: NumberSettings, now: number): PhoneNumberRow | undefined {
      const changed = updateSettings.run({
        phone_number: phoneNumber,
        account_id: accountId,
        agent_id: s.agent_id,
        inbound_enabled: bool(s.inbound_enabled),
        outbound_enabled: bool(s.outbound_enabled),
        custom_prompt: s.custom_prompt,
        voice_id: s.voice_id,
        sms_reply_enabled: bool(s.sms_reply_enabled),
        sms_prompt: s.sms_prompt,
        web_prompt: s.web_prompt,
        speaking_rate: s.speaking_rate,
        dtmf_enabled: bool(s.dtmf_enabled),
        record_call: bool(s.record_call),
        voicemail_leave_enabled: bool(s.voicemail_leave_enabled),
        voicemail_message: s.voicemail_message,
        require_booking_confirmation: bool(s.require_booking_confirmation),
        now,
      }).changes;
      return changed === 1 ? selectOwn.get(phoneNumber, accountId) : undefined;
    },
    /** Callers, integrations and custom functions of the number go with it (foreign keys). */
    delete(accountId: string, phoneNumber: string): boolean {
      return remove.run(phoneNumber, accountId).changes === 1;
    },
    /** The carrier B event endpoint's look-up: the unguessable token is the credential. */
    findByEventsToken(token: string): PhoneNumberRow | undefined {
      return selectByToken.get(token);
    },
    openCredentials(row: PhoneNumberRow): CarrierCredentials {
      return JSON.parse(secrets.openText(row.credentials)) as CarrierCredentials;
    },
  };
}

export type PhoneNumbersRepo = ReturnType<typeof createPhoneNumbersRepo>;

/** The settings of a stored row in API form, for merging a partial update. */
export function settingsOf(row: PhoneNumberRow): NumberSettings {
  const b = (v: number | null): boolean | null => (v === null ? null : v === 1);
  return {
    agent_id: row.agent_id,
    inbound_enabled: row.inbound_enabled === 1,
    outbound_enabled: row.outbound_enabled === 1,
    custom_prompt: row.custom_prompt,
    voice_id: row.voice_id,
    sms_reply_enabled: row.sms_reply_enabled === 1,
    sms_prompt: row.sms_prompt,
    web_prompt: row.web_prompt,
    speaking_rate: row.speaking_rate,
    dtmf_enabled: b(row.dtmf_enabled),
    record_call: b(row.record_call),
    voicemail_leave_enabled: b(row.voicemail_leave_enabled),
    voicemail_message: row.voicemail_message,
    require_booking_confirmation: b(row.require_booking_confirmation),
  };
}
