// Call records: the row each call actor writes on every state change (upserted by its
// internal id, because the public call_id changes once for a call dialed at once), the
// look-ups the API and the carrier endpoints need, the filtered list, and erasure.
// Every API query is scoped by account; the cross-account look-ups are named as such.
import type { Db } from './db.ts';
import type { PhoneNumberRow } from './phone-numbers.ts';
import { createCallErasure } from './call-erasure.ts';

export type CallDirection = 'inbound' | 'outbound';

export interface CallRow {
  call_id: string;
  account_id: string;
  agent_id: string | null;
  direction: CallDirection;
  call_status: string;
  from_number: string;
  to_number: string;
  started_at: number | null;
  ended_at: number | null;
  duration_ms: number | null;
  ended_reason: string | null;
  charged_minutes: number;
  campaign_id: string | null;
  created_at: number;
  internal_id: string | null;
  carrier_call_id: string | null;
  provider: string | null;
  phone_number: string | null;
  media_token: string | null;
  transcript: string | null;
  summary: string | null;
  sentiment: string | null;
  successful: number | null;
  extracted: string | null;
  bookings: string;
  recording_url: string | null;
  recording_path: string | null;
  recording_duration_seconds: number | null;
  /** Epoch ms: a recording is on its way, and call.completed waits for it until then at most. */
  recording_expected_until: number | null;
  /** Epoch ms the carrier was asked to record the call (recording_source provider); null once the file is here or will not come. */
  recording_requested_at: number | null;
  voicemail_detected: number;
  avg_latency_ms: number | null;
  analysis_status: string;
  updated_at: number | null;
  /** JSON of the pre-call gate's decision (actors/calls/precall-gate.ts PrecallRecord); null when no gate ran. */
  precall: string | null;
}

/** What an actor (or the inbound router, for calls it refuses) knows of a call. */
export interface CallWrite {
  internalId: string;
  callId: string;
  accountId: string;
  agentId: string | null;
  direction: CallDirection;
  callStatus: string;
  fromNumber: string;
  toNumber: string;
  phoneNumber: string;
  provider: string;
  carrierCallId: string | null;
  startedAt: number | null;
  endedAt: number | null;
  durationMs: number | null;
  endedReason: string | null;
  chargedMinutes: number;
  campaignId: string | null;
  voicemailDetected: boolean;
  transcript: string | null;
  avgLatencyMs: number | null;
  /** JSON of the Booking objects, in order; left out (a call refused before any conversation): none. */
  bookings?: string;
  createdAt: number;
  updatedAt: number;
}

export interface CallFilters {
  agentId?: string | undefined;
  direction?: CallDirection | undefined;
  since?: number | undefined;
  until?: number | undefined;
  sentiment?: string | undefined;
  successful?: boolean | undefined;
  voicemailDetected?: boolean | undefined;
  campaignId?: string | undefined;
  phoneNumber?: string | undefined;
}

const flag = (v: boolean | undefined): number | null => (v === undefined ? null : v ? 1 : 0);

