"""Tables with Paimon merge engines written by tarn, read by pypaimon.

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
tarn writes partial-update, aggregation and sequence.field tables over several commits, with
several versions of a key in one statement and in one transaction (which tarn folds, under the
table's merge function, into one row per key of the level-0 file it commits). pypaimon 2.1 merges
partial-update, aggregation (without retractions) and sequence.field on read, independently of
tarn: its rows, tarn's rows and a Python model of Paimon's semantics must agree value by value.

Every test owns its table names.
"""


import pyarrow.parquet as pq

from test_pypaimon import assert_same_rows, connect, pg_rows, pp_read


def live_files_at(conn, name, snapshot_id):
    """Local paths of the live data files of `name` at `snapshot_id`."""
    rows = pg_rows(conn, f'select file_path from "{name}$files" version as of {snapshot_id}')
    return {r["file_path"].removeprefix("file:") for r in rows}


def last_commit_files(conn, name):
    """The data files the last APPEND commit of `name` added (background compactions may have
    committed around it, so the files on disk are no guide)."""
    sid = pg_rows(
        conn,
        f"select max(snapshot_id) as s from \"{name}$snapshots\" where commit_kind = 'APPEND'",
    )[0]["s"]
    return live_files_at(conn, name, sid) - live_files_at(conn, name, sid - 1)


def file_rows(path):
    """(kind, row of value columns) of every record of one data file, in file order."""
    table = pq.ParquetFile(path).read()
    cols = table.to_pydict()
    keys = list(zip(*(cols[c] for c in table.column_names if c.startswith("_KEY_"))))
    assert keys == sorted(set(keys)), f"{path}: a key twice or out of order in one file"
    values = [c for c in table.column_names if not c.startswith("_")]
    return [
        (cols["_VALUE_KIND"][i], {c: cols[c][i] for c in values}) for i in range(table.num_rows)
    ]


def agree(conn, name, model, key=("id",)):
    """tarn's rows, pypaimon's rows and the model's rows are the same."""
    expected = [dict(r) for r in model.values()]
    assert_same_rows(pg_rows(conn, f"SELECT * FROM {name}"), expected, list(key), "tarn")
    assert_same_rows(pp_read(name), expected, list(key), "pypaimon")


def lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"


def values(rows, columns):
    return ", ".join("(" + ", ".join(lit(r[c]) for c in columns) + ")" for r in rows)


# ---------------------------------------------------------------------------------------------
# partial-update


PU_COLUMNS = ["id", "a", "b", "c"]


def pu_apply(model, row):
    """Paimon's partial-update: each non-null value overwrites."""
    old = model.get(row["id"], dict.fromkeys(PU_COLUMNS))
    model[row["id"]] = {c: (row[c] if row[c] is not None else old[c]) for c in PU_COLUMNS}


