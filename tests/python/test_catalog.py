"""Catalog introspection the way drivers do it, against tarn (TARN_PORT) and, when
TARN_PG15_PORT is set, PostgreSQL 15 with the same checks (which proves them). Run by
tests/python.rs.

psycopg's TypeInfo.fetch (to_regtype, oid::regtype::text), SQLAlchemy 2.1's inspector
(get_table_names, get_pk_constraint with key order, has_table) over tarn's pg_catalog.
"""

import os

import psycopg
import pytest
import sqlalchemy as sa
from psycopg.types import TypeInfo

TARGETS = [("tarn", int(os.environ["TARN_PORT"]), "py", "analytics")]
if os.environ.get("TARN_PG15_PORT"):
    TARGETS.append(("pg15", int(os.environ["TARN_PG15_PORT"]), "postgres", "postgres"))


@pytest.fixture(params=TARGETS, ids=[t[0] for t in TARGETS])
def target(request):
    return request.param


def test_psycopg_type_info_fetch(target):
    _, port, user, db = target
    with psycopg.connect(host="127.0.0.1", port=port, user=user, dbname=db) as conn:
        got = {}
        for name in ["numeric", "int4", "integer", "text", "varchar", "character varying", "timestamptz"]:
            t = TypeInfo.fetch(conn, name)
            got[name] = (t.oid, t.array_oid, t.regtype, t.delimiter)
        assert got == {
            "numeric": (1700, 1231, "numeric", ","),
            "int4": (23, 1007, "integer", ","),
            "integer": (23, 1007, "integer", ","),
            "text": (25, 1009, "text", ","),
            "varchar": (1043, 1015, "character varying", ","),
            "character varying": (1043, 1015, "character varying", ","),
            "timestamptz": (1184, 1185, "timestamp with time zone", ","),
        }
        assert TypeInfo.fetch(conn, "no_such_type") is None
        row = conn.execute("select to_regtype('numeric(6,2)')::oid, to_regtype('nope')::oid").fetchone()
        assert row == (1700, None)


def test_sqlalchemy_inspector(target):
    _, port, user, db = target
    engine = sa.create_engine(f"postgresql+psycopg://{user}@127.0.0.1:{port}/{db}")
    try:
        with engine.begin() as c:
            c.exec_driver_sql("drop table if exists sa_orders")
            c.exec_driver_sql("drop table if exists sa_lines")
            c.exec_driver_sql(
                "create table sa_orders (id int primary key, name varchar(20) not null,"
                " amount numeric(6,2), note text)"
            )
            c.exec_driver_sql(
                "create table sa_lines (order_id int, line int, qty bigint not null,"
                " primary key (line, order_id))"
            )
        insp = sa.inspect(engine)
        assert {"sa_orders", "sa_lines"} <= set(insp.get_table_names())
        assert insp.has_table("sa_orders") and not insp.has_table("sa_nope")
        pk = insp.get_pk_constraint("sa_orders")
        assert (pk["constrained_columns"], pk["name"]) == (["id"], "sa_orders_pkey")
        pk = insp.get_pk_constraint("sa_lines")
        assert (pk["constrained_columns"], pk["name"]) == (["line", "order_id"], "sa_lines_pkey")
        # A primary key's index is not one of get_indexes' (PostgreSQL leaves it out too).
        assert insp.get_indexes("sa_orders") == []
        assert insp.get_unique_constraints("sa_orders") == []
        assert insp.get_foreign_keys("sa_orders") == []
        assert insp.get_table_comment("sa_orders") == {"text": None}
        with engine.begin() as c:
            c.exec_driver_sql("drop table sa_orders")
            c.exec_driver_sql("drop table sa_lines")
    finally:
        engine.dispose()


def test_catalog_oids_are_stable_across_connections(target):
    name, port, user, db = target
    with psycopg.connect(host="127.0.0.1", port=port, user=user, dbname=db, autocommit=True) as conn:
        conn.execute("drop table if exists cat_stable")
        conn.execute("create table cat_stable (k int primary key, v text)")
        first = conn.execute(
            "select c.oid, i.indexrelid, con.oid from pg_class c join pg_index i on i.indrelid = c.oid"
            " join pg_constraint con on con.conrelid = c.oid where c.relname = 'cat_stable'"
        ).fetchone()
    with psycopg.connect(host="127.0.0.1", port=port, user=user, dbname=db, autocommit=True) as conn:
        again = conn.execute(
            "select c.oid, i.indexrelid, con.oid from pg_class c join pg_index i on i.indrelid = c.oid"
            " join pg_constraint con on con.conrelid = c.oid where c.relname = 'cat_stable'"
        ).fetchone()
        assert first == again and len(set(first)) == 3
        # conkey is int2[], indkey an int2vector subscripted from 0.
        row = conn.execute(
            "select con.conkey, i.indkey[0], 1 = any(con.conkey),"
            " pg_get_indexdef(i.indexrelid), pg_get_constraintdef(con.oid)"
            " from pg_class c join pg_index i on i.indrelid = c.oid"
            " join pg_constraint con on con.conrelid = c.oid where c.relname = 'cat_stable'"
        ).fetchone()
        assert row == (
            [1],
            1,
            True,
            "CREATE UNIQUE INDEX cat_stable_pkey ON public.cat_stable USING btree (k)",
            "PRIMARY KEY (k)",
        )
        cols = conn.execute(
            "select column_name, data_type, is_nullable, character_maximum_length,"
            " numeric_precision, numeric_scale, udt_name from information_schema.columns"
            " where table_name = 'cat_stable' order by ordinal_position"
        ).fetchall()
        assert cols == [
            ("k", "integer", "NO", None, 32, 0, "int4"),
            ("v", "text", "YES", None, None, None, "text"),
        ]
        conn.execute("drop table cat_stable")
