"""Row-level DML and transactions written by tarn, read by pypaimon (and the reverse).

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
After every UPDATE / DELETE / MERGE / INSERT ... ON CONFLICT / UPSERT INTO / transaction, three
views of the table must agree exactly, row by row and value by value: a Python model of what
PostgreSQL's semantics give, what psycopg's SELECT shows through tarn, and what pypaimon (an
independent Paimon implementation) merges from the files. Snapshots are counted: one per
statement or committed block, none for a ROLLBACK, a failed statement or a statement that
changes nothing. The files of each new snapshot are opened to check the Paimon row kinds tarn
writes (+I, +U, -D at level 0) and that nothing older was rewritten.

Every test owns its table names.
"""

import datetime
import decimal
import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from psycopg import errors

from test_pypaimon import (
    WAREHOUSE,
    assert_same_rows,
    connect,
    pg_rows,
    pp_create,
    pp_read,
    pp_commit_ids,
    pp_snapshot_ids,
    pp_table,
    pp_write,
    snapshot_files,
)

D = decimal.Decimal
date = datetime.date
days = datetime.timedelta

# Paimon's row kinds, as the `_VALUE_KIND` byte of a data file holds them.
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3

KEY = ["region", "day", "id", "line"]
COLUMNS = ["region", "day", "id", "line", "qty", "price", "note", "paid"]
REGIONS = ["eu", "us", "ap"]

ORDERS_DDL = """CREATE TABLE {name} (
    region TEXT NOT NULL, day DATE NOT NULL, id BIGINT NOT NULL, line INT NOT NULL,
    qty INT NOT NULL, price NUMERIC(10, 2), note TEXT, paid BOOLEAN NOT NULL,
    PRIMARY KEY (region, day, id, line))
  PARTITIONED BY (region) WITH (bucket = {bucket})"""


# ---------------------------------------------------------------------------------------------
# helpers


def lit(v):
    """`v` as a SQL literal."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, D)):
        return str(v)
    if isinstance(v, date):
        return f"DATE '{v.isoformat()}'"
    return "'" + str(v).replace("'", "''") + "'"


def values(rows, columns=COLUMNS):
    return ", ".join("(" + ", ".join(lit(r[c]) for c in columns) + ")" for r in rows)


def order_row(i, **overrides):
    """The seed row `i`: rows i and i + 12 share region, day and line."""
    row = dict(
        region=REGIONS[i % 3],
        day=date(2026, 12, 1) + days(i % 4),
        id=i,
        line=i % 2 + 1,
        qty=i,
        price=None if i % 7 == 0 else D(f"{i * 3}.{i % 100:02d}"),
        note=None if i % 5 == 0 else f"note {i}",
        paid=i % 2 == 0,
    )
    row.update(overrides)
    return row


class Model:
    """The rows a table should hold, by primary key."""

    def __init__(self, rows=(), key=KEY):
        self.key = key
        self.rows = {}
        for r in rows:
            self.put(r)

    def k(self, row):
        return tuple(row[c] for c in self.key)

    def put(self, row):
        self.rows[self.k(row)] = dict(row)

    def find(self, pred):
        return [dict(r) for r in self.rows.values() if pred(r)]

    def update(self, pred, change):
        """UPDATE ... SET (change: row -> new row) WHERE pred; keys may change. Returns n."""
        hits = self.find(pred)
        for r in hits:
            del self.rows[self.k(r)]
        for r in hits:
            new = change(dict(r))
            assert self.k(new) not in self.rows, f"model: key {self.k(new)} taken"
            self.put(new)
        return len(hits)

    def delete(self, pred):
        hits = self.find(pred)
        for r in hits:
            del self.rows[self.k(r)]
        return len(hits)

    def list(self):
        return [dict(r) for r in self.rows.values()]

    def get(self, **key):
        return self.rows.get(tuple(key[c] for c in self.key))


def table_dir(name):
    return os.path.join(WAREHOUSE, "public.db", name)


def data_files(name):
    """Names of every data file in the table's folder (committed or not)."""
    return {
        os.path.basename(p)
        for p in glob.glob(os.path.join(table_dir(name), "**", "*.parquet"), recursive=True)
    }


def live_files(name):
    """The files of the latest snapshot, as pypaimon lists them: name -> row of `$files`."""
    return {f["file_path"].rsplit("/", 1)[-1]: f for f in pp_read(pp_table(name + "$files"))}


def file_records(name, file_name, key=KEY):
    """(row kind, primary key) of every record of one data file, in file order. (The file's
    `_KEY_` columns leave the partition columns out; the value columns have them all.)"""
    [path] = glob.glob(os.path.join(table_dir(name), "**", file_name), recursive=True)
    table = pq.ParquetFile(path).read()
    cols = table.to_pydict()
    # A data file is a sorted run: each key once, in ascending key order.
    trimmed = list(zip(*(cols[c] for c in table.column_names if c.startswith("_KEY_"))))
    assert trimmed == sorted(set(trimmed)), f"{file_name}: keys repeated or out of order"
    return [
        (cols["_VALUE_KIND"][i], tuple(cols[c][i] for c in key)) for i in range(table.num_rows)
    ]


