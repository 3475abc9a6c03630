"""Dynamic-bucket primary-key tables (`bucket = -1`) written by tarn and by pypaimon, each
finding the keys the other placed: a key is in one bucket only, and the table's HASH index (read
here with pypaimon's own reader and key hash) maps every key to the bucket whose files hold it.

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
"""

import os
import threading

import pyarrow as pa
import pytest
from psycopg import errors
from pypaimon.index.dynamic_bucket import HASH_INDEX, _read_hashes, to_signed_int32
from pypaimon.index.index_file_handler import IndexFileHandler
from pypaimon.write.row_key_extractor import RowKeyExtractor

from test_pypaimon import (
    WAREHOUSE,
    assert_same_rows,
    connect,
    pg_rows,
    pp_create,
    pp_read,
    pp_table,
    pp_write,
)


def pp_bucket_keys(name, key):
    """(partition, bucket) -> keys pypaimon reads from that bucket's files (merged per bucket)."""
    table = pp_table(name)
    rb = table.new_read_builder()
    out = {}
    for split in rb.new_scan().plan().splits():
        result = rb.new_read().to_arrow([split])
        rows = [] if result is None else result.to_pylist()
        at = (tuple(split.partition.values), split.bucket)
        out.setdefault(at, []).extend(tuple(r[k] for k in key) for r in rows)
    return out


def pp_hash_index(name):
    """(partition, bucket) -> key hashes of the latest snapshot's HASH index files."""
    table = pp_table(name)
    snapshot = table.snapshot_manager().get_latest_snapshot()
    entries = IndexFileHandler(table).scan(
        snapshot, lambda e: e.index_file.index_type == HASH_INDEX
    )
    out = {}
    for e in entries:
        at = (tuple(e.partition.values), e.bucket)
        assert at not in out, f"{name}: two HASH files for {at}"
        out[at] = _read_hashes(table, e)
        assert len(out[at]) == e.index_file.row_count
    return out


def check_buckets(name, key, partition=()):
    """Every key is live in one bucket, and the HASH index has its hash there and in no other
    bucket of its partition. `key`: the trimmed primary key (what is hashed); `partition`: the
    partition columns. Returns {(partition values, key values): bucket}."""
    table = pp_table(name)
    fields = {f.name: f for f in table.table_schema.fields}
    key_fields = [fields[k] for k in key]
    layout = pp_bucket_keys(name, list(partition) + list(key))
    index = pp_hash_index(name)
    where = {}
    for (part, bucket), rows in layout.items():
        assert (part, bucket) in index, f"{name}: bucket {bucket} has data but no HASH index"
        for row in rows:
            assert row not in where, (
                f"{name}: key {row} live in buckets {where[row]} and {bucket}"
            )
            where[row] = bucket
            h = to_signed_int32(
                RowKeyExtractor._binary_row_hash_code(row[len(partition):], key_fields)
            )
            holders = [b for (p, b), hashes in index.items() if p == part and h in hashes]
            assert holders == [bucket], (
                f"{name}: key {row} is in bucket {bucket}, the HASH index has it in {holders}"
            )
    return where


FIELDS = [pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]


def test_tarn_writes_pypaimon_reads_and_updates():
    with connect() as conn:
        conn.execute(
            "CREATE TABLE db_tarn (id bigint PRIMARY KEY, v text) WITH (bucket = -1, "
            "'dynamic-bucket.target-row-num' = '10')"
        )
        conn.execute("INSERT INTO db_tarn SELECT g, 'a' || g FROM generate_series(1, 35) g")
        conn.execute(
            "INSERT INTO db_tarn VALUES (3, 'b3'), (40, 'b40'), (17, 'b17') "
            "ON CONFLICT (id) DO UPDATE SET v = excluded.v"
        )
        conn.execute("UPDATE db_tarn SET v = 'u' || id WHERE id % 7 = 0")
        conn.execute("DELETE FROM db_tarn WHERE id IN (2, 22)")
    model = {i: f"a{i}" for i in range(1, 36)}
    model.update({3: "b3", 40: "b40", 17: "b17"})
    model.update({i: f"u{i}" for i in model if i % 7 == 0})
    del model[2], model[22]
    expected = [dict(id=i, v=v) for i, v in model.items()]
    assert_same_rows(pp_read("db_tarn"), expected, ["id"], "pypaimon")
    buckets = check_buckets("db_tarn", ["id"])
    assert sorted(set(buckets.values())) == [0, 1, 2, 3]
    assert buckets[(3,)] == 0 and buckets[(17,)] == 1 and buckets[(40,)] == 3

    # pypaimon writes into tarn's table: it finds tarn's keys through tarn's index, so existing
    # keys are updated in place and new ones fill the open bucket.
    pp_write("db_tarn", [dict(id=i, v=f"p{i}") for i in (1, 12, 25, 35, 50, 51)])
    model.update({i: f"p{i}" for i in (1, 12, 25, 35, 50, 51)})
    expected = [dict(id=i, v=v) for i, v in model.items()]
    assert_same_rows(pp_read("db_tarn"), expected, ["id"], "pypaimon")
    after = check_buckets("db_tarn", ["id"])
    for k, b in buckets.items():
        assert after[k] == b, f"key {k} moved from bucket {b} to {after[k]}"
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM db_tarn"), expected, ["id"], "tarn")
        # And tarn finds pypaimon's new keys in the buckets pypaimon chose.
        conn.execute("UPDATE db_tarn SET v = 't' || id WHERE id >= 50")
        conn.execute("INSERT INTO db_tarn VALUES (60, 't60')")
    model.update({50: "t50", 51: "t51", 60: "t60"})
    expected = [dict(id=i, v=v) for i, v in model.items()]
    assert_same_rows(pp_read("db_tarn"), expected, ["id"], "pypaimon")
    last = check_buckets("db_tarn", ["id"])
    for k, b in after.items():
        assert last[k] == b


