// Whether a secrets key is the one this database's sealed values were sealed with. The
// admin command runs in its own process and finds the key as the service does
// (SECRETS_KEY, else DATA_DIR/secrets.key); a wrong one would seal new credentials the
// service can never open, so the command checks against a value already stored first.
import type { Db } from './db.ts';
import type { SecretBox } from './secret-box.ts';

/** True when `box` opens a sealed value of the database, or when none is stored yet. */
export function secretsKeyFits(db: Db, box: SecretBox): boolean {
  const sample = db
    .prepare<[], { v: Buffer }>(
      `SELECT credentials AS v FROM phone_numbers
       UNION ALL SELECT secret FROM integrations WHERE secret IS NOT NULL
       UNION ALL SELECT webhook_secret FROM accounts WHERE webhook_secret IS NOT NULL
       UNION ALL SELECT response FROM idempotency_keys
       LIMIT 1`,
    )
    .get();
  if (!sample) return true;
  try {
    box.open(sample.v);
    return true;
  } catch {
    return false;
  }
}
