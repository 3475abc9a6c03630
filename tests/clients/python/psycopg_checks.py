"""psycopg 3: text and binary results, server-side prepared statements, parameters of every
type tarn stores (arrays too) both ways, COPY in and out, named (server-side) cursors,
transactions and error SQLSTATEs, its type lookup (TypeInfo.fetch), and temporary tables."""

import datetime
import decimal
import uuid

import psycopg
from psycopg import errors
from psycopg.types import TypeInfo

from harness import CONNINFO, check, expect, name, run

T = name("cl_psycopg")
ROW = (
    1, 2**40, decimal.Decimal("1234.56"), "text é", True, 2.5,
    datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 12, 30, 1, 250000),
    b"\x00\xffbytes", [1, 2, 3], ["a", "b c"], [datetime.date(2024, 1, 1), datetime.date(2024, 12, 31)],
)
COLUMNS = (
    "id integer PRIMARY KEY, big bigint, price numeric(10,2), label text, flag boolean, "
    "ratio double precision, day date, at timestamp, raw bytea, ints integer[], "
    "words text[], days date[]"
)


def connect(**kw):
    return psycopg.connect(CONNINFO, autocommit=True, **kw)


@check
def setup():
    with connect() as c:
        c.execute(f"DROP TABLE IF EXISTS {T}")
        c.execute(f"CREATE TABLE {T} ({COLUMNS})")


@check
def text_parameters_round_trip():
    with connect() as c:
        c.execute(f"INSERT INTO {T} VALUES ({', '.join(['%s'] * len(ROW))})", ROW)
        got = c.execute(f"SELECT * FROM {T} WHERE id = %s", (1,)).fetchone()
        expect(got == ROW, f"{got} != {ROW}")


@check
def binary_parameters_and_results():
    row = (2,) + ROW[1:]
    with connect() as c:
        cur = c.cursor(binary=True)
        cur.execute(f"INSERT INTO {T} VALUES ({', '.join(['%b'] * len(row))})", row)
        got = cur.execute(f"SELECT * FROM {T} WHERE id = %b", (2,)).fetchone()
        expect(got == row, f"{got} != {row}")


@check
def prepared_statements():
    with connect() as c:
        for i in range(3):
            got = c.execute(f"SELECT label FROM {T} WHERE id = %s", (1,), prepare=True).fetchone()
            expect(got == ("text é",), got)


@check
def copy_in_rows_and_out():
    with connect() as c:
        with c.cursor().copy(f"COPY {T} (id, label, price) FROM STDIN") as copy:
            for i in range(10, 20):
                copy.write_row((i, f"copied {i}", decimal.Decimal(i) / 4))
        n = c.execute(f"SELECT count(*) FROM {T} WHERE id BETWEEN 10 AND 19").fetchone()[0]
        expect(n == 10, n)
        lines = []
        with c.cursor().copy(f"COPY (SELECT id, label FROM {T} WHERE id BETWEEN 10 AND 11 ORDER BY id) TO STDOUT") as copy:
            for row in copy.rows():
                lines.append(row)
        expect(lines == [("10", "copied 10"), ("11", "copied 11")], lines)


@check
def copy_binary_both_ways():
    with connect() as c:
        with c.cursor().copy(f"COPY {T} (id, label, day) FROM STDIN (FORMAT binary)") as copy:
            copy.set_types(["int4", "text", "date"])
            copy.write_row((30, "binary", datetime.date(2020, 5, 6)))
        with c.cursor().copy(f"COPY (SELECT id, label, day FROM {T} WHERE id = 30) TO STDOUT (FORMAT binary)") as copy:
            copy.set_types(["int4", "text", "date"])
            rows = list(copy.rows())
        expect(rows == [(30, "binary", datetime.date(2020, 5, 6))], rows)


@check
def named_cursor():
    with psycopg.connect(CONNINFO) as c:
        with c.cursor(name="walk") as cur:
            cur.itersize = 3
            cur.execute(f"SELECT id FROM {T} WHERE id BETWEEN 10 AND 19 ORDER BY id")
            ids = [r[0] for r in cur]
        expect(ids == list(range(10, 20)), ids)


