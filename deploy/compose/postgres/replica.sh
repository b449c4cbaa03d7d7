#!/bin/bash
# The replica: a base backup of the primary the first time (with a replication slot, so that the
# primary keeps the WAL it has not streamed yet), then PostgreSQL as a hot standby.
set -euo pipefail
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  until pg_isready -h "$PRIMARY_HOST" -U replicator; do sleep 1; done
  export PGPASSWORD="$REPLICATION_PASSWORD"
  pg_basebackup -h "$PRIMARY_HOST" -U replicator -D "$PGDATA" -X stream -C -S replica -R \
    -d "application_name=replica"
  chmod 0700 "$PGDATA"
fi
exec postgres -c hot_standby=on -c hot_standby_feedback=on
