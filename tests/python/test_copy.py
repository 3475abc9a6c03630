"""COPY ... TO STDOUT through psycopg 3 (`cursor.copy`), against a running tarn (TARN_PORT).

Run by tests/python.rs. The expected bytes are what PostgreSQL 15 sends for the same
statements over the same rows (checked by hand against a PostgreSQL 15; tests/psql.rs holds
the wider differential cases). Every test owns its table names.
"""

import csv
import io
import os

import psycopg
import pytest
from psycopg import errors, pq

PORT = int(os.environ["TARN_PORT"])


def connect(**kwargs):
    kwargs.setdefault("autocommit", True)
    return psycopg.connect(host="127.0.0.1", port=PORT, user="copier", dbname="tarn", **kwargs)


def copy_bytes(conn, statement):
    """The data of `statement` (a COPY TO STDOUT) and the row count of its tag."""
    cur = conn.cursor()
    out = bytearray()
    with cur.copy(statement) as copy:
        for data in copy:
            out += data
    return bytes(out), cur.rowcount


ROWS = [
    (1, "plain", "1.50", True, "2024-01-02 03:04:05.5"),
    (2, "", "-0.05", False, "2000-01-01 00:00:00"),
    (3, None, None, None, None),
    (4, "tab\there, \"quoted\"\nnew line\\back", "100.00", True, "1999-12-31 23:59:59.999999"),
    (5, "unicode é 日本 🎉", "0.00", False, "2024-02-29 00:00:00"),
    (6, "\\N", "2.00", True, "2024-01-01 00:00:00"),
]


def _table(conn, name):
    conn.execute(f"drop table if exists {name}")
    conn.execute(
        f"create table {name} (id int primary key, txt text, num numeric(10,2), b boolean, "
        f"ts timestamp)"
    )
    with conn.cursor() as cur:
        cur.executemany(
            f"insert into {name} values (%s, %s, %s::numeric, %s, %s::timestamp)", ROWS
        )


def test_copy_text_is_what_postgres_sends():
    with connect() as conn:
        _table(conn, "cp_text")
        data, count = copy_bytes(conn, "COPY (SELECT * FROM cp_text ORDER BY id) TO STDOUT")
        assert data.decode() == (
            "1\tplain\t1.50\tt\t2024-01-02 03:04:05.5\n"
            "2\t\t-0.05\tf\t2000-01-01 00:00:00\n"
            "3\t\\N\t\\N\t\\N\t\\N\n"
            '4\ttab\\there, "quoted"\\nnew line\\\\back\t100.00\tt\t1999-12-31 23:59:59.999999\n'
            "5\tunicode é 日本 🎉\t0.00\tf\t2024-02-29 00:00:00\n"
            "6\t\\\\N\t2.00\tt\t2024-01-01 00:00:00\n"
        )
        assert count == 6  # from the `COPY 6` tag
        # psycopg's own row parser reads the lines back into the values a SELECT returns.
        cur = conn.cursor()
        with cur.copy("COPY (SELECT * FROM cp_text ORDER BY id) TO STDOUT") as copy:
            copy.set_types(["int4", "text", "numeric", "bool", "timestamp"])
            copied = list(copy.rows())
        assert copied == conn.execute("SELECT * FROM cp_text ORDER BY id").fetchall()


def test_copy_csv_header_and_options():
    with connect() as conn:
        _table(conn, "cp_csv")
        data, count = copy_bytes(
            conn, "COPY (SELECT id, txt, num FROM cp_csv ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)"
        )
        assert count == 6  # the header is not a row
        assert data.decode() == (
            "id,txt,num\n"
            "1,plain,1.50\n"
            '2,"",-0.05\n'
            "3,,\n"
            '4,"tab\there, ""quoted""\nnew line\\back",100.00\n'
            "5,unicode é 日本 🎉,0.00\n"
            "6,\\N,2.00\n"
        )
        parsed = list(csv.reader(io.StringIO(data.decode(), newline="")))
        assert parsed[0] == ["id", "txt", "num"]
        assert [r[1] for r in parsed[1:]] == [r[1] or "" for r in ROWS]
        # The old syntax, and the table form with a column list.
        old, _ = copy_bytes(conn, "COPY (SELECT id, txt, num FROM cp_csv ORDER BY id) TO STDOUT CSV HEADER")
        assert old == data
        table_form, count = copy_bytes(conn, "COPY cp_csv (id, b) TO STDOUT WITH CSV")
        assert count == 6
        assert sorted(table_form.decode().splitlines()) == ["1,t", "2,f", "3,", "4,t", "5,f", "6,t"]
        custom, _ = copy_bytes(
            conn,
            "COPY (SELECT id, txt FROM cp_csv WHERE id IN (1, 2, 3) ORDER BY id) TO STDOUT "
            "WITH (FORMAT csv, DELIMITER ';', NULL 'NULL', QUOTE '''', FORCE_QUOTE *)",
        )
        assert custom.decode() == "'1';'plain'\n'2';''\n'3';NULL\n"