def test_partial_update_written_by_tarn_read_by_pypaimon():
    name = "mw_partial"
    model = {}
    with connect() as conn:
        conn.execute(
            f"CREATE TABLE {name} (id BIGINT PRIMARY KEY, a TEXT, b BIGINT, c DOUBLE PRECISION) "
            "WITH (merge-engine = 'partial-update', bucket = 2)"
        )

        def insert(rows, sql="INSERT INTO"):
            conn.execute(f"{sql} {name} VALUES {values(rows, PU_COLUMNS)}")
            for r in rows:
                pu_apply(model, r)

        # Commit 1: every key, some columns NULL.
        insert([dict(id=i, a=f"a{i}", b=None, c=None) for i in range(1, 9)])
        agree(conn, name, model)
        # Commit 2: existing keys merge (no unique violation); a NULL leaves the value.
        insert([dict(id=1, a=None, b=10, c=None), dict(id=2, a="a2-new", b=None, c=2.5),
                dict(id=9, a=None, b=None, c=None)])
        agree(conn, name, model)
        # Commit 3: several versions of keys in one statement.
        insert([dict(id=3, a=None, b=30, c=None), dict(id=3, a="a3-x", b=None, c=None),
                dict(id=4, a=None, b=None, c=4.5), dict(id=3, a=None, b=31, c=3.5),
                dict(id=4, a="a4-y", b=None, c=None)])
        agree(conn, name, model)

        # Commit 4: several versions of keys in one transaction.
        conn.execute("BEGIN")
        insert([dict(id=5, a=None, b=50, c=None), dict(id=6, a=None, b=60, c=None)])
        insert([dict(id=5, a="a5-z", b=None, c=None)], sql="UPSERT INTO")
        insert([dict(id=5, a=None, b=None, c=5.5), dict(id=6, a=None, b=61, c=None)])
        conn.execute("COMMIT")
        agree(conn, name, model)
        # The commit's level-0 files hold one merged row per key.
        new = last_commit_files(conn, name)
        written = {row["id"]: row for f in new for kind, row in file_rows(f)}
        assert sum(len(file_rows(f)) for f in new) == 2
        assert written[5] == dict(id=5, a="a5-z", b=50, c=5.5)
        assert written[6] == dict(id=6, a=None, b=61, c=None)

        # UPDATE and ON CONFLICT DO UPDATE: +U rows; a column set to NULL keeps its value.
        conn.execute(f"UPDATE {name} SET b = b + 1000, c = NULL WHERE id IN (1, 2)")
        for i in (1, 2):
            b = model[i]["b"]
            pu_apply(model, dict(model[i], b=None if b is None else b + 1000, c=None))
        conn.execute(
            f"INSERT INTO {name} VALUES (7, 'ignored', 70, NULL) "
            "ON CONFLICT (id) DO UPDATE SET b = excluded.b"
        )
        pu_apply(model, dict(model[7], b=70))
        agree(conn, name, model)


# ---------------------------------------------------------------------------------------------
# aggregation


AGG_COLUMNS = ["id", "total", "hi", "lo", "tags", "words", "anyok", "note", "firstv"]


def agg_apply(model, row):
    """Paimon's aggregation, column by column (NULL inputs leave sum/max/min/listagg/bool_or
    and last_non_null_value as they are; first_value keeps the first version's value)."""
    old = model.get(row["id"])
    if old is None:
        model[row["id"]] = dict(row)
        return
    new = dict(old)

    def both(c, f):
        if row[c] is None:
            return old[c]
        if old[c] is None:
            return row[c]
        return f(old[c], row[c])

    new["total"] = both("total", lambda a, b: a + b)
    new["hi"] = both("hi", max)
    new["lo"] = both("lo", min)
    new["tags"] = both("tags", lambda a, b: f"{a},{b}")
    # listagg distinct with ';': tokens not seen yet.
    def distinct(a, b):
        seen = a.split(";")
        for t in b.split(";"):
            if t.strip() and t not in seen:
                seen.append(t)
        return ";".join(seen)
    new["words"] = both("words", distinct)
    new["anyok"] = both("anyok", lambda a, b: a or b)
    new["note"] = row["note"] if row["note"] is not None else old["note"]
    new["firstv"] = old["firstv"]
    model[row["id"]] = new


