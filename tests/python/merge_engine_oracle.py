"""Oracle for tests/merge_engines.rs: primary-key tables whose versions merge under Paimon's
merge engines, written by pypaimon, with the rows Paimon reads from them.

    merge_engine_oracle.py WAREHOUSE

pypaimon creates tables in database `public` of the filesystem warehouse WAREHOUSE and commits
to each several times (so every bucket holds several sorted runs that a reader must merge),
then prints one JSON object on the last line of stdout:

    {"<table>": {"columns": [...], "rows": [[...], ...], "oracle": "pypaimon" | "paimon-java"}}

`rows` are the merged rows sorted by `id`, every column in `columns` order. JSON values: ints,
floats, strings, booleans, null; decimals as their text.

Where pypaimon 2.1 implements the table's merge semantics (deduplicate, partial-update and
aggregation without retractions, sequence.field), `rows` is pypaimon's own read of the table
(`"oracle": "pypaimon"`). pypaimon cannot write or read the rest (retractions in aggregation
and partial-update tables, ignore-delete, remove-record-on-delete, sequence groups): those
tables are written as deduplicate tables with `rowkind.field` (so -U/-D versions land in the
data files exactly as a Paimon Java writer leaves them), then their options are changed by a
new schema version (Paimon's ALTER TABLE refuses to change merge-engine once data exists, so the
script writes `schema-1` itself), and `rows` are what Paimon Java's merge functions
(PartialUpdateMergeFunction, AggregateMergeFunction and the FieldXxxAgg classes) produce, worked
out by hand in the comments (`"oracle": "paimon-java"`).
"""

import decimal
import json
import os
import sys

import pyarrow as pa

D = decimal.Decimal


def catalog(warehouse):
    from pypaimon import CatalogFactory
    cat = CatalogFactory.create({"warehouse": warehouse})
    cat.create_database("public", True)
    return cat


def create(cat, name, fields, options):
    from pypaimon import Schema
    schema = Schema.from_pyarrow_schema(
        pa.schema(fields), primary_keys=["id"], options=dict(options, bucket="2")
    )
    cat.create_table(f"public.{name}", schema, False)
    return cat.get_table(f"public.{name}")


def write(table, rows):
    """One batch commit of `rows` (dicts): one snapshot, one new file per bucket written."""
    from pypaimon.schema.data_types import PyarrowFieldParser
    schema = PyarrowFieldParser.from_paimon_schema(table.fields)
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    c = wb.new_commit()
    try:
        w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def read(table):
    rb = table.new_read_builder()
    result = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return [] if result is None else result.to_pylist()


def plain(v):
    if isinstance(v, D):
        return str(v)
    return v


def table_rows(rows, columns):
    rows = sorted(rows, key=lambda r: r["id"])
    return [[plain(r[c]) for c in columns] for r in rows]


def patch_options(warehouse, name, changes):
    """A new schema version of public.`name` with `changes` applied to the options (None
    removes a key)."""
    folder = os.path.join(warehouse, "public.db", name, "schema")
    latest = max(int(f.split("-", 1)[1]) for f in os.listdir(folder) if f.startswith("schema-"))
    with open(os.path.join(folder, f"schema-{latest}")) as f:
        schema = json.load(f)
    schema["id"] = latest + 1
    for k, v in changes.items():
        if v is None:
            schema["options"].pop(k, None)
        else:
            schema["options"][k] = v
    with open(os.path.join(folder, f"schema-{latest + 1}"), "w") as f:
        json.dump(schema, f)


