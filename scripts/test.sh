#!/usr/bin/env bash
# The one test command: installs what the tests need, then runs every test.
#   - Debian packages: psql (postgresql-client-15) and the PostgreSQL 15 server (differential tests)
#   - a Python venv with psycopg, asyncpg, pg8000, SQLAlchemy and pytest
#     (tests/python/requirements.txt); pgjdbc + JDK, node + npm packages (tests/clients/)
#   - a throwaway PostgreSQL 15 on a free loopback port, stopped on exit
#   - cargo test: unit tests, integration tests (tokio-postgres, psql, psycopg), sqllogictest
# Builds use one dev-profile target dir outside the clone (CARGO_TARGET_DIR, default
# ~/.cache/tarn-target), so a second run is warm.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/tarn-target}
cache=${XDG_CACHE_HOME:-$HOME/.cache}

step() { printf '\n==> %s\n' "$*"; }

missing=()
command -v psql >/dev/null 2>&1 || missing+=(postgresql-client-15)
[ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
# The client suite (tests/clients/): pgjdbc with a JDK, node with npm, openssl for TLS tests.
[ -f /usr/share/java/postgresql.jar ] || missing+=(libpostgresql-jdbc-java)
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
  step "installing ${missing[*]}"
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

venv=${TARN_VENV:-$cache/tarn-venv}
step "python venv at $venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r tests/python/requirements.txt
export TARN_TEST_PYTHON="$venv/bin/python"

step "node packages of the client suite"
(cd tests/clients/node && npm ci --no-audit --no-fund --loglevel=error)

pg_port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pg_dir=$(mktemp -d /tmp/tarn-pg15.XXXXXX)
chmod 755 "$pg_dir"
stop_pg() { scripts/pg15.sh stop "$pg_port" "$pg_dir" >/dev/null 2>&1 || true; rm -rf "$pg_dir"; }
trap stop_pg EXIT
step "PostgreSQL 15 for differential tests"
scripts/pg15.sh start "$pg_port" "$pg_dir"
export TARN_PG15_PORT=$pg_port

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo build (dev profile, target dir $CARGO_TARGET_DIR)"
start=$(date +%s)
cargo build --all-targets --locked
echo "build took $(( $(date +%s) - start )) s"

step "cargo test"
start=$(date +%s)
cargo test --locked --no-fail-fast
echo "tests took $(( $(date +%s) - start )) s"
