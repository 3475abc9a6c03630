#!/bin/bash
# COPY FROM throughput with a client that costs almost nothing: psql's \copy of a CSV file made
# once (scripts/bench_copy.py's table and value mix), timed on the wall clock, with the server
# process's CPU when its pid is given. Recorded in docs/BENCHMARKS.md.
#
# usage: scripts/bench_copy_file.sh PORT USER [SERVER_PID] LABEL
#   FILE=/tmp/copy1m.csv (default) must hold the rows: make it with
#   python3 scripts/bench_copy_file.py ROWS > /tmp/copy1m.csv
set -euo pipefail
PORT=$1; U=$2; PID=$3; L=$4
FILE=${FILE:-/tmp/copy1m.csv}
ROWS=$(wc -l < "$FILE")
psql -qX -h 127.0.0.1 -p "$PORT" -U "$U" -d postgres -c "drop table if exists cf" \
    -c "create table cf (id int primary key, name text, born date, score numeric(10,2), ok boolean)"
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
c0=$( [ -n "$PID" ] && cpu $PID || echo 0)
t0=$(date +%s.%N)
psql -qX -h 127.0.0.1 -p $PORT -U $U -d postgres -c "\copy cf from '$FILE' csv" 2>&1 | tail -1
t1=$(date +%s.%N)
c1=$( [ -n "$PID" ] && cpu $PID || echo 0)
python3 -c "w=$t1-$t0; c=($c1-$c0)/100; print(f'$L: $ROWS rows in {w:.2f} s = {$ROWS/w:,.0f} rows/s; server CPU {c:.2f} s')"