class Delta:
    """What one statement (or block) added to a table: snapshots and files."""

    def __init__(self, name):
        self.name = name
        self.snapshots = pp_snapshot_ids(name)
        self.files = live_files(name)

    def check(self, new_snapshots):
        """Asserts the count of new snapshots, that no older file was replaced or rewritten
        (Paimon row kinds in new level-0 files only); returns the new files' records."""
        after = pp_snapshot_ids(self.name)
        assert snapshot_files(self.name) == after
        first = (self.snapshots[-1] if self.snapshots else 0) + 1
        assert after == self.snapshots + list(range(first, first + new_snapshots)), (
            f"{self.name}: snapshots {self.snapshots} -> {after}, expected {new_snapshots} new"
        )
        files = live_files(self.name)
        assert set(self.files) <= set(files), "an older data file left the table: rewritten?"
        new = {n: f for n, f in files.items() if n not in self.files}
        if new_snapshots == 0:
            assert not new
        assert all(f["level"] == 0 for f in new.values()), [f["level"] for f in new.values()]
        self.new_files = new
        self.records = [rec for n in sorted(new) for rec in file_records(self.name, n)]
        return self.records

    def kinds(self):
        return sorted({k for k, _ in self.records})

    def count(self, kind):
        return sum(1 for k, _ in self.records if k == kind)

    def buckets(self):
        return {(f["partition"], f["bucket"]) for f in self.new_files.values()}


def check_views(conn, name, model, label):
    """psycopg's SELECT through tarn == the model == what pypaimon reads."""
    pg = pg_rows(conn, f"SELECT * FROM {name}")
    assert_same_rows(pg, model.list(), model.key, f"{label}: tarn vs model")
    assert_same_rows(pp_read(name), pg, model.key, f"{label}: pypaimon vs tarn")
    return pg


def run(conn, name, model, sql, rowcount, label, new_snapshots=1):
    """Runs one autocommit statement; checks its row count, the snapshot count and the three
    views. Returns the Delta (new files' records)."""
    delta = Delta(name)
    before = pp_read(name)
    cur = conn.execute(sql)
    assert cur.rowcount == rowcount, f"{label}: {sql}: rowcount {cur.rowcount}, expected {rowcount}"
    delta.check(new_snapshots)
    check_views(conn, name, model, label)
    if new_snapshots:
        # The snapshot before the statement still reads as it was (time travel).
        prev = delta.snapshots[-1]
        assert_same_rows(pp_read(pp_table(name, prev)), before, model.key, f"{label}: snapshot {prev}")
    return delta


def create_orders(conn, name, n=90, bucket=3):
    conn.execute(ORDERS_DDL.format(name=name, bucket=bucket))
    model = Model(order_row(i) for i in range(1, n + 1))
    conn.execute(f"INSERT INTO {name} VALUES {values(model.list())}")
    check_views(conn, name, model, "seed")
    assert pp_snapshot_ids(name) == [1]
    return model


# ---------------------------------------------------------------------------------------------
# UPDATE


def test_update_value_columns_read_by_pypaimon():
    name = "dml_upd_value"
    with connect() as conn:
        m = create_orders(conn, name)

        def bump(r):
            r["qty"] += 1000
            r["note"] = None if r["note"] is None else r["note"] + " upd"
            return r

        n = m.update(lambda r: r["id"] % 4 == 0, bump)
        d = run(conn, name, m,
                f"UPDATE {name} SET qty = qty + 1000, note = note || ' upd' WHERE id % 4 = 0",
                n, "value update")
        assert d.kinds() == [UPDATE_AFTER] and len(d.records) == n
        assert len({b for _, b in d.buckets()}) > 1, "rows of several buckets were updated"

        # Restricted to one partition; numeric arithmetic and a boolean flip.
        def double(r):
            r["price"] = r["price"] * 2
            r["paid"] = not r["paid"]
            return r

        n = m.update(lambda r: r["region"] == "us" and r["price"] is not None, double)
        d = run(conn, name, m,
                f"UPDATE {name} SET price = price * 2, paid = NOT paid "
                f"WHERE region = 'us' AND price IS NOT NULL", n, "partition update")
        assert d.kinds() == [UPDATE_AFTER] and len(d.records) == n
        assert {k[0] for _, k in d.records} == {"us"}

        # By full key; a NULL written over a value; a row updated again (a newer +U wins).
        key = dict(region="eu", day=date(2026, 12, 4), id=3, line=2)
        assert m.get(**key) is not None

        def clear(r):
            r["price"] = None
            r["note"] = "cleared"
            return r

        m.update(lambda r: m.k(r) == m.k(key), clear)
        run(conn, name, m,
            f"UPDATE {name} SET price = NULL, note = 'cleared' WHERE region = 'eu' "
            f"AND day = DATE '2026-12-04' AND id = 3 AND line = 2", 1, "key update")
        m.update(lambda r: m.k(r) == m.k(key), lambda r: dict(r, qty=r["qty"] + 1))
        run(conn, name, m,
            f"UPDATE {name} SET qty = qty + 1 WHERE id = 3", 1, "update again")

        # Nothing matches: nothing to commit, no snapshot (PostgreSQL: UPDATE 0, no change).
        run(conn, name, m, f"UPDATE {name} SET qty = 0 WHERE id = -1", 0, "no rows",
            new_snapshots=0)

        # NOT NULL holds: the statement fails with 23502 and leaves no snapshot.
        delta = Delta(name)
        with pytest.raises(errors.NotNullViolation):
            conn.execute(f"UPDATE {name} SET qty = NULL WHERE id = 1")
        delta.check(0)
        check_views(conn, name, m, "after 23502")

        # RETURNING shows the rows as written, which is what pypaimon then reads.
        m.update(lambda r: r["id"] in (1, 2), lambda r: dict(r, qty=r["qty"] * 10))
        returned = pg_rows(
            conn, f"UPDATE {name} SET qty = qty * 10 WHERE id IN (1, 2) RETURNING *"
        )
        assert_same_rows(returned, m.find(lambda r: r["id"] in (1, 2)), KEY, "RETURNING")
        assert_same_rows(
            [r for r in pp_read(name) if r["id"] in (1, 2)], returned, KEY, "RETURNING vs pypaimon"
        )
    assert pp_snapshot_ids(name) == list(range(1, 7))


