#!/usr/bin/env bash
# ci/postgres.sh: sourced by ci/test.sh. Starts a throwaway PostgreSQL
# server for the PostgreSQL path of the application-level loadgen modes
# (consumer-dedup, external-offsets with --db postgres://...), and exports
# EXACTLY_TEST_POSTGRES_URL for `go test`.
#
#   source ci/postgres.sh
#   exactly_postgres_start      # installs Debian's postgresql if missing
#   ...                         # go test ./...
#   exactly_postgres_stop       # stops only the server started above
#
# The server is not the system service: initdb in a temporary directory,
# pg_ctl on 127.0.0.1 and a free port, run as the postgres user when we
# are root (initdb refuses root), as ourselves otherwise.

exactly_postgres_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$bin" ] && command -v initdb >/dev/null 2>&1; then
    bin=$(dirname "$(command -v initdb)")
  fi
  echo "$bin"
}

# exactly_postgres_as runs a command as the server's owner.
exactly_postgres_as() {
  if [ "$(id -u)" -eq 0 ]; then
    su postgres -s /bin/sh -c "$*"
  else
    sh -c "$*"
  fi
}

exactly_postgres_free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
}

exactly_postgres_start() {
  local bin
  bin=$(exactly_postgres_bin)
  if [ -z "$bin" ]; then
    echo "== installing postgresql (Debian package) for the PostgreSQL path of loadgen"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
    bin=$(exactly_postgres_bin)
  fi
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "postgresql installed but initdb not found" >&2
    return 1
  fi
  EXACTLY_PG_DIR=$(mktemp -d /tmp/exactly-postgres-XXXXXX)
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$EXACTLY_PG_DIR"; fi
  local port
  port=$(exactly_postgres_free_port)
  exactly_postgres_as "'$bin/initdb' -D '$EXACTLY_PG_DIR/data' --auth=trust --username=exactly -E UTF8 >'$EXACTLY_PG_DIR/initdb.log' 2>&1"
  # fsync off: a throwaway server; the tests check logic, not durability.
  exactly_postgres_as "'$bin/pg_ctl' -D '$EXACTLY_PG_DIR/data' -l '$EXACTLY_PG_DIR/server.log' -w -t 60 \
    -o \"-p $port -k '$EXACTLY_PG_DIR' -c listen_addresses=127.0.0.1 -c fsync=off\" start >/dev/null"
  EXACTLY_PG_BIN=$bin
  exactly_postgres_as "'$bin/createdb' -h 127.0.0.1 -p $port -U exactly exactly_test"
  export EXACTLY_TEST_POSTGRES_URL="postgres://exactly@127.0.0.1:$port/exactly_test?sslmode=disable"
  echo "== PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $EXACTLY_PG_DIR)"
}

exactly_postgres_stop() {
  if [ -n "${EXACTLY_PG_DIR:-}" ] && [ -d "$EXACTLY_PG_DIR/data" ]; then
    exactly_postgres_as "'$EXACTLY_PG_BIN/pg_ctl' -D '$EXACTLY_PG_DIR/data' -m fast -w stop >/dev/null" || true
    rm -rf "$EXACTLY_PG_DIR"
  fi
  EXACTLY_PG_DIR=""
}
