"""What Apache Superset does when it lists a PostgreSQL database's tables and shows one.

Superset's PostgresEngineSpec.get_table_names (apache/superset, superset/db_engine_specs/postgres.py,
commit 0a9f21324e99b054a88e5f005a69a84aa069a9a4) calls SQLAlchemy's inspector:
get_table_names(schema) + get_foreign_table_names(schema); the table view then reads the
columns and the primary key through the same inspector, and charts truncate time with the
spec's time_grain_functions (DATE_TRUNC('month', {col}), ...). Run by tests/clients.rs with
SQLAlchemy 2.1 and psycopg 3 against tarn and PostgreSQL 15; it prints what it saw as JSON and
the harness compares the two.

Usage: python superset_browse.py PORT USER
"""
import json
import sys

import sqlalchemy as sa

port, user = sys.argv[1], sys.argv[2]
engine = sa.create_engine(f"postgresql+psycopg://{user}@127.0.0.1:{port}/postgres")
inspector = sa.inspect(engine)
tables = inspector.get_table_names("public") + inspector.get_foreign_table_names("public")
columns = [
    {"name": c["name"], "type": str(c["type"]), "nullable": c["nullable"]}
    for c in inspector.get_columns("cl_orders", "public")
]
pk = inspector.get_pk_constraint("cl_orders", "public")["constrained_columns"]
with engine.connect() as conn:
    months = [
        str(r[0])
        for r in conn.execute(
            sa.text("SELECT DATE_TRUNC('month', placed) AS t FROM cl_orders WHERE placed IS NOT NULL ORDER BY 1")
        )
    ]
print(json.dumps({
    "cl_orders listed": "cl_orders" in sorted(tables),
    "columns": columns,
    "primary key": pk,
    "months": months,
}, indent=1))
