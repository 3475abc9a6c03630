"""Protocol details drivers rely on: asyncpg's startup, type introspection, pools and binary
arrays; psycopg's named (server-side) cursors; pg8000; advisory locks; DISCARD/RESET.

Run by tests/python.rs against tarn (TARN_PORT). Every test also passes against PostgreSQL 15,
which proves it: `TARN_PORT=<pg15 port> pytest tests/python/test_protocol_clients.py` with a
database `analytics` and a superuser role `py`.
"""

import asyncio
import datetime
import decimal
import os
import threading
import time
import uuid

import asyncpg
import pg8000.native
import psycopg
import pytest
from psycopg import errors

PORT = int(os.environ["TARN_PORT"])
DSN = f"postgresql://py@127.0.0.1:{PORT}/analytics"


def connect(**kwargs):
    return psycopg.connect(host="127.0.0.1", port=PORT, user="py", dbname="analytics", **kwargs)


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def numbers():
    """A table of 1000 rows (n, even, day)."""
    with connect(autocommit=True) as conn:
        conn.execute("drop table if exists proto_numbers")
        conn.execute("create table proto_numbers (n int primary key, even boolean, day date)")
    rows = ", ".join(
        f"({n}, {'true' if n % 2 == 0 else 'false'}, DATE '{datetime.date(2026, 1, 1) + datetime.timedelta(days=n % 30)}')"
        for n in range(1, 1001)
    )
    with connect(autocommit=True) as conn:
        conn.execute(f"insert into proto_numbers values {rows}")
    return "proto_numbers"


# --- asyncpg -------------------------------------------------------------------------------


def test_asyncpg_connects_and_fetches():
    async def main():
        conn = await asyncpg.connect(DSN)
        try:
            assert await conn.fetchval("select 1") == 1
            row = await conn.fetchrow("select $1::int + 1 as a, $2::text as b", 41, "x")
            assert (row["a"], row["b"]) == (42, "x")
            assert await conn.fetchval("show client_encoding") == "UTF8"
            assert conn.get_server_pid() > 0
        finally:
            await conn.close()

    run(main())


def test_asyncpg_startup_settings():
    async def main():
        conn = await asyncpg.connect(
            DSN,
            server_settings={"application_name": "proto-test", "search_path": "public", "DateStyle": "ISO, DMY"},
        )
        try:
            assert await conn.fetchval("show application_name") == "proto-test"
            assert await conn.fetchval("show datestyle") == "ISO, DMY"
            assert await conn.fetchval("select current_setting('search_path')") == "public"
        finally:
            await conn.close()

    run(main())


def test_asyncpg_types_and_builtin_arrays(numbers):
    """asyncpg's built-in codecs (scalars, text[], oid[]); other arrays need its pg_type
    introspection query, which depends on the catalogs (see the report)."""

    async def main():
        conn = await asyncpg.connect(DSN)
        try:
            assert await conn.fetchval("select array_length($1::text[], 1)", ["a", "b,c", None]) == 3
            assert await conn.fetchval("select $1::text[]", ["a", 'q"u', None]) == ["a", 'q"u', None]
            count = await conn.fetchval(f"select count(*) from {numbers} where n > $1 and even", 990)
            assert count == 5
            row = await conn.fetchrow(
                "select 1::int2 a, 2::int8 b, 1.5::float8 c, 'x'::text d, true e, "
                "DATE '2026-12-01' f, TIMESTAMP '2026-12-01 10:00:00' g, 1.25::numeric(6,2) h"
            )
            assert tuple(row) == (
                1, 2, 1.5, "x", True, datetime.date(2026, 12, 1),
                datetime.datetime(2026, 12, 1, 10), decimal.Decimal("1.25"),
            )
            got = await conn.fetchval("select $1::date + 1", datetime.date(2026, 1, 31))
            assert got == datetime.date(2026, 2, 1)
        finally:
            await conn.close()

    run(main())