def test_update_key_columns_is_delete_plus_insert():
    name = "dml_upd_key"
    with connect() as conn:
        m = create_orders(conn, name)
        n = m.update(lambda r: r["id"] in (3, 4, 5), lambda r: dict(r, id=r["id"] + 1000))
        d = run(conn, name, m, f"UPDATE {name} SET id = id + 1000 WHERE id IN (3, 4, 5)", n,
                "id change")
        # The old key deleted, the new one inserted.
        assert d.count(DELETE) == 3 and d.count(INSERT) == 3 and d.kinds() == [INSERT, DELETE]
        assert {k[2] for kind, k in d.records if kind == DELETE} == {3, 4, 5}
        assert {k[2] for kind, k in d.records if kind == INSERT} == {1003, 1004, 1005}

        # A date key column and a value column at once.
        m.update(lambda r: r["id"] == 6,
                 lambda r: dict(r, day=date(2027, 1, 1), note="moved"))
        d = run(conn, name, m,
                f"UPDATE {name} SET day = DATE '2027-01-01', note = 'moved' WHERE id = 6", 1,
                "date key change")
        assert d.kinds() == [INSERT, DELETE]

        # Onto a key that exists (row 13 shares region/day/line with row 1): 23505, no snapshot.
        delta = Delta(name)
        with pytest.raises(errors.UniqueViolation):
            conn.execute(f"UPDATE {name} SET id = 13 WHERE id = 1")
        delta.check(0)
        check_views(conn, name, m, "after 23505")

        # Two keys swapped in one statement (checked at statement end: see
        # key-check-at-statement-end in sql/known-mismatches.md).
        r1 = m.find(lambda r: r["id"] == 1)[0]
        r13 = m.find(lambda r: r["id"] == 13)[0]
        m.delete(lambda r: r["id"] in (1, 13))
        m.put(dict(r1, id=13))
        m.put(dict(r13, id=1))
        d = run(conn, name, m,
                f"UPDATE {name} SET id = CASE WHEN id = 1 THEN 13 ELSE 1 END WHERE id IN (1, 13)",
                2, "swap")


def test_update_across_partitions_and_buckets():
    name = "dml_upd_parts"
    with connect() as conn:
        m = create_orders(conn, name, n=120)

        def flip(r):
            r["paid"] = not r["paid"]
            r["qty"] *= 2
            return r

        n = m.update(lambda r: r["line"] == 1, flip)
        d = run(conn, name, m, f"UPDATE {name} SET paid = NOT paid, qty = qty * 2 WHERE line = 1",
                n, "all partitions")
        assert d.kinds() == [UPDATE_AFTER]
        parts = {p for p, _ in d.buckets()}
        assert len(parts) == 3, f"three partitions written: {d.buckets()}"
        assert len(d.buckets()) > 3, f"several buckets per partition: {d.buckets()}"

        # Rows moved to a partition that did not exist, and out of another.
        n = m.update(lambda r: r["region"] == "eu" and r["id"] < 40,
                     lambda r: dict(r, region="sa"))
        d = run(conn, name, m,
                f"UPDATE {name} SET region = 'sa' WHERE region = 'eu' AND id < 40", n,
                "partition move")
        assert d.count(DELETE) == n and d.count(INSERT) == n
        assert os.path.isdir(os.path.join(table_dir(name), "region=sa"))

        # A whole partition emptied into another one.
        n = m.update(lambda r: r["region"] == "ap", lambda r: dict(r, region="us", id=r["id"] + 500))
        run(conn, name, m,
            f"UPDATE {name} SET region = 'us', id = id + 500 WHERE region = 'ap'", n,
            "partition emptied")
        assert not [r for r in pp_read(name) if r["region"] == "ap"]
        with connect() as other:
            assert other.execute(
                f"SELECT count(*) FROM {name} WHERE region = 'ap'"
            ).fetchone()[0] == 0


# ---------------------------------------------------------------------------------------------
# DELETE


