"""Compaction and pypaimon (an independent Paimon implementation), both ways: tables written by
pypaimon and tarn, compacted by tarn (`CALL sys.compact`, background passes), read back by both
at every snapshot; merge engines fold during compaction as Paimon defines.

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
"""

import time

import pyarrow as pa
import pytest

from test_pypaimon import (
    MERGE_ENGINE_CASES,
    assert_same_rows,
    connect,
    pg_rows,
    pp_create,
    pp_read,
    pp_table,
    pp_write,
)


def levels(conn, name):
    return sorted(r["level"] for r in pg_rows(conn, f'select level from "{name}$files"'))


def wait_idle(conn, name, timeout=60):
    """Until a background pass has had time to finish: the file list stops changing."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        now = pg_rows(conn, f'select file_path, level from "{name}$files" order by 1')
        if now == last:
            return
        last = now
        time.sleep(0.5)
    raise AssertionError(f"{name}: files still changing after {timeout} s")


@pytest.mark.parametrize(
    "name, options, commits, merged, pp_reads",
    MERGE_ENGINE_CASES,
    ids=[c[0] for c in MERGE_ENGINE_CASES],
)
def test_tarn_compacts_pypaimon_tables_of_every_merge_engine(
    name, options, commits, merged, pp_reads
):
    fields = [pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.string())]
    table_name = f"cp_me_{name}"
    table = pp_create(table_name, fields, primary_keys=["id"], options=dict(options, bucket="2"))
    for commit in commits:
        pp_write(table, [dict(id=i, a=a, b=b) for i, a, b in commit])
    expected = [dict(id=i, a=a, b=b) for i, a, b in merged]
    with connect() as conn:
        # One more version from tarn, as in test_pypaimon's merge-engine test.
        conn.execute(f"INSERT INTO {table_name} VALUES (100, 1, 'tarn'), (2, NULL, NULL)")
        expected.append(dict(id=100, a=1, b="tarn"))
        # (First-row tables push level-0 files up at once in the background, as Paimon's
        # lookup compaction does; the CALL waits for that pass and compacts what is left.)
        pg_rows(conn, f"CALL sys.compact('{table_name}')")
        assert levels(conn, table_name) == [5, 5]
        kinds = pg_rows(conn, f'select commit_kind from "{table_name}$snapshots" order by 1')
        assert kinds[-1]["commit_kind"] == "COMPACT"
        assert_same_rows(pg_rows(conn, f"SELECT * FROM {table_name}"), expected, ["id"], "tarn")
    # The merge engine folded during compaction: pypaimon reads the same rows, including
    # first-row tables, whose level-0 files it skips (it read them empty before).
    assert_same_rows(pp_read(table_name), expected, ["id"], "pypaimon")


def test_compaction_drops_deletes_of_pypaimon_row_kinds():
    fields = [pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("kind", pa.string())]
    table = pp_create("cp_rowkind", fields, primary_keys=["id"],
                      options={"bucket": "1", "rowkind.field": "kind"})
    pp_write(table, [dict(id=i, v=f"v{i}", kind="+I") for i in range(1, 6)])
    pp_write(table, [dict(id=1, v=None, kind="-D"), dict(id=2, v="v2b", kind="+U")])
    expected = [dict(id=2, v="v2b", kind="+U")] + [
        dict(id=i, v=f"v{i}", kind="+I") for i in (3, 4, 5)
    ]
    with connect() as conn:
        pg_rows(conn, "CALL sys.compact('cp_rowkind')")
        files = pg_rows(conn, 'select level, record_count from "cp_rowkind$files"')
        assert files == [dict(level=5, record_count=4)], "the delete of key 1 is gone"
        assert_same_rows(pg_rows(conn, "SELECT * FROM cp_rowkind"), expected, ["id"], "tarn")
    assert_same_rows(pp_read("cp_rowkind"), expected, ["id"], "pypaimon")


def test_background_compaction_every_snapshot_reads_alike():
    """Upserts and deletes from tarn and pypaimon into one table; background compactions
    commit between them. At every retained snapshot, pypaimon (`scan.snapshot-id`) and tarn
    (`VERSION AS OF`) read the same rows, and both equal a model at the end."""
    name = "cp_background"
    model = {}
    with connect() as conn:
        conn.execute(f"drop table if exists {name}")
        conn.execute(f"create table {name} (id bigint primary key, v text) with (bucket = 2)")
        for n in range(30):
            ids = [(n * 7 + k * 3) % 23 for k in range(3)]
            if n % 5 == 4:
                conn.execute(f"delete from {name} where id = %s", (ids[0],))
                model.pop(ids[0], None)
            elif n % 6 == 5:
                rows = [dict(id=i, v=f"pp{n}-{i}") for i in sorted(set(ids))]
                pp_write(pp_table(name), rows)
                model.update({r["id"]: r["v"] for r in rows})
            else:
                for i in ids:
                    conn.execute(
                        f"insert into {name} values (%s, %s) "
                        f"on conflict (id) do update set v = excluded.v",
                        (i, f"t{n}-{i}"),
                    )
                    model[i] = f"t{n}-{i}"
        wait_idle(conn, name)
        snaps = pg_rows(conn, f'select snapshot_id, commit_kind from "{name}$snapshots" order by 1')
        assert any(s["commit_kind"] == "COMPACT" for s in snaps), "background compaction ran"
        expected = [dict(id=i, v=v) for i, v in model.items()]
        assert_same_rows(pg_rows(conn, f"select * from {name}"), expected, ["id"], "tarn")
        assert_same_rows(pp_read(name), expected, ["id"], "pypaimon")
        for s in snaps:
            sid = s["snapshot_id"]
            mine = pg_rows(conn, f"select * from {name} version as of {sid}")
            assert_same_rows(pp_read(pp_table(name, sid)), mine, ["id"], f"snapshot {sid}")
        runs = pg_rows(
            conn,
            f'select bucket, count(*) filter (where level = 0) + count(distinct level) '
            f'filter (where level > 0) as runs from "{name}$files" group by bucket',
        )
        assert all(r["runs"] <= 5 for r in runs), runs
