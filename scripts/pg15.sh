#!/usr/bin/env bash
# A throwaway PostgreSQL 15 on 127.0.0.1:PORT for differential tests.
#   scripts/pg15.sh start PORT DIR   (initdb DIR if empty, then start)
#   scripts/pg15.sh stop  PORT DIR
# UTF8, locale C, TimeZone UTC. PostgreSQL refuses to run as root, so as root the server runs
# as the 'postgres' OS user (created if missing); DIR must be reachable by it (e.g. under /tmp).
set -euo pipefail
cmd=${1:?start|stop}; port=${2:?port}; dir=${3:?data dir}
bin=${PG_BIN:-}
if [ -z "$bin" ]; then
  for d in /usr/lib/postgresql/15/bin "$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || echo /nonexistent)")")"; do
    [ -x "$d/initdb" ] && bin=$d && break
  done
fi
[ -x "$bin/initdb" ] || { echo "pg15.sh: PostgreSQL 15 server binaries not found (apt-get install postgresql-15)" >&2; exit 1; }
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd -r -m postgres
    su postgres -s /bin/sh -c "$*"
  else
    sh -c "$*"
  fi
}
case $cmd in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown -R postgres "$dir"
    [ -f "$dir/PG_VERSION" ] || as_pg "'$bin/initdb' -D '$dir' -A trust -U postgres -E UTF8 --locale=C >/dev/null"
    as_pg "'$bin/pg_ctl' -D '$dir' -o '-p $port -k /tmp -c listen_addresses=127.0.0.1 -c timezone=UTC' -l '$dir/server.log' -w start >/dev/null"
    echo "postgresql 15 on 127.0.0.1:$port";;
  stop) as_pg "'$bin/pg_ctl' -D '$dir' -m fast -w stop >/dev/null" || true;;
  *) echo "usage: pg15.sh start|stop PORT DIR" >&2; exit 2;;
esac
