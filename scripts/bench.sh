#!/usr/bin/env bash
# The small-statements benchmark (issue 17), one command: tarn against a throwaway PostgreSQL 15
# on this machine, same data, same clients (pgbench, psycopg), default durability on both.
#   scripts/bench.sh [--quick] [--rows N] [--seconds S] [--only a,b] [--bin PATH] [--no-commit-log] [--write-docs] [--out FILE]
# Builds the release binary (`cargo build --release --locked --bin tarn`) unless --bin PATH or
# TARN_BENCH_BIN names one; installs pgbench/PostgreSQL 15 if missing and the Python venv
# (tests/python/requirements.txt), then runs scripts/bench_small.py, which does the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
command_line="scripts/bench.sh $*"
bin=${TARN_BENCH_BIN:-}
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=${2:?--bin PATH}; shift 2;;
    --bin=*) bin=${1#--bin=}; shift;;
    *) args+=("$1"); shift;;
  esac
done

missing=()
command -v pgbench >/dev/null 2>&1 || missing+=(postgresql-client-15)
[ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

venv=${TARN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tarn-venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r tests/python/requirements.txt

if [ -z "$bin" ]; then
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/tarn-target}
  cargo build --release --locked --bin tarn
  bin=$CARGO_TARGET_DIR/release/tarn
fi

TARN_BENCH_COMMAND=$command_line exec "$venv/bin/python" scripts/bench_small.py --bin "$(readlink -f "$bin")" ${args[@]+"${args[@]}"}
