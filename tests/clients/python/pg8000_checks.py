"""pg8000 (pure Python, extended protocol with its own type handling): connect, parameters,
DML update counts, transactions."""

import datetime
import decimal

import pg8000.native

from harness import DATABASE, HOST, PORT, USER, check, expect, name, run

T = name("cl_pg8000")


def connect():
    return pg8000.native.Connection(USER, host=HOST, port=PORT, database=DATABASE, timeout=20)


@check
def connect_and_query():
    c = connect()
    try:
        expect(c.run("SELECT 1 + :n", n=41) == [[42]], "1 + 41")
    finally:
        c.close()


@check
def parameters_round_trip():
    c = connect()
    try:
        c.run(f"DROP TABLE IF EXISTS {T}")
        c.run(f"CREATE TABLE {T} (id integer PRIMARY KEY, name text, price numeric(8,2), day date)")
        c.run(f"INSERT INTO {T} VALUES (:i, :n, :p, :d)", i=1, n="one", p=decimal.Decimal("2.25"), d=datetime.date(2024, 5, 6))
        rows = c.run(f"SELECT id, name, price, day FROM {T}")
        expect(rows == [[1, "one", decimal.Decimal("2.25"), datetime.date(2024, 5, 6)]], rows)
    finally:
        c.close()


@check
def update_counts():
    c = connect()
    try:
        c.run(f"INSERT INTO {T} (id, name) VALUES (2, 'two'), (3, 'three')")
        expect(c.row_count == 2, c.row_count)
        c.run(f"UPDATE {T} SET name = 'x' WHERE id >= 2")
        expect(c.row_count == 2, c.row_count)
        c.run(f"DELETE FROM {T} WHERE id = 3")
        expect(c.row_count == 1, c.row_count)
    finally:
        c.close()


@check
def teardown():
    c = connect()
    try:
        c.run(f"DROP TABLE {T}")
    finally:
        c.close()


if __name__ == "__main__":
    run()