@check
def transactions():
    with psycopg.connect(CONNINFO) as c:
        c.execute(f"INSERT INTO {T} (id, label) VALUES (40, 'rolled back')")
        c.rollback()
        with c.transaction():
            c.execute(f"INSERT INTO {T} (id, label) VALUES (41, 'committed')")
        n = c.execute(f"SELECT count(*) FROM {T} WHERE id IN (40, 41)").fetchone()[0]
        expect(n == 1, n)


@check
def error_sqlstates():
    with connect() as c:
        try:
            c.execute(f"INSERT INTO {T} (id) VALUES (1)")
        except errors.UniqueViolation:
            pass
        else:
            raise AssertionError("duplicate key accepted")
        try:
            c.execute("SELECT 1 / 0")
        except errors.DivisionByZero:
            pass
        else:
            raise AssertionError("1/0 answered")


@check
def type_info_fetch():
    with connect() as c:
        for t in ["int4", "numeric", "text[]", "date"]:
            info = TypeInfo.fetch(c, t)
            expect(info is not None, f"TypeInfo.fetch({t})")


@check
def executemany():
    with connect() as c:
        c.cursor().executemany(f"INSERT INTO {T} (id, label) VALUES (%s, %s)", [(50 + i, str(i)) for i in range(5)])
        n = c.execute(f"SELECT count(*) FROM {T} WHERE id >= 50").fetchone()[0]
        expect(n == 5, n)


@check
def uuid_and_json():
    with connect() as c:
        u = uuid.UUID("12345678-1234-5678-1234-567812345678")
        got = c.execute("SELECT %s::uuid, '{\"a\": [1, 2]}'::jsonb", (u,)).fetchone()
        expect(got == (u, {"a": [1, 2]}), got)


@check
def temporary_tables():
    """A temporary table takes COPY, prepared statements, ON CONFLICT and transactions like
    any table, hides the permanent table of its name, and is the connection's alone: another
    connection never sees it, and it is gone once its connection closes."""
    with connect() as c:
        c.execute(f"CREATE TEMP TABLE {T} (id int PRIMARY KEY, label text)")
        with c.cursor().copy(f"COPY {T} (id, label) FROM STDIN") as copy:
            for i in range(1, 6):
                copy.write_row((i, f"temp {i}"))
        c.cursor().executemany(
            f"INSERT INTO {T} VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET label = excluded.label",
            [(5, "five"), (6, "six")],
        )
        for key in (5, 6, 1):
            got = c.execute(f"SELECT label FROM {T} WHERE id = %s", (key,), prepare=True).fetchone()
            expect(got is not None and got[0] in ("five", "six", "temp 1"), (key, got))
        with c.transaction():
            c.execute(f"DELETE FROM {T} WHERE id < 3")
        try:
            with c.transaction():
                c.execute(f"UPDATE {T} SET label = 'lost'")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        rows = c.execute(f"SELECT id, label FROM {T} ORDER BY id").fetchall()
        expect(rows == [(3, "temp 3"), (4, "temp 4"), (5, "five"), (6, "six")], rows)
        # The permanent table of the same name is still there, reached by its schema.
        permanent = c.execute(f"SELECT count(*) FROM public.{T}").fetchone()[0]
        expect(permanent > 6, permanent)
        with connect() as other:
            n = other.execute(f"SELECT count(*) FROM {T}").fetchone()[0]
            expect(n == permanent, (n, permanent))
            try:
                other.execute(f"SELECT * FROM pg_temp.{T}")
            except errors.UndefinedTable:
                pass
            else:
                raise AssertionError("another connection read the temporary table")
    with connect() as c:
        try:
            c.execute(f"SELECT * FROM pg_temp.{T}")
        except errors.UndefinedTable:
            pass
        else:
            raise AssertionError("the temporary table outlived its connection")


@check
def teardown():
    with connect() as c:
        c.execute(f"DROP TABLE {T}")


if __name__ == "__main__":
    run()
