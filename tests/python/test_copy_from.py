"""COPY ... FROM STDIN (text, CSV, binary) and COPY ... TO STDOUT (FORMAT binary) through
psycopg 3, against tarn (TARN_PORT) and, when TARN_PG15_PORT is set, against PostgreSQL 15.

Every test runs the same statements on each target and checks the same expectations, which
were recorded from PostgreSQL 15: a test that passes on PostgreSQL proves itself.
"""

import datetime
import os
import threading
import time
from decimal import Decimal

import psycopg
import pytest

TARGETS = [("tarn", int(os.environ["TARN_PORT"]), "copier", "tarn")]
if os.environ.get("TARN_PG15_PORT"):
    TARGETS.append(("pg15", int(os.environ["TARN_PG15_PORT"]), "postgres", "postgres"))


@pytest.fixture(params=TARGETS, ids=[t[0] for t in TARGETS])
def target(request):
    return request.param


def connect(target, **kwargs):
    _, port, user, dbname = target
    kwargs.setdefault("autocommit", True)
    return psycopg.connect(host="127.0.0.1", port=port, user=user, dbname=dbname, **kwargs)


def make_table(conn, name):
    conn.execute(f"drop table if exists {name}")
    conn.execute(
        f"create table {name} (id int primary key, name text, born date, score numeric(6,2), "
        f"ok boolean, ts timestamp)"
    )


def copy_in(conn, statement, data):
    """Runs a COPY FROM STDIN with `data` (str or bytes, sent in small pieces) and returns
    the row count of its `COPY n` tag."""
    cur = conn.cursor()
    if isinstance(data, str):
        data = data.encode()
    with cur.copy(statement) as copy:
        for i in range(0, len(data), 7):
            copy.write(data[i : i + 7])
    return cur.rowcount


def rows(conn, name):
    return conn.execute(f"select * from {name} order by id").fetchall()


def error_of(conn, statement, data):
    with pytest.raises(psycopg.Error) as info:
        copy_in(conn, statement, data)
    diag = info.value.diag
    return diag.sqlstate, diag.message_primary, diag.context


TEXT_INPUT = (
    "1\tAnn\t1990-05-17\t12.5\tt\t2024-01-02 03:04:05\n"
    "2\ttab\\there\\\\x \\101\\x42\t\\N\t-0.005\tno\t\\N\n"
    "3\t\\N\t2000-02-29\t\\N\t\\N\t2024-02-29 12:00\n"
    "4\t\t  2024-1-5 \t 7 \tON\t1999-12-31 23:59:59.5\n"
)

TEXT_ROWS = [
    (1, "Ann", datetime.date(1990, 5, 17), Decimal("12.50"), True,
     datetime.datetime(2024, 1, 2, 3, 4, 5)),
    (2, "tab\there\\x AB", None, Decimal("-0.01"), False, None),
    (3, None, datetime.date(2000, 2, 29), None, None, datetime.datetime(2024, 2, 29, 12, 0)),
    (4, "", datetime.date(2024, 1, 5), Decimal("7.00"), True,
     datetime.datetime(1999, 12, 31, 23, 59, 59, 500000)),
]


def test_text_format(target):
    with connect(target) as conn:
        make_table(conn, "cf_text")
        assert copy_in(conn, "COPY cf_text FROM STDIN", TEXT_INPUT) == 4
        assert rows(conn, "cf_text") == TEXT_ROWS
        # A column list (the others are NULL), another delimiter and NULL string, the end marker.
        make_table(conn, "cf_cols")
        n = copy_in(
            conn,
            "COPY cf_cols (name, id) FROM STDIN WITH (DELIMITER '|', NULL 'nil')",
            "a|1\nnil|2\n\\.\nignored|3\n",
        )
        assert n == 2
        assert rows(conn, "cf_cols") == [
            (1, "a", None, None, None, None),
            (2, None, None, None, None, None),
        ]
        # The old syntax; CRLF line ends.
        make_table(conn, "cf_old")
        n = copy_in(conn, "COPY cf_old (id, name) FROM STDIN WITH DELIMITER ','", "5,x\r\n6,y\r\n")
        assert n == 2
        assert rows(conn, "cf_old") == [
            (5, "x", None, None, None, None),
            (6, "y", None, None, None, None),
        ]


CSV_INPUT = (
    "id,name,born,score,ok,ts\n"
    '1,"Smith, Ann",1990-05-17,1.5,true,\n'
    '2,"say ""hi""\nand bye","",,f,2024-01-02 03:04:05\n'
    '3,"",,"0",,\n'
    "4,,2001-01-01,,,\n"
)


