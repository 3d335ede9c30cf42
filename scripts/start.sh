#!/usr/bin/env bash
# Starts the service the way production runs it (the Procfile's `web`; README "Deployment").
# With LITESTREAM_REPLICA_URL set:
#   1. on a fresh machine (no DATA_DIR/switchboard.db yet) the database is restored from
#      the replica first; an empty replica is not an error (the very first start);
#   2. Litestream alone makes sure the replica holds a snapshot to build on (see below);
#   3. the service runs under `litestream replicate -exec`, so replication starts before
#      the service's first write and stops after its last (SIGTERM reaches Litestream,
#      which passes it on, waits for the service to close the database, then makes its
#      last upload).
# With a replica it refuses to start without SECRETS_KEY or an existing DATA_DIR/secrets.key
# (the replica does not hold the key, see below). Without LITESTREAM_REPLICA_URL the
# service starts alone, unreplicated, and says so.
# Litestream's binary is run directly, not through `npx litestream`: that npm wrapper
# holds the binary under spawnSync, so a SIGTERM to it ends the wrapper and never reaches
# Litestream or the service (no graceful shutdown, Litestream left running).
set -euo pipefail

# The waiting half of the start below, run by Litestream (`-exec`): ends once Litestream's
# log ($2) shows two syncs of the database (the second begins after the first, checkpoint
# included, is over).
if [ "${1:-}" = --until-synced ]; then
  for _ in $(seq 1 600); do
    [ "$(grep -c '"msg":"sync"' "$2")" -ge 2 ] && exit 0
    sleep 0.1
  done
  echo "start: Litestream did not sync the database within a minute" >&2
  exit 1
fi

cd "$(dirname "$0")/.."
# Litestream reads DATA_DIR from litestream.yml; an unset one would replicate /switchboard.db.
DATA_DIR="${DATA_DIR:-./data}"
case "$DATA_DIR" in /*) ;; *) DATA_DIR="$PWD/${DATA_DIR#./}" ;; esac
export DATA_DIR
DB="$DATA_DIR/switchboard.db"
# The same command as package.json's "start" (without npm between Litestream and Node,
# so the signals Litestream passes on reach the service itself).
SERVICE="node --single-threaded-gc --import tsx server.ts"

if [ -z "${LITESTREAM_REPLICA_URL:-}" ]; then
  echo "start: LITESTREAM_REPLICA_URL is not set: $DB is not replicated (README \"Deployment\")" >&2
  exec $SERVICE
fi

LITESTREAM="${LITESTREAM_BIN:-}"
if [ -z "$LITESTREAM" ]; then
  LITESTREAM="$(node -p '`node_modules/@flydotio/litestream-${process.platform}-${process.arch}/litestream`')"
  [ -x "$LITESTREAM" ] || LITESTREAM="$(command -v litestream || true)"
fi
[ -n "$LITESTREAM" ] && [ -x "$LITESTREAM" ] || {
  echo "start: no Litestream binary (npm ci installs @flydotio/litestream; or set LITESTREAM_BIN)" >&2
  exit 1
}

# Carrier credentials and stored answers in the database are sealed with SECRETS_KEY, or
# with DATA_DIR/secrets.key, which the replica does not hold: a database restored onto a
# new machine is readable only with the same key, so the key must come from off the box.
if [ -z "${SECRETS_KEY:-}" ]; then
  if [ ! -e "$DATA_DIR/secrets.key" ]; then
    echo "start: with a replica, set SECRETS_KEY (64 hex characters, kept with your other secrets) or copy the old" >&2
    echo "start: $DATA_DIR/secrets.key here: a generated key would exist only on this disk" >&2
    exit 1
  fi
  echo "start: $DATA_DIR/secrets.key is not in the replica: keep a copy off this machine, or set SECRETS_KEY" >&2
fi

mkdir -p "$DATA_DIR"
# A replica that cannot be read (wrong credentials, store down) stops the start here: a
# service started on an empty database would replicate it as a newer generation, which
# a later restore would then pick over the real one.
"$LITESTREAM" restore -config litestream.yml -if-db-not-exists -if-replica-exists "$DB"

# Litestream begins a new generation with a snapshot of the whole database: on the first
# start, after a restore, or when the WAL changed while it was away. Until that snapshot
# is uploaded nothing written since is in the replica, and under `replicate -exec` the
# service would already be writing (the restore drill caught writes a second and a half
# old missing). So Litestream first runs alone until it has synced the database (seen in
# its debug log); as it stops it syncs once more, snapshot included. Then the replica must
# hold a snapshot of the generation that the service's Litestream goes on with. A restart
# whose generation goes on costs a few tenths of a second and two listings.
# A fresh deployment gets its (empty) database now, so that there is something to snapshot.
[ -e "$DB" ] || node -e 'const D = require("better-sqlite3"); const db = new D(process.argv[1]); db.pragma("journal_mode = WAL"); db.close()' "$DB"
# Litestream 0.3.13 may fail this first pass when the upload its monitor began races the
# one it makes as it stops (a file replica's temporary file is renamed twice); what was
# uploaded stays, and a second pass has nothing left to race over.
for attempt in 1 2 3; do
  log="$(mktemp)"
  status=0
  LITESTREAM_LOG_LEVEL=debug "$LITESTREAM" replicate -config litestream.yml -exec "bash scripts/start.sh --until-synced '$log'" >"$log" || status=$?
  grep -v '"level":"DEBUG"' "$log" || true
  rm -f "$log"
  generation="$(cat "$DATA_DIR/.switchboard.db-litestream/generation" 2>/dev/null || true)"
  if [ "$status" = 0 ] && [ -n "$generation" ] &&
    "$LITESTREAM" snapshots -config litestream.yml "$DB" | awk -v g="$generation" '$2 == g { found = 1 } END { exit !found }'; then
    break
  fi
  if [ "$attempt" = 3 ]; then
    echo "start: the replica holds no snapshot of generation ${generation:-(none)}; not starting unreplicated" >&2
    exit 1
  fi
  echo "start: Litestream's first pass failed (exit $status); once more" >&2
done

exec "$LITESTREAM" replicate -config litestream.yml -exec "$SERVICE"
