"""Catalog queries BI tools send when browsing a database, replayed through psycopg. Each
query is taken from the tool's own source, cited beside it (repository, file, commit), with
the tool's placeholders filled as the tool fills them. A check passes when the query runs and
answers with the facts the tool reads (our table, its columns).

Superset browses through SQLAlchemy's inspector (sqlalchemy_checks.py covers it). Metabase and
DBeaver use pgjdbc's DatabaseMetaData (java/JdbcChecks.java) plus queries of their own that
are still to be added here.
"""

import psycopg

from harness import CONNINFO, check, expect, name, run

T = name("cl_bi")

# grafana/grafana, public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts
# at commit 12f912ab8d010f4d95a4043a0efaa20fc4ca0100 (buildSchemaConstraint, getVersion,
# showSchemas, showTables, getSchema).
GRAFANA_SCHEMA_CONSTRAINT = """
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )"""
GRAFANA_VERSION = "SELECT current_setting('server_version_num')::int/100 as version"
GRAFANA_SCHEMAS = """SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name"""
GRAFANA_TABLES = f"""SELECT
    CASE WHEN {GRAFANA_SCHEMA_CONSTRAINT}
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
    ORDER BY CASE WHEN {GRAFANA_SCHEMA_CONSTRAINT} THEN 0 ELSE 1 END, 1"""
GRAFANA_TABLES_IN_SCHEMA = """SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'public'
      ORDER BY 1"""
GRAFANA_COLUMNS = f"""SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('{T}'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('{T}'))[1]
          AND quote_ident(table_name) = (parse_ident('{T}'))[2]
        ELSE quote_ident(table_name) = '{T}'
          AND {GRAFANA_SCHEMA_CONSTRAINT}
      END"""


def query(sql):
    with psycopg.connect(CONNINFO, autocommit=True) as c:
        return c.execute(sql).fetchall()


def execute(sql):
    with psycopg.connect(CONNINFO, autocommit=True) as c:
        c.execute(sql)


@check
def setup():
    execute(f"DROP TABLE IF EXISTS {T}")
    execute(f"CREATE TABLE {T} (id integer PRIMARY KEY, at timestamp NOT NULL, reading double precision, note varchar(20))")


@check
def grafana_version():
    rows = query(GRAFANA_VERSION)
    expect(rows == [(1500,)] or (rows and 1500 <= rows[0][0] < 1600), rows)


@check
def grafana_schemas():
    rows = query(GRAFANA_SCHEMAS)
    expect(("public",) in rows, rows)


@check
def grafana_tables():
    rows = query(GRAFANA_TABLES)
    expect((T,) in rows, rows)


@check
def grafana_tables_in_schema():
    rows = query(GRAFANA_TABLES_IN_SCHEMA)
    expect((T,) in rows, rows)


@check
def grafana_columns():
    rows = sorted(query(GRAFANA_COLUMNS))
    expect(rows == sorted([("id", "integer"), ("at", "timestamp without time zone"),
                           ("reading", "double precision"), ("note", "character varying")]), rows)


@check
def teardown():
    execute(f"DROP TABLE {T}")


if __name__ == "__main__":
    run()
