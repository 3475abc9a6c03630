"""Dropped partitions read by pypaimon: ALTER TABLE ... DROP PARTITION and DELETEs of whole
partitions are OVERWRITE snapshots that pypaimon reads as tarn does — the partitions gone, the
other partitions unchanged, the version before the drop still whole — on fixed-bucket,
dynamic-bucket (HASH index files of the dropped partitions gone) and append tables; and
pypaimon writes a dropped partition again."""

import datetime

import pytest

from test_pypaimon import (
    assert_same_rows,
    connect,
    pg_rows,
    pp_read,
    pp_table,
    pp_write,
)

date = datetime.date


@pytest.mark.parametrize(
    "name, ddl",
    [
        (
            "tpd_fixed",
            "(dt DATE NOT NULL, id BIGINT NOT NULL, v TEXT, PRIMARY KEY (dt, id)) "
            "PARTITIONED BY (dt) WITH (bucket = 2)",
        ),
        (
            "tpd_dynamic",
            "(dt DATE NOT NULL, id BIGINT NOT NULL, v TEXT, PRIMARY KEY (dt, id)) "
            "PARTITIONED BY (dt) WITH (bucket = -1)",
        ),
        ("tpd_append", "(dt DATE, id BIGINT, v TEXT) PARTITIONED BY (dt)"),
    ],
)
def test_dropped_partitions_read_by_pypaimon(name, ddl):
    keyed = name != "tpd_append"
    with connect() as conn:
        conn.execute(f"CREATE TABLE {name} {ddl}")
        conn.execute(
            f"""INSERT INTO {name}
                SELECT DATE '2026-01-01' + (x % 4), x, 'v' || x FROM generate_series(1, 400) g(x)"""
        )
        if keyed:
            conn.execute(f"UPDATE {name} SET v = 'changed' WHERE id % 7 = 0")
        before = conn.execute(f'SELECT max(snapshot_id) FROM "{name}$snapshots"').fetchone()[0]
        rows_before = pg_rows(conn, f"SELECT * FROM {name}")
        conn.execute(f"ALTER TABLE {name} DROP PARTITION (dt = '2026-01-02')")
        cur = conn.execute(f"DELETE FROM {name} WHERE dt IN ('2026-01-03', '2026-01-04')")
        assert cur.rowcount == 200
        kinds = [
            r[0]
            for r in conn.execute(
                f'SELECT commit_kind FROM "{name}$snapshots" WHERE snapshot_id > %s '
                "AND commit_kind <> 'COMPACT' ORDER BY snapshot_id",
                (before,),
            ).fetchall()
        ]
        assert kinds == ["OVERWRITE", "OVERWRITE"]
        rows_after = pg_rows(conn, f"SELECT * FROM {name}")
    assert {r["dt"] for r in rows_after} == {date(2026, 1, 1)}
    assert len(rows_after) == 100
    key = ["dt", "id"]
    assert_same_rows(pp_read(name), rows_after, key, "pypaimon after the drops")
    assert_same_rows(pp_read(pp_table(name, before)), rows_before, key, "pypaimon before")
    # Another engine writes a dropped partition again; tarn and pypaimon read it.
    pp_write(name, [{"dt": date(2026, 1, 2), "id": 2, "v": "again"}])
    with connect() as conn:
        back = pg_rows(conn, f"SELECT * FROM {name} WHERE dt = '2026-01-02'")
        conn.execute(f"INSERT INTO {name} VALUES ('2026-01-02', 6, 'tarn')")
        final = pg_rows(conn, f"SELECT * FROM {name}")
    assert back == [{"dt": date(2026, 1, 2), "id": 2, "v": "again"}]
    assert len(final) == 102
    assert_same_rows(pp_read(name), final, key, "pypaimon after writing the partition again")
