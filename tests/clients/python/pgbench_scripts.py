"""pgbench with a custom script (-f) of single-table transactions, in the simple, extended and
prepared query modes: every transaction succeeds and every update lands."""

import os
import subprocess
import tempfile

from harness import check, expect, name, run

T = name("cl_bench")
CLIENTS, TXNS = 2, 25


def psql(sql):
    out = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(f"psql {sql}: {out.stderr.strip()}")
    return out.stdout.strip()


# Each client updates its own keys (pgbench's :client_id), as a CDC sink partitioned by key does.
DISJOINT = f"""\\set id random(1, 10) + 10 * :client_id
BEGIN;
UPDATE {T} SET v = v + 1 WHERE id = :id;
SELECT v FROM {T} WHERE id = :id;
END;
"""
# Clients update the same keys at once: PostgreSQL's READ COMMITTED waits for the row lock.
SHARED = f"""\\set id random(1, 5)
BEGIN;
UPDATE {T} SET v = v + 1 WHERE id = :id;
SELECT v FROM {T} WHERE id = :id;
END;
"""


def bench(mode, script=DISJOINT):
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
        path = f.name
    try:
        before = int(psql(f"SELECT sum(v) FROM {T}"))
        out = subprocess.run(
            ["pgbench", "-n", "-f", path, "-c", str(CLIENTS), "-t", str(TXNS), "-M", mode],
            capture_output=True, text=True, timeout=300,
        )
    finally:
        os.unlink(path)
    expect(out.returncode == 0, f"pgbench -M {mode}: {out.stderr.strip()[-400:]}")
    done = f"number of transactions actually processed: {CLIENTS * TXNS}/{CLIENTS * TXNS}"
    expect(done in out.stdout, out.stdout)
    after = int(psql(f"SELECT sum(v) FROM {T}"))
    expect(after - before == CLIENTS * TXNS, f"{after - before} updates landed")


@check
def setup():
    psql(f"DROP TABLE IF EXISTS {T}")
    psql(f"CREATE TABLE {T} (id integer PRIMARY KEY, v integer NOT NULL)")
    psql(f"INSERT INTO {T} SELECT g, 0 FROM generate_series(1, 20) g")


@check
def simple_mode():
    bench("simple")


@check
def extended_mode():
    bench("extended")


@check
def prepared_mode():
    bench("prepared")


@check
def shared_keys_simple_mode():
    bench("simple", SHARED)


@check
def teardown():
    psql(f"DROP TABLE {T}")


if __name__ == "__main__":
    run()