def test_aggregation_written_by_tarn_read_by_pypaimon():
    name = "mw_agg"
    model = {}
    with connect() as conn:
        conn.execute(
            f"CREATE TABLE {name} (id BIGINT PRIMARY KEY, total BIGINT, hi INT, lo INT, "
            "tags TEXT, words TEXT, anyok BOOLEAN, note TEXT, firstv TEXT) WITH ("
            "merge-engine = 'aggregation', bucket = 2, "
            "fields.total.aggregate-function = 'sum', fields.hi.aggregate-function = 'max', "
            "fields.lo.aggregate-function = 'min', fields.tags.aggregate-function = 'listagg', "
            "fields.words.aggregate-function = 'listagg', fields.words.distinct = 'true', "
            "fields.words.list-agg-delimiter = ';', fields.anyok.aggregate-function = 'bool_or', "
            "fields.firstv.aggregate-function = 'first_value')"
        )

        def insert(rows):
            conn.execute(f"INSERT INTO {name} VALUES {values(rows, AGG_COLUMNS)}")
            for r in rows:
                agg_apply(model, r)

        def row(i, n):
            pick = (i + n) % 3
            return dict(
                id=i,
                total=None if pick == 0 else i * 10 + n,
                hi=None if pick == 1 else (i * 7 + n * 5) % 11,
                lo=None if pick == 2 else (i * 3 + n * 7) % 13,
                tags=None if pick == 2 else f"t{n}",
                words=None if pick == 0 else ";".join(f"w{(i + n + k) % 4}" for k in range(2)),
                anyok=None if pick == 1 else (i * n) % 5 == 1,
                note=None if n % 2 else f"note{n}",
                firstv=f"first{n}",
            )

        # Several commits over the same keys.
        for n in range(3):
            insert([row(i, n) for i in range(1, 11) if (i + n) % 4 != 3])
            agree(conn, name, model)
        # Several versions of keys in one statement.
        insert([row(1, 3), row(2, 3), row(1, 4), row(1, 5), row(2, 4)])
        agree(conn, name, model)

        # Several versions of keys in one transaction: the committed file holds, per key, the
        # aggregate of the transaction's versions (for total, the sum of its contributions).
        txn = [row(3, 6), row(4, 6), row(3, 7), row(3, 8), row(4, 7), row(11, 7)]
        conn.execute("BEGIN")
        for r in txn:
            insert([r])
        inside = pg_rows(conn, f"SELECT * FROM {name}")
        conn.execute("COMMIT")
        assert_same_rows(inside, [dict(r) for r in model.values()], ["id"], "tarn in the block")
        agree(conn, name, model)
        new = last_commit_files(conn, name)
        written = {r["id"]: (kind, r) for f in new for kind, r in file_rows(f)}
        assert sorted(written) == [3, 4, 11]
        for k in (3, 4, 11):
            kind, r = written[k]
            assert kind == 0, kind
            contributions = [x["total"] for x in txn if x["id"] == k and x["total"] is not None]
            assert r["total"] == (sum(contributions) if contributions else None), (k, r)

        # An existing key proposed again by ON CONFLICT DO NOTHING changes nothing.
        conn.execute(
            f"INSERT INTO {name} VALUES {values([row(1, 9), row(12, 9)], AGG_COLUMNS)} "
            "ON CONFLICT DO NOTHING"
        )
        agg_apply(model, row(12, 9))
        agree(conn, name, model)


# ---------------------------------------------------------------------------------------------
# sequence.field


def test_sequence_field_written_by_tarn_read_by_pypaimon():
    """A late row with a smaller sequence value does not overwrite, in later commits, in one
    statement and in one transaction."""
    name = "mw_seq"
    model = {}
    with connect() as conn:
        conn.execute(
            f"CREATE TABLE {name} (id BIGINT PRIMARY KEY, ts BIGINT, v TEXT) "
            "WITH (sequence.field = 'ts', bucket = 2)"
        )

        def insert(rows):
            conn.execute(f"INSERT INTO {name} VALUES {values(rows, ['id', 'ts', 'v'])}")
            for r in rows:
                old = model.get(r["id"])
                if old is None or r["ts"] >= old["ts"]:
                    model[r["id"]] = dict(r)

        insert([dict(id=i, ts=10, v=f"v{i}@10") for i in range(1, 7)])
        insert([dict(id=1, ts=5, v="late"), dict(id=2, ts=20, v="v2@20")])
        agree(conn, name, model)
        insert([dict(id=3, ts=30, v="v3@30"), dict(id=3, ts=15, v="v3@15"),
                dict(id=4, ts=11, v="v4@11"), dict(id=4, ts=12, v="v4@12")])
        agree(conn, name, model)
        conn.execute("BEGIN")
        insert([dict(id=5, ts=40, v="v5@40")])
        insert([dict(id=5, ts=39, v="v5@39"), dict(id=6, ts=10, v="v6 tie")])
        conn.execute("COMMIT")
        agree(conn, name, model)
        # UPDATE keeps the sequence value: it wins the tie as the newer version.
        conn.execute(f"UPDATE {name} SET v = 'updated' WHERE id = 1")
        model[1]["v"] = "updated"
        conn.execute(f"DELETE FROM {name} WHERE id = 2")
        del model[2]
        agree(conn, name, model)