def test_delete_by_key_value_using_and_all_rows():
    name = "dml_del"
    with connect() as conn:
        m = create_orders(conn, name)
        conn.execute(f"CREATE TABLE {name}_drop (id BIGINT PRIMARY KEY, reason TEXT NOT NULL)")
        conn.execute(
            f"INSERT INTO {name}_drop VALUES (23, 'fraud'), (24, 'keep'), (26, 'fraud'), "
            f"(999, 'fraud')"
        )

        key = m.find(lambda r: r["id"] == 7)[0]
        m.delete(lambda r: r["id"] == 7)
        d = run(conn, name, m,
                f"DELETE FROM {name} WHERE region = {lit(key['region'])} AND day = "
                f"{lit(key['day'])} AND id = 7 AND line = {key['line']}", 1, "by key")
        assert d.records == [(DELETE, (key["region"], key["day"], 7, key["line"]))]

        n = m.delete(lambda r: r["id"] in (10, 11, 12))
        d = run(conn, name, m, f"DELETE FROM {name} WHERE id IN (10, 11, 12)", n, "key list")
        assert d.kinds() == [DELETE] and len(d.records) == 3

        n = m.delete(lambda r: r["note"] is None)
        run(conn, name, m, f"DELETE FROM {name} WHERE note IS NULL", n, "null value")

        n = m.delete(lambda r: r["qty"] > 70 and not r["paid"])
        d = run(conn, name, m, f"DELETE FROM {name} WHERE qty > 70 AND NOT paid", n, "by value")
        assert d.kinds() == [DELETE] and len(d.records) == n

        n = m.delete(lambda r: r["price"] is not None and r["price"] < D("30"))
        run(conn, name, m, f"DELETE FROM {name} WHERE price < 30.00", n, "numeric")

        # RETURNING shows the deleted rows, which the previous snapshot still holds.
        pred = lambda r: r["region"] == "ap" and r["day"] == date(2026, 12, 1)  # noqa: E731
        gone = m.find(pred)
        assert gone
        m.delete(pred)
        # The snapshot before the DELETE (background compaction may commit after it).
        prev = pp_snapshot_ids(name)[-1]
        returned = pg_rows(
            conn, f"DELETE FROM {name} WHERE region = 'ap' AND day = DATE '2026-12-01' RETURNING *"
        )
        assert_same_rows(returned, gone, KEY, "DELETE RETURNING")
        check_views(conn, name, m, "after DELETE RETURNING")
        assert_same_rows(
            [r for r in pp_read(pp_table(name, prev)) if pred(r)], gone, KEY, "deleted rows"
        )

        run(conn, name, m, f"DELETE FROM {name} WHERE id = -1", 0, "no rows", new_snapshots=0)

        n = m.delete(lambda r: r["id"] in (23, 26))
        assert n == 2
        run(conn, name, m,
            f"DELETE FROM {name} t USING {name}_drop d WHERE t.id = d.id AND d.reason = 'fraud'",
            n, "USING")

        n = m.delete(lambda r: True)
        assert n > 20
        # Every row, row by row (a DELETE without WHERE drops the partitions' files in one
        # OVERWRITE instead: test_partitions.py).
        d = run(conn, name, m, f"DELETE FROM {name} WHERE id IS NOT NULL", n, "all rows")
        assert d.kinds() == [DELETE] and len(d.records) == n
        assert pp_read(name) == []

        # The keys are free again.
        m.put(order_row(1, note="again"))
        run(conn, name, m, f"INSERT INTO {name} VALUES {values([order_row(1, note='again')])}",
            1, "reinsert")


# ---------------------------------------------------------------------------------------------
# MERGE


def test_merge_delete_update_insert_read_by_pypaimon():
    name = "dml_merge"
    with connect() as conn:
        m = create_orders(conn, name, n=40)
        conn.execute(
            f"""CREATE TABLE {name}_src (region TEXT NOT NULL, day DATE NOT NULL,
                    id BIGINT NOT NULL, line INT NOT NULL, qty INT NOT NULL, note TEXT,
                    op TEXT NOT NULL, PRIMARY KEY (region, day, id, line))"""
        )
        src = []
        for i, op in [(1, "del"), (2, "upd"), (3, "upd"), (4, "del"), (5, "upd"), (6, "skip")]:
            r = order_row(i)
            src.append(dict(region=r["region"], day=r["day"], id=i, line=r["line"],
                            qty=100 + i, note=f"src {i}", op=op))
        for i in (200, 201, 202):
            src.append(dict(region=REGIONS[i % 3], day=date(2026, 12, 9), id=i, line=1,
                            qty=i, note=None, op="ins"))
        src_cols = ["region", "day", "id", "line", "qty", "note", "op"]
        conn.execute(f"INSERT INTO {name}_src VALUES {values(src, src_cols)}")

        changed = 0
        for s in src:
            t = m.get(region=s["region"], day=s["day"], id=s["id"], line=s["line"])
            if t is not None and s["op"] == "del":
                m.delete(lambda r, s=s: m.k(r) == m.k(s))
                changed += 1
            elif t is not None and s["op"] != "skip":
                m.put(dict(t, qty=t["qty"] + s["qty"], note=s["note"]))
                changed += 1
            elif t is None:
                m.put(dict(region=s["region"], day=s["day"], id=s["id"], line=s["line"],
                           qty=s["qty"], price=D("1.50"), note=s["note"], paid=True))
                changed += 1
        d = run(
            conn, name, m,
            f"""MERGE INTO {name} t USING {name}_src s
                  ON t.region = s.region AND t.day = s.day AND t.id = s.id AND t.line = s.line
                WHEN MATCHED AND s.op = 'del' THEN DELETE
                WHEN MATCHED AND s.op = 'skip' THEN DO NOTHING
                WHEN MATCHED THEN UPDATE SET qty = t.qty + s.qty, note = s.note
                WHEN NOT MATCHED THEN INSERT (region, day, id, line, qty, price, note, paid)
                  VALUES (s.region, s.day, s.id, s.line, s.qty, 1.50, s.note, true)""",
            changed, "merge",
        )
        assert d.count(DELETE) == 2 and d.count(UPDATE_AFTER) == 3 and d.count(INSERT) == 3

        # A MERGE over a VALUES source that only inserts and updates a partition's rows.
        m.update(lambda r: r["region"] == "ap" and r["id"] < 10,
                 lambda r: dict(r, paid=False, price=None))
        m.put(order_row(300, region="ap", note="from values"))
        n = len(m.find(lambda r: r["region"] == "ap" and r["id"] < 10)) + 1
        run(
            conn, name, m,
            f"""MERGE INTO {name} t
                USING (SELECT region, day, id, line FROM {name} WHERE region = 'ap' AND id < 10
                       UNION ALL SELECT 'ap', DATE '{order_row(300)['day']}', 300,
                              {order_row(300)['line']}) s
                  ON t.region = s.region AND t.day = s.day AND t.id = s.id AND t.line = s.line
                WHEN MATCHED THEN UPDATE SET paid = false, price = NULL
                WHEN NOT MATCHED THEN INSERT VALUES (s.region, s.day, s.id, s.line, 300,
                  {lit(order_row(300)['price'])}, 'from values', true)""",
            n, "merge from a query",
        )


