# Start a throwaway PostgreSQL cluster for the tests; source this file, then `pg_start`.
# It exports MEMSTORE_TEST_POSTGRES_URL and stops the cluster (and deletes it) on exit.
# The cluster runs as the `postgres` user on a free loopback port, fsync off: it is for tests.

pg_start() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "PostgreSQL server binaries not found under /usr/lib/postgresql" >&2
    return 1
  fi
  PG_DIR=$(mktemp -d /tmp/memstore-pg.XXXXXX)
  chmod 755 "$PG_DIR"
  PG_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local as_pg=()
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$PG_DIR"
    as_pg=(runuser -u postgres --)
  fi
  "${as_pg[@]}" "$bin/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --no-sync >"$PG_DIR/initdb.log" 2>&1 \
    || { cat "$PG_DIR/initdb.log" >&2; return 1; }
  "${as_pg[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $PG_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
    start >/dev/null || { cat "$PG_DIR/server.log" >&2; return 1; }
  PG_BIN=$bin
  trap pg_stop EXIT
  "$bin/psql" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "CREATE DATABASE memstore_test" >/dev/null
  export MEMSTORE_TEST_POSTGRES_URL="postgresql+asyncpg://postgres@127.0.0.1:$PG_PORT/memstore_test"
  echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT"
}

pg_stop() {
  if [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR/data" ]; then
    if [ "$(id -u)" = 0 ]; then
      runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    else
      "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$PG_DIR"
  fi
}
