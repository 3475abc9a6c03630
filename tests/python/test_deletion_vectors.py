"""Deletion vectors (`deletion-vectors.enabled`) and pypaimon, both ways.

tarn's compaction of such tables looks the level-0 keys up in the levels it does not touch and
deletes their previous rows there with deletion vectors (Paimon's merge-on-write), so that every
key has one live row in levels >= 1. Paimon's readers, pypaimon among them, read those levels
alone, applying the vectors and merging nothing: what pypaimon reads is the proof that tarn's
index manifests, index files and vectors are right. tarn itself reads level 0 too
(read-your-writes), so at snapshots where level 0 is empty both must agree exactly.

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
"""

import os

import pyarrow as pa
import pytest

from test_compaction import wait_idle
from test_pypaimon import (
    MERGE_ENGINE_CASES,
    WAREHOUSE,
    assert_same_rows,
    connect,
    pg_rows,
    pp_create,
    pp_read,
    pp_table,
    pp_write,
)

DV = "'deletion-vectors.enabled' = 'true'"


def index_files(name):
    folder = os.path.join(WAREHOUSE, "public.db", name, "index")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def level0_files(conn, name, sid):
    rows = pg_rows(conn, f'select level from "{name}$files" version as of {sid}')
    return sum(1 for r in rows if r["level"] == 0)


def minor(conn, name):
    pg_rows(conn, f"CALL sys.compact('{name}', compact_strategy => 'minor')")


def test_tarn_writes_deletion_vectors_pypaimon_reads_every_snapshot():
    name = "dv_tarn"
    model = {}
    with connect() as conn:
        conn.execute(f"drop table if exists {name}")
        conn.execute(f"create table {name} (id bigint primary key, v text) with (bucket = 2, {DV})")
        conn.execute(f"insert into {name} select g, 'base' || g from generate_series(1, 400) g")
        model.update({i: f"base{i}" for i in range(1, 401)})
        pg_rows(conn, f"CALL sys.compact('{name}')")  # everything at the top level
        for n in range(12):
            if n % 4 == 3:
                conn.execute(f"delete from {name} where id %% 13 = %s", (n,))
                for i in [i for i in model if i % 13 == n]:
                    del model[i]
            else:
                ids = [(n * 37 + k * 11) % 450 + 1 for k in range(25)]
                for i in ids:
                    conn.execute(
                        f"insert into {name} values (%s, %s) "
                        f"on conflict (id) do update set v = excluded.v",
                        (i, f"t{n}-{i}"),
                    )
                    model[i] = f"t{n}-{i}"
            if n % 3 == 2:
                minor(conn, name)
        minor(conn, name)
        wait_idle(conn, name)
        assert index_files(name), "compaction wrote deletion-vector index files"
        expected = [dict(id=i, v=v) for i, v in model.items()]
        assert_same_rows(pg_rows(conn, f"select * from {name}"), expected, ["id"], "tarn")
        assert level0_files(conn, name, pg_rows(conn, f'select max(snapshot_id) m from "{name}$snapshots"')[0]["m"]) == 0
        # pypaimon reads levels >= 1 with the vectors applied and merges nothing.
        assert_same_rows(pp_read(name), expected, ["id"], "pypaimon")
        checked = 0
        for s in pg_rows(conn, f'select snapshot_id from "{name}$snapshots" order by 1'):
            sid = s["snapshot_id"]
            if level0_files(conn, name, sid):
                continue  # Paimon's readers skip level 0 of these tables
            mine = pg_rows(conn, f"select * from {name} version as of {sid}")
            assert_same_rows(pp_read(pp_table(name, sid)), mine, ["id"], f"snapshot {sid}")
            checked += 1
        assert checked >= 3, checked
        # A point lookup and a count agree with the model while vectors are in place.
        key = next(iter(model))
        assert pg_rows(conn, f"select v from {name} where id = %s", (key,)) == [dict(v=model[key])]
        assert pg_rows(conn, f"select count(*) c from {name}") == [dict(c=len(model))]
        # A full compaction rewrites files with deleted rows: no vector is left to apply.
        pg_rows(conn, f"CALL sys.compact('{name}')")
        assert_same_rows(pp_read(name), expected, ["id"], "pypaimon after full compaction")


@pytest.mark.parametrize(
    "name, options, commits, merged, pp_reads",
    MERGE_ENGINE_CASES,
    ids=[c[0] for c in MERGE_ENGINE_CASES],
)
def test_pypaimon_writes_tarn_compacts_with_deletion_vectors(
    name, options, commits, merged, pp_reads
):
    """pypaimon writes level-0 files into a table with deletion vectors (it cannot compact);
    tarn reads them merged at once, then compacts: the first commit goes to the top level, the
    later ones are looked up against it, and the engine folds old and new versions."""
    fields = [pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.string())]
    table_name = f"dv_me_{name}"
    opts = dict(options, bucket="1")
    opts["deletion-vectors.enabled"] = "true"
    opts["write-only"] = "true"  # compaction only when the test asks
    table = pp_create(table_name, fields, primary_keys=["id"], options=opts)
    # Rows of no other commit make the first file big: the policy then leaves it alone and
    # pushes the later level-0 files into a level above it, looking their keys up in it.
    filler = [dict(id=i, a=i, b="fill") for i in range(1000, 1300)]
    expected = [dict(id=i, a=a, b=b) for i, a, b in merged] + filler
    pp_write(table, [dict(id=i, a=a, b=b) for i, a, b in commits[0]] + filler)
    with connect() as conn:
        pg_rows(conn, f"CALL sys.compact('{table_name}')")
        for commit in commits[1:]:
            pp_write(table, [dict(id=i, a=a, b=b) for i, a, b in commit])
        # Before compaction tarn merges level 0 itself.
        assert_same_rows(pg_rows(conn, f"SELECT * FROM {table_name}"), expected, ["id"], "tarn")
        minor(conn, table_name)
        levels = sorted(r["level"] for r in pg_rows(conn, f'select level from "{table_name}$files"'))
        assert 0 not in levels and len(levels) == 2, levels
        assert index_files(table_name), "the lookup deleted the old versions with a vector"
        assert_same_rows(pg_rows(conn, f"SELECT * FROM {table_name}"), expected, ["id"], "tarn")
    assert_same_rows(pp_read(table_name), expected, ["id"], "pypaimon")
