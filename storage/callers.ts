// Caller context records: one row per (own number, caller number). Customer fields are
// merged field by field (omitted keeps, null removes); engine-written fields survive
// customer writes and go only with the whole record. Every query is scoped by account.
import type { Db } from './db.ts';

/** The fields a customer may set, in the order responses and error checks use. */
export const CONTEXT_FIELDS = ['name', 'email', 'phone', 'location', 'reference_id', 'preference'] as const;
export type ContextField = (typeof CONTEXT_FIELDS)[number];

/** Written by the engine from calls; never settable through the API. */
export const ENGINE_FIELDS = ['last_call', 'open_item'] as const;
export type EngineField = (typeof ENGINE_FIELDS)[number];

/** A merge: a key left out keeps the stored value, `null` removes it. */
export type ContextPatch = Partial<Record<ContextField, string | null>>;

export interface CallerRow {
  phone_number: string;
  caller_number: string;
  account_id: string;
  name: string | null;
  email: string | null;
  phone: string | null;
  location: string | null;
  reference_id: string | null;
  preference: string | null;
  last_call: string | null;
  open_item: string | null;
  created_at: number;
  updated_at: number;
}

export interface CallerImportRow {
  caller_number: string;
  patch: ContextPatch;
}

type UpsertParams = Record<string, string | number | null>;

export function createCallersRepo(db: Db) {
  const owned = db.prepare<[string, string], { n: number }>(
    'SELECT 1 AS n FROM phone_numbers WHERE phone_number = ? AND account_id = ?',
  );
  // One statement for create-or-merge: each column takes the new value only when its
  // set_* flag is 1. The WHERE keeps a row of another account untouched (it cannot
  // exist while the number is ours, since numbers are unique and cascade-delete).
  const upsert = db.prepare<[UpsertParams], CallerRow>(
    `INSERT INTO callers (phone_number, caller_number, account_id, ${CONTEXT_FIELDS.join(', ')}, created_at, updated_at)
     VALUES (@phone_number, @caller_number, @account_id, ${CONTEXT_FIELDS.map((f) => `@${f}`).join(', ')}, @now, @now)
     ON CONFLICT (phone_number, caller_number) DO UPDATE SET
       ${CONTEXT_FIELDS.map((f) => `${f} = CASE WHEN @set_${f} = 1 THEN excluded.${f} ELSE callers.${f} END`).join(',\n       ')},
       updated_at = excluded.updated_at
     WHERE callers.account_id = excluded.account_id
     RETURNING *`,
  );
  const selectOne = db.prepare<[string, string, string], CallerRow>(
    'SELECT * FROM callers WHERE account_id = ? AND phone_number = ? AND caller_number = ?',
  );
  const selectPage = db.prepare<[string, string, number, number], CallerRow>(
    `SELECT * FROM callers WHERE account_id = ? AND phone_number = ?
     ORDER BY updated_at DESC, caller_number ASC LIMIT ? OFFSET ?`,
  );
  const countAll = db.prepare<[string, string], { n: number }>(
    'SELECT COUNT(*) AS n FROM callers WHERE account_id = ? AND phone_number = ?',
  );
  const deleteOne = db.prepare('DELETE FROM callers WHERE account_id = ? AND phone_number = ? AND caller_number = ?');
  // The engine's write: last_call always, open_item only when `set_open_item` is 1; the
  // customer's fields are never named, so they keep whatever the customer set.
  const remember = db.prepare<[UpsertParams], CallerRow>(
    `INSERT INTO callers (phone_number, caller_number, account_id, last_call, open_item, created_at, updated_at)
     VALUES (@phone_number, @caller_number, @account_id, @last_call, @open_item, @now, @now)
     ON CONFLICT (phone_number, caller_number) DO UPDATE SET
       last_call = excluded.last_call,
       open_item = CASE WHEN @set_open_item = 1 THEN excluded.open_item ELSE callers.open_item END,
       updated_at = excluded.updated_at
     WHERE callers.account_id = excluded.account_id
     RETURNING *`,
  );

  function merge(accountId: string, phoneNumber: string, callerNumber: string, patch: ContextPatch, now: number): CallerRow | undefined {
    const params: UpsertParams = { phone_number: phoneNumber, caller_number: callerNumber, account_id: accountId, now };
    for (const f of CONTEXT_FIELDS) {
      const v = patch[f];
      params[f] = v ?? null;
      params[`set_${f}`] = v === undefined ? 0 : 1;
    }
    return upsert.get(params);
  }

  const importTx = db.transaction((accountId: string, phoneNumber: string, rows: CallerImportRow[], now: number): number => {
    const written = new Set<string>();
    // In file order, so a caller repeated in the file ends on its last row's values.
    for (const r of rows) {
      if (merge(accountId, phoneNumber, r.caller_number, r.patch, now)) written.add(r.caller_number);
    }
    return written.size;
  });

  return {
    /** True when the number is imported on this account (unknown and foreign look the same). */
    numberOwned(accountId: string, phoneNumber: string): boolean {
      return owned.get(phoneNumber, accountId) !== undefined;
    },
    get(accountId: string, phoneNumber: string, callerNumber: string): CallerRow | undefined {
      return selectOne.get(accountId, phoneNumber, callerNumber);
    },
    /** Most recently updated first; `count` is the total on the number, not the page size. */
    list(accountId: string, phoneNumber: string, limit: number, offset: number): { callers: CallerRow[]; count: number } {
      return {
        callers: selectPage.all(accountId, phoneNumber, limit, offset),
        count: countAll.get(accountId, phoneNumber)!.n,
      };
    },
    /** Creates the record or merges into it; undefined only if the row is another account's. */
    upsert: merge,
    /**
     * The engine's memory of a call (creating the record if the caller is new):
     * `lastCall` is JSON text; `openItem` undefined keeps the stored one, null clears it.
     * Customer fields are never touched. Undefined only if the row is another account's.
     */
    remember(accountId: string, phoneNumber: string, callerNumber: string, lastCall: string, openItem: string | null | undefined, now: number): CallerRow | undefined {
      return remember.get({
        phone_number: phoneNumber,
        caller_number: callerNumber,
        account_id: accountId,
        last_call: lastCall,
        open_item: openItem ?? null,
        set_open_item: openItem === undefined ? 0 : 1,
        now,
      });
    },
    /** Erases the record, engine-learned fields included; false when there was none. */
    delete(accountId: string, phoneNumber: string, callerNumber: string): boolean {
      return deleteOne.run(accountId, phoneNumber, callerNumber).changes === 1;
    },
    /** Merges every row in one transaction; returns how many distinct callers were written. */
    importMany(accountId: string, phoneNumber: string, rows: CallerImportRow[], now: number): number {
      return importTx(accountId, phoneNumber, rows, now);
    },
  };
}

export type CallersRepo = ReturnType<typeof createCallersRepo>;