def test_pypaimon_writes_tarn_updates_partitioned():
    fields = [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("v", pa.string()),
    ]
    table = pp_create(
        "db_pp",
        fields,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "8"},
    )
    model = {}
    rows = [dict(dt=d, id=i, v=f"p{i}") for d in ("a", "b") for i in range(20)]
    pp_write(table, rows)
    model.update({(r["dt"], r["id"]): r["v"] for r in rows})
    before = check_buckets("db_pp", ["id"], ["dt"])
    with connect() as conn:
        # Existing keys of both partitions, new keys, a delete, a MERGE.
        conn.execute(
            "INSERT INTO db_pp SELECT 'a', g, 't' || g FROM generate_series(0, 29, 3) g "
            "ON CONFLICT (dt, id) DO UPDATE SET v = excluded.v"
        )
        conn.execute("UPDATE db_pp SET v = 'u' WHERE dt = 'b' AND id % 5 = 0")
        conn.execute("DELETE FROM db_pp WHERE dt = 'b' AND id = 7")
        conn.execute(
            "MERGE INTO db_pp USING (VALUES ('b', 1, 'm1'), ('b', 40, 'm40')) s(dt, id, v) "
            "ON db_pp.dt = s.dt AND db_pp.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.dt, s.id, s.v)"
        )
    model.update({("a", g): f"t{g}" for g in range(0, 30, 3)})
    model.update({("b", i): "u" for i in range(0, 20, 5)})
    del model[("b", 7)]
    model.update({("b", 1): "m1", ("b", 40): "m40"})
    expected = [dict(dt=d, id=i, v=v) for (d, i), v in model.items()]
    assert_same_rows(pp_read("db_pp"), expected, ["dt", "id"], "pypaimon")
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM db_pp"), expected, ["dt", "id"], "tarn")
    after = check_buckets("db_pp", ["id"], ["dt"])
    for k, b in before.items():
        if k in after:
            assert after[k] == b, f"key {k} moved from bucket {b} to {after[k]}"
    # pypaimon left 16..19 in bucket 2, below the target (8): tarn's new keys join them.
    assert after[("a", 21)] == after[("a", 27)] == after[("a", 16)] == 2

    # pypaimon again, over tarn's writes: tarn's new keys (a, 21..27) are found where tarn put
    # them.
    more = [dict(dt="a", id=i, v=f"q{i}") for i in (21, 24, 27, 100)]
    pp_write("db_pp", more)
    model.update({("a", r["id"]): r["v"] for r in more})
    expected = [dict(dt=d, id=i, v=v) for (d, i), v in model.items()]
    assert_same_rows(pp_read("db_pp"), expected, ["dt", "id"], "pypaimon")
    last = check_buckets("db_pp", ["id"], ["dt"])
    assert len(last) == len(model)
    for k, b in after.items():
        if k in last:
            assert last[k] == b, f"key {k} moved from bucket {b} to {last[k]}"


