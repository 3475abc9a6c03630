"""The workloads of the small-statements benchmark (scripts/bench_small.py runs them), and how
they reach a server (`Side`: psycopg connections and pgbench runs). The names are stable: later
runs are compared by them.

Every workload has a setup (not timed: tables created and loaded through the same client on
both servers) and a run returning (rate, detail); the same SQL is sent to tarn and to
PostgreSQL 15, so it is valid on both. A workload raises on any error; the driver records it.
"""

import os
import re
import subprocess
import tempfile
import time

KV_COLUMNS = "(k bigint primary key, v text, n int)"
LOAD_COMMITS = 20


class Side:
    """One server under test: how to connect, run pgbench, and (tarn) its process."""

    def __init__(self, name, port, user, dbname, pid=None, metrics_port=None):
        self.name, self.port, self.user, self.dbname, self.pid = name, port, user, dbname, pid
        self.metrics_port = metrics_port  # tarn's /metrics (--metrics-listen)
        self.kv_loaded = False  # bench_kv is loaded once, for both point-lookup workloads

    def connect(self, autocommit=True):
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user=self.user,
                               dbname=self.dbname, autocommit=autocommit)

    def sql(self, *statements):
        with self.connect() as conn:
            for s in statements:
                conn.execute(s)

    def pgbench(self, script, mode, clients, seconds, defines=()):
        """pgbench's tps (excluding connection time) for `script`; raises with pgbench's
        complaint when a client aborted or it failed."""
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
            f.write(script)
        args = ["pgbench", "-n", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
                "-M", mode, "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds),
                "-f", f.name]
        for d in defines:
            args += ["-D", d]
        try:
            out = subprocess.run(args + [self.dbname], capture_output=True, text=True,
                                 timeout=seconds * 3 + 300)
        finally:
            os.unlink(f.name)
        tps = re.search(r"^tps = ([0-9.]+)", out.stdout, re.M)
        failed = re.search(r"number of failed transactions: (\d+)", out.stdout)
        if out.returncode != 0 or not tps or (failed and int(failed.group(1)) > 0):
            raise RuntimeError(f"pgbench exit {out.returncode}: "
                               + (out.stderr.strip() or out.stdout.strip())[-400:])
        return float(tps.group(1))


def max_sorted_runs(side, table):
    """The most sorted runs a bucket of `table` holds (what a read merges), from `t$buckets`."""
    with side.connect() as conn:
        return conn.execute(f'select max(sorted_runs) from "{table}$buckets"').fetchone()[0]


