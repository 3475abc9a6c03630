"""Catalog queries Metabase and DBeaver send of their own when browsing a PostgreSQL database
(besides pgjdbc's DatabaseMetaData), replayed through psycopg with the tools' placeholders
filled as the tools fill them (DBeaver binds the database name as a parameter). Each query is
cited beside it (repository, file, commit). A check passes when the query runs and answers
with the facts the tool reads.

Runs in the client suite's frame (harness.py: `ok NAME` / `FAIL NAME: why` per check) next to
bi_queries.py, which replays Grafana's queries.
"""

import psycopg

from harness import CONNINFO, DATABASE, check, expect, run


def rows(sql, params=None):
    with psycopg.connect(CONNINFO, autocommit=True) as c:
        cur = c.execute(sql, params)
        names = [d.name for d in cur.description]
        return names, cur.fetchall()


# metabase/metabase, src/metabase/driver/postgres.clj at commit
# 370249b52907c64fb32de3739c1b2136abd9e960 (enum-types: run before describing each table).
METABASE_ENUM_TYPES = (
    "SELECT nspname, typname "
    "FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
    "WHERE t.oid IN (SELECT DISTINCT enumtypid FROM pg_enum e)"
)

# Same file and commit (db-default-timezone).
METABASE_TIMEZONE = "show timezone;"

# dbeaver/dbeaver, plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/
# model/PostgreDataSource.java at commit 005a1a1cb6e67fd5a92794ba7045ada7410f3365
# (DatabaseCache.prepareObjectsStatement, without "show non-default databases").
DBEAVER_DATABASE = (
    "SELECT db.oid,db.*"
    "\nFROM pg_catalog.pg_database db WHERE NOT datistemplate AND datallowconn"
    "\nAND db.datname=%s"
)

# dbeaver/dbeaver, plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/
# model/PostgreDatabase.java at commit c994ba8f165c1f75288f6cfeefb9095b5cb04914
# (SchemaCache.prepareLookupStatement without a filter, LanguageCache, TablespaceCache).
DBEAVER_SCHEMAS = (
    "SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n\n"
    "LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid\n"
    " ORDER BY nspname"
)
DBEAVER_LANGUAGES = "SELECT l.oid,l.* FROM pg_catalog.pg_language l \nORDER BY l.oid"
DBEAVER_TABLESPACES = "SELECT t.oid,t.* FROM pg_catalog.pg_tablespace t \nORDER BY t.oid"


@check
def metabase_enum_types():
    names, result = rows(METABASE_ENUM_TYPES)
    expect(names == ["nspname", "typname"], f"columns {names}")
    # Neither server has enum types in this database.
    expect(result == [], f"enum types {result}")


@check
def metabase_default_timezone():
    names, result = rows(METABASE_TIMEZONE)
    expect(len(result) == 1 and result[0][0], f"show timezone gave {result}")


@check
def dbeaver_database():
    names, result = rows(DBEAVER_DATABASE, [DATABASE])
    # PostgreSQL names both the explicit db.oid and db.*'s own oid column "oid".
    expect(names[0] == "oid", f"the first column is {names[0]!r}, not 'oid' (columns {names})")
    expect("datname" in names, f"no datname among {names}")
    datnames = [r[names.index("datname")] for r in result]
    expect(datnames == [DATABASE], f"databases {datnames}, wanted [{DATABASE!r}]")


@check
def dbeaver_schemas():
    names, result = rows(DBEAVER_SCHEMAS)
    for wanted in ("oid", "nspname", "description"):
        expect(wanted in names, f"no {wanted} among {names}")
    schemas = [r[names.index("nspname")] for r in result]
    expect("public" in schemas and "pg_catalog" in schemas, f"schemas {schemas}")


@check
def dbeaver_languages():
    names, result = rows(DBEAVER_LANGUAGES)
    expect("lanname" in names, f"no lanname among {names}")
    languages = [r[names.index("lanname")] for r in result]
    expect("sql" in languages, f"languages {languages}")


@check
def dbeaver_tablespaces():
    names, result = rows(DBEAVER_TABLESPACES)
    expect("spcname" in names, f"no spcname among {names}")
    spaces = [r[names.index("spcname")] for r in result]
    expect("pg_default" in spaces, f"tablespaces {spaces}")


run()