# ---------------------------------------------------------------------------------------------
# INSERT ... ON CONFLICT, UPSERT INTO


def test_insert_on_conflict_do_update_and_do_nothing():
    name = "dml_onconflict"
    with connect() as conn:
        m = create_orders(conn, name, n=30)
        old1, old2 = m.find(lambda r: r["id"] == 1)[0], m.find(lambda r: r["id"] == 2)[0]
        new = order_row(100, note="new")
        proposals = [dict(old1, qty=5, note="ex1", price=None), dict(old2, qty=7, note="ex2"), new]
        m.put(dict(old1, qty=old1["qty"] + 5, note="ex1"))
        m.put(dict(old2, qty=old2["qty"] + 7, note="ex2", price=old2["price"]))
        m.put(new)
        d = run(
            conn, name, m,
            f"""INSERT INTO {name} AS o VALUES {values(proposals)}
                ON CONFLICT (region, day, id, line) DO UPDATE
                SET qty = o.qty + excluded.qty, note = excluded.note,
                    price = coalesce(excluded.price, o.price)""",
            3, "do update",
        )
        assert d.count(UPDATE_AFTER) == 2 and d.count(INSERT) == 1

        # DO UPDATE ... WHERE: only the rows passing it change (and count).
        old3, old4 = m.find(lambda r: r["id"] == 3)[0], m.find(lambda r: r["id"] == 4)[0]
        m.put(dict(old4, note="cond"))
        run(
            conn, name, m,
            f"""INSERT INTO {name} AS o VALUES {values([dict(old3, note='cond'),
                                                         dict(old4, note='cond')])}
                ON CONFLICT (region, day, id, line) DO UPDATE SET note = excluded.note
                WHERE o.paid""",
            1, "do update where",
        )

        # DO NOTHING: existing keys skipped, new ones inserted.
        skipped = dict(m.find(lambda r: r["id"] == 5)[0], note="ignored", qty=0)
        fresh = order_row(101)
        m.put(fresh)
        d = run(conn, name, m,
                f"INSERT INTO {name} VALUES {values([skipped, fresh])} ON CONFLICT DO NOTHING",
                1, "do nothing")
        assert d.records == [(INSERT, (fresh["region"], fresh["day"], 101, fresh["line"]))]

        # Every proposal conflicts: nothing written, no snapshot.
        run(conn, name, m,
            f"INSERT INTO {name} VALUES {values([skipped])} "
            f"ON CONFLICT (region, day, id, line) DO NOTHING", 0, "all conflict",
            new_snapshots=0)

        # RETURNING of DO UPDATE: the rows as stored.
        old6 = m.find(lambda r: r["id"] == 6)[0]
        m.put(dict(old6, qty=-6))
        returned = pg_rows(
            conn,
            f"INSERT INTO {name} AS o VALUES {values([dict(old6, qty=-6)])} "
            f"ON CONFLICT (region, day, id, line) DO UPDATE SET qty = excluded.qty RETURNING *",
        )
        assert_same_rows(returned, [m.get(**{k: old6[k] for k in KEY})], KEY, "RETURNING")
        check_views(conn, name, m, "after RETURNING")


def test_upsert_into_replaces_whole_rows():
    name = "dml_upsert"
    with connect() as conn:
        m = create_orders(conn, name, n=30)
        rows = [
            # Existing keys: every value column replaced, NULLs included.
            dict(m.find(lambda r: r["id"] == 1)[0], qty=-1, price=None, note=None, paid=True),
            dict(m.find(lambda r: r["id"] == 2)[0], qty=-2, price=D("0.01"), note="up"),
            # New keys, in a new partition too.
            order_row(40),
            order_row(41, region="sa"),
        ]
        for r in rows:
            m.put(r)
        d = run(conn, name, m, f"UPSERT INTO {name} VALUES {values(rows)}", 4, "upsert")
        assert len(d.records) == 4 and DELETE not in d.kinds()
        assert os.path.isdir(os.path.join(table_dir(name), "region=sa"))

        # UPSERT with a column list and a SELECT source.
        ups = [dict(r, qty=r["qty"] + 1) for r in m.find(lambda r: r["region"] == "us")]
        for r in ups:
            m.put(r)
        run(conn, name, m,
            f"UPSERT INTO {name} (region, day, id, line, qty, price, note, paid) "
            f"SELECT region, day, id, line, qty + 1, price, note, paid FROM {name} "
            f"WHERE region = 'us'", len(ups), "upsert select")