@pytest.mark.parametrize("binary", [False, True])
def test_psycopg_array_parameters(numbers, binary):
    """Array parameters in text and binary: date[], timestamp[], timestamptz[], uuid[],
    int4[], text[] (binary date[] was refused: "Cannot convert postgres type _date")."""
    days = [datetime.date(2026, 1, 2), datetime.date(2026, 1, 3)]
    stamps = [datetime.datetime(2026, 12, 1, 10, 30), datetime.datetime(1999, 1, 1)]
    utc = datetime.timezone.utc
    zoned = [datetime.datetime(2026, 12, 1, 10, 30, tzinfo=utc)]
    u = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    with connect(autocommit=True) as conn:
        cur = conn.cursor(binary=binary)
        q = f"select count(*) from {numbers} where day = any(%b)" if binary else \
            f"select count(*) from {numbers} where day = any(%t)"
        assert cur.execute(q, (days,)).fetchone() == (68,)
        assert cur.execute(f"select n from {numbers} where n = any(%s) order by n", ([3, 5, 2000],)).fetchall() == [(3,), (5,)]
        assert cur.execute("select %s::date[]", (days,)).fetchone() == (days,)
        assert cur.execute("select %s::timestamp[]", (stamps,)).fetchone() == (stamps,)
        assert cur.execute("select (%s::timestamptz[])[1]", (zoned,)).fetchone() == (zoned[0],)
        cur.execute("drop table if exists proto_uuids")
        cur.execute("create table proto_uuids (id uuid primary key, v int)")
        cur.execute(f"insert into proto_uuids values ('{u}', 1), ('{uuid.UUID(int=7)}', 2)")
        assert cur.execute("select v from proto_uuids where id = any(%s)", ([u, uuid.UUID(int=9)],)).fetchall() == [(1,)]
        assert cur.execute("select %s::text[]", (["a", "b,c", None],)).fetchone() == (["a", "b,c", None],)


def test_asyncpg_pool_reset_and_reuse():
    async def main():
        pool = await asyncpg.create_pool(DSN, min_size=1, max_size=2)
        try:
            for _ in range(4):
                async with pool.acquire() as conn:
                    assert await conn.fetchval("select 40 + $1::int", 2) == 42
                    await conn.execute("set application_name = 'dirty'")
            # The pool's reset query ran on release: RESET ALL undid the SET.
            async with pool.acquire() as conn:
                assert await conn.fetchval("show application_name") != "dirty"
        finally:
            await pool.close()

    run(main())


def test_asyncpg_cursor_iterates_in_prefetch_chunks(numbers):
    async def main():
        conn = await asyncpg.connect(DSN)
        try:
            async with conn.transaction():
                seen = [r["n"] async for r in conn.cursor(f"select n from {numbers} order by n", prefetch=64)]
            assert seen == list(range(1, 1001))
        finally:
            await conn.close()

    run(main())


# --- psycopg named cursors -----------------------------------------------------------------


def test_psycopg_named_cursor_streams_in_itersize_chunks(numbers):
    with connect() as conn:
        with conn.cursor(name="walk") as cur:
            cur.itersize = 100
            cur.execute(f"select n, even from {numbers} where n > %s order by n", (10,))
            assert [d.name for d in cur.description] == ["n", "even"]
            first = cur.fetchmany(5)
            assert first == [(11, False), (12, True), (13, False), (14, True), (15, False)]
            assert cur.fetchone() == (16, True)
            rest = cur.fetchall()
            assert len(rest) == 1000 - 16 and rest[-1] == (1000, True)


