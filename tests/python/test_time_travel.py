"""Time travel and tags, checked against pypaimon (an independent Paimon reader).

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
`VERSION AS OF n` through tarn must return exactly what pypaimon returns with
`scan.snapshot-id = n`; tags created with `CALL sys.create_tag` must be Paimon tags pypaimon
reads (`scan.tag-name`), and tags pypaimon creates must be readable with `VERSION AS OF 'tag'`.

Every test owns its table names.
"""

import os

import pytest
from psycopg import errors

from test_pypaimon import (
    WAREHOUSE,
    assert_same_rows,
    connect,
    pg_rows,
    pp_read,
    pp_table,
    pp_write,
    snapshot_files,
)


def _history(conn, name):
    """A table with five snapshots of every statement kind; returns the snapshot ids."""
    conn.execute(f"drop table if exists {name}")
    conn.execute(
        f"create table {name} (id int primary key, amount int, status text) with (bucket = 2)"
    )
    conn.execute(f"insert into {name} select g, g * 10, 'new' from generate_series(1, 20) g")
    conn.execute(f"update {name} set status = 'paid', amount = amount + 1 where id % 3 = 0")
    conn.execute(f"delete from {name} where id > 15")
    conn.execute(
        f"insert into {name} values (3, 0, 'again'), (30, 300, 'new') "
        f"on conflict (id) do update set status = excluded.status"
    )
    conn.execute(f"upsert into {name} values (1, 1, 'up'), (40, 400, 'new')")
    return snapshot_files(name)


def test_version_as_of_equals_pypaimon_snapshot_reads():
    with connect() as conn:
        ids = _history(conn, "tt_hist")
        assert ids == [1, 2, 3, 4, 5]
        for sid in ids:
            ours = pg_rows(conn, f"select * from tt_hist version as of {sid}")
            theirs = pp_read(pp_table("tt_hist", snapshot_id=sid))
            assert_same_rows(ours, theirs, key="id", label=f"snapshot {sid}")
        # Different versions differ (the test can fail): snapshot 1 has 20 rows, 3 has 15.
        assert len(pg_rows(conn, "select * from tt_hist version as of 1")) == 20
        assert len(pg_rows(conn, "select * from tt_hist version as of 3")) == 15


def test_tags_created_by_tarn_are_read_by_pypaimon():
    with connect() as conn:
        _history(conn, "tt_tag")
        conn.execute("call sys.create_tag('tt_tag', 'after_update', 2)")
        conn.execute("call sys.create_tag('public.tt_tag', 'latest')")
        assert os.path.exists(os.path.join(WAREHOUSE, "public.db/tt_tag/tag/tag-after_update"))
        for tag, sid in [("after_update", 2), ("latest", 5)]:
            ours = pg_rows(conn, f"select * from tt_tag version as of '{tag}'")
            theirs = pp_read(pp_table("tt_tag").copy({"scan.tag-name": tag}))
            assert_same_rows(ours, theirs, key="id", label=f"tag {tag}")
            assert_same_rows(
                ours,
                pg_rows(conn, f"select * from tt_tag version as of {sid}"),
                key="id",
                label=f"tag {tag} = snapshot {sid}",
            )
        with pytest.raises(errors.DuplicateObject):
            conn.execute("call sys.create_tag('tt_tag', 'latest')")
        conn.execute("call sys.delete_tag('tt_tag', 'latest')")
        assert not os.path.exists(os.path.join(WAREHOUSE, "public.db/tt_tag/tag/tag-latest"))
        with pytest.raises(errors.UndefinedObject):
            conn.execute("select * from tt_tag version as of 'latest'")
        with pytest.raises(errors.UndefinedObject):
            conn.execute("call sys.delete_tag('tt_tag', 'latest')")


def test_tags_created_by_pypaimon_are_read_by_tarn():
    with connect() as conn:
        conn.execute("drop table if exists tt_pptag")
        conn.execute("create table tt_pptag (id int primary key, v text) with (bucket = 1)")
        conn.execute("insert into tt_pptag values (1, 'one')")
        pp_write("tt_pptag", [{"id": 2, "v": "two"}])
        table = pp_table("tt_pptag")
        table.create_tag("from_pypaimon", snapshot_id=1)
        rows = pg_rows(conn, "select * from tt_pptag version as of 'from_pypaimon'")
        assert rows == [{"id": 1, "v": "one"}]
        assert len(pg_rows(conn, "select * from tt_pptag")) == 2
