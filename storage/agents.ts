// Agents: the AI personality behind numbers. `name` and `is_active` are columns (the
// list filters and shows them); every other setting lives in the `settings` JSON, read
// back over the defaults so a setting added later appears on older agents too.
import type { Db } from './db.ts';

export interface ExtractionField {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean';
  description: string;
  /** Allowed values; string fields only. */
  enum?: string[];
}

export interface AgentSettings {
  system_prompt: string;
  welcome_message: string;
  voice_id: string;
  language: string;
  temperature: number;
  response_length: 'short' | 'medium' | 'long';
  ai_speaks_first: boolean;
  dynamic_greeting: boolean;
  interruption_sensitivity: number;
  response_eagerness: number;
  boosted_keywords: string | null;
  pickup_delay: number;
  max_call_duration_seconds: number;
  silence_hangup_seconds: number;
  record_call: boolean;
  recording_source: 'provider' | 'platform';
  amd_enabled: boolean;
  dtmf_enabled: boolean | null;
  require_booking_confirmation: boolean;
  webhook_url: string | null;
  func_end_call: boolean;
  transfer_whisper: string | null;
  func_send_sms: boolean;
  incall_sms_enabled: boolean;
  func_cold_transfer: boolean;
  transfer_type: 'cold' | 'warm';
  transfer_number: string | null;
  voice_speed: number;
  speaking_rate: number | null;
  greet_by_name: boolean;
  fallback_message: string;
  phone_number: string | null;
  voicemail_leave_enabled: boolean;
  voicemail_message: string | null;
  timezone: string | null;
  extraction_fields: ExtractionField[];
}

/** Everything a customer sets on an agent. */
export interface AgentConfig extends AgentSettings {
  name: string;
  is_active: boolean;
}

export interface Agent extends AgentConfig {
  /** Internal UUID. */
  id: string;
  /** Public id, `agent_…`. */
  agent_id: string;
  account_id: string;
  api_key_id: string;
  created_at: number;
  updated_at: number;
}

export const DEFAULT_SYSTEM_PROMPT =
  'You are a friendly and helpful phone assistant. Keep your answers short and clear, ask one question at a time, and be polite.';

export const AGENT_DEFAULTS: Readonly<AgentConfig> = Object.freeze({
  name: 'Untitled Agent',
  is_active: true,
  system_prompt: DEFAULT_SYSTEM_PROMPT,
  welcome_message: 'Hello! How can I help you today?',
  voice_id: 'Ashley',
  language: 'multi',
  temperature: 0.3,
  response_length: 'short',
  ai_speaks_first: true,
  dynamic_greeting: false,
  interruption_sensitivity: 50,
  response_eagerness: 200,
  boosted_keywords: null,
  pickup_delay: 10,
  max_call_duration_seconds: 600,
  silence_hangup_seconds: 30,
  record_call: true,
  recording_source: 'provider',
  amd_enabled: false,
  dtmf_enabled: null,
  require_booking_confirmation: false,
  webhook_url: null,
  func_end_call: true,
  transfer_whisper: null,
  func_send_sms: false,
  incall_sms_enabled: false,
  func_cold_transfer: false,
  transfer_type: 'cold',
  transfer_number: null,
  voice_speed: 0.85,
  speaking_rate: null,
  greet_by_name: true,
  fallback_message: 'I am sorry, could you say that again?',
  phone_number: null,
  voicemail_leave_enabled: false,
  voicemail_message: null,
  timezone: null,
  extraction_fields: [],
} satisfies AgentConfig);

interface AgentRow {
  id: string;
  agent_id: string;
  account_id: string;
  api_key_id: string;
  name: string;
  is_active: number;
  settings: string;
  created_at: number;
  updated_at: number;
}

function settingsJson(config: AgentConfig): string {
  const { name: _name, is_active: _active, ...settings } = config;
  return JSON.stringify(settings);
}

function fromRow(row: AgentRow): Agent {
  const { name: _n, is_active: _a, ...defaults } = AGENT_DEFAULTS;
  const settings = { ...defaults, ...(JSON.parse(row.settings) as Partial<AgentSettings>) };
  return {
    ...settings,
    id: row.id,
    agent_id: row.agent_id,
    account_id: row.account_id,
    api_key_id: row.api_key_id,
    name: row.name,
    is_active: row.is_active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function createAgentsRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO agents (id, agent_id, account_id, api_key_id, name, is_active, settings, created_at, updated_at)
     VALUES (@id, @agent_id, @account_id, @api_key_id, @name, @is_active, @settings, @created_at, @updated_at)`,
  );
  const selectOne = db.prepare<[string, string], AgentRow>('SELECT * FROM agents WHERE account_id = ? AND agent_id = ?');
  // rowid breaks ties between agents created in the same millisecond: newest first still.
  const selectPage = db.prepare<{ account_id: string; is_active: number | null; limit: number; offset: number }, AgentRow>(
    `SELECT * FROM agents WHERE account_id = @account_id AND (@is_active IS NULL OR is_active = @is_active)
     ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`,
  );
  const countAll = db.prepare<{ account_id: string; is_active: number | null }, { n: number }>(
    'SELECT COUNT(*) AS n FROM agents WHERE account_id = @account_id AND (@is_active IS NULL OR is_active = @is_active)',
  );
  const updateOne = db.prepare(
    `UPDATE agents SET name = @name, is_active = @is_active, settings = @settings, updated_at = @updated_at
     WHERE account_id = @account_id AND agent_id = @agent_id`,
  );
  const deleteOne = db.prepare('DELETE FROM agents WHERE account_id = ? AND agent_id = ?');

  function get(accountId: string, agentId: string): Agent | undefined {
    const row = selectOne.get(accountId, agentId);
    return row ? fromRow(row) : undefined;
  }

  return {
    create(a: { id: string; agentId: string; accountId: string; apiKeyId: string; config: AgentConfig; now: number }): Agent {
      const row: AgentRow = {
        id: a.id,
        agent_id: a.agentId,
        account_id: a.accountId,
        api_key_id: a.apiKeyId,
        name: a.config.name,
        is_active: a.config.is_active ? 1 : 0,
        settings: settingsJson(a.config),
        created_at: a.now,
        updated_at: a.now,
      };
      insert.run(row);
      return fromRow(row);
    },
    get,
    list(accountId: string, q: { isActive?: boolean | undefined; limit: number; offset: number }): { agents: Agent[]; total: number } {
      const filter = { account_id: accountId, is_active: q.isActive === undefined ? null : q.isActive ? 1 : 0 };
      const agents = selectPage.all({ ...filter, limit: q.limit, offset: q.offset }).map(fromRow);
      return { agents, total: countAll.get(filter)!.n };
    },
    /** Replaces every setting with `config`; undefined when the agent is not the account's. */
    update(accountId: string, agentId: string, config: AgentConfig, now: number): Agent | undefined {
      const changed = updateOne.run({
        account_id: accountId,
        agent_id: agentId,
        name: config.name,
        is_active: config.is_active ? 1 : 0,
        settings: settingsJson(config),
        updated_at: now,
      }).changes;
      return changed === 1 ? get(accountId, agentId) : undefined;
    },
    /**
     * Hard delete. The schema's foreign keys orphan the agent's numbers (agent_id set
     * to null) and drop its per-agent integrations; call history keeps the id as text.
     */
    delete(accountId: string, agentId: string): boolean {
      return deleteOne.run(accountId, agentId).changes === 1;
    },
  };
}

export type AgentsRepo = ReturnType<typeof createAgentsRepo>;