def test_psycopg_named_cursor_binary_and_scroll(numbers):
    with connect() as conn:
        with conn.cursor(name="bin", binary=True) as cur:
            cur.execute(f"select n, day from {numbers} where n <= 3 order by n")
            assert cur.fetchall() == [
                (1, datetime.date(2026, 1, 2)),
                (2, datetime.date(2026, 1, 3)),
                (3, datetime.date(2026, 1, 4)),
            ]
        with conn.cursor(name="skip", scrollable=False) as cur:
            cur.execute(f"select n from {numbers} order by n")
            cur.scroll(10)  # MOVE 10
            assert cur.fetchone() == (11,)
            cur.scroll(20, mode="absolute")  # forward: allowed
            assert cur.fetchone() == (21,)
            with pytest.raises(errors.ObjectNotInPrerequisiteState):
                cur.scroll(5, mode="absolute")  # backwards needs SCROLL
        conn.rollback()
        with conn.cursor(name="back", scrollable=True) as cur:
            cur.execute(f"select n from {numbers} where n <= 10 order by n")
            assert cur.fetchmany(4) == [(1,), (2,), (3,), (4,)]
            cur.scroll(-3)
            assert cur.fetchone() == (2,)
            cur.scroll(8, mode="absolute")
            assert cur.fetchall() == [(9,), (10,)]


def test_psycopg_withhold_cursor_outlives_commit(numbers):
    with connect() as conn:
        cur = conn.cursor(name="held", withhold=True)
        cur.execute(f"select n from {numbers} where n <= 5 order by n")
        assert cur.fetchone() == (1,)
        conn.commit()
        assert cur.fetchall() == [(2,), (3,), (4,), (5,)]
        cur.close()


def test_sql_cursor_statements(numbers):
    with connect() as conn:
        conn.execute(f"declare c no scroll cursor for select n from {numbers} where n <= 4 order by n")
        assert conn.execute("fetch next from c").fetchall() == [(1,)]
        cur = conn.execute("move forward 2 in c")
        assert cur.statusmessage == "MOVE 2"
        cur = conn.execute("fetch all c")
        assert cur.fetchall() == [(4,)] and cur.statusmessage == "FETCH 1"
        assert conn.execute("fetch c").fetchall() == []
        with pytest.raises(errors.ObjectNotInPrerequisiteState):
            conn.execute("fetch prior c")
        conn.rollback()
        conn.execute("declare a cursor for select 1")
        with pytest.raises(errors.DuplicateCursor):
            conn.execute("declare a cursor for select 2")
        conn.rollback()
        assert conn.execute("close all").statusmessage == "CLOSE CURSOR ALL"
        with pytest.raises(errors.InvalidCursorName):
            conn.execute("close nosuch")
        conn.rollback()
    with connect(autocommit=True) as conn:
        with pytest.raises(errors.NoActiveSqlTransaction):
            conn.execute("declare c cursor for select 1")
        # WITH HOLD outside a block: materialised at once.
        conn.execute("declare h cursor with hold for select 1 as x union all select 2 order by 1")
        assert conn.execute("fetch 5 from h").fetchall() == [(1,), (2,)]
        conn.execute("close h")


# --- session reset, advisory locks, settings -------------------------------------------------


def test_discard_all_reset_all_deallocate_unlisten():
    with connect(autocommit=True) as conn:
        conn.execute("set application_name = 'x'")
        assert conn.execute("discard all").statusmessage == "DISCARD ALL"
        assert conn.execute("show application_name").fetchone() == ("",)
        assert conn.execute("reset all").statusmessage == "RESET"
        assert conn.execute("unlisten *").statusmessage == "UNLISTEN"
        assert conn.execute("deallocate all").statusmessage == "DEALLOCATE ALL"
        with pytest.raises(errors.InvalidSqlStatementName):
            conn.execute("deallocate nosuch")
        conn.execute("begin")
        with pytest.raises(errors.ActiveSqlTransaction):
            conn.execute("discard all")
        conn.execute("rollback")


