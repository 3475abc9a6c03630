#!/usr/bin/env python3
"""COPY FROM STDIN throughput: rows/s loading N rows into a primary-key table, on tarn and on
PostgreSQL 15, through psycopg 3 (the same client, data and table on both).

    scripts/bench_copy.py --target tarn=127.0.0.1:55431:tarn:tarn \\
                          --target pg15=127.0.0.1:55430:postgres:postgres --rows 1000000

Each target is name=host:port:user:database[:pid]. When the server runs on this machine, the
CPU time its process used during the COPY is printed too (rows per CPU-second: a figure that
other load on the machine disturbs less than rows/s). The pid is the server's (tarn: its one
process); without it, the backend's `pg_backend_pid()` is used (PostgreSQL's process per
connection). The rows (id int primary key, name text,
born date, score numeric(10,2), ok boolean) are generated while they are sent, in CopyData
chunks of about 64 KiB, so the client holds no more than a chunk. Prints one line per target
and format; figures are printed, never asserted.
"""

import argparse
import os
import time

import psycopg

CHUNK_ROWS = 2000


def chunks(rows, fmt):
    sep = "," if fmt == "csv" else "\t"
    for start in range(0, rows, CHUNK_ROWS):
        end = min(rows, start + CHUNK_ROWS)
        yield "".join(
            f"{i}{sep}name {i}{sep}{1950 + i % 60}-{1 + i % 12:02d}-{1 + i % 28:02d}"
            f"{sep}{i % 100000}.{i % 100:02d}{sep}{'t' if i % 2 else 'f'}\n"
            for i in range(start, end)
        ).encode()


def cpu_seconds(pid):
    """utime + stime of process `pid` (all its threads), or None if it is not readable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(target, rows, fmt):
    name, spec = target.split("=", 1)
    host, port, user, dbname, *pid = spec.split(":")
    with psycopg.connect(host=host, port=int(port), user=user, dbname=dbname, autocommit=True) as conn:
        conn.execute("drop table if exists bench_copy")
        conn.execute(
            "create table bench_copy (id int primary key, name text, born date, "
            "score numeric(10,2), ok boolean)"
        )
        cur = conn.cursor()
        option = " (FORMAT csv)" if fmt == "csv" else ""
        server = int(pid[0]) if pid else conn.execute("select pg_backend_pid()").fetchone()[0]
        cpu_before = cpu_seconds(server)
        started = time.perf_counter()
        with cur.copy(f"COPY bench_copy FROM STDIN{option}") as copy:
            for data in chunks(rows, fmt):
                copy.write(data)
        elapsed = time.perf_counter() - started
        cpu_after = cpu_seconds(server)
        assert cur.rowcount == rows, cur.rowcount
        count = conn.execute("select count(*) from bench_copy").fetchone()[0]
        assert count == rows, count
        conn.execute("drop table bench_copy")
    line = f"{name:>6} {fmt:>4}: {rows} rows in {elapsed:.2f} s = {rows / elapsed:,.0f} rows/s"
    if cpu_before is not None and cpu_after is not None and cpu_after > cpu_before:
        cpu = cpu_after - cpu_before
        line += f"; server CPU {cpu:.2f} s = {rows / cpu:,.0f} rows per CPU-second"
    print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--format", choices=["text", "csv"], action="append")
    args = parser.parse_args()
    for fmt in args.format or ["text"]:
        for target in args.target:
            run(target, args.rows, fmt)


if __name__ == "__main__":
    main()