def flush_lag(side):
    """How far the flusher is behind the commit log at the end of a run: the age in seconds
    of the oldest commit no Paimon snapshot holds yet, from tarn's /metrics (None without
    metrics, or with the commit log off)."""
    if side.metrics_port is None:
        return None
    from urllib.request import urlopen

    with urlopen(f"http://127.0.0.1:{side.metrics_port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("tarn_commit_log_flush_lag_seconds "):
                return float(line.split()[1])
    return None


# -- workloads: each has setup(side, cfg) (not timed), run(side, cfg) -> (value, detail) --

def load_kv(side, cfg):
    """bench_kv: `rows` keys 1..rows written in 20 INSERT ... SELECT commits (uncompacted)."""
    if side.kv_loaded:
        return
    side.sql("drop table if exists bench_kv", f"create table bench_kv {KV_COLUMNS}")
    step = -(-cfg.rows // LOAD_COMMITS)
    for lo in range(1, cfg.rows + 1, step):
        hi = min(cfg.rows, lo + step - 1)
        side.sql(f"insert into bench_kv select g, 'value ' || g::text, (g % 1000)::int "
                 f"from generate_series({lo}, {hi}) g")
    side.kv_loaded = True


POINT_LOOKUP = "\\set k random(1, :rows)\nSELECT * FROM bench_kv WHERE k = :k;\n"


def point_lookup(side, cfg):
    return side.pgbench(POINT_LOOKUP, "prepared", 4, cfg.seconds, [f"rows={cfg.rows}"]), {}


def compact_kv(side, cfg):
    """A full compaction on tarn; PostgreSQL gets VACUUM ANALYZE (its nearest maintenance)."""
    load_kv(side, cfg)
    side.sql("CALL sys.compact('bench_kv')" if side.name == "tarn" else "VACUUM ANALYZE bench_kv")


def fresh(table):
    return lambda side, cfg: side.sql(f"drop table if exists {table}",
                                      f"create table {table} {KV_COLUMNS}")


# Each pgbench client counts its own transactions (-D n=0; variables live across a client's
# transactions) and writes keys client_id * 10^9 + n: no two clients' keys can collide.
INSERT_AUTOCOMMIT = ("\\set n :n + 1\n\\set k :client_id * 1000000000 + :n\n"
                     "INSERT INTO {table} VALUES (:k, 'value', :n);\n")


def insert_autocommit(clients):
    table = f"bench_ins_{clients}"

    def run(side, cfg):
        script = INSERT_AUTOCOMMIT.format(table=table)
        return side.pgbench(script, "prepared", clients, cfg.seconds, ["n=0"]), {}
    return fresh(table), run, table


SLICE_ENDS = (200, 800, 2000, 5000, 20000, 50000)


def in_transaction(side, statement, n):
    """`n` single-row statements through psycopg's `execute` in one transaction (keys 0..n-1),
    then COMMIT: rows/s overall (commit included) and per slice of the transaction."""
    with side.connect(autocommit=False) as conn:
        cur = conn.cursor()
        stamps = []
        start = time.perf_counter()
        for i in range(n):
            cur.execute(statement, (i, f"value {i}", i))
            stamps.append(time.perf_counter())
        conn.commit()
        total = time.perf_counter() - start
    slices, first, before = [], 0, start
    for end in [e for e in SLICE_ENDS if e < n] + [n]:
        slices.append({"first": first + 1, "last": end,
                       "rate": (end - first) / max(stamps[end - 1] - before, 1e-9)})
        first, before = end, stamps[end - 1]
    return n / total, {"slices": slices, "commit_seconds": total - (stamps[-1] - start)}


def insert_in_txn(side, cfg):
    return in_transaction(side, "INSERT INTO bench_txn VALUES (%s, %s, %s)",
                          cfg.txn_rows)


def upsert_setup(side, cfg):
    """bench_upsert holds the even keys below txn_rows: half the upserts hit a row."""
    fresh("bench_upsert")(side, cfg)
    side.sql(f"insert into bench_upsert select g * 2, 'old', 0 "
             f"from generate_series(0, {cfg.txn_rows // 2 - 1}) g")


def upsert_in_txn(side, cfg):
    return in_transaction(
        side,
        "INSERT INTO bench_upsert VALUES (%s, %s, %s) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
        cfg.txn_rows)


BULK = 10_000


def bulk_setup(side, cfg):
    fresh("bench_bulk")(side, cfg)
    side.sql(f"insert into bench_bulk select g, 'old', 0 from generate_series(1, {cfg.bulk_preload}) g")


def bulk_upsert(side, cfg):
    """Autocommit statements of 10,000 rows from generate_series, each window half over keys
    that exist (the preload or the previous statement's new half) and half new."""
    with side.connect() as conn:
        start = time.perf_counter()
        for i in range(cfg.bulk_statements):
            lo = cfg.bulk_preload - BULK // 2 + 1 + i * (BULK // 2)
            conn.execute(
                f"INSERT INTO bench_bulk SELECT g, 'new ' || g::text, (g % 1000)::int "
                f"FROM generate_series({lo}, {lo + BULK - 1}) g "
                f"ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, n = EXCLUDED.n")
        elapsed = time.perf_counter() - start
    return cfg.bulk_statements * BULK / elapsed, {"statements": cfg.bulk_statements}


MULTI = 1_000


def multi_values(side, cfg):
    """Autocommit INSERT ... VALUES statements of 1,000 literal rows (as loaders send them)."""
    statements = [
        "INSERT INTO bench_multi VALUES " + ",".join(
            f"({k}, 'value {k}', {k % 1000})" for k in range(s * MULTI, (s + 1) * MULTI))
        for s in range(cfg.multi_statements)
    ]
    with side.connect() as conn:
        start = time.perf_counter()
        for s in statements:
            conn.execute(s)
        elapsed = time.perf_counter() - start
    return cfg.multi_statements * MULTI / elapsed, {"statements": cfg.multi_statements}


def select1(side, cfg):
    return side.pgbench("select 1;\n", "simple", 1, cfg.seconds), {}


ins1_setup, ins1_run, ins1_table = insert_autocommit(1)
ins16_setup, ins16_run, ins16_table = insert_autocommit(16)

# name, unit, target ratio (issue 17), setup, run, table whose sorted runs are reported
WORKLOADS = [
    ("point_lookup", "queries/s", 0.5, load_kv, point_lookup, "bench_kv"),
    ("point_lookup_compacted", "queries/s", 0.5, compact_kv, point_lookup, "bench_kv"),
    ("insert_autocommit_1", "tps", 0.5, ins1_setup, ins1_run, ins1_table),
    ("insert_autocommit_16", "tps", 1.5, ins16_setup, ins16_run, ins16_table),
    ("insert_in_txn", "rows/s", 1.0, fresh("bench_txn"), insert_in_txn, "bench_txn"),
    ("upsert_in_txn", "rows/s", 1.0, upsert_setup, upsert_in_txn, "bench_upsert"),
    ("bulk_upsert", "rows/s", 5.0, bulk_setup, bulk_upsert, "bench_bulk"),
    ("multi_values", "rows/s", 1.0, fresh("bench_multi"), multi_values, "bench_multi"),
    ("select1", "queries/s", 1.0, None, select1, None),
]