def test_advisory_locks_between_sessions():
    with connect(autocommit=True) as a, connect(autocommit=True) as b:
        assert a.execute("select pg_try_advisory_lock(42)").fetchone() == (True,)
        assert b.execute("select pg_try_advisory_lock(42)").fetchone() == (False,)
        assert b.execute("select pg_try_advisory_lock_shared(42)").fetchone() == (False,)
        assert b.execute("select pg_try_advisory_lock(4, 2)").fetchone() == (True,)
        assert a.execute("select pg_advisory_unlock(42)").fetchone() == (True,)
        assert b.execute("select pg_try_advisory_lock_shared(42)").fetchone() == (True,)
        assert a.execute("select pg_try_advisory_lock_shared(42)").fetchone() == (True,)
        assert a.execute("select pg_try_advisory_lock(42)").fetchone() == (False,)
        b.execute("select pg_advisory_unlock_all()")
        assert a.execute("select pg_try_advisory_lock(4, 2)").fetchone() == (True,)
        a.execute("select pg_advisory_unlock_all()")
        # Transaction-level locks end with the transaction.
        b.execute("begin")
        b.execute("select pg_advisory_xact_lock(7)")
        assert a.execute("select pg_try_advisory_lock(7)").fetchone() == (False,)
        b.execute("commit")
        assert a.execute("select pg_try_advisory_lock(7)").fetchone() == (True,)
        a.execute("select pg_advisory_unlock_all()")


def test_advisory_lock_waits_and_is_released_at_disconnect():
    holder = connect(autocommit=True)
    holder.execute("select pg_advisory_lock(99)")
    got = {}

    def wait():
        with connect(autocommit=True) as c:
            start = time.monotonic()
            c.execute("select pg_advisory_lock(99)")
            got["waited"] = time.monotonic() - start
            c.execute("select pg_advisory_unlock(99)")

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.5)
    assert "waited" not in got
    holder.close()  # disconnecting releases its locks
    t.join(10)
    assert got["waited"] >= 0.4


def test_advisory_lock_wait_is_cancellable_and_times_out():
    with connect(autocommit=True) as holder, connect(autocommit=True) as waiter:
        holder.execute("select pg_advisory_lock(5)")
        timer = threading.Timer(0.3, waiter.cancel)
        timer.start()
        with pytest.raises(errors.QueryCanceled):
            waiter.execute("select pg_advisory_lock(5)")
        waiter.execute("set lock_timeout = '200ms'")
        with pytest.raises(errors.LockNotAvailable):
            waiter.execute("select pg_advisory_lock(5)")
        holder.execute("select pg_advisory_unlock(5)")


def test_set_config_and_driver_probes():
    with connect(autocommit=True) as conn:
        assert conn.execute("select set_config('application_name', 'cfg', false)").fetchone() == ("cfg",)
        assert conn.execute("show application_name").fetchone() == ("cfg",)
        assert conn.execute("select set_config('myapp.tenant', '7', false)").fetchone() == ("7",)
        assert conn.execute("select current_setting('myapp.tenant')").fetchone() == ("7",)
        with pytest.raises(errors.UndefinedObject):
            conn.execute("select set_config('no_such_setting', '1', false)")
        for name, value in [
            ("standard_conforming_strings", "on"),
            ("integer_datetimes", "on"),
            ("max_identifier_length", "63"),
            ("server_version_num", "150000"),
            ("transaction_isolation", "read committed"),
        ]:
            got = conn.execute(f"show {name}").fetchone()[0]
            assert got == value or (name == "server_version_num" and got.startswith("15")), (name, got)
        assert conn.execute("show lc_collate").fetchone()[0]
    with connect() as conn:
        conn.execute("select set_config('myapp.local', 'inner', true)")
        assert conn.execute("select current_setting('myapp.local')").fetchone() == ("inner",)
        conn.rollback()
        assert conn.execute("select current_setting('myapp.local', true)").fetchone()[0] in ("", None)


# --- pg8000 ---------------------------------------------------------------------------------


def test_pg8000_native(numbers):
    conn = pg8000.native.Connection("py", host="127.0.0.1", port=PORT, database="analytics")
    try:
        assert conn.run("select 1 + :x", x=1) == [[2]]
        rows = conn.run(f"select n, day from {numbers} where n = any(:ns) order by n", ns=[1, 2])
        assert rows == [[1, datetime.date(2026, 1, 2)], [2, datetime.date(2026, 1, 3)]]
        assert conn.run("select :d::date + 1", d=datetime.date(2026, 1, 31)) == [[datetime.date(2026, 2, 1)]]
    finally:
        conn.close()