def test_alternating_writers_keep_one_bucket_per_key():
    table = pp_create(
        "db_alt", FIELDS, primary_keys=["id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "5"},
    )
    model = {}
    placed = {}
    for round_ in range(6):
        new = range(round_ * 7, round_ * 7 + 7)
        old = [k for k in model if k % 3 == round_ % 3]
        if round_ % 2 == 0:
            rows = [dict(id=i, v=f"pp{round_}-{i}") for i in list(new) + old]
            pp_write(table, rows)
        else:
            values = ", ".join(f"({i}, 'pg{round_}-{i}')" for i in list(new) + old)
            with connect() as conn:
                conn.execute(
                    f"INSERT INTO db_alt VALUES {values} ON CONFLICT (id) DO UPDATE SET v = excluded.v"
                )
            rows = [dict(id=i, v=f"pg{round_}-{i}") for i in list(new) + old]
        model.update({r["id"]: r["v"] for r in rows})
        expected = [dict(id=i, v=v) for i, v in model.items()]
        assert_same_rows(pp_read("db_alt"), expected, ["id"], f"pypaimon round {round_}")
        with connect() as conn:
            assert_same_rows(
                pg_rows(conn, "SELECT * FROM db_alt"), expected, ["id"], f"tarn round {round_}"
            )
        now = check_buckets("db_alt", ["id"])
        for k, b in placed.items():
            assert now[k] == b, f"round {round_}: key {k} moved from {b} to {now[k]}"
        placed = now
    assert len(set(placed.values())) >= 8


def test_concurrent_tarn_writers_of_new_keys():
    with connect() as conn:
        conn.execute(
            "CREATE TABLE db_conc (id bigint PRIMARY KEY, v text) WITH (bucket = -1, "
            "'dynamic-bucket.target-row-num' = '4')"
        )
    failures = []

    def writer(n):
        try:
            with connect() as conn:
                for j in range(10):
                    conn.execute("INSERT INTO db_conc VALUES (%s, %s)", (n * 100 + j, f"w{n}"))
        except Exception as e:  # pragma: no cover - reported below
            failures.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    expected = [dict(id=n * 100 + j, v=f"w{n}") for n in range(4) for j in range(10)]
    assert_same_rows(pp_read("db_conc"), expected, ["id"], "pypaimon")
    buckets = check_buckets("db_conc", ["id"])
    assert len(buckets) == 40


def test_a_key_pypaimon_placed_meanwhile_fails_the_commit():
    table = pp_create(
        "db_race", FIELDS, primary_keys=["id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "2"},
    )
    pp_write(table, [dict(id=1, v="a")])
    with connect() as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        # Bucket 0 has room for one key in this snapshot: 7 goes there.
        conn.execute(
            "INSERT INTO db_race VALUES (7, 'tarn') ON CONFLICT (id) DO UPDATE SET v = excluded.v"
        )
        # pypaimon fills bucket 0 with 2 and puts 7 into bucket 1.
        pp_write(table, [dict(id=2, v="b"), dict(id=7, v="pypaimon")])
        with pytest.raises(errors.SerializationFailure) as e:
            conn.execute("COMMIT")
        assert "another writer changed the bucket index" in str(e.value)
    expected = [dict(id=1, v="a"), dict(id=2, v="b"), dict(id=7, v="pypaimon")]
    assert_same_rows(pp_read("db_race"), expected, ["id"], "pypaimon")
    assert check_buckets("db_race", ["id"])[(7,)] == 1
    # Run again, the statement finds 7 in bucket 1.
    with connect() as conn:
        conn.execute(
            "INSERT INTO db_race VALUES (7, 'tarn') ON CONFLICT (id) DO UPDATE SET v = excluded.v"
        )
    expected[2] = dict(id=7, v="tarn")
    assert_same_rows(pp_read("db_race"), expected, ["id"], "pypaimon")
    assert check_buckets("db_race", ["id"])[(7,)] == 1


def test_expiry_deletes_the_hash_files_no_retained_snapshot_lists():
    with connect() as conn:
        conn.execute(
            "CREATE TABLE db_exp (id bigint PRIMARY KEY, v text) WITH (bucket = -1, "
            "'dynamic-bucket.target-row-num' = '100', 'write-only' = 'true')"
        )
        # Each commit adds a key to bucket 0: a new HASH file replaces the last.
        for i in range(8):
            conn.execute("INSERT INTO db_exp VALUES (%s, 'x')", (i,))
        index_dir = os.path.join(WAREHOUSE, "public.db", "db_exp", "index")
        assert len(os.listdir(index_dir)) == 8
        pg_rows(conn, "CALL sys.expire_snapshots('db_exp', retain_max => 2, retain_min => 1)")
        # The two retained snapshots reference the last two HASH files.
        table = pp_table("db_exp")
        latest = table.snapshot_manager().get_latest_snapshot()
        live = {e.index_file.file_name for e in IndexFileHandler(table).scan(latest, lambda e: True)}
        remaining = set(os.listdir(index_dir))
        assert len(live) == 1 and len(remaining) == 2, (live, remaining)
        assert live <= remaining
        conn.execute("INSERT INTO db_exp VALUES (3, 'y') ON CONFLICT (id) DO UPDATE SET v = 'y'")
    expected = [dict(id=i, v="y" if i == 3 else "x") for i in range(8)]
    assert_same_rows(pp_read("db_exp"), expected, ["id"], "pypaimon")
    assert set(check_buckets("db_exp", ["id"]).values()) == {0}