def test_csv_format(target):
    with connect(target) as conn:
        make_table(conn, "cf_csv")
        n = copy_in(conn, "COPY cf_csv FROM STDIN WITH (FORMAT csv, HEADER true, FORCE_NULL (born))", CSV_INPUT)
        assert n == 4
        assert rows(conn, "cf_csv") == [
            (1, "Smith, Ann", datetime.date(1990, 5, 17), Decimal("1.50"), True, None),
            (2, 'say "hi"\nand bye', None, None, False, datetime.datetime(2024, 1, 2, 3, 4, 5)),
            (3, "", None, Decimal("0.00"), None, None),
            (4, None, datetime.date(2001, 1, 1), None, None, None),
        ]
        make_table(conn, "cf_csv2")
        n = copy_in(
            conn,
            "COPY cf_csv2 (id, name) FROM STDIN CSV HEADER DELIMITER ';' QUOTE '''' ESCAPE '\\' "
            "FORCE NOT NULL name",
            "id;name\n1;'it\\'s'\n2;\n3;'a;b'\n",
        )
        assert n == 3
        assert [r[:2] for r in rows(conn, "cf_csv2")] == [(1, "it's"), (2, ""), (3, "a;b")]
        # HEADER MATCH checks the names.
        make_table(conn, "cf_match")
        assert copy_in(conn, "COPY cf_match (id, name) FROM STDIN (FORMAT csv, HEADER match)", "id,name\n1,a\n") == 1
        assert error_of(
            conn, "COPY cf_match (id, name) FROM STDIN (FORMAT csv, HEADER match)", "id,nom\n2,b\n"
        ) == (
            "22P04",
            'column name mismatch in header line field 2: got "nom", expected "name"',
            'COPY cf_match, line 1: "id,nom"',
        )


def test_binary_both_ways_and_write_row(target):
    types = ["int4", "text", "date", "numeric", "bool", "timestamp"]
    with connect(target) as conn:
        make_table(conn, "cf_bin")
        cur = conn.cursor()
        with cur.copy("COPY cf_bin FROM STDIN (FORMAT binary)") as copy:
            copy.set_types(types)
            for row in TEXT_ROWS:
                copy.write_row(row)
        assert cur.rowcount == 4
        assert rows(conn, "cf_bin") == TEXT_ROWS
        # write_row in text format.
        make_table(conn, "cf_rows")
        with cur.copy("COPY cf_rows FROM STDIN") as copy:
            for row in TEXT_ROWS:
                copy.write_row(row)
        assert rows(conn, "cf_rows") == TEXT_ROWS
        # COPY TO STDOUT in binary, read back by psycopg's binary loaders.
        with cur.copy("COPY (SELECT * FROM cf_bin ORDER BY id) TO STDOUT (FORMAT binary)") as copy:
            copy.set_types(types)
            assert list(copy.rows()) == TEXT_ROWS
        assert cur.rowcount == 4
        raw = bytearray()
        with cur.copy("COPY (SELECT id, name FROM cf_bin WHERE id < 3 ORDER BY id) TO STDOUT WITH BINARY") as copy:
            for data in copy:
                raw += data
        assert bytes(raw) == (
            b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
            + b"\x00\x02" + b"\x00\x00\x00\x04\x00\x00\x00\x01" + b"\x00\x00\x00\x03Ann"
            + b"\x00\x02" + b"\x00\x00\x00\x04\x00\x00\x00\x02" + b"\x00\x00\x00\x0dtab\there\\x AB"
            + b"\xff\xff"
        )