# ---------------------------------------------------------------------------------------------
# transactions


def test_transaction_with_rolled_back_savepoint_is_one_snapshot():
    name = "dml_txn"
    with connect() as conn, connect() as other:
        m = create_orders(conn, name, n=40)
        committed = Model(m.list())
        delta = Delta(name)
        files_before = data_files(name)

        conn.execute("BEGIN")
        assert conn.execute(
            f"UPDATE {name} SET qty = qty + 1 WHERE region = 'eu'"
        ).rowcount == m.update(lambda r: r["region"] == "eu", lambda r: dict(r, qty=r["qty"] + 1))
        assert conn.execute(f"DELETE FROM {name} WHERE id % 5 = 0").rowcount == m.delete(
            lambda r: r["id"] % 5 == 0)
        conn.execute("SAVEPOINT s1")
        before_savepoint = Model(m.list())
        conn.execute(f"INSERT INTO {name} VALUES {values([order_row(500), order_row(501)])}")
        m.put(order_row(500))
        m.put(order_row(501))
        assert conn.execute(f"UPDATE {name} SET id = id + 1000 WHERE id IN (1, 2)").rowcount == 2
        m.update(lambda r: r["id"] in (1, 2), lambda r: dict(r, id=r["id"] + 1000))
        assert conn.execute(f"DELETE FROM {name} WHERE region = 'us'").rowcount == m.delete(
            lambda r: r["region"] == "us")
        # The block reads its own writes; nobody else sees them, nothing is committed yet.
        check_views_in_block(conn, other, name, m, committed, delta)
        conn.execute("ROLLBACK TO SAVEPOINT s1")
        m = before_savepoint
        check_views_in_block(conn, other, name, m, committed, delta)
        # After the savepoint's rollback, more work: UPSERT, ON CONFLICT, MERGE.
        conn.execute(f"UPSERT INTO {name} VALUES {values([order_row(600)])}")
        m.put(order_row(600))
        old3 = m.find(lambda r: r["id"] == 3)[0]
        conn.execute(
            f"INSERT INTO {name} AS o VALUES {values([dict(old3, qty=1)])} "
            f"ON CONFLICT (region, day, id, line) DO UPDATE SET qty = o.qty + excluded.qty"
        )
        m.put(dict(old3, qty=old3["qty"] + 1))
        conn.execute(
            f"MERGE INTO {name} t USING (SELECT * FROM {name} WHERE id IN (4, 600)) s "
            f"ON t.region = s.region AND t.day = s.day AND t.id = s.id AND t.line = s.line "
            f"WHEN MATCHED AND t.id = 600 THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET note = 'merged'"
        )
        m.delete(lambda r: r["id"] == 600)
        m.update(lambda r: r["id"] == 4, lambda r: dict(r, note="merged"))
        check_views_in_block(conn, other, name, m, committed, delta)
        conn.execute("COMMIT")

        # One snapshot for the whole block, and it holds exactly the block's net changes.
        records = delta.check(1)
        check_views(conn, name, m, "after COMMIT")
        check_views(other, name, m, "other connection after COMMIT")
        keys = {k for _, k in records}
        assert not any(k[2] in (500, 501, 1001, 1002) for k in keys), "savepoint leftovers"
        # Files written for the rolled-back savepoint did not stay behind either.
        leftovers = data_files(name) - files_before - set(delta.new_files)
        assert not leftovers, f"files of rolled-back work left: {leftovers}"


def check_views_in_block(conn, other, name, model, committed, delta):
    """Inside a block: the block sees `model`; another connection and pypaimon see
    `committed`; no snapshot was made."""
    pg = pg_rows(conn, f"SELECT * FROM {name}")
    assert_same_rows(pg, model.list(), KEY, "in block: tarn vs model")
    assert_same_rows(pg_rows(other, f"SELECT * FROM {name}"), committed.list(), KEY,
                     "in block: other connection")
    assert_same_rows(pp_read(name), committed.list(), KEY, "in block: pypaimon")
    assert pp_snapshot_ids(name) == delta.snapshots