def main(warehouse):
    cat = catalog(warehouse)
    out = {}
    i64, f64, s, b = pa.int64(), pa.float64(), pa.string(), pa.bool_()
    key = pa.field("id", i64, nullable=False)

    def oracle(name, table, columns):
        out[name] = {
            "columns": columns,
            "rows": table_rows(read(table), columns),
            "oracle": "pypaimon",
        }

    # ---- partial-update: the newest non-null value per column ----
    t = create(cat, "pu", [key, ("a", s), ("b", i64), ("c", f64)],
               {"merge-engine": "partial-update"})
    write(t, [dict(id=i, a=f"a{i}", b=None, c=None) for i in range(1, 7)])
    write(t, [dict(id=1, a=None, b=10, c=None), dict(id=2, a="a2-new", b=None, c=2.5),
              dict(id=7, a=None, b=None, c=None)])
    write(t, [dict(id=1, a=None, b=None, c=1.5), dict(id=3, a=None, b=30, c=None),
              dict(id=2, a=None, b=None, c=None)])
    write(t, [dict(id=1, a="a1-last", b=None, c=None), dict(id=5, a=None, b=50, c=5.5)])
    oracle("pu", t, ["id", "a", "b", "c"])

    # ---- partial-update ordered by sequence.field: a later commit can be older ----
    t = create(cat, "pu_seq", [key, ("ts", i64), ("a", s), ("b", i64)],
               {"merge-engine": "partial-update", "sequence.field": "ts"})
    write(t, [dict(id=1, ts=10, a="a10", b=None), dict(id=2, ts=10, a="a10", b=1),
              dict(id=3, ts=1, a=None, b=3)])
    write(t, [dict(id=1, ts=5, a="a5", b=5), dict(id=2, ts=20, a=None, b=None),
              dict(id=3, ts=2, a="a2", b=None)])
    write(t, [dict(id=1, ts=7, a=None, b=7), dict(id=3, ts=0, a="a0", b=0)])
    oracle("pu_seq", t, ["id", "ts", "a", "b"])

    # ---- aggregation: many functions, NULLs, several commits ----
    agg_fields = [key, ("total", i64), ("prod", f64), ("lo", pa.int32()), ("hi", s),
                  ("last", s), ("lastnn", s), ("first", s), ("firstnn", s), ("tags", s),
                  ("all_ok", b), ("any_ok", b), ("amount", pa.decimal128(10, 2))]
    t = create(cat, "agg", agg_fields, {
        "merge-engine": "aggregation",
        "fields.total.aggregate-function": "sum",
        "fields.prod.aggregate-function": "product",
        "fields.lo.aggregate-function": "min",
        "fields.hi.aggregate-function": "max",
        "fields.last.aggregate-function": "last_value",
        # lastnn: the default, last_non_null_value
        "fields.first.aggregate-function": "first_value",
        "fields.firstnn.aggregate-function": "first_non_null_value",
        "fields.tags.aggregate-function": "listagg",
        "fields.tags.list-agg-delimiter": "|",
        "fields.all_ok.aggregate-function": "bool_and",
        "fields.any_ok.aggregate-function": "bool_or",
        "fields.amount.aggregate-function": "sum",
    })
    cols = [f[0] if isinstance(f, tuple) else f.name for f in agg_fields]

    def agg_row(i, n):
        """Version `n` of key `i` (some columns NULL depending on both)."""
        pick = (i + n) % 3
        return dict(
            id=i,
            total=None if pick == 0 else i * 10 + n,
            prod=None if pick == 1 else float(n + 1) / 2,
            lo=None if pick == 2 else (i * 7 + n * 5) % 11,
            hi=None if pick == 0 else f"h{(i * 3 + n * 7) % 10}",
            last=None if n == 2 else f"last{n}",
            lastnn=None if pick == 1 else f"lnn{n}",
            first=None if n == 0 and i % 2 == 0 else f"first{n}",
            firstnn=None if n == 0 else f"fnn{n}",
            tags=None if pick == 2 else ("" if pick == 1 and n == 1 else f"t{n}"),
            all_ok=None if pick == 0 else (i + n) % 4 != 0,
            any_ok=None if pick == 1 else (i * n) % 5 == 1,
            amount=None if pick == 2 else D(i * 100 + n) / D(4),
        )

    for n in range(4):
        write(t, [agg_row(i, n) for i in range(1, 13) if (i + n) % 4 != 3])
    oracle("agg", t, cols)

    # ---- aggregation with a default function and listagg distinct ----
    t = create(cat, "agg_default", [key, ("x", i64), ("y", pa.int32()), ("words", s)], {
        "merge-engine": "aggregation",
        "fields.default-aggregate-function": "sum",
        "fields.words.aggregate-function": "listagg",
        "fields.words.distinct": "true",
    })
    write(t, [dict(id=1, x=1, y=2, words="a,b"), dict(id=2, x=None, y=5, words=None)])
    write(t, [dict(id=1, x=3, y=None, words="b,c"), dict(id=2, x=7, y=-5, words="z")])
    write(t, [dict(id=1, x=-1, y=1, words="c,d,a")])
    oracle("agg_default", t, ["id", "x", "y", "words"])

    # ---- deduplicate ordered by two sequence fields, ascending and descending ----
    for order in ["ascending", "descending"]:
        name = f"dedup_seq_{order}"
        t = create(cat, name, [key, ("major", i64), ("minor", pa.int32()), ("v", s)], {
            "sequence.field": "major,minor",
            "sequence.field.sort-order": order,
        })
        write(t, [dict(id=1, major=2, minor=1, v="2.1"), dict(id=2, major=1, minor=None, v="1.null"),
                  dict(id=3, major=5, minor=5, v="5.5 first"), dict(id=4, major=None, minor=9, v="null.9")])
        write(t, [dict(id=1, major=1, minor=9, v="1.9"), dict(id=2, major=1, minor=0, v="1.0"),
                  dict(id=3, major=5, minor=5, v="5.5 second"), dict(id=4, major=0, minor=0, v="0.0")])
        write(t, [dict(id=1, major=2, minor=0, v="2.0"), dict(id=5, major=None, minor=None, v="only")])
        oracle(name, t, ["id", "major", "minor", "v"])

    # ---- tables pypaimon cannot merge: written as deduplicate with rowkind.field ----
    def rowkind_table(name, fields, commits, options):
        t = create(cat, name, [key] + fields + [("kind", s)], {"rowkind.field": "kind"})
        for rows in commits:
            write(t, rows)
        patch_options(warehouse, name, options)

    # Aggregation with retractions (a changelog input, as Flink writes it).
    rowkind_table(
        "agg_retract",
        [("total", i64), ("prod", i64), ("lastnn", s), ("last", s), ("ignored", pa.int32())],
        [
            [dict(id=1, total=10, prod=6, lastnn="a", last="x", ignored=5, kind="+I"),
             dict(id=2, total=1, prod=2, lastnn="b", last="y", ignored=1, kind="+I"),
             dict(id=3, total=4, prod=3, lastnn="c", last="z", ignored=2, kind="+I")],
            [dict(id=1, total=10, prod=6, lastnn=None, last="x", ignored=5, kind="-U"),
             dict(id=2, total=7, prod=None, lastnn="b", last=None, ignored=9, kind="-D"),
             dict(id=3, total=5, prod=4, lastnn=None, last="w", ignored=1, kind="+U")],
            [dict(id=1, total=25, prod=2, lastnn=None, last="u", ignored=3, kind="+U"),
             dict(id=4, total=3, prod=3, lastnn="d", last="d", ignored=3, kind="-D")],
        ],
        {
            "merge-engine": "aggregation",
            "fields.total.aggregate-function": "sum",
            "fields.prod.aggregate-function": "product",
            "fields.last.aggregate-function": "last_value",
            "fields.ignored.aggregate-function": "max",
            "fields.ignored.ignore-retract": "true",
        },
    )
    out["agg_retract"] = {
        "columns": ["id", "total", "prod", "lastnn", "last", "ignored", "kind"],
        # id 1: sum 10 - 10 + 25 = 25; product 6 / 6 * 2 = 2; last_non_null_value: "a", the
        #       -U's NULL keeps it, the +U's NULL keeps it; last_value: x, retracted -> NULL,
        #       then "u"; max ignores the -U: max(5, 3) = 5; kind (last_non_null_value) "+U".
        # id 2: sum 1 - 7 = -6; product 2, the -D's NULL leaves it; last_non_null_value: the
        #       -D's "b" is not NULL -> NULL; last_value -> NULL; max ignores the -D: 1; kind
        #       (last_non_null_value too) is retracted to NULL. The merged row is an insert
        #       (no remove-record-on-delete), so the key stays.
        # id 3: plain aggregation: 9, 12, "c", "w", max(2, 1) = 2, "+U".
        # id 4: a lone -D: one version is taken as it is, and a -D is dropped.
        "rows": [
            [1, 25, 2, "a", "u", 5, "+U"],
            [2, -6, 2, None, None, 1, None],
            [3, 9, 12, "c", "w", 2, "+U"],
        ],
        "oracle": "paimon-java",
    }

    # aggregation.remove-record-on-delete.
    rowkind_table(
        "agg_remove",
        [("total", i64)],
        [
            [dict(id=1, total=1, kind="+I"), dict(id=2, total=2, kind="+I")],
            [dict(id=1, total=1, kind="-D"), dict(id=2, total=3, kind="-U")],
            [dict(id=3, total=3, kind="+I")],
        ],
        {"merge-engine": "aggregation", "fields.total.aggregate-function": "sum",
         "aggregation.remove-record-on-delete": "true"},
    )
    out["agg_remove"] = {
        "columns": ["id", "total", "kind"],
        # id 1 ends in -D: removed. id 2: -U subtracts (2 - 3 = -1) and retracts kind
        # (last_non_null_value) to NULL; the row stays.
        "rows": [[2, -1, None], [3, 3, "+I"]],
        "oracle": "paimon-java",
    }

    # partial-update with ignore-delete and with remove-record-on-delete.
    pu_commits = [
        [dict(id=1, a="a1", b=1, kind="+I"), dict(id=2, a="a2", b=2, kind="+I"),
         dict(id=3, a="a3", b=None, kind="+I")],
        [dict(id=1, a=None, b=None, kind="-D"), dict(id=2, a=None, b=20, kind="-U"),
         dict(id=3, a=None, b=30, kind="+U")],
        [dict(id=1, a=None, b=100, kind="+I")],
    ]
    rowkind_table("pu_ignore_delete", [("a", s), ("b", i64)], pu_commits,
                  {"merge-engine": "partial-update", "ignore-delete": "true"})
    out["pu_ignore_delete"] = {
        "columns": ["id", "a", "b", "kind"],
        # Retractions are skipped: id 1 = a1 + b 100; id 2 keeps a2, 2.
        "rows": [[1, "a1", 100, "+I"], [2, "a2", 2, "+I"], [3, "a3", 30, "+U"]],
        "oracle": "paimon-java",
    }
    rowkind_table("pu_remove", [("a", s), ("b", i64)], pu_commits,
                  {"merge-engine": "partial-update",
                   "partial-update.remove-record-on-delete": "true"})
    out["pu_remove"] = {
        "columns": ["id", "a", "b", "kind"],
        # id 1: the -D resets the row to the delete's own values (all NULL but the key and
        #       its kind "-D"), then the +I fills b and kind: (NULL, 100, "+I").
        # id 2: a -U neither removes nor changes anything.
        "rows": [[1, None, 100, "+I"], [2, "a2", 2, "+I"], [3, "a3", 30, "+U"]],
        "oracle": "paimon-java",
    }

    # partial-update with sequence groups (and a summed column in one).
    rowkind_table(
        "pu_groups",
        [("a", s), ("b", s), ("g1", pa.int32()), ("c", i64), ("g2", pa.int32()), ("x", s)],
        [
            [dict(id=1, a="a1", b="b1", g1=5, c=1, g2=5, x="x1", kind="+I"),
             dict(id=2, a="a1", b="b1", g1=1, c=1, g2=1, x="x1", kind="+I")],
            [dict(id=1, a="a2", b="b2", g1=4, c=10, g2=3, x=None, kind="+I"),
             dict(id=2, a=None, b="b2", g1=2, c=5, g2=None, x=None, kind="+I")],
            [dict(id=1, a="a3", b=None, g1=9, c=100, g2=None, x="x3", kind="+I"),
             dict(id=2, a="a2", b="b2", g1=3, c=5, g2=2, x=None, kind="-U")],
        ],
        {"merge-engine": "partial-update", "fields.g1.sequence-group": "a,b",
         "fields.g2.sequence-group": "c", "fields.c.aggregate-function": "sum"},
    )
    out["pu_groups"] = {
        "columns": ["id", "a", "b", "g1", "c", "g2", "x", "kind"],
        # id 1: g1 4 < 5 leaves a and b; g1 9 replaces the whole group, NULL b included. c
        #       sums every version that has a g2, older ones too (aggregated as if first):
        #       1 + 10 = 11, while g2 stays 5 (3 is older); the third version's g2 is NULL,
        #       so group g2 skips it. x: the newest non-null value.
        # id 2: g1 2 > 1 replaces the group: a NULL, b "b2"; that version has no g2, so c
        #       stays 1. The -U (g1 3 >= 2) clears a and b and sets g1 = 3; for g2 (2 >= 1)
        #       it retracts 5 from the sum: 1 - 5 = -4, g2 = 2. A retraction changes only
        #       sequence groups: x and kind keep "x1" and "+I".
        "rows": [
            [1, "a3", None, 9, 11, 5, "x3", "+I"],
            [2, None, None, 3, -4, 2, "x1", "+I"],
        ],
        "oracle": "paimon-java",
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