def test_bad_input_is_postgres_error_and_commits_nothing(target):
    with connect(target) as conn:
        make_table(conn, "cf_bad")
        copy_in(conn, "COPY cf_bad (id, name) FROM STDIN", "1\tkept\n")
        cases = [
            (
                "2\tx\t2000-01-01\n3\ty\tnot-a-date\n",
                ("22007", 'invalid input syntax for type date: "not-a-date"',
                 'COPY cf_bad, line 2, column born: "not-a-date"'),
            ),
            (
                "2\tx\t2000-01-01\n3\ty\t2000-13-45\n",
                ("22008", 'date/time field value out of range: "2000-13-45"',
                 'COPY cf_bad, line 2, column born: "2000-13-45"'),
            ),
            (
                "x2\ta\t\\N\n",
                ("22P02", 'invalid input syntax for type integer: "x2"',
                 'COPY cf_bad, line 1, column id: "x2"'),
            ),
            (
                "2\ta\t\\N\textra\n",
                ("22P04", "extra data after last expected column",
                 'COPY cf_bad, line 1: "2\ta\t\\N\textra"'),
            ),
            (
                "2\ta\n",
                ("22P04", 'missing data for column "born"', 'COPY cf_bad, line 1: "2\ta"'),
            ),
            (
                "\\N\ta\t\\N\n",
                ("23502", 'null value in column "id" of relation "cf_bad" violates not-null constraint',
                 None),
            ),
        ]
        for data, expected in cases:
            state, message, context = error_of(conn, "COPY cf_bad (id, name, born) FROM STDIN", data)
            assert (state, message) == expected[:2], data
            if expected[2] is not None:
                assert context == expected[2], data
            else:
                assert context.startswith("COPY cf_bad, line 1"), context
        state, message, _ = error_of(conn, "COPY cf_bad (id, score) FROM STDIN", "2\t12345.678\n")
        assert (state, message) == ("22003", "numeric field overflow")
        # Keys: one already in the table, and one repeated inside the COPY.
        state, _, _ = error_of(conn, "COPY cf_bad (id, name) FROM STDIN", "5\ta\n1\tdup\n")
        assert state == "23505"
        state, _, _ = error_of(conn, "COPY cf_bad (id, name) FROM STDIN", "6\ta\n6\tb\n")
        assert state == "23505"
        assert rows(conn, "cf_bad") == [(1, "kept", None, None, None, None)]
        # Unknown columns and tables.
        with pytest.raises(psycopg.Error) as info:
            copy_in(conn, "COPY cf_bad (id, nope) FROM STDIN", "")
        assert info.value.diag.sqlstate == "42703"
        assert info.value.diag.message_primary == 'column "nope" of relation "cf_bad" does not exist'
        with pytest.raises(psycopg.Error) as info:
            copy_in(conn, "COPY cf_nope FROM STDIN", "")
        assert info.value.diag.sqlstate == "42P01"
        # The connection is usable after each failure.
        assert conn.execute("select 1").fetchone() == (1,)


def test_copy_in_a_transaction_block(target):
    with connect(target) as conn, connect(target) as other:
        make_table(conn, "cf_tx")
        conn.execute("begin")
        assert copy_in(conn, "COPY cf_tx (id, name) FROM STDIN", "1\ta\n2\tb\n") == 2
        assert copy_in(conn, "COPY cf_tx (id, name) FROM STDIN", "3\tc\n") == 1
        # Visible inside the block, not outside until COMMIT.
        assert len(rows(conn, "cf_tx")) == 3
        assert rows(other, "cf_tx") == []
        conn.execute("commit")
        assert [r[0] for r in rows(other, "cf_tx")] == [1, 2, 3]
        conn.execute("begin")
        copy_in(conn, "COPY cf_tx (id, name) FROM STDIN", "4\td\n")
        conn.execute("rollback")
        assert [r[0] for r in rows(conn, "cf_tx")] == [1, 2, 3]
        # A failed COPY fails the block.
        conn.execute("begin")
        with pytest.raises(psycopg.Error):
            copy_in(conn, "COPY cf_tx (id, name) FROM STDIN", "5\te\nbad\tf\n")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            conn.execute("select 1")
        conn.execute("rollback")
        assert [r[0] for r in rows(conn, "cf_tx")] == [1, 2, 3]


def test_client_abort_copies_nothing(target):
    with connect(target) as conn:
        make_table(conn, "cf_abort")
        cur = conn.cursor()
        # psycopg answers an exception inside the block with CopyFail and re-raises it.
        with pytest.raises(RuntimeError):
            with cur.copy("COPY cf_abort (id) FROM STDIN") as copy:
                copy.write("1\n2\n")
                raise RuntimeError("client gives up")
        assert rows(conn, "cf_abort") == []
        # The server's answer to CopyFail, seen through libpq's own API.
        pgconn = conn.pgconn
        pgconn.send_query(b"COPY cf_abort (id) FROM STDIN")
        assert pgconn.get_result().status == psycopg.pq.ExecStatus.COPY_IN
        pgconn.put_copy_data(b"3\n")
        pgconn.put_copy_end(b"client gives up")
        result = pgconn.get_result()
        assert result.status == psycopg.pq.ExecStatus.FATAL_ERROR
        assert result.error_field(psycopg.pq.DiagnosticField.SQLSTATE) == b"57014"
        assert result.error_field(psycopg.pq.DiagnosticField.MESSAGE_PRIMARY) == (
            b"COPY from stdin failed: client gives up"
        )
        assert pgconn.get_result() is None
        assert rows(conn, "cf_abort") == []