def test_rollback_and_failed_block_leave_no_snapshot_and_no_files():
    name = "dml_rollback"
    with connect() as conn, connect() as other:
        m = create_orders(conn, name, n=40)
        delta = Delta(name)
        files_before = data_files(name)

        conn.execute("BEGIN")
        conn.execute(f"UPDATE {name} SET qty = 0")
        conn.execute(f"DELETE FROM {name} WHERE region = 'eu'")
        conn.execute(f"INSERT INTO {name} VALUES {values([order_row(700)])}")
        conn.execute(f"UPSERT INTO {name} VALUES {values([order_row(1, note='x')])}")
        assert conn.execute(f"SELECT count(*) FROM {name} WHERE qty = 0").fetchone()[0] > 0
        conn.execute("ROLLBACK")
        delta.check(0)
        check_views(conn, name, m, "after ROLLBACK")
        check_views(other, name, m, "other after ROLLBACK")
        assert data_files(name) == files_before

        # A block that fails (duplicate key) is rolled back by COMMIT.
        conn.execute("BEGIN")
        conn.execute(f"UPDATE {name} SET note = 'doomed'")
        with pytest.raises(errors.UniqueViolation):
            conn.execute(f"INSERT INTO {name} VALUES {values([order_row(2)])}")
        with pytest.raises(errors.InFailedSqlTransaction):
            conn.execute(f"SELECT count(*) FROM {name}")
        cur = conn.execute("COMMIT")
        assert cur.statusmessage == "ROLLBACK"
        delta.check(0)
        check_views(conn, name, m, "after failed block")
        assert data_files(name) == files_before

        # A savepoint rolled back, then the block rolled back: still nothing.
        conn.execute("BEGIN")
        conn.execute("SAVEPOINT a")
        conn.execute(f"DELETE FROM {name}")
        conn.execute("ROLLBACK TO SAVEPOINT a")
        conn.execute(f"UPDATE {name} SET qty = -1 WHERE id = 1")
        conn.execute("ROLLBACK")
        delta.check(0)
        check_views(conn, name, m, "after savepoint + ROLLBACK")
        assert data_files(name) == files_before


def test_block_writing_the_same_keys_several_times():
    """Keys inserted then deleted, deleted then inserted again, updated twice, moved away and
    back, in one block: one snapshot whose files hold each key once, read alike everywhere."""
    name = "dml_txn_samekey"
    with connect() as conn:
        m = create_orders(conn, name, n=24, bucket=2)
        delta = Delta(name)
        r1, r2, r3 = (m.find(lambda r, i=i: r["id"] == i)[0] for i in (1, 2, 3))
        conn.execute("BEGIN")
        conn.execute(f"INSERT INTO {name} VALUES {values([order_row(100)])}")
        conn.execute(f"DELETE FROM {name} WHERE id = 100")
        conn.execute(f"DELETE FROM {name} WHERE id = 1")
        conn.execute(f"INSERT INTO {name} VALUES {values([dict(r1, note='reborn', price=None)])}")
        conn.execute(f"UPDATE {name} SET qty = qty + 1 WHERE id = 2")
        conn.execute(f"UPDATE {name} SET qty = qty + 1, note = 'twice' WHERE id = 2")
        conn.execute(f"UPDATE {name} SET id = 300 WHERE id = 3")
        conn.execute(f"UPDATE {name} SET id = 3, note = 'back' WHERE id = 300")
        conn.execute(f"UPSERT INTO {name} VALUES {values([order_row(4, qty=-4)])}")
        conn.execute(f"DELETE FROM {name} WHERE id = 4")
        conn.execute(f"UPSERT INTO {name} VALUES {values([order_row(4, qty=-44)])}")
        conn.execute("COMMIT")
        m.put(dict(r1, note="reborn", price=None))
        m.put(dict(r2, qty=r2["qty"] + 2, note="twice"))
        m.put(dict(r3, note="back"))
        m.put(order_row(4, qty=-44))
        delta.check(1)
        check_views(conn, name, m, "same keys in one block")
        assert not any(r["id"] in (100, 300) for r in pp_read(name))


def test_transaction_of_n_statements_is_one_snapshot_each():
    """Blocks of several statements, one after the other: one snapshot per COMMIT."""
    name = "dml_txn_count"
    with connect() as conn:
        m = create_orders(conn, name, n=30)
        for round_ in range(3):
            delta = Delta(name)
            conn.execute("BEGIN")
            for j in range(4):
                i = 1 + round_ * 4 + j
                conn.execute(f"UPDATE {name} SET qty = qty + {j + 1} WHERE id = {i}")
                m.update(lambda r, i=i: r["id"] == i, lambda r, j=j: dict(r, qty=r["qty"] + j + 1))
            conn.execute(f"DELETE FROM {name} WHERE id = {20 + round_}")
            m.delete(lambda r, round_=round_: r["id"] == 20 + round_)
            conn.execute("COMMIT")
            delta.check(1)
            assert sorted(delta.kinds()) == [UPDATE_AFTER, DELETE]
            check_views(conn, name, m, f"round {round_}")
        # A block that only reads commits nothing.
        delta = Delta(name)
        conn.execute("BEGIN")
        conn.execute(f"SELECT * FROM {name}").fetchall()
        conn.execute("COMMIT")
        delta.check(0)


# ---------------------------------------------------------------------------------------------
# mixed writers