export function createCallsRepo(db: Db) {
  // media_token is written once, on insert: an upsert must not bring back a claimed token.
  const upsert = db.prepare(
    `INSERT INTO calls (call_id, account_id, agent_id, direction, call_status, from_number, to_number, started_at,
       ended_at, duration_ms, ended_reason, charged_minutes, campaign_id, created_at, internal_id, carrier_call_id,
       provider, phone_number, media_token, voicemail_detected, transcript, avg_latency_ms, bookings, updated_at)
     VALUES (@callId, @accountId, @agentId, @direction, @callStatus, @fromNumber, @toNumber, @startedAt,
       @endedAt, @durationMs, @endedReason, @chargedMinutes, @campaignId, @createdAt, @internalId, @carrierCallId,
       @provider, @phoneNumber, @mediaToken, @voicemailDetected, @transcript, @avgLatencyMs, @bookings, @updatedAt)
     ON CONFLICT (internal_id) DO UPDATE SET call_id = excluded.call_id, agent_id = excluded.agent_id,
       call_status = excluded.call_status, started_at = excluded.started_at, ended_at = excluded.ended_at,
       duration_ms = excluded.duration_ms, ended_reason = excluded.ended_reason,
       charged_minutes = excluded.charged_minutes, carrier_call_id = excluded.carrier_call_id,
       voicemail_detected = excluded.voicemail_detected, transcript = excluded.transcript,
       avg_latency_ms = excluded.avg_latency_ms, bookings = excluded.bookings, updated_at = excluded.updated_at`,
  );
  // A call_id match wins over a carrier_call_id match (ids of different kinds never collide in practice).
  // The internal id matches too: it is the call_id a client was given for a call whose
  // dial's answer was lost (502 details.call_id), whatever the call's public id became.
  const byPublicId = db.prepare<[string, string, string, string, string], CallRow>(
    'SELECT * FROM calls WHERE account_id = ? AND (call_id = ? OR carrier_call_id = ? OR internal_id = ?) ORDER BY call_id = ? DESC LIMIT 1',
  );
  const byInternalId = db.prepare<[string], CallRow>('SELECT * FROM calls WHERE internal_id = ?');
  const byCarrierId = db.prepare<[string, string], CallRow>(
    'SELECT * FROM calls WHERE account_id = ? AND carrier_call_id = ? ORDER BY created_at DESC LIMIT 1',
  );
  const where = `account_id = @accountId
      AND (@agentId IS NULL OR agent_id = @agentId)
      AND (@direction IS NULL OR direction = @direction)
      AND (@since IS NULL OR COALESCE(started_at, created_at) >= @since)
      AND (@until IS NULL OR COALESCE(started_at, created_at) < @until)
      AND (@sentiment IS NULL OR sentiment = @sentiment)
      AND (@successful IS NULL OR successful = @successful)
      AND (@voicemail IS NULL OR voicemail_detected = @voicemail)
      AND (@campaignId IS NULL OR campaign_id = @campaignId)
      AND (@phoneNumber IS NULL OR phone_number = @phoneNumber)`;
  const selectPage = db.prepare<Record<string, unknown>, CallRow>(
    `SELECT * FROM calls WHERE ${where} ORDER BY COALESCE(started_at, created_at) DESC, rowid DESC LIMIT @limit OFFSET @offset`,
  );
  const countAll = db.prepare<Record<string, unknown>, { n: number }>(`SELECT COUNT(*) AS n FROM calls WHERE ${where}`);
  // The one-time claim: the token is cleared in the same statement that reads it.
  const claim = db.prepare<[string, string], { internal_id: string; account_id: string }>(
    `UPDATE calls SET media_token = NULL WHERE media_token = ? AND provider = ? RETURNING internal_id, account_id`,
  );
  // The same match without the claim: the websocket upgrade's check of carrier B's URL token.
  const tokenHolder = db.prepare<[string, string], { internal_id: string }>('SELECT internal_id FROM calls WHERE media_token = ? AND provider = ?');
  // A number is imported once across all accounts, so its E.164 value names its account.
  const numberByE164 = db.prepare<[string], PhoneNumberRow>('SELECT * FROM phone_numbers WHERE phone_number = ?');
  const erasure = createCallErasure(db);
  const setPrecall = db.prepare('UPDATE calls SET precall = ? WHERE account_id = ? AND internal_id = ?');
  const renewToken = db.prepare('UPDATE calls SET media_token = ? WHERE account_id = ? AND internal_id = ?');

  return {
    /** Inserts the call or updates its lifecycle fields; `mediaToken` counts on insert only. */
    save(w: CallWrite, mediaToken: string | null = null): void {
      upsert.run({ ...w, mediaToken, voicemailDetected: w.voicemailDetected ? 1 : 0, bookings: w.bookings ?? '[]' });
    },
    /**
     * A new one-time media token for a live call whose stream ended and comes back (a
     * failed transfer on carrier A reconnects the caller to the agent); false when no such row.
     */
    renewMediaToken(accountId: string, internalId: string, token: string): boolean {
      return renewToken.run(token, accountId, internalId).changes === 1;
    },
    /** Records the pre-call gate's decision (JSON) on the call's row; the upsert of `save` never touches it. */
    setPrecall(accountId: string, internalId: string, json: string): void {
      setPrecall.run(json, accountId, internalId);
    },
    /** By the public id: `call_id`, or the carrier's id of a call that kept its `call_…` id. */
    getByPublicId(accountId: string, id: string): CallRow | undefined {
      return byPublicId.get(accountId, id, id, id, id);
    },
    /** Cross-account: the carrier endpoints know a call by the internal id in their URL only. */
    getByInternalId(internalId: string): CallRow | undefined {
      return byInternalId.get(internalId);
    },
    getByCarrierCallId(accountId: string, carrierCallId: string): CallRow | undefined {
      return byCarrierId.get(accountId, carrierCallId);
    },
    /** Newest first by `COALESCE(started_at, created_at)`; `total` counts every match. */
    list(accountId: string, f: CallFilters, limit: number, offset: number): { rows: CallRow[]; total: number } {
      const params = {
        accountId,
        agentId: f.agentId ?? null,
        direction: f.direction ?? null,
        since: f.since ?? null,
        until: f.until ?? null,
        sentiment: f.sentiment ?? null,
        successful: flag(f.successful),
        voicemail: flag(f.voicemailDetected),
        campaignId: f.campaignId ?? null,
        phoneNumber: f.phoneNumber ?? null,
      };
      return { rows: selectPage.all({ ...params, limit, offset }), total: countAll.get(params)!.n };
    },
    /** Cross-account by nature: the token alone names the call. Null when unknown or already used. */
    claimMediaToken(provider: string, token: string): { internalId: string; accountId: string } | null {
      const row = claim.get(token, provider);
      return row ? { internalId: row.internal_id, accountId: row.account_id } : null;
    },
    /** The call whose unclaimed media token this is, without claiming it; null when unknown or already used. */
    mediaTokenHolder(provider: string, token: string): string | null {
      return tokenHolder.get(token, provider)?.internal_id ?? null;
    },
    /** The carrier endpoints' look-up of one of our numbers, before any account is known. */
    findNumber(e164: string): PhoneNumberRow | undefined {
      return numberByE164.get(e164);
    },
    ...erasure,
  };
}

export type CallsRepo = ReturnType<typeof createCallsRepo>;