def test_progress_view_while_copy_runs(target):
    with connect(target) as conn, connect(target) as watcher:
        make_table(conn, "cf_prog")
        cur = conn.cursor()
        seen = []
        with cur.copy("COPY cf_prog (id, name) FROM STDIN") as copy:
            copy.write("".join(f"{i}\tname {i}\n" for i in range(50_000)))
            deadline = time.time() + 20
            while time.time() < deadline:
                seen = watcher.execute(
                    "select command, type, bytes_processed, tuples_processed, tuples_excluded "
                    "from pg_stat_progress_copy"
                ).fetchall()
                if seen and seen[0][3] > 0:
                    break
                time.sleep(0.05)
        assert len(seen) == 1, seen
        command, kind, nbytes, tuples, excluded = seen[0]
        assert (command, kind, excluded) == ("COPY FROM", "PIPE", 0)
        assert nbytes > 0 and tuples > 0
        assert cur.rowcount == 50_000
        assert watcher.execute("select count(*) from pg_stat_progress_copy").fetchone() == (0,)


def test_extended_protocol_and_statements_after_copy(target):
    with connect(target) as conn:
        make_table(conn, "cf_ext")
        pgconn = conn.pgconn
        # Parse/Bind/Execute of COPY FROM STDIN (as tokio-postgres and pgjdbc send it).
        pgconn.send_query_params(b"COPY cf_ext (id, name) FROM STDIN", None)
        assert pgconn.get_result().status == psycopg.pq.ExecStatus.COPY_IN
        pgconn.put_copy_data(b"1\ta\n2\tb\n")
        pgconn.put_copy_end()
        result = pgconn.get_result()
        assert result.status == psycopg.pq.ExecStatus.COMMAND_OK, result.error_message
        assert result.command_status == b"COPY 2"
        assert pgconn.get_result() is None
        # A failing COPY in the extended protocol: the error, then the connection works.
        pgconn.send_query_params(b"COPY cf_ext (id, name) FROM STDIN", None)
        assert pgconn.get_result().status == psycopg.pq.ExecStatus.COPY_IN
        pgconn.put_copy_data(b"3\tc\nx\td\n")
        pgconn.put_copy_end()
        result = pgconn.get_result()
        assert result.status == psycopg.pq.ExecStatus.FATAL_ERROR
        assert result.error_field(psycopg.pq.DiagnosticField.SQLSTATE) == b"22P02"
        assert pgconn.get_result() is None
        # Statements after the COPY in one simple query run once the data is in.
        pgconn.send_query(b"COPY cf_ext (id, name) FROM STDIN; SELECT count(*) FROM cf_ext")
        assert pgconn.get_result().status == psycopg.pq.ExecStatus.COPY_IN
        pgconn.put_copy_data(b"3\tc\n")
        pgconn.put_copy_end()
        result = pgconn.get_result()
        assert result.command_status == b"COPY 1"
        result = pgconn.get_result()
        assert result.status == psycopg.pq.ExecStatus.TUPLES_OK
        assert result.get_value(0, 0) == b"3"
        assert pgconn.get_result() is None
        assert [r[:2] for r in rows(conn, "cf_ext")] == [(1, "a"), (2, "b"), (3, "c")]


JDBC_JAR = "/usr/share/java/postgresql.jar"


def test_pgjdbc_copy_manager(target, tmp_path):
    """pgjdbc's CopyManager (Debian's libpostgresql-jdbc-java with the JDK): copyIn from a
    Reader, copyOut into a Writer, a failing copyIn's SQLSTATE."""
    import subprocess

    source = os.path.join(os.path.dirname(__file__), "jdbc", "CopyCheck.java")
    subprocess.run(["javac", "-cp", JDBC_JAR, "-d", str(tmp_path), source], check=True)
    _, port, user, dbname = target
    out = subprocess.run(
        ["java", "-cp", f"{JDBC_JAR}:{tmp_path}", "CopyCheck", str(port), user, dbname],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout
    assert out == 'in 2\nout 2\n1,"a, b",2000-01-02\n2,,\nerror 22007\ncount 2\n'


def test_cancel_request_stops_a_copy(target):
    with connect(target) as conn:
        make_table(conn, "cf_cancel")
        cur = conn.cursor()
        with pytest.raises(psycopg.errors.QueryCanceled) as info:
            with cur.copy("COPY cf_cancel (id) FROM STDIN") as copy:
                copy.write("1\n2\n")
                time.sleep(0.3)
                conn.cancel()
                time.sleep(0.5)
                copy.write("3\n")
        assert info.value.diag.message_primary == "canceling statement due to user request"
        assert rows(conn, "cf_cancel") == []
        assert conn.execute("select 1").fetchone() == (1,)
