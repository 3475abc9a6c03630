"""psql as people use it: meta-commands that describe tables (\\d, \\d+, \\dt, \\dv, \\df, \\dn,
\\l, \\du), expanded output (\\x), and \\copy in and out. Each check needs psql to succeed and
to show the facts a user looks for (columns, types with typmods, NOT NULL, the primary key)."""

import os
import subprocess
import tempfile

from harness import check, expect, name, run

T = name("cl_psql")


def psql(*commands, ok=True):
    args = ["psql", "-X", "-v", "ON_ERROR_STOP=1"]
    for c in commands:
        args += ["-c", c]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if ok and out.returncode != 0:
        raise AssertionError(f"psql {commands}: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout


@check
def create_table():
    psql(f"DROP TABLE IF EXISTS {T}")
    psql(
        f"CREATE TABLE {T} (id integer PRIMARY KEY, customer varchar(40) NOT NULL, "
        f"total numeric(8,2), placed date)"
    )
    psql(f"INSERT INTO {T} VALUES (1, 'ann', 10.50, '2024-01-02'), (2, 'bob', NULL, NULL)")


@check
def describe_table():
    out = psql(f"\\d {T}")
    for fact in [
        f'Table "public.{T}"',
        "customer",
        "character varying(40)",
        "numeric(8,2)",
        "not null",
        "PRIMARY KEY, btree (id)",
    ]:
        expect(fact in out, f"\\d shows {fact!r}: {out}")


@check
def describe_table_plus():
    out = psql(f"\\d+ {T}")
    for fact in ["Storage", "numeric(8,2)", "PRIMARY KEY, btree (id)"]:
        expect(fact in out, f"\\d+ shows {fact!r}: {out}")


@check
def list_tables():
    out = psql("\\dt")
    expect(T in out, f"\\dt lists {T}: {out}")


@check
def list_views():
    psql("\\dv")


@check
def list_functions():
    psql("\\df")


@check
def list_schemas():
    out = psql("\\dn")
    expect("public" in out, out)


@check
def list_databases():
    out = psql("\\l")
    expect("Name" in out and "Encoding" in out, out)


@check
def list_roles():
    out = psql("\\du")
    expect("Role name" in out, out)


@check
def expanded_output():
    out = psql("\\x on", f"SELECT id, customer FROM {T} WHERE id = 1")
    expect("-[ RECORD 1 ]" in out and "customer | ann" in out, out)


@check
def copy_in_csv():
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("id,customer,total,placed\n3,cy,1.25,2024-03-04\n4,\"d, e\",,\n")
        path = f.name
    try:
        psql(f"\\copy {T} FROM '{path}' WITH (FORMAT csv, HEADER)")
    finally:
        os.unlink(path)
    out = psql(f"SELECT customer, total FROM {T} WHERE id >= 3 ORDER BY id")
    expect("d, e" in out and "1.25" in out, out)


@check
def copy_out_csv():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.csv")
        psql(f"\\copy (SELECT id, customer FROM {T} WHERE id <= 2 ORDER BY id) TO '{path}' CSV HEADER")
        text = open(path).read()
    expect(text == "id,customer\n1,ann\n2,bob\n", repr(text))


@check
def drop_table():
    psql(f"DROP TABLE {T}")


if __name__ == "__main__":
    run()
