"""`changelog-producer = input`: tarn's changelog files read by pypaimon (an independent Paimon
reader), through its batch incremental read (`incremental-between-timestamp`, which reads the
changelog files of the snapshots in the range) and its streaming read; tarn's
`table_changelog` and `$audit_log` read the same changes.

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
"""

from test_pypaimon import assert_same_rows, connect, pg_rows, pp_read, pp_table


def _times(conn, name):
    rows = pg_rows(
        conn,
        f'select snapshot_id, cast(extract(epoch from commit_time) * 1000 as bigint) as ms, '
        f'changelog_manifest_list from "{name}$snapshots" order by snapshot_id',
    )
    return rows


def _changelog(name, t_from, t_to):
    table = pp_table(name).copy({"incremental-between-timestamp": f"{t_from},{t_to}"})
    rb = table.new_read_builder()
    read = rb.new_read()
    read.include_row_kind = True
    result = read.to_arrow(rb.new_scan().plan().splits())
    rows = [] if result is None else result.to_pylist()
    return sorted((r["_row_kind"], r["id"], r["v"]) for r in rows)


def test_input_changelog_is_read_by_pypaimon():
    name = "cl_input"
    with connect() as conn:
        conn.execute(f"drop table if exists {name}")
        conn.execute(
            f"create table {name} (id int primary key, v text) "
            f"with (bucket = 2, 'changelog-producer' = 'input')"
        )
        conn.execute(f"insert into {name} values (1, 'a'), (2, 'b'), (3, 'c')")
        conn.execute(f"update {name} set v = 'a2' where id = 1")
        conn.execute(f"delete from {name} where id = 2")
        # Two changes of one key in one transaction: the changelog has both (Paimon's input
        # producer records every change the writer received), the data file only the last.
        with conn.transaction():
            conn.execute(f"update {name} set v = 'c2' where id = 3")
            conn.execute(f"update {name} set v = 'c3' where id = 3")
        snaps = _times(conn, name)
        assert [s["snapshot_id"] for s in snaps] == [1, 2, 3, 4]
        assert all(s["changelog_manifest_list"] for s in snaps)
        ms = [s["ms"] for s in snaps]
        # Everything since before the first commit: every change in commit order's kinds.
        assert _changelog(name, ms[0] - 1, ms[3]) == sorted(
            [
                ("+I", 1, "a"),
                ("+I", 2, "b"),
                ("+I", 3, "c"),
                ("+U", 1, "a2"),
                ("-D", 2, "b"),
                ("+U", 3, "c2"),
                ("+U", 3, "c3"),
            ]
        )
        # Only the last two commits.
        assert _changelog(name, ms[1], ms[3]) == sorted(
            [("-D", 2, "b"), ("+U", 3, "c2"), ("+U", 3, "c3")]
        )
        # tarn's own changelog query and audit log read the same changes as pypaimon.
        for first, last in [(0, 4), (2, 4), (1, 2)]:
            mine = pg_rows(
                conn, f"select rowkind, id, v from table_changelog('{name}', {first}, {last})"
            )
            since = ms[first - 1] if first > 0 else ms[0] - 1
            assert sorted((r["rowkind"], r["id"], r["v"]) for r in mine) == _changelog(
                name, since, ms[last - 1]
            )
        audit = pg_rows(conn, f'select rowkind, id, v from "{name}$audit_log"')
        assert sorted((r["rowkind"], r["id"], r["v"]) for r in audit) == _changelog(
            name, ms[0] - 1, ms[3]
        )
        # The merged table reads the same through both.
        assert_same_rows(pg_rows(conn, f"select * from {name}"), pp_read(name), key="id")


def test_tables_without_a_producer_write_no_changelog():
    name = "cl_none"
    with connect() as conn:
        conn.execute(f"drop table if exists {name}")
        conn.execute(f"create table {name} (id int primary key, v text)")
        conn.execute(f"insert into {name} values (1, 'a')")
        snaps = _times(conn, name)
        assert snaps[0]["changelog_manifest_list"] is None


def _check_against_pypaimon(conn, name):
    """tarn's table_changelog over every snapshot = pypaimon's incremental read of them."""
    snaps = _times(conn, name)
    ms = [s["ms"] for s in snaps]
    last = len(snaps)
    mine = pg_rows(conn, f"select rowkind, id, v from table_changelog('{name}', 0, {last})")
    ours = sorted((r["rowkind"], r["id"], r["v"]) for r in mine)
    assert ours == _changelog(name, ms[0] - 1, ms[-1])
    return ours, snaps


def test_lookup_and_full_compaction_changelogs_are_read_by_pypaimon():
    """Compaction produces the changelog (`changelog-producer` = lookup / full-compaction):
    pypaimon reads the changelog files of the COMPACT snapshots, and replaying them gives the
    table."""
    for producer in ["lookup", "full-compaction"]:
        name = "cl_" + producer.replace("-", "_")
        with connect() as conn:
            conn.execute(f"drop table if exists {name}")
            conn.execute(
                f"create table {name} (id int primary key, v text) "
                f"with (bucket = 2, 'changelog-producer' = '{producer}', 'write-only' = 'true')"
            )
            conn.execute(f"insert into {name} values (1, 'a'), (2, 'b'), (3, 'c')")
            conn.execute(f"call sys.compact('{name}', compact_strategy => 'minor')")
            conn.execute(f"update {name} set v = 'a2' where id = 1")
            conn.execute(f"update {name} set v = 'a3' where id = 1")
            conn.execute(f"delete from {name} where id = 2")
            conn.execute(f"insert into {name} values (4, 'd')")
            conn.execute(f"call sys.compact('{name}', compact_strategy => 'minor')")
            ours, snaps = _check_against_pypaimon(conn, name)
            # Only compactions carry a changelog (one commit per compacted bucket).
            commit_kinds = pg_rows(
                conn, f'select commit_kind from "{name}$snapshots" order by snapshot_id'
            )
            carried = [
                (k["commit_kind"], s["changelog_manifest_list"] is not None)
                for k, s in zip(commit_kinds, snaps)
            ]
            assert all((k == "COMPACT") == c for k, c in carried), (producer, carried)
            assert ours == sorted(
                [
                    ("+I", 1, "a"),
                    ("+I", 2, "b"),
                    ("+I", 3, "c"),
                    ("-U", 1, "a"),
                    ("+U", 1, "a3"),
                    ("-D", 2, "b"),
                    ("+I", 4, "d"),
                ]
            ), producer
            assert_same_rows(pg_rows(conn, f"select * from {name}"), pp_read(name), key="id")
