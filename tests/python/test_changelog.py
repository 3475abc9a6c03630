"""`changelog-producer = input`: tarn's changelog files read by pypaimon (an independent Paimon
reader), through its batch incremental read (`incremental-between-timestamp`, which reads the
changelog files of the snapshots in the range) and its streaming read; tarn's
`table_changelog` and `$audit_log` read the same changes.

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
"""

import psycopg

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


def _replay(rows):
    """Applies change rows snapshot by snapshot (retractions first: a key's -U and +U share a
    snapshot) and checks each retraction removes the row the key holds."""
    state = {}
    by_snapshot = {}
    for r in rows:
        by_snapshot.setdefault(r["snapshot_id"], []).append(r)
    for sid in sorted(by_snapshot):
        for r in by_snapshot[sid]:
            if r["rowkind"] in ("-U", "-D"):
                assert state.pop(r["id"], None) == r["v"], (sid, r)
        for r in by_snapshot[sid]:
            if r["rowkind"] in ("+I", "+U"):
                assert r["id"] not in state, (sid, r)
                state[r["id"]] = r["v"]
    return state


def test_background_compaction_changelog_replays_to_the_table():
    """Concurrent writers on a lookup table, the background compactor producing the changelog:
    once it is idle, replaying the changelog gives the table, and pypaimon reads the same
    changes."""
    import random
    import threading
    import time

    name = "cl_lookup_bg"
    with connect() as conn:
        conn.execute(f"drop table if exists {name}")
        conn.execute(
            f"create table {name} (id int primary key, v text) "
            f"with (bucket = 2, 'changelog-producer' = 'lookup')"
        )
    errors = []

    def writer(seed):
        rng = random.Random(seed)
        try:
            with connect() as c:
                for i in range(25):
                    ops = [(rng.randrange(40), rng.random() < 0.2) for _ in range(4)]
                    while True:
                        try:
                            with c.transaction():
                                for k, delete in ops:
                                    if delete:
                                        c.execute(f"delete from {name} where id = %s", (k,))
                                    else:
                                        c.execute(
                                            f"insert into {name} values (%s, %s) on conflict "
                                            f"(id) do update set v = excluded.v",
                                            (k, f"w{seed}-{i}"),
                                        )
                            break
                        except (
                            psycopg.errors.SerializationFailure,
                            psycopg.errors.DeadlockDetected,
                        ):
                            # Another writer changed one of these keys, or holds a key this
                            # transaction waits for while waiting for one of ours: retry, as
                            # against PostgreSQL.
                            continue
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with connect() as conn:
        # Idle: no new snapshot for 3 s and no compaction running.
        last, quiet, deadline = None, 0, time.monotonic() + 120
        while quiet < 6:
            assert time.monotonic() < deadline, "compaction never went idle"
            time.sleep(0.5)
            latest = pg_rows(conn, f'select max(snapshot_id) as m from "{name}$snapshots"')[0]["m"]
            running = pg_rows(conn, f'select running from "{name}$compaction"')[0]["running"]
            quiet = quiet + 1 if latest == last and not running else 0
            last = latest
        changes = pg_rows(
            conn, f"select rowkind, snapshot_id, id, v from table_changelog('{name}', 0, {last})"
        )
        table = {r["id"]: r["v"] for r in pg_rows(conn, f"select id, v from {name}")}
        assert table, "the writers left rows"
        assert _replay(changes) == table
        ours, _ = _check_against_pypaimon(conn, name)
        assert len(ours) == len(changes)
