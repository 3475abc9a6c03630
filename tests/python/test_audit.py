"""The audit script of issue 5, end to end through psycopg and checked against pypaimon.

create -> many commits over time -> tag -> more commits -> time-travel queries at timestamps
between commits, version joins, table_changes between tags. Every expected answer comes from a
model of the writes kept here (a dict per committed snapshot) and from pypaimon reading the same
snapshots, never from tarn itself. Then: expiration keeps the snapshot and manifest counts
bounded over 1,000 commits while a tagged version still reads, and no file is left that no
retained snapshot or tag references.

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
"""

import os
import random
import time

from test_pypaimon import (
    WAREHOUSE,
    assert_same_rows,
    connect,
    pg_rows,
    pp_read,
    pp_table,
)


def _commit_time(conn, name, sid):
    return pg_rows(
        conn, f'select commit_time from "{name}$snapshots" where snapshot_id = %s', (sid,)
    )[0]["commit_time"]


def _latest(conn, name):
    # The user commit's snapshot: a background compaction may already have committed above it.
    return pg_rows(
        conn,
        f'select max(snapshot_id) as s from "{name}$snapshots" where commit_kind = \'APPEND\'',
    )[0]["s"]


def _rows(model):
    return [{"id": k, "amount": v[0], "note": v[1]} for k, v in model.items()]


def _diff(old, new):
    """The net change between two model states, as table_changes shows it (no snapshot ids)."""
    out = []
    for k in sorted(set(old) | set(new)):
        if k not in old:
            out.append(("+I", k) + new[k])
        elif k not in new:
            out.append(("-D", k) + old[k])
        elif old[k] != new[k]:
            out.append(("-U", k) + old[k])
            out.append(("+U", k) + new[k])
    return sorted(out)


def test_audit_script_matches_the_model_and_pypaimon():
    rng = random.Random(5)
    name = "audit_orders"
    with connect() as conn:
        conn.execute(f"drop table if exists {name}")
        conn.execute(
            f"create table {name} (id int primary key, amount int, note text) with (bucket = 2)"
        )
        model = {}
        states = {}  # snapshot id -> model after it
        times = {}  # snapshot id -> commit time

        def commit_one():
            kind = rng.choice(["insert", "update", "delete", "upsert"]) if model else "insert"
            if kind == "insert":
                k = max(model, default=0) + 1
                v = (rng.randrange(1000), f"n{k}")
                conn.execute(f"insert into {name} values (%s, %s, %s)", (k, v[0], v[1]))
                model[k] = v
            elif kind == "update":
                k = rng.choice(sorted(model))
                amount = rng.randrange(1000)
                conn.execute(f"update {name} set amount = %s where id = %s", (amount, k))
                model[k] = (amount, model[k][1])
            elif kind == "delete":
                k = rng.choice(sorted(model))
                conn.execute(f"delete from {name} where id = %s", (k,))
                del model[k]
            else:
                k = rng.randrange(1, 40)
                v = (rng.randrange(1000), f"u{k}")
                conn.execute(f"upsert into {name} values (%s, %s, %s)", (k, v[0], v[1]))
                model[k] = v
            sid = _latest(conn, name)
            assert sid not in states, f"{kind} made no new snapshot"
            states[sid] = dict(model)
            times[sid] = _commit_time(conn, name, sid)
            # Commits spread over time, so times between commits exist.
            time.sleep(0.01)

        for _ in range(25):
            commit_one()
        conn.execute(f"call sys.create_tag('{name}', 'close_1')")
        tag1 = max(states)
        for _ in range(25):
            commit_one()
        conn.execute(f"call sys.create_tag('{name}', 'close_2')")
        tag2 = max(states)
        for _ in range(10):
            commit_one()

        ids = sorted(states)
        # Time travel at a moment between two commits sees the earlier one.
        for sid in ids[::5]:
            later = [s for s in ids if s > sid]
            if not later or times[later[0]] == times[sid]:
                continue
            between = times[sid] + (times[later[0]] - times[sid]) / 2
            ours = pg_rows(
                conn,
                f"select * from {name} for system_time as of "
                f"timestamptz '{between.isoformat()}'",
            )
            assert_same_rows(ours, _rows(states[sid]), key="id", label=f"time of {sid}")
            theirs = pp_read(pp_table(name, snapshot_id=sid))
            assert_same_rows(ours, theirs, key="id", label=f"pypaimon {sid}")

        # Tags read the tagged versions.
        for tag, sid in (("close_1", tag1), ("close_2", tag2)):
            ours = pg_rows(conn, f"select * from {name} version as of '{tag}'")
            assert_same_rows(ours, _rows(states[sid]), key="id", label=tag)

        # A version join: rows whose amount changed between the two closes.
        joined = pg_rows(
            conn,
            f"select a.id, a.amount as before, b.amount as after "
            f"from {name} version as of 'close_1' a join {name} version as of 'close_2' b "
            f"using (id) where a.amount <> b.amount",
        )
        old, new = states[tag1], states[tag2]
        expected = sorted(
            (k, old[k][0], new[k][0]) for k in old if k in new and old[k][0] != new[k][0]
        )
        assert sorted((r["id"], r["before"], r["after"]) for r in joined) == expected

        # table_changes between the tags is the net diff of the two states, each change naming
        # a snapshot in the range.
        changes = pg_rows(
            conn, f"select * from table_changes('{name}', 'close_1', 'close_2')"
        )
        got = sorted((r["rowkind"], r["id"], r["amount"], r["note"]) for r in changes)
        assert got == _diff(old, new)
        assert changes, "the random commits changed something between the tags"
        for r in changes:
            assert tag1 < r["snapshot_id"] <= tag2
            # The change's snapshot holds the row's new state (or its absence).
            state = states[r["snapshot_id"]]
            if r["rowkind"] in ("+I", "+U"):
                assert state.get(r["id"]) == (r["amount"], r["note"])
            elif r["rowkind"] == "-D":
                assert r["id"] not in state