PP_FIELDS = [
    pa.field("region", pa.string(), nullable=False),
    pa.field("day", pa.date32(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("line", pa.int32(), nullable=False),
    pa.field("qty", pa.int32(), nullable=False),
    ("price", pa.decimal128(10, 2)),
    ("note", pa.string()),
    pa.field("paid", pa.bool_(), nullable=False),
]


def test_pypaimon_written_table_updated_and_deleted_by_tarn():
    name = "dml_pp_written"
    table = pp_create(name, PP_FIELDS, primary_keys=KEY, partition_keys=["region"],
                      options={"bucket": "2"})
    m = Model()
    first = [order_row(i) for i in range(1, 41)]
    pp_write(table, first)
    # pypaimon's own upserts, and new keys, in later commits.
    second = [dict(order_row(i), qty=i * 100, note="pp2") for i in range(1, 41, 3)]
    third = [order_row(i) for i in range(41, 61)] + [dict(order_row(2), note="pp3", price=None)]
    pp_write(table, second)
    pp_write(table, third)
    for r in first + second + third:
        m.put(r)
    assert pp_snapshot_ids(name) == [1, 2, 3]
    with connect() as conn:
        check_views(conn, name, m, "pypaimon's table")
        n = m.update(lambda r: r["note"] == "pp2", lambda r: dict(r, note="tarn", qty=r["qty"] + 1))
        d = run(conn, name, m, f"UPDATE {name} SET note = 'tarn', qty = qty + 1 WHERE note = 'pp2'",
                n, "update pypaimon's upserts")
        assert d.kinds() == [UPDATE_AFTER]
        n = m.update(lambda r: r["id"] in (2, 5, 41), lambda r: dict(r, line=r["line"] + 10))
        run(conn, name, m, f"UPDATE {name} SET line = line + 10 WHERE id IN (2, 5, 41)", n,
            "key change")
        n = m.delete(lambda r: r["id"] > 50 or r["note"] is None)
        run(conn, name, m, f"DELETE FROM {name} WHERE id > 50 OR note IS NULL", n, "delete")
        n = m.delete(lambda r: r["region"] == "us" and r["day"] == date(2026, 12, 2))
        run(conn, name, m,
            f"DELETE FROM {name} WHERE region = 'us' AND day = DATE '2026-12-02'", n,
            "delete by key prefix")
        conn.execute("BEGIN")
        conn.execute(f"UPDATE {name} SET paid = NOT paid WHERE region = 'ap'")
        conn.execute(f"DELETE FROM {name} WHERE region = 'eu' AND id < 10")
        conn.execute("COMMIT")
        m.update(lambda r: r["region"] == "ap", lambda r: dict(r, paid=not r["paid"]))
        m.delete(lambda r: r["region"] == "eu" and r["id"] < 10)
        check_views(conn, name, m, "after a block")
    # pypaimon writes again over keys tarn updated and deleted: its version wins.
    deleted = order_row(55)
    updated = dict(m.find(lambda r: r["note"] == "tarn")[0], note="pp4", qty=4)
    pp_write(name, [dict(deleted, note="pp4"), updated])
    m.put(dict(deleted, note="pp4"))
    m.put(updated)
    with connect() as conn:
        check_views(conn, name, m, "pypaimon after tarn")
        # And tarn again after that.
        n = m.update(lambda r: r["note"] == "pp4", lambda r: dict(r, note="tarn again"))
        run(conn, name, m, f"UPDATE {name} SET note = 'tarn again' WHERE note = 'pp4'", n,
            "tarn after pypaimon")
    assert pp_snapshot_ids(name) == snapshot_files(name)
    assert len(pp_commit_ids(name)) == 10, "one snapshot per statement"


def test_tarn_written_table_upserted_by_pypaimon():
    name = "dml_tarn_written"
    with connect() as conn:
        m = create_orders(conn, name, n=60, bucket=2)
        m.update(lambda r: r["id"] % 6 == 0, lambda r: dict(r, note="tarn upd"))
        run(conn, name, m, f"UPDATE {name} SET note = 'tarn upd' WHERE id % 6 = 0",
            len(m.find(lambda r: r["id"] % 6 == 0)), "tarn update")
        n = m.delete(lambda r: r["id"] % 10 == 1)
        run(conn, name, m, f"DELETE FROM {name} WHERE id % 10 = 1", n, "tarn delete")
    # pypaimon upserts keys tarn updated, a key tarn deleted, a key only inserted, a new key.
    ups = [
        dict(order_row(6), note="pp", qty=-6),      # updated by tarn
        dict(order_row(11), note="pp revived"),     # deleted by tarn
        dict(order_row(8), price=None, paid=True),  # only inserted by tarn
        order_row(1000),                            # new
    ]
    pp_write(name, ups)
    for r in ups:
        m.put(r)
    with connect() as conn:
        check_views(conn, name, m, "pypaimon upserts")
        # The revived key is taken again for INSERT; the new one too.
        delta = Delta(name)
        for i in (11, 1000):
            with pytest.raises(errors.UniqueViolation):
                conn.execute(f"INSERT INTO {name} VALUES {values([order_row(i)])}")
        delta.check(0)
        # tarn's row-level statements over pypaimon's rows.
        old = [m.find(lambda r, i=i: r["id"] == i)[0] for i in (6, 11)]
        m.put(dict(old[0], qty=old[0]["qty"] + 1))
        m.put(dict(old[1], qty=old[1]["qty"] + 1))
        run(conn, name, m,
            f"INSERT INTO {name} AS o VALUES {values(old)} ON CONFLICT (region, day, id, line) "
            f"DO UPDATE SET qty = o.qty + 1", 2, "on conflict over pypaimon rows")
        n = m.delete(lambda r: r["id"] in (8, 1000))
        run(conn, name, m, f"DELETE FROM {name} WHERE id IN (8, 1000)", n,
            "delete pypaimon rows")
