#!/bin/bash
# Run once by the image's entrypoint when the primary's data directory is first made: a role for
# streaming replication, allowed from the compose network.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<SQL
CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD '${REPLICATION_PASSWORD}';
CREATE EXTENSION IF NOT EXISTS vector;
SQL
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