def test_copy_reads_old_versions():
    with connect() as conn:
        conn.execute("drop table if exists cp_tt")
        conn.execute("create table cp_tt (id int primary key, v text)")
        conn.execute("insert into cp_tt values (1, 'a'), (2, 'b')")  # snapshot 1
        conn.execute("update cp_tt set v = 'B' where id = 2")  # snapshot 2
        conn.execute("delete from cp_tt where id = 1")  # snapshot 3
        conn.execute("call sys.create_tag('cp_tt', 'first', 1)")
        for version, expected in [
            ("1", "1\ta\n2\tb\n"),
            ("2", "1\ta\n2\tB\n"),
            ("3", "2\tB\n"),
            ("'first'", "1\ta\n2\tb\n"),
        ]:
            data, _ = copy_bytes(
                conn, f"COPY (SELECT * FROM cp_tt VERSION AS OF {version} ORDER BY id) TO STDOUT"
            )
            assert data.decode() == expected, version
        latest, _ = copy_bytes(conn, "COPY cp_tt TO STDOUT")
        assert latest.decode() == "2\tB\n"


def test_copy_runs_in_the_transaction():
    with connect() as conn, connect() as other:
        conn.execute("drop table if exists cp_tx")
        conn.execute("create table cp_tx (id int primary key, v text)")
        conn.execute("insert into cp_tx values (1, 'a')")
        conn.execute("begin isolation level repeatable read")
        conn.execute("insert into cp_tx values (2, 'mine')")
        # The block's own uncommitted row, and not the other connection's later commit.
        other.execute("insert into cp_tx values (3, 'theirs')")
        data, _ = copy_bytes(conn, "COPY (SELECT * FROM cp_tx ORDER BY id) TO STDOUT")
        assert data.decode() == "1\ta\n2\tmine\n"
        data, _ = copy_bytes(other, "COPY (SELECT * FROM cp_tx ORDER BY id) TO STDOUT")
        assert data.decode() == "1\ta\n3\ttheirs\n"
        conn.execute("rollback")
        data, _ = copy_bytes(conn, "COPY (SELECT * FROM cp_tx ORDER BY id) TO STDOUT")
        assert data.decode() == "1\ta\n3\ttheirs\n"


def test_copy_errors_leave_the_connection_usable():
    with connect() as conn:
        with pytest.raises(errors.FeatureNotSupported, match="server file"):
            conn.execute("COPY (SELECT 1) TO '/tmp/tarn-copy-out'")
        assert not os.path.exists("/tmp/tarn-copy-out")
        with pytest.raises(errors.UndefinedTable):
            copy_bytes(conn, "COPY cp_nothing FROM STDIN")
        with pytest.raises(errors.InvalidParameterValue, match='COPY format "json" not recognized'):
            copy_bytes(conn, "COPY (SELECT 1) TO STDOUT (FORMAT json)")
        with pytest.raises(errors.UndefinedTable):
            copy_bytes(conn, "COPY cp_missing TO STDOUT")
        # An error while rows stream ends the copy with the error.
        with pytest.raises(errors.DivisionByZero):
            copy_bytes(conn, "COPY (SELECT 10 / (x - 3) FROM generate_series(1, 5) AS g(x)) TO STDOUT")
        assert conn.execute("select 1").fetchone() == (1,)
    # Inside a block, a failed COPY fails the block.
    with connect(autocommit=False) as conn:
        with pytest.raises(errors.DivisionByZero):
            copy_bytes(conn, "COPY (SELECT 1 / 0) TO STDOUT")
        with pytest.raises(errors.InFailedSqlTransaction):
            conn.execute("select 1")
        conn.rollback()
        assert conn.execute("select 2").fetchone() == (2,)


def test_copy_through_the_extended_protocol():
    """Parse/Bind/Execute of a COPY (as tokio-postgres and JDBC's prepared COPY send it)."""
    with connect() as conn:
        _table(conn, "cp_ext")
        pgconn = conn.pgconn
        pgconn.send_query_params(b"COPY (SELECT id, txt FROM cp_ext WHERE id < 3 ORDER BY id) TO STDOUT CSV", None)
        result = pgconn.get_result()
        assert result.status == pq.ExecStatus.COPY_OUT, result.error_message
        chunks = []
        while True:
            n, data = pgconn.get_copy_data(0)
            if n < 0:
                break
            chunks.append(bytes(data))
        assert chunks == [b"1,plain\n", b'2,""\n']  # one CopyData per row
        result = pgconn.get_result()
        assert result.status == pq.ExecStatus.COMMAND_OK, result.error_message
        assert result.command_status == b"COPY 2"
        assert pgconn.get_result() is None
        # An error in the extended protocol, then the connection goes on.
        pgconn.send_query_params(b"COPY (SELECT 1 / 0) TO STDOUT", None)
        statuses = []
        while (result := pgconn.get_result()) is not None:
            statuses.append(result.status)
            if result.status == pq.ExecStatus.COPY_OUT:
                while pgconn.get_copy_data(0)[0] >= 0:
                    pass
        assert statuses[-1] == pq.ExecStatus.FATAL_ERROR
        assert conn.execute("select 3").fetchone() == (3,)


def test_copy_streams_many_rows():
    with connect() as conn:
        cur = conn.cursor()
        n = 0
        size = 0
        with cur.copy("COPY (SELECT x, 'row ' || x FROM generate_series(1, 200000) AS g(x)) TO STDOUT") as copy:
            for row in copy.rows():
                n += 1
                size += len(row[1])
        assert n == 200000
        assert cur.rowcount == 200000
