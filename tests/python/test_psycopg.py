"""psycopg 3 against a running tarn (TARN_PORT). Run by tests/python.rs."""

import datetime
import os

import psycopg
import pytest
from psycopg import errors
from psycopg.pq import TransactionStatus

PORT = int(os.environ["TARN_PORT"])


def connect(**kwargs):
    return psycopg.connect(host="127.0.0.1", port=PORT, user="py", dbname="analytics", **kwargs)


def test_select_and_parameters():
    with connect(autocommit=True) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
        assert conn.execute("select %s::int + 1", (41,)).fetchone() == (42,)
        assert conn.execute("select %s::text || 'b'", ("a",)).fetchone() == ("ab",)
        assert conn.execute("select %s::bigint * 2, %s::float8", (2**40, 0.5)).fetchone() == (2**41, 0.5)
        row = conn.execute("select current_database(), current_user").fetchone()
        assert row == ("analytics", "py")


def test_binary_results():
    with connect(autocommit=True) as conn:
        cur = conn.cursor(binary=True)
        cur.execute("select 7::int, 'x'::text, true, DATE '2026-12-01'")
        assert cur.fetchone() == (7, "x", True, datetime.date(2026, 12, 1))


def test_server_identity_parameters():
    with connect() as conn:
        status = conn.info.parameter_status
        assert status("server_version") == "15.0"
        assert status("client_encoding") == "UTF8"
        assert status("DateStyle") == "ISO, MDY"
        assert status("integer_datetimes") == "on"
        assert status("standard_conforming_strings") == "on"
        assert status("TimeZone") == "UTC"
        assert conn.info.server_version == 150000


def test_startup_options_and_set_time_zone():
    with connect(options="-c TimeZone=Asia/Tokyo", autocommit=True) as conn:
        assert conn.info.parameter_status("TimeZone") == "Asia/Tokyo"
        ts = conn.execute("select TIMESTAMPTZ '2026-12-01 10:00:00+00'").fetchone()[0]
        assert ts == datetime.datetime(2026, 12, 1, 10, tzinfo=datetime.timezone.utc)
        assert ts.utcoffset() == datetime.timedelta(hours=9)
        conn.execute("set time zone 'UTC'")
        assert conn.info.parameter_status("TimeZone") == "UTC"


def test_transaction_status_follows_ready_for_query():
    with connect() as conn:  # autocommit off: psycopg sends BEGIN itself
        assert conn.info.transaction_status == TransactionStatus.IDLE
        conn.execute("select 1")
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        with pytest.raises(errors.UndefinedTable) as info:
            conn.execute("select * from missing_table")
        assert info.value.sqlstate == "42P01"
        assert conn.info.transaction_status == TransactionStatus.INERROR
        with pytest.raises(errors.InFailedSqlTransaction):
            conn.execute("select 1")
        conn.rollback()
        assert conn.info.transaction_status == TransactionStatus.IDLE
        assert conn.execute("select 2").fetchone() == (2,)
        conn.commit()


def test_savepoints_through_nested_transactions():
    with connect() as conn:
        with conn.transaction():
            with pytest.raises(errors.DivisionByZero):
                with conn.transaction():  # SAVEPOINT / ROLLBACK TO SAVEPOINT
                    conn.execute("select 1/0")
            assert conn.execute("select 3").fetchone() == (3,)
        assert conn.info.transaction_status == TransactionStatus.IDLE


def test_errors_map_to_psycopg_classes():
    with connect(autocommit=True) as conn:
        for sql, cls in [
            ("selec 1", errors.SyntaxError),
            ("select nope from (select 1 as a) t", errors.UndefinedColumn),
            ("select 'abc'::int", errors.InvalidTextRepresentation),
            ("create table t (a interval)", errors.FeatureNotSupported),
        ]:
            with pytest.raises(cls):
                conn.execute(sql)
        assert conn.execute("select 1").fetchone() == (1,)


def test_many_rows_stream():
    with connect(autocommit=True) as conn:
        cur = conn.execute("select value from generate_series(1, 100000) as g(value)")
        total = sum(r[0] for r in cur)
        assert total == 100000 * 100001 // 2


def test_rollback_to_savepoint_restores_the_block_over_the_extended_protocol():
    with connect() as conn:  # conn.execute uses Parse/Bind/Execute
        conn.execute("savepoint s1")
        with pytest.raises(errors.UndefinedTable):
            conn.execute("select * from missing_table")
        assert conn.info.transaction_status == TransactionStatus.INERROR
        conn.execute("rollback to savepoint s1")
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        assert conn.execute("select 4").fetchone() == (4,)
        conn.rollback()
        assert conn.info.transaction_status == TransactionStatus.IDLE


def test_prepared_statements_survive_ddl():
    """psycopg prepares a query run 5 times and, after a DDL statement, sends DEALLOCATE ALL
    before preparing again; both must work (the system table read by the prepared query also
    shows the new snapshots)."""
    with connect(autocommit=True) as conn:
        conn.execute("drop table if exists prep_ddl")
        conn.execute("create table prep_ddl (id int primary key)")
        for i in range(8):
            conn.execute("insert into prep_ddl values (%s)", (i,))
            n = conn.execute('select count(*) from "prep_ddl$snapshots"').fetchone()[0]
            assert n == i + 1
        conn.execute("drop table if exists prep_other")
        conn.execute("create table prep_other (id int primary key)")
        conn.execute("insert into prep_ddl values (%s)", (100,))
        assert conn.execute("select count(*) from prep_ddl").fetchone()[0] == 9
        # What psycopg sends to drop its statements (it answered "prepared statement 'all' does
        # not exist" before).
        conn.execute("deallocate all")
        conn.execute("insert into prep_ddl values (%s)", (101,))
        assert conn.execute("select count(*) from prep_ddl").fetchone()[0] == 10