def _files(name, folder_filter):
    root = os.path.join(WAREHOUSE, "public.db", name)
    out = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            if folder_filter(os.path.relpath(path, root)):
                out.append(path)
    return out


def test_expiration_bounds_snapshots_over_1000_commits_and_keeps_tags():
    name = "audit_expire"
    with connect() as conn:
        conn.execute(f"drop table if exists {name}")
        conn.execute(
            f"create table {name} (id int primary key, amount int, note text) "
            f"with (bucket = 1, 'snapshot.num-retained.min' = '5', "
            f"'snapshot.num-retained.max' = '20')"
        )
        conn.execute(f"insert into {name} values (1, 0, 'first'), (2, 0, 'first')")
        conn.execute(f"call sys.create_tag('{name}', 'start')")
        tagged = pg_rows(conn, f"select * from {name}")
        peak = 0
        for i in range(1000):
            if i % 100 == 99:
                # Rows deleted wholesale: their files become garbage once no snapshot holds them.
                conn.execute(f"truncate {name}")
            conn.execute(f"upsert into {name} values (%s, %s, 'x')", (i % 7, i))
            if i % 50 == 0:
                count = len(_files(name, lambda p: p.startswith("snapshot/snapshot-")))
                peak = max(peak, count)
        # Expiration runs in the background right after each commit: the last one's may still
        # be running when the client got its answer.
        for _ in range(50):
            snapshots = _files(name, lambda p: p.startswith("snapshot/snapshot-"))
            if len(snapshots) <= 20:
                break
            time.sleep(0.1)
        assert len(snapshots) <= 20, snapshots
        # Expiration runs right after each commit round, so at most a few more in between.
        assert peak <= 25, peak
        retained = pg_rows(conn, f'select count(*) as n from "{name}$snapshots"')[0]["n"]
        assert 5 <= retained <= 20
        # The tag still reads, through tarn and pypaimon, after its snapshot expired.
        assert pg_rows(conn, f'select min(snapshot_id) as s from "{name}$snapshots"')[0]["s"] > 1
        assert_same_rows(
            pg_rows(conn, f"select * from {name} version as of 'start'"), tagged, key="id"
        )
        theirs = pp_read(pp_table(name).copy({"scan.tag-name": "start"}))
        assert_same_rows(theirs, tagged, key="id")
        # Every data file left is live in a retained snapshot or the tag (none leaked), and the
        # latest state is what pypaimon reads.
        live = set()
        for sid in [r["snapshot_id"] for r in pg_rows(conn, f'select snapshot_id from "{name}$snapshots"')]:
            live |= {
                r["file_path"].rsplit("/", 1)[-1]
                for r in pg_rows(conn, f'select file_path from "{name}$files" version as of {sid}')
            }
        live |= {
            r["file_path"].rsplit("/", 1)[-1]
            for r in pg_rows(conn, f"select file_path from \"{name}$files\" version as of 'start'")
        }
        data = {os.path.basename(p) for p in _files(name, lambda p: p.startswith("bucket-"))}
        assert data == live
        # Far fewer data files than the 1,000 commits wrote (truncates' garbage went away).
        assert len(data) < 300, len(data)
        assert_same_rows(pg_rows(conn, f"select * from {name}"), pp_read(name), key="id")


def test_automatic_daily_tags_are_paimon_tags():
    """`tag.automatic-creation = process-time`, daily: the first commit tags the period before
    it at once (Paimon's rule), named by its UTC day; pypaimon reads the tag."""
    import datetime

    name = "audit_autotag"
    with connect() as conn:
        conn.execute(f"drop table if exists {name}")
        conn.execute(
            f"create table {name} (id int primary key, v text) with ("
            f"'tag.automatic-creation' = 'process-time', 'tag.creation-period' = 'daily')"
        )
        conn.execute(f"insert into {name} values (1, 'a'), (2, 'b')")
        # Tags are made in the background right after the commit.
        for _ in range(50):
            tags = pg_rows(conn, f'select tag_name, snapshot_id from "{name}$tags"')
            if tags:
                break
            time.sleep(0.1)
        yesterday = (
            datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
        ).strftime("%Y-%m-%d")
        today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        assert len(tags) == 1, tags
        # Around midnight the commit may fall on either side of it.
        assert tags[0]["tag_name"] in (yesterday, today), tags
        assert tags[0]["snapshot_id"] == 1
        theirs = pp_read(pp_table(name).copy({"scan.tag-name": tags[0]["tag_name"]}))
        assert_same_rows(theirs, pg_rows(conn, f"select * from {name}"), key="id")
        # Invalid combinations are refused when the table is created.
        conn.execute(f"drop table {name}")
        try:
            conn.execute(
                f"create table {name} (id int primary key) with ("
                f"'tag.automatic-creation' = 'sometimes')"
            )
        except Exception as e:  # noqa: BLE001 - the SQLSTATE is what matters
            assert getattr(e, "sqlstate", None) == "22023", e
        else:
            raise AssertionError("an invalid tag.automatic-creation was accepted")
