"""Interoperability between tarn and pypaimon (an independent Paimon implementation).

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
Every test owns its table names.  Rows are compared as full, sorted row sets, value by value,
with exact Python types (Decimal with its scale, date, datetime with or without a zone, bytes,
str, lists...), between what psycopg shows through tarn and what pypaimon reads from the files.
"""

import datetime
import decimal
import math
import os
import struct
import threading
import time
import uuid

import psycopg
import pyarrow as pa
import pytest
from psycopg import errors
from psycopg.types.string import TextLoader
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import AtomicType, PyarrowFieldParser
from pypaimon.schema.schema_change import SchemaChange

PORT = int(os.environ["TARN_PORT"])
WAREHOUSE = os.environ["TARN_WAREHOUSE"]

D = decimal.Decimal
UTC = datetime.timezone.utc
date = datetime.date
dt = datetime.datetime
tm = datetime.time


# ---------------------------------------------------------------------------------------------
# helpers


def connect(**kwargs):
    return psycopg.connect(
        host="127.0.0.1", port=PORT, user="interop", dbname="tarn", autocommit=True, **kwargs
    )


def catalog():
    cat = CatalogFactory.create({"warehouse": WAREHOUSE})
    cat.create_database("public", True)
    return cat


def pp_table(name, snapshot_id=None):
    table = catalog().get_table(f"public.{name}")
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    return table


def pp_read(table):
    """All rows pypaimon reads from `table` (a table object or a name in `public`)."""
    if isinstance(table, str):
        table = pp_table(table)
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    result = rb.new_read().to_arrow(splits)
    if result is None:
        return []
    return result.to_pylist()


def arrow_schema(table):
    return PyarrowFieldParser.from_paimon_schema(table.fields)


def pp_write(table, rows):
    """One pypaimon batch commit of `rows` (dicts) into `table` (object or name); one snapshot."""
    if isinstance(table, str):
        table = pp_table(table)
    data = pa.Table.from_pylist(rows, schema=arrow_schema(table))
    wb = table.new_batch_write_builder()
    write = wb.new_write()
    commit = wb.new_commit()
    try:
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def pp_create(name, arrow_fields, primary_keys=None, partition_keys=None, options=None):
    cat = catalog()
    schema = Schema.from_pyarrow_schema(
        pa.schema(arrow_fields),
        partition_keys=partition_keys or [],
        primary_keys=primary_keys or [],
        options=options or {},
    )
    cat.create_table(f"public.{name}", schema, False)
    return cat.get_table(f"public.{name}")


def pg_rows(conn, sql, params=None):
    cur = conn.execute(sql, params)
    names = [d.name for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def pp_snapshot_ids(name):
    rows = pp_read(pp_table(name + "$snapshots"))
    return sorted(r["snapshot_id"] for r in rows)


def pp_commit_ids(name):
    """Snapshot ids pypaimon sees, without the COMPACT snapshots of background compaction."""
    rows = pp_read(pp_table(name + "$snapshots"))
    return sorted(r["snapshot_id"] for r in rows if r["commit_kind"] != "COMPACT")


def snapshot_files(name):
    folder = os.path.join(WAREHOUSE, "public.db", name, "snapshot")
    return sorted(
        int(f.split("-", 1)[1]) for f in os.listdir(folder) if f.startswith("snapshot-")
    )


def _canon(v):
    """A comparable, type-carrying form of one value."""
    if isinstance(v, float):
        return ("float", "nan" if math.isnan(v) else v, math.copysign(1.0, v))
    if isinstance(v, decimal.Decimal):
        return ("Decimal", str(v))
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            return ("datetime", v)
        return ("datetime+tz", v.astimezone(UTC).replace(tzinfo=None))
    if isinstance(v, (list, tuple)):
        return ("list", tuple(_canon(x) for x in v))
    if isinstance(v, (bytes, bytearray, memoryview)):
        return ("bytes", bytes(v))
    return (type(v).__name__, v)


def _canon_row(row):
    return tuple(sorted((k, _canon(v)) for k, v in row.items()))


def _sort_key(row, key):
    return tuple((row[k] is None, str(row[k]) if row[k] is None else row[k]) for k in key)


def assert_same_rows(actual, expected, key, label=""):
    """Same multiset of rows, compared value by value with exact types."""
    a = sorted((_canon_row(r) for r in actual), key=repr)
    e = sorted((_canon_row(r) for r in expected), key=repr)
    if a == e:
        return
    # A precise message: the first differing row and value.
    sa = sorted(actual, key=lambda r: _sort_key(r, key))
    se = sorted(expected, key=lambda r: _sort_key(r, key))
    assert len(sa) == len(se), f"{label}: {len(sa)} rows, expected {len(se)}:\n{sa}\nvs\n{se}"
    for ra, re in zip(sa, se):
        assert set(ra) == set(re), f"{label}: columns {sorted(ra)} vs {sorted(re)}"
        for col in re:
            assert _canon(ra[col]) == _canon(re[col]), (
                f"{label}: row {[re[k] for k in key]} column {col}: "
                f"{ra[col]!r} ({type(ra[col]).__name__}) vs {re[col]!r} ({type(re[col]).__name__})"
            )
    raise AssertionError(f"{label}: row sets differ (duplicates?):\n{sa}\nvs\n{se}")


def f32(x):
    """`x` rounded to float32, as pypaimon returns a REAL/FLOAT value."""
    if x is None or math.isnan(x) or math.isinf(x):
        return x
    return struct.unpack("f", struct.pack("f", x))[0]


def raw_text_connect(**kwargs):
    """A connection whose uuid, json and jsonb values stay the text tarn sends (Paimon STRING,
    which is what pypaimon reads) instead of being parsed by psycopg."""
    conn = connect(**kwargs)
    for name in ("uuid", "json", "jsonb"):
        conn.adapters.register_loader(name, TextLoader)
    return conn


# ---------------------------------------------------------------------------------------------
# 1. tarn writes, pypaimon reads

ALL_TYPES_DDL = """
    id INTEGER NOT NULL,
    b BOOLEAN,
    s SMALLINT,
    i INTEGER,
    l BIGINT,
    r REAL,
    d DOUBLE PRECISION,
    n NUMERIC(12, 3),
    nd NUMERIC,
    big NUMERIC(38, 0),
    t TEXT,
    v VARCHAR(10),
    c CHAR(5),
    by BYTEA,
    dt DATE,
    tm TIME,
    ts3 TIMESTAMP(3),
    ts TIMESTAMP,
    ts0 TIMESTAMP(0),
    tz TIMESTAMPTZ,
    u UUID,
    j JSON,
    jb JSONB,
    ai INTEGER[],
    al BIGINT[],
    ats TEXT[],
    ad DOUBLE PRECISION[],
    adt DATE[],
    ab BOOLEAN[]
"""

ALL_TYPES_COLUMNS = [
    "id", "b", "s", "i", "l", "r", "d", "n", "nd", "big", "t", "v", "c", "by", "dt", "tm",
    "ts3", "ts", "ts0", "tz", "u", "j", "jb", "ai", "al", "ats", "ad", "adt", "ab",
]

# (SQL literal list, the values psycopg shows (= the stored values, except uuid/json parsing))
ALL_TYPES_LITERAL_ROWS = [
    (
        "1, true, 1, 2, 3, 1.5, 2.25, 123.456, 1.5, 1234567890123456789012345678, "
        "'hé wörld ☃', 'abc', 'ab', '\\x0001ff'::bytea, DATE '2026-12-01', TIME '10:11:12.345', "
        "TIMESTAMP '2026-12-01 10:00:00.123', TIMESTAMP '2026-12-01 10:00:00.123456', "
        "TIMESTAMP '2026-12-01 10:00:01', TIMESTAMPTZ '2026-12-01 10:00:00.5+02', "
        "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": 1}', '{\"b\": [2, null]}', "
        "ARRAY[1, NULL, 3], ARRAY[9000000000]::bigint[], ARRAY['x', NULL, 'zz'], "
        "ARRAY[0.5, -2.0]::float8[], ARRAY[DATE '2026-01-02']::date[], ARRAY[true, false]",
        dict(
            id=1, b=True, s=1, i=2, l=3, r=1.5, d=2.25, n=D("123.456"), nd=D("1.5000000000"),
            big=D("1234567890123456789012345678"), t="hé wörld ☃", v="abc",
            c="ab   ", by=b"\x00\x01\xff", dt=date(2026, 12, 1), tm=tm(10, 11, 12, 345000),
            ts3=dt(2026, 12, 1, 10, 0, 0, 123000), ts=dt(2026, 12, 1, 10, 0, 0, 123456),
            ts0=dt(2026, 12, 1, 10, 0, 1), tz=dt(2026, 12, 1, 8, 0, 0, 500000, tzinfo=UTC),
            u=uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), j={"a": 1},
            jb={"b": [2, None]}, ai=[1, None, 3], al=[9000000000], ats=["x", None, "zz"],
            ad=[0.5, -2.0], adt=[date(2026, 1, 2)], ab=[True, False],
        ),
    ),
    (
        "2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
        "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL",
        dict({c: None for c in ALL_TYPES_COLUMNS}, id=2),
    ),
    (
        # Edge values: extremes, negatives, before the epoch, empty string/bytes/arrays.
        "-2147483648, false, -32768, 2147483647, -9223372036854775808, -0.25, '-1e300'::float8, "
        "-999999999.999, -0.0000000001, -9999999999999999999999999999, '', 'x''y\"z', "
        "'     ', ''::bytea, DATE '1969-12-31', TIME '00:00:00', "
        "TIMESTAMP '1969-12-31 23:59:59.999', TIMESTAMP '1900-01-01 00:00:00.000001', "
        "TIMESTAMP '1970-01-01 00:00:00', TIMESTAMPTZ '1969-12-31 23:00:00-03', "
        "'00000000-0000-0000-0000-000000000000', '[]', '\"s\"', ARRAY[]::int[], "
        "ARRAY[NULL]::bigint[], ARRAY['']::text[], ARRAY[]::float8[], ARRAY[NULL]::date[], "
        "ARRAY[NULL, true]::bool[]",
        dict(
            id=-2147483648, b=False, s=-32768, i=2147483647, l=-9223372036854775808, r=-0.25,
            d=-1e300, n=D("-999999999.999"), nd=D("-1E-10"),
            big=D("-9999999999999999999999999999"), t="", v='x\'y"z', c="     ",
            by=b"", dt=date(1969, 12, 31), tm=tm(0, 0, 0), ts3=dt(1969, 12, 31, 23, 59, 59, 999000),
            ts=dt(1900, 1, 1, 0, 0, 0, 1), ts0=dt(1970, 1, 1), tz=dt(1970, 1, 1, 2, 0, tzinfo=UTC),
            u=uuid.UUID("00000000-0000-0000-0000-000000000000"), j=[], jb="s", ai=[], al=[None],
            ats=[""], ad=[], adt=[None], ab=[None, True],
        ),
    ),
    (
        "3, true, 32767, -1, 9223372036854775807, 3.0e38, 'NaN', 0.001, "
        "123456789012345678.1234567891, 0, 'tail', '0123456789', 'abcde', '\\xdeadbeef', "
        "DATE '2099-12-31', TIME '23:59:59.999', TIMESTAMP '2262-04-11 23:47:16.854', "
        "TIMESTAMP '2199-12-31 23:59:59.999999', TIMESTAMP '2038-01-19 03:14:08', "
        "TIMESTAMPTZ '2026-06-30 23:59:59.999999+00', 'ffffffff-ffff-ffff-ffff-ffffffffffff', "
        "'{\"k\": \"v\", \"n\": 1.25}', 'null', ARRAY[-1], ARRAY[1, 2, 3]::bigint[], "
        "ARRAY['é'], ARRAY['Infinity', '-Infinity']::float8[], "
        "ARRAY[DATE '1969-12-31', DATE '1970-01-01']::date[], ARRAY[false]",
        dict(
            id=3, b=True, s=32767, i=-1, l=9223372036854775807, r=3.0e38, d=float("nan"),
            n=D("0.001"), nd=D("123456789012345678.1234567891"), big=D("0"), t="tail",
            v="0123456789", c="abcde", by=b"\xde\xad\xbe\xef", dt=date(2099, 12, 31),
            tm=tm(23, 59, 59, 999000), ts3=dt(2262, 4, 11, 23, 47, 16, 854000),
            ts=dt(2199, 12, 31, 23, 59, 59, 999999), ts0=dt(2038, 1, 19, 3, 14, 8),
            tz=dt(2026, 6, 30, 23, 59, 59, 999999, tzinfo=UTC),
            u=uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff"), j={"k": "v", "n": 1.25}, jb=None,
            ai=[-1], al=[1, 2, 3], ats=["é"], ad=[float("inf"), float("-inf")],
            adt=[date(1969, 12, 31), date(1970, 1, 1)], ab=[False],
        ),
    ),
]

# Rows 100..159 from generate_series, every type computed from x (with NULLs every 7th row).
ALL_TYPES_SELECT = """
    SELECT x,
           CASE WHEN x % 7 = 0 THEN NULL ELSE x % 2 = 0 END,
           (x * 3)::smallint,
           x * 1000,
           x::bigint * 10000000000,
           (x * 0.5)::real,
           x * 0.25::float8,
           (x * 1.125)::numeric(12, 3),
           x::numeric / 8,
           x::numeric(38, 0) * 1000000000000000000000000,
           CASE WHEN x % 7 = 0 THEN NULL ELSE 'row ' || x END,
           ('v' || x)::varchar(10),
           ('c' || (x % 10))::char(5),
           CASE WHEN x % 7 = 0 THEN NULL ELSE decode(lpad(to_hex(x), 4, '0'), 'hex') END,
           DATE '2026-01-01' + x,
           TIME '08:00:00' + (x || ' seconds')::interval,
           TIMESTAMP '2026-01-01 00:00:00.007' + (x || ' hours')::interval,
           TIMESTAMP '2026-01-01 00:00:00.000007' + (x || ' minutes')::interval,
           TIMESTAMP '2026-01-01 00:00:00' + (x || ' days')::interval,
           TIMESTAMPTZ '2026-01-01 00:00:00+00' + (x * 90 || ' minutes')::interval,
           CASE WHEN x % 7 = 0 THEN NULL ELSE 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' END,
           CASE WHEN x % 7 = 0 THEN NULL ELSE '{"x": 1}' END,
           CASE WHEN x % 7 = 0 THEN NULL ELSE '[1, 2]' END,
           CASE WHEN x % 7 = 0 THEN NULL ELSE ARRAY[x, x + 1] END,
           ARRAY[x::bigint],
           ARRAY['t' || x],
           ARRAY[x * 0.5],
           ARRAY[DATE '2026-01-01' + x],
           ARRAY[x % 2 = 0]
    FROM generate_series(100, 159) AS g(x)
"""

@pytest.mark.parametrize(
    "name, extra, with_options",
    [
        ("tp_types_pk1", ", PRIMARY KEY (id)", "WITH (bucket = 1)"),
        ("tp_types_pk4", ", PRIMARY KEY (id)", ""),
        ("tp_types_pk3_small_buffer", ", PRIMARY KEY (id)",
         "WITH (bucket = 3, 'write-buffer-size' = '64kb', 'file.format' = 'parquet')"),
        ("tp_types_append", "", ""),
    ],
)
def test_tarn_all_types_read_by_pypaimon(name, extra, with_options):
    with connect() as conn:
        conn.execute(f"CREATE TABLE {name} ({ALL_TYPES_DDL}{extra}) {with_options}")
        for literal, _ in ALL_TYPES_LITERAL_ROWS:
            conn.execute(f"INSERT INTO {name} VALUES ({literal})")
        conn.execute(f"INSERT INTO {name} {ALL_TYPES_SELECT}")
        pg = pg_rows(conn, f"SELECT * FROM {name}")

    # psycopg shows exactly the values inserted.
    assert sorted(r["id"] for r in pg) == sorted(
        [row["id"] for _, row in ALL_TYPES_LITERAL_ROWS] + list(range(100, 160))
    )
    literal_expected = [row for _, row in ALL_TYPES_LITERAL_ROWS]
    assert_same_rows(
        [r for r in pg if r["id"] < 100], literal_expected, ["id"], "psycopg vs inserted literals"
    )
    generated = {r["id"]: r for r in pg}
    assert str(generated[100]["n"]) == "112.500"
    assert str(generated[101]["nd"]) == "12.6250000000"
    assert generated[100]["big"] == D("100000000000000000000000000")
    assert generated[100]["by"] == b"\x00\x64" and generated[105]["by"] is None
    assert generated[100]["c"] == "c0   "
    assert generated[100]["tm"] == tm(8, 1, 40)
    assert generated[105]["ts3"] == dt(2026, 1, 5, 9, 0, 0, 7000)
    assert generated[100]["ts"] == dt(2026, 1, 1, 1, 40, 0, 7)
    assert generated[100]["tz"] == dt(2026, 1, 7, 6, 0, tzinfo=UTC)
    assert generated[100]["u"] == uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    assert generated[100]["j"] == {"x": 1} and generated[100]["jb"] == [1, 2]
    assert generated[101]["ai"] == [101, 102] and generated[101]["ab"] == [False]

    # pypaimon reads the same stored values: uuid/json as the text tarn shows, REAL as float32.
    with raw_text_connect() as conn:
        pg_text = pg_rows(conn, f"SELECT * FROM {name}")
    assert isinstance(next(r for r in pg_text if r["id"] == 1)["u"], str)
    expected = [dict(r, r=f32(r["r"])) for r in pg_text]
    assert_same_rows(pp_read(name), expected, ["id"], "pypaimon vs psycopg")
    assert pp_snapshot_ids(name) == snapshot_files(name)
    assert len(pp_commit_ids(name)) == 5, "one snapshot per statement"
    # Snapshot 1 (time travel) holds the first statement's row only.
    assert_same_rows(
        pp_read(pp_table(name, 1)), [r for r in expected if r["id"] == 1], ["id"], "snapshot 1"
    )


def test_tarn_exponent_literal_into_double_column():
    """PostgreSQL reads 1e10 / -1e300 as numeric constants and assigns them to float8."""
    with connect() as conn:
        conn.execute("CREATE TABLE tp_exp (id INT PRIMARY KEY, d DOUBLE PRECISION)")
        conn.execute("INSERT INTO tp_exp VALUES (1, -1e300), (2, 1e10), (3, 1.5e3)")
        assert pg_rows(conn, "SELECT * FROM tp_exp ORDER BY id") == [
            {"id": 1, "d": -1e300}, {"id": 2, "d": 1e10}, {"id": 3, "d": 1500.0},
        ]
    assert_same_rows(
        pp_read("tp_exp"),
        [{"id": 1, "d": -1e300}, {"id": 2, "d": 1e10}, {"id": 3, "d": 1500.0}], ["id"], "pypaimon",
    )


def test_tarn_numeric_38_digits_both_ways():
    """NUMERIC(38, s) holds 38 digits in Paimon, PostgreSQL and pypaimon alike."""
    values = [
        (1, D("99999999999999999999999999999999999999"), D("1234567890123456789012345678.1234567890")),
        (2, D("-12345678901234567890123456789012345678"), D("-9999999999999999999999999999.9999999999")),
        (3, D("79228162514264337593543950336"), D("7922816251.4264337594")),
    ]
    with connect() as conn:
        conn.execute("CREATE TABLE tp_num38 (id INT PRIMARY KEY, a NUMERIC(38, 0), b NUMERIC)")
        for i, a, b in values:
            conn.execute(f"INSERT INTO tp_num38 VALUES ({i}, {a}, {b})")
    expected = [dict(id=i, a=a, b=b) for i, a, b in values]
    # The files hold the right values: pypaimon reads them.
    assert_same_rows(pp_read("tp_num38"), expected, ["id"], "pypaimon")
    pp_write("tp_num38", [dict(id=4, a=D("-99999999999999999999999999999999999999"), b=D("1E-10"))])
    expected.append(dict(id=4, a=D("-99999999999999999999999999999999999999"), b=D("1E-10")))
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM tp_num38"), expected, ["id"], "tarn")


@pytest.mark.xfail(
    strict=True,
    reason="tarn bug: comparing a timestamp column with a text literal outside "
    "1677-09-21..2262-04-11 coerces both to nanoseconds and fails (22008); such values are "
    "stored, read and printed correctly",
)
def test_tarn_timestamps_outside_the_nanosecond_range_both_ways():
    """PostgreSQL's timestamp range is 4713 BC .. 294276 AD; Paimon stores micro/milliseconds."""
    with connect() as conn:
        conn.execute(
            "CREATE TABLE tp_far_ts (id INT PRIMARY KEY, ts TIMESTAMP, ts3 TIMESTAMP(3), "
            "tz TIMESTAMPTZ)"
        )
        conn.execute(
            "INSERT INTO tp_far_ts VALUES (1, '9999-12-31 23:59:59.999999', "
            "'1000-01-01 00:00:00.001', '3000-01-01 00:00:00+00')"
        )
    expected = [
        dict(id=1, ts=dt(9999, 12, 31, 23, 59, 59, 999999), ts3=dt(1000, 1, 1, 0, 0, 0, 1000),
             tz=dt(3000, 1, 1, tzinfo=UTC)),
        dict(id=2, ts=dt(1, 1, 1), ts3=dt(2500, 6, 1, 12), tz=dt(1600, 1, 1, tzinfo=UTC)),
    ]
    pp_write("tp_far_ts", [expected[1]])
    assert_same_rows(pp_read("tp_far_ts"), expected, ["id"], "pypaimon")
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM tp_far_ts"), expected, ["id"], "tarn")
        assert conn.execute(
            "SELECT id FROM tp_far_ts WHERE ts3 < '1600-01-01' ORDER BY id"
        ).fetchall() == [(1,)]
        conn.execute("INSERT INTO tp_far_ts VALUES (3, TIMESTAMP '9999-01-01 00:00:00', NULL, NULL)")
        assert conn.execute("SELECT ts FROM tp_far_ts WHERE id = 3").fetchone() == (dt(9999, 1, 1),)


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_tarn_refuses_to_write_orc_and_avro(fmt):
    with connect() as conn:
        with pytest.raises(errors.FeatureNotSupported):
            conn.execute(f"CREATE TABLE tp_fmt_{fmt} (id INT) WITH ('file.format' = '{fmt}')")


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_tarn_says_it_cannot_read_orc_and_avro_files(fmt):
    """tarn reads Parquet data files only: a pypaimon table in ORC/Avro must fail loudly."""
    fields = [pa.field("id", pa.int32(), nullable=False), ("v", pa.string())]
    table = pp_create(f"pp_fmt_{fmt}", fields, primary_keys=["id"],
                      options={"bucket": "1", "file.format": fmt})
    pp_write(table, [dict(id=1, v="a")])
    assert pp_read(f"pp_fmt_{fmt}") == [dict(id=1, v="a")]
    with connect() as conn:
        with pytest.raises(errors.FeatureNotSupported):
            conn.execute(f"SELECT * FROM pp_fmt_{fmt}").fetchall()


def test_tarn_partitioned_tables_read_by_pypaimon():
    """DATE, TEXT and INT partition columns, composite keys, several buckets and statements,
    several files per bucket (small write buffer)."""
    with connect() as conn:
        conn.execute(
            """CREATE TABLE tp_part_orders (
                   day DATE NOT NULL, region TEXT NOT NULL, shard INT NOT NULL,
                   order_id BIGINT NOT NULL, line INT NOT NULL,
                   customer VARCHAR(20), amount NUMERIC(10, 2), placed_at TIMESTAMP(3),
                   PRIMARY KEY (day, region, shard, order_id, line))
               PARTITIONED BY (day, region, shard)
               WITH (bucket = 3, 'write-buffer-size' = '64kb')"""
        )
        conn.execute(
            """INSERT INTO tp_part_orders VALUES
                   ('2026-12-01', 'eu', 1, 1, 1, 'alice', 10.50, '2026-12-01 09:00:00.250'),
                   ('2026-12-01', 'eu', 1, 1, 2, 'alice', NULL, NULL),
                   ('2026-12-02', 'us', 2, 2, 1, NULL, 0.01, '2026-12-02 23:59:59.999')"""
        )
        conn.execute(
            """INSERT INTO tp_part_orders
               SELECT DATE '2026-11-28' + (x % 5), CASE WHEN x % 3 = 0 THEN 'eu' WHEN x % 3 = 1
                      THEN 'us' ELSE 'ap' END, x % 4, x, x % 3,
                      'cust' || (x % 17), (x * 1.25)::numeric(10, 2),
                      TIMESTAMP '2026-11-28 00:00:00' + (x || ' minutes')::interval
               FROM generate_series(10, 3009) AS g(x)"""
        )
        conn.execute(
            """INSERT INTO tp_part_orders
               SELECT DATE '2026-12-05', 'sa', -1, x, 0, NULL AS customer, NULL AS amount, NULL AS placed_at
               FROM generate_series(1, 50) AS g(x)"""
        )
        pg = pg_rows(conn, "SELECT * FROM tp_part_orders")
        pg_eu = pg_rows(
            conn, "SELECT * FROM tp_part_orders WHERE day = DATE '2026-11-30' AND region = 'eu'"
        )
        pg_count = conn.execute("SELECT count(*) FROM tp_part_orders").fetchone()[0]
    assert pg_count == len(pg) == 3 + 3000 + 50
    pp = pp_read("tp_part_orders")
    key = ["day", "region", "shard", "order_id", "line"]
    assert_same_rows(pp, pg, key, "pypaimon vs psycopg")
    assert_same_rows(
        [r for r in pp if r["day"] == date(2026, 11, 30) and r["region"] == "eu"],
        pg_eu, key, "partition filter",
    )
    # The partition folders are where Paimon puts them, and several files were written.
    table_dir = os.path.join(WAREHOUSE, "public.db", "tp_part_orders")
    assert os.path.isdir(os.path.join(table_dir, "day=2026-12-05", "region=sa", "shard=-1"))
    files = pp_read(pp_table("tp_part_orders$files"))
    assert {f["bucket"] for f in files} == {0, 1, 2}
    assert sum(f["record_count"] for f in files) == len(pg)
    assert pp_snapshot_ids("tp_part_orders") == [1, 2, 3]


def test_tarn_single_bucket_spilled_files_read_by_pypaimon():
    """One statement larger than the write buffer: several sorted runs (files) with overlapping
    key ranges in one bucket, which pypaimon must merge."""
    with connect() as conn:
        conn.execute(
            """CREATE TABLE tp_ck (tenant TEXT, k BIGINT, label CHAR(3), score DOUBLE PRECISION,
                   PRIMARY KEY (tenant, k)) WITH (bucket = 1, 'write-buffer-size' = '64kb')"""
        )
        conn.execute("INSERT INTO tp_ck VALUES ('a', 1, 'x', 0.5), ('b', 1, 'y', NULL)")
        conn.execute(
            "INSERT INTO tp_ck SELECT 't' || (x % 5), x, 'z', x / 3.0 "
            "FROM generate_series(2, 20001) AS g(x)"
        )
        pg = pg_rows(conn, "SELECT * FROM tp_ck")
    assert len(pg) == 20002
    assert_same_rows(pp_read("tp_ck"), pg, ["tenant", "k"], "pypaimon vs psycopg")
    files = pp_read(pp_table("tp_ck$files"))
    assert {f["bucket"] for f in files} == {0}
    assert len(files) > 2, "the second statement should have spilled several files"
    assert sum(f["record_count"] for f in files) == 20002


def test_tarn_snapshots_and_time_travel_seen_by_pypaimon():
    with connect() as conn:
        conn.execute(
            "CREATE TABLE tp_travel (id INT PRIMARY KEY, v TEXT, d DATE) WITH (bucket = 2)"
        )
        conn.execute("INSERT INTO tp_travel VALUES (1, 'one', '2026-01-01'), (2, 'two', NULL)")
        first = pg_rows(conn, "SELECT * FROM tp_travel")
        conn.execute(
            "INSERT INTO tp_travel SELECT x, 'gen' || x, DATE '2026-02-01' + x "
            "FROM generate_series(3, 40) AS g(x)"
        )
        second = pg_rows(conn, "SELECT * FROM tp_travel")
        # A failing statement (existing key) makes no snapshot.
        with pytest.raises(errors.UniqueViolation):
            conn.execute("INSERT INTO tp_travel VALUES (41, 'new', NULL), (2, 'again', NULL)")
        conn.execute("INSERT INTO tp_travel VALUES (41, 'new', NULL)")
        third = pg_rows(conn, "SELECT * FROM tp_travel")
    assert len(first) == 2 and len(second) == 40 and len(third) == 41
    assert pp_snapshot_ids("tp_travel") == snapshot_files("tp_travel") == [1, 2, 3]
    snaps = {r["snapshot_id"]: r for r in pp_read(pp_table("tp_travel$snapshots"))}
    assert [snaps[i]["total_record_count"] for i in (1, 2, 3)] == [2, 40, 41]
    assert [snaps[i]["delta_record_count"] for i in (1, 2, 3)] == [2, 38, 1]
    assert all(snaps[i]["commit_kind"] == "APPEND" for i in (1, 2, 3))
    assert_same_rows(pp_read(pp_table("tp_travel", 1)), first, ["id"], "snapshot 1")
    assert_same_rows(pp_read(pp_table("tp_travel", 2)), second, ["id"], "snapshot 2")
    assert_same_rows(pp_read(pp_table("tp_travel", 3)), third, ["id"], "snapshot 3")
    assert_same_rows(pp_read("tp_travel"), third, ["id"], "latest")


def test_tarn_truncate_and_drop_seen_by_pypaimon():
    with connect() as conn:
        conn.execute("CREATE TABLE tp_trunc (id INT PRIMARY KEY, v TEXT)")
        conn.execute("INSERT INTO tp_trunc VALUES (1, 'a'), (2, 'b')")
        conn.execute("TRUNCATE tp_trunc")
        assert pg_rows(conn, "SELECT * FROM tp_trunc") == []
        assert pp_read("tp_trunc") == []
        assert_same_rows(
            pp_read(pp_table("tp_trunc", 1)), [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}],
            ["id"], "before truncate",
        )
        # The keys are free again.
        conn.execute("INSERT INTO tp_trunc VALUES (2, 'again')")
        assert_same_rows(pp_read("tp_trunc"), [{"id": 2, "v": "again"}], ["id"], "after truncate")
        conn.execute("DROP TABLE tp_trunc")
    assert "tp_trunc" not in catalog().list_tables("public")


def test_tarn_timestamptz_in_session_time_zone_read_by_pypaimon():
    with connect(options="-c TimeZone=Asia/Tokyo") as conn:
        conn.execute("CREATE TABLE tp_tz (id INT, instant TIMESTAMPTZ, wall TIMESTAMP)")
        conn.execute(
            "INSERT INTO tp_tz VALUES (1, '2026-12-01 09:00:00', '2026-12-01 09:00:00'), "
            "(2, '2026-12-01 09:00:00+00', '2026-12-01 09:00:00')"
        )
        pg = pg_rows(conn, "SELECT * FROM tp_tz")
    tokyo_row = next(r for r in pg if r["id"] == 1)
    assert tokyo_row["instant"] == dt(2026, 12, 1, 0, 0, tzinfo=UTC)
    assert tokyo_row["instant"].utcoffset() == datetime.timedelta(hours=9)
    assert_same_rows(
        pp_read("tp_tz"),
        [
            {"id": 1, "instant": dt(2026, 12, 1, 0, 0, tzinfo=UTC), "wall": dt(2026, 12, 1, 9)},
            {"id": 2, "instant": dt(2026, 12, 1, 9, 0, tzinfo=UTC), "wall": dt(2026, 12, 1, 9)},
        ],
        ["id"], "pypaimon",
    )


def test_tarn_append_table_read_by_pypaimon():
    with connect() as conn:
        conn.execute(
            """CREATE TABLE tp_events (day DATE, kind TEXT, n BIGINT, payload BYTEA)
               PARTITION BY LIST (day)"""
        )
        # Identical rows are kept: an append table has no key.
        conn.execute(
            "INSERT INTO tp_events VALUES ('2026-12-01', 'click', 1, '\\x01'), "
            "('2026-12-01', 'click', 1, '\\x01'), (NULL, 'orphan', NULL, NULL)"
        )
        conn.execute(
            "INSERT INTO tp_events SELECT DATE '2026-12-01' + (x % 3), 'view', x, NULL "
            "FROM generate_series(1, 500) AS g(x)"
        )
        conn.execute("INSERT INTO tp_events VALUES ('2026-12-01', 'click', 1, '\\x01')")
        pg = pg_rows(conn, "SELECT * FROM tp_events")
    assert len(pg) == 504
    pp = pp_read("tp_events")
    assert_same_rows(pp, pg, ["day", "kind", "n"], "pypaimon vs psycopg")
    assert sum(1 for r in pp if r["kind"] == "click") == 3
    schema = pp_table("tp_events").table_schema
    assert schema.primary_keys == [] and schema.partition_keys == ["day"]
    assert pp_snapshot_ids("tp_events") == [1, 2, 3]
    assert len(pp_read(pp_table("tp_events", 1))) == 3


# ---------------------------------------------------------------------------------------------
# 2. pypaimon writes, tarn reads

PP_TYPES = [
    pa.field("id", pa.int64(), nullable=False),
    ("ti", pa.int8()),
    ("s", pa.int16()),
    ("i", pa.int32()),
    ("f", pa.float32()),
    ("d", pa.float64()),
    ("n", pa.decimal128(12, 2)),
    ("n38", pa.decimal128(38, 10)),
    ("str", pa.string()),
    ("bin", pa.binary()),
    ("dt", pa.date32()),
    ("ts0", pa.timestamp("s")),
    ("ts3", pa.timestamp("ms")),
    ("ts6", pa.timestamp("us")),
    ("ltz3", pa.timestamp("ms", tz="UTC")),
    ("ltz6", pa.timestamp("us", tz="UTC")),
    ("b", pa.bool_()),
    ("tm", pa.time32("ms")),
    ("arr", pa.list_(pa.int32())),
    ("sarr", pa.list_(pa.string())),
    ("darr", pa.list_(pa.float64())),
]
PP_NAMES = [f.name if isinstance(f, pa.Field) else f[0] for f in PP_TYPES]


def pp_typed_row(id_, variant):
    if variant is None:
        return dict({k: None for k in PP_NAMES}, id=id_)
    return dict(
        id=id_,
        ti=-128 + variant,
        s=-32768 + variant,
        i=2147483647 - variant,
        f=f32(1.5 + variant),
        d=-1e300 if variant == 1 else 0.1 * variant,
        n=D("-9999999999.99") if variant == 1 else D(f"{variant}.05"),
        n38=D("123456789012345678.1234567890") if variant == 1 else D(f"-{variant}.0000000001"),
        str="" if variant == 1 else f"héllo {variant} ☃",
        bin=b"" if variant == 1 else bytes([0, variant % 256, 255]),
        dt=date(1969, 12, 31) if variant == 1 else date(2026, 1, 1) + datetime.timedelta(days=variant),
        ts0=dt(1970, 1, 1) + datetime.timedelta(seconds=variant),
        ts3=dt(1969, 12, 31, 23, 59, 59, 999000) if variant == 1 else dt(2026, 3, 1, 12, 0, 0, 123000),
        ts6=dt(2026, 3, 1, 12, 0, 0, variant),
        ltz3=dt(2026, 3, 1, 12, 0, 0, 5000, tzinfo=UTC),
        ltz6=dt(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) if variant == 1 else dt(2026, 3, 1, 1, 2, 3, variant, tzinfo=UTC),
        b=variant % 2 == 0,
        tm=tm(0, 0, variant % 60),
        arr=[] if variant == 1 else [variant, None, -variant],
        sarr=[None] if variant == 1 else ["a", "", "é"],
        darr=[0.5, float("inf")] if variant == 1 else [variant / 4],
    )


def tarn_rows_pp_types(conn, name):
    """tarn's rows of a PP_TYPES table; FLOAT (text: shortest decimal) as the float32 value."""
    rows = pg_rows(conn, f"SELECT * FROM {name}")
    return [dict(r, f=f32(r["f"])) for r in rows]


def test_pypaimon_all_types_with_upserts_read_by_tarn():
    table = pp_create(
        "pp_types", PP_TYPES, primary_keys=["id"], options={"bucket": "3"}
    )
    pp_write(table, [pp_typed_row(i, i) for i in range(1, 21)] + [pp_typed_row(100, None)])
    # Upserts: later commits win, per key.
    pp_write(table, [pp_typed_row(i, i + 50) for i in range(1, 21, 2)])
    pp_write(table, [pp_typed_row(1, None), pp_typed_row(100, 7), pp_typed_row(21, 21)])
    expected = {i: pp_typed_row(i, i) for i in range(1, 21)}
    expected.update({i: pp_typed_row(i, i + 50) for i in range(1, 21, 2)})
    expected.update({1: pp_typed_row(1, None), 100: pp_typed_row(100, 7), 21: pp_typed_row(21, 21)})
    expected = list(expected.values())

    pp = pp_read("pp_types")
    assert_same_rows(pp, expected, ["id"], "pypaimon reads itself")
    with connect() as conn:
        tarn = tarn_rows_pp_types(conn, "pp_types")
        assert_same_rows(tarn, expected, ["id"], "tarn vs pypaimon")
        assert conn.execute("SELECT count(*) FROM pp_types").fetchone()[0] == 22
        assert conn.execute("SELECT str FROM pp_types WHERE id = 3").fetchone() == ("héllo 53 ☃",)
        assert conn.execute("SELECT ts6 FROM pp_types WHERE id = 2").fetchone() == (dt(2026, 3, 1, 12, 0, 0, 2),)
        # Time travel in pypaimon agrees with the first commit.
        first = pp_read(pp_table("pp_types", 1))
        assert_same_rows(
            first, [pp_typed_row(i, i) for i in range(1, 21)]
            + [pp_typed_row(100, None)], ["id"], "snapshot 1",
        )


def test_pypaimon_partitioned_upserts_read_by_tarn():
    fields = [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        ("customer", pa.string()),
        ("amount", pa.decimal128(12, 2)),
        ("status", pa.string()),
        ("placed_at", pa.timestamp("us")),
    ]
    table = pp_create(
        "pp_orders", fields, primary_keys=["id", "dt"], partition_keys=["dt"],
        options={"bucket": "4"},
    )
    state = {}

    def commit(rows):
        pp_write(table, rows)
        for r in rows:
            state[(r["id"], r["dt"])] = r

    def row(i, day, status, amount="1.50"):
        return dict(id=i, dt=day, customer=f"c{i % 7}", amount=D(amount), status=status,
                    placed_at=dt(2026, 12, 1, 10, 0) + datetime.timedelta(minutes=i))

    commit([row(i, f"2026-12-0{1 + i % 3}", "new") for i in range(200)])
    commit([row(i, f"2026-12-0{1 + i % 3}", "paid", "2.25") for i in range(0, 200, 3)])
    # The same id in another partition is another key.
    commit([row(i, "2026-12-09", "other") for i in range(0, 20)])
    commit([row(i, f"2026-12-0{1 + i % 3}", "shipped", "-0.01") for i in range(0, 200, 9)])
    expected = list(state.values())
    assert_same_rows(pp_read("pp_orders"), expected, ["id", "dt"], "pypaimon reads itself")
    with connect() as conn:
        assert_same_rows(
            pg_rows(conn, "SELECT * FROM pp_orders"), expected, ["id", "dt"], "tarn vs pypaimon"
        )
        by_status = dict(conn.execute(
            "SELECT status, count(*) FROM pp_orders GROUP BY status"
        ).fetchall())
        want = {}
        for r in expected:
            want[r["status"]] = want.get(r["status"], 0) + 1
        assert by_status == want
        assert_same_rows(
            pg_rows(conn, "SELECT * FROM pp_orders WHERE dt = '2026-12-02'"),
            [r for r in expected if r["dt"] == "2026-12-02"], ["id", "dt"], "partition filter",
        )
        assert_same_rows(
            pg_rows(conn, "SELECT * FROM pp_orders WHERE id = 9"),
            [r for r in expected if r["id"] == 9], ["id", "dt"], "key filter",
        )
        assert conn.execute(
            "SELECT sum(amount) FROM pp_orders WHERE status = 'shipped'"
        ).fetchone()[0] == D("-0.01") * sum(1 for r in expected if r["status"] == "shipped")


def test_filter_on_value_column_is_applied_after_the_merge():
    fields = [pa.field("id", pa.int64(), nullable=False), ("status", pa.string()), ("n", pa.int32())]
    table = pp_create("pp_status", fields, primary_keys=["id"], options={"bucket": "2"})
    pp_write(table, [dict(id=1, status="new", n=1), dict(id=2, status="new", n=2)])
    pp_write(table, [dict(id=1, status="paid", n=10)])
    pp_write(table, [dict(id=2, status="paid", n=20)])
    pp_write(table, [dict(id=2, status="new", n=200)])
    with connect() as conn:
        assert pg_rows(conn, "SELECT * FROM pp_status WHERE status = 'new' AND id = 1") == []
        assert pg_rows(conn, "SELECT * FROM pp_status WHERE status = 'new'") == [
            {"id": 2, "status": "new", "n": 200}
        ]
        assert pg_rows(conn, "SELECT * FROM pp_status WHERE status = 'paid'") == [
            {"id": 1, "status": "paid", "n": 10}
        ]
        assert pg_rows(conn, "SELECT id FROM pp_status WHERE n < 5") == []
        assert pg_rows(conn, "SELECT id FROM pp_status WHERE n = 10") == [{"id": 1}]
        assert conn.execute("SELECT count(*) FROM pp_status WHERE status <> 'paid'").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM pp_status").fetchone() == (2,)
    assert_same_rows(
        pp_read("pp_status"),
        [{"id": 1, "status": "paid", "n": 10}, {"id": 2, "status": "new", "n": 200}],
        ["id"], "pypaimon",
    )


def test_pypaimon_append_table_read_by_tarn():
    fields = [("day", pa.date32()), ("kind", pa.string()), ("n", pa.int64()), ("score", pa.float64())]
    table = pp_create("pp_events", fields, partition_keys=["day"])
    batches = [
        [dict(day=date(2026, 12, 1), kind="click", n=1, score=0.5)] * 3,
        [dict(day=date(2026, 12, 1) + datetime.timedelta(days=x % 4), kind="view", n=x, score=None)
         for x in range(300)],
        [dict(day=None, kind=None, n=None, score=float("nan"))],
    ]
    expected = []
    for batch in batches:
        pp_write(table, batch)
        expected.extend(batch)
    assert_same_rows(pp_read("pp_events"), expected, ["day", "kind", "n"], "pypaimon")
    with connect() as conn:
        assert_same_rows(
            pg_rows(conn, "SELECT * FROM pp_events"), expected, ["day", "kind", "n"], "tarn"
        )
        assert conn.execute(
            "SELECT count(*) FROM pp_events WHERE day = DATE '2026-12-01'"
        ).fetchone() == (3 + 75,)


def test_pypaimon_dynamic_bucket_pk_table_read_by_tarn():
    fields = [pa.field("id", pa.int32(), nullable=False), ("v", pa.string())]
    table = pp_create("pp_dynamic", fields, primary_keys=["id"], options={"bucket": "-1"})
    pp_write(table, [dict(id=i, v=f"a{i}") for i in range(50)])
    pp_write(table, [dict(id=i, v=f"b{i}") for i in range(0, 50, 5)])
    expected = {i: dict(id=i, v=f"a{i}") for i in range(50)}
    expected.update({i: dict(id=i, v=f"b{i}") for i in range(0, 50, 5)})
    expected = list(expected.values())
    assert_same_rows(pp_read("pp_dynamic"), expected, ["id"], "pypaimon")
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM pp_dynamic"), expected, ["id"], "tarn")


def test_pypaimon_duplicate_keys_in_one_commit_read_by_tarn():
    """Within one write the later row of a key wins (higher sequence number)."""
    fields = [pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]
    table = pp_create("pp_dupbatch", fields, primary_keys=["id"], options={"bucket": "2"})
    pp_write(table, [dict(id=1, v="first"), dict(id=2, v="x"), dict(id=1, v="second"),
                     dict(id=1, v="third"), dict(id=3, v=None), dict(id=3, v="y")])
    expected = [dict(id=1, v="third"), dict(id=2, v="x"), dict(id=3, v="y")]
    assert_same_rows(pp_read("pp_dupbatch"), expected, ["id"], "pypaimon")
    assert_same_rows(both_read("pp_dupbatch", ["id"]), expected, ["id"], "tarn")


def test_pypaimon_row_kinds_delete_and_retract_read_by_tarn():
    """`rowkind.field`: -D and -U of the newest version remove the key; +U replaces it."""
    fields = [pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("kind", pa.string())]
    table = pp_create("pp_rowkind", fields, primary_keys=["id"],
                      options={"bucket": "2", "rowkind.field": "kind"})
    pp_write(table, [dict(id=i, v=f"v{i}", kind="+I") for i in range(1, 9)])
    pp_write(table, [dict(id=1, v=None, kind="-D"), dict(id=2, v="v2b", kind="+U"),
                     dict(id=3, v="v3", kind="-U"), dict(id=9, v="v9", kind="+I"),
                     dict(id=4, v="v4", kind="-D")])
    pp_write(table, [dict(id=4, v="v4-again", kind="+I")])
    expected = [dict(id=2, v="v2b", kind="+U"), dict(id=4, v="v4-again", kind="+I")] + [
        dict(id=i, v=f"v{i}", kind="+I") for i in (5, 6, 7, 8, 9)
    ]
    assert_same_rows(pp_read("pp_rowkind"), expected, ["id"], "pypaimon")
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM pp_rowkind"), expected, ["id"], "tarn")
        assert conn.execute("SELECT count(*) FROM pp_rowkind WHERE id <= 3").fetchone() == (1,)
        assert pg_rows(conn, "SELECT v FROM pp_rowkind WHERE v = 'v3'") == []


MERGE_ENGINE_CASES = [
    # name, options, commits of (id, a, b), the merged row Paimon defines, pypaimon reads it
    ("partial_update", {"merge-engine": "partial-update"},
     [[(1, 1, None), (2, 5, "p")], [(1, None, "x")], [(2, None, None)]],
     [(1, 1, "x"), (2, 5, "p")], True),
    ("aggregation", {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"},
     [[(1, 1, "p"), (2, 7, "z")], [(1, 5, "q")], [(1, 10, None)]],
     [(1, 16, "q"), (2, 7, "z")], True),
    ("first_row", {"merge-engine": "first-row"},
     [[(1, 1, "first"), (2, 2, "only")], [(1, 2, "second")]],
     [(1, 1, "first"), (2, 2, "only")], False),
    ("sequence_field", {"sequence.field": "a"},
     [[(1, 10, "high"), (2, 1, "low")], [(1, 5, "older"), (2, 3, "newer")]],
     [(1, 10, "high"), (2, 3, "newer")], True),
]


@pytest.mark.parametrize(
    "name, options, commits, merged, pp_reads",
    MERGE_ENGINE_CASES,
    ids=[c[0] for c in MERGE_ENGINE_CASES],
)
def test_pypaimon_merge_engines_read_by_tarn(name, options, commits, merged, pp_reads):
    """tarn must show Paimon's merged rows, or refuse with 0A000; never deduplicate silently."""
    fields = [pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.string())]
    table_name = f"pp_me_{name}"
    table = pp_create(table_name, fields, primary_keys=["id"], options=dict(options, bucket="2"))
    for commit in commits:
        pp_write(table, [dict(id=i, a=a, b=b) for i, a, b in commit])
    expected = [dict(id=i, a=a, b=b) for i, a, b in merged]
    if pp_reads:
        assert_same_rows(pp_read(table_name), expected, ["id"], "pypaimon")
    else:
        # pypaimon 2.1 limitation: first-row tables read back empty until compacted.
        assert pp_read(table_name) == []
    with connect() as conn:
        assert_same_rows(pg_rows(conn, f"SELECT * FROM {table_name}"), expected, ["id"], "tarn")
        # tarn writes these tables too, merging as Paimon does: a new key, and a version of
        # key 2 that changes nothing under any of these engines (partial-update: NULLs
        # overwrite nothing; sum and last_non_null_value skip NULLs; first-row keeps the first;
        # a NULL sequence.field value is the oldest).
        conn.execute(f"INSERT INTO {table_name} VALUES (100, 1, 'tarn'), (2, NULL, NULL)")
        expected.append(dict(id=100, a=1, b="tarn"))
        assert_same_rows(pg_rows(conn, f"SELECT * FROM {table_name}"), expected, ["id"], "tarn")
        if pp_reads:
            assert_same_rows(pp_read(table_name), expected, ["id"], "pypaimon")


def test_pypaimon_decimal_precisions_and_nanosecond_timestamps_read_by_tarn():
    fields = [
        pa.field("id", pa.int32(), nullable=False),
        ("d5", pa.decimal128(5, 0)),
        ("d9", pa.decimal128(9, 9)),
        ("d18", pa.decimal128(18, 4)),
        ("d28", pa.decimal128(28, 6)),
        ("d38", pa.decimal128(38, 18)),
        ("ts9", pa.timestamp("ns")),
        ("ltz9", pa.timestamp("ns", tz="UTC")),
        ("fb", pa.binary(4)),
    ]
    table = pp_create("pp_precisions", fields, primary_keys=["id"], options={"bucket": "2"})
    rows = [
        dict(id=1, d5=D("-99999"), d9=D("0.000000001"), d18=D("12345678901234.5678"),
             d28=D("-1234567890123456789012.123456"), d38=D("1234567890.123456789012345678"),
             ts9=dt(2026, 12, 1, 10, 0, 0, 123456), ltz9=dt(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
             fb=b"abcd"),
        dict(id=2, d5=D("0"), d9=D("-0.999999999"), d18=D("-0.0001"), d28=D("0.000001"),
             d38=D("-0.000000000000000001"), ts9=dt(1970, 1, 1), ltz9=dt(2026, 1, 1, tzinfo=UTC),
             fb=b"\x00\x00\x00\x00"),
        dict({f[0] if isinstance(f, tuple) else f.name: None for f in fields}, id=3),
    ]
    pp_write(table, rows)
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM pp_precisions"), rows, ["id"], "tarn")
        assert conn.execute("SELECT sum(d18) FROM pp_precisions").fetchone() == (D("12345678901234.5677"),)


def test_pypaimon_negative_zero_read_by_tarn():
    fields = [pa.field("id", pa.int32(), nullable=False), ("d", pa.float64()), ("f", pa.float32())]
    table = pp_create("pp_negzero", fields, primary_keys=["id"], options={"bucket": "1"})
    pp_write(table, [dict(id=1, d=-0.0, f=-0.0)])
    expected = [dict(id=1, d=-0.0, f=-0.0)]
    assert_same_rows(pp_read("pp_negzero"), expected, ["id"], "pypaimon")
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM pp_negzero"), expected, ["id"], "tarn")


def test_pypaimon_map_row_and_nested_array_columns_in_tarn():
    """tarn supports one-dimensional arrays only; other Paimon types must be refused cleanly
    (0A000) or shown, and the table's other columns stay readable."""
    fields = [
        pa.field("id", pa.int32(), nullable=False),
        ("m", pa.map_(pa.string(), pa.int32())),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ("aa", pa.list_(pa.list_(pa.int32()))),
    ]
    table = pp_create("pp_nested", fields, primary_keys=["id"], options={"bucket": "1"})
    pp_write(table, [dict(id=1, m=[("a", 1)], st=dict(x=1, y="q"), aa=[[1, 2], [3]])])
    with connect() as conn:
        assert conn.execute("SELECT id FROM pp_nested").fetchall() == [(1,)]
        for col in ("m", "st", "aa"):
            try:
                conn.execute(f"SELECT {col} FROM pp_nested").fetchall()
            except errors.FeatureNotSupported:
                pass


# Binary results (what JDBC, tokio-postgres, asyncpg... use) must carry the same values as text.


@pytest.fixture(scope="module")
def tarn_types_table():
    name = "tp_types_binary"
    with connect() as conn:
        conn.execute(f"CREATE TABLE {name} ({ALL_TYPES_DDL}, PRIMARY KEY (id)) WITH (bucket = 2)")
        for literal, _ in ALL_TYPES_LITERAL_ROWS:
            conn.execute(f"INSERT INTO {name} VALUES ({literal})")
        conn.execute(f"INSERT INTO {name} {ALL_TYPES_SELECT}")
    return name


def assert_binary_matches_text(table, col, real=False):
    sql = f"SELECT id AS row_id, {col} FROM {table}"
    with connect() as conn:
        text = pg_rows(conn, sql)
        cur = conn.cursor(binary=True)
        cur.execute(sql)
        names = [d.name for d in cur.description]
        binary = [dict(zip(names, r)) for r in cur.fetchall()]
    if real:  # text is the shortest decimal form, binary the exact float32
        text = [dict(r, **{col: f32(r[col])}) for r in text]
    assert_same_rows(binary, text, ["row_id"], f"{table}.{col} binary vs text")


@pytest.mark.parametrize(
    "col",
    [c for c in ALL_TYPES_COLUMNS if c != "id"],
)
def test_tarn_all_types_binary_results(tarn_types_table, col):
    assert_binary_matches_text(tarn_types_table, col, real=col == "r")


@pytest.fixture(scope="module")
def pp_types_table():
    name = "pp_types_binary"
    table = pp_create(name, PP_TYPES, primary_keys=["id"], options={"bucket": "2"})
    pp_write(table, [pp_typed_row(i, i) for i in range(1, 30)] + [pp_typed_row(100, None)])
    return name


@pytest.mark.parametrize(
    "col",
    [c for c in PP_NAMES if c != "id"],
)
def test_pypaimon_all_types_binary_results(pp_types_table, col):
    assert_binary_matches_text(pp_types_table, col, real=col == "f")


# ---------------------------------------------------------------------------------------------
# 3. both write the same primary-key table


def both_read(name, key):
    with connect() as conn:
        tarn = pg_rows(conn, f"SELECT * FROM {name}")
    pp = pp_read(name)
    assert_same_rows(tarn, pp, key, f"{name}: tarn vs pypaimon")
    return tarn


def assert_duplicate_rejected(conn, name, sql, key):
    before = pg_rows(conn, f"SELECT * FROM {name}")
    snapshots = snapshot_files(name)
    with pytest.raises(errors.UniqueViolation) as info:
        conn.execute(sql)
    assert info.value.sqlstate == "23505"
    assert snapshot_files(name) == snapshots
    assert_same_rows(pg_rows(conn, f"SELECT * FROM {name}"), before, key, "after 23505")


def test_mixed_writers_on_a_table_pypaimon_created():
    fields = [
        pa.field("region", pa.string(), nullable=False),
        pa.field("id", pa.int32(), nullable=False),
        ("v", pa.string()),
        ("amount", pa.decimal128(10, 2)),
    ]
    key = ["region", "id"]
    table = pp_create("mx_pp", fields, primary_keys=key, partition_keys=["region"],
                      options={"bucket": "4"})
    pp_write(table, [dict(region=r, id=i, v="pp1", amount=D("1.00"))
                     for r in ("eu", "us") for i in range(40)])
    with connect() as conn:
        conn.execute("INSERT INTO mx_pp VALUES ('eu', 100, 'tarn1', 2.50), ('ap', 1, 'tarn1', NULL)")
        conn.execute(
            "INSERT INTO mx_pp SELECT 'us', x, 'tarn2', x * 0.01 FROM generate_series(40, 79) AS g(x)"
        )
        # Keys pypaimon wrote are taken, in every bucket; nothing is written.
        for i in range(40):
            assert_duplicate_rejected(
                conn, "mx_pp", f"INSERT INTO mx_pp VALUES ('eu', {i}, 'dup', 0)", key
            )
        assert_duplicate_rejected(
            conn, "mx_pp", "INSERT INTO mx_pp VALUES ('us', 500, 'new', 0), ('us', 45, 'dup', 0)",
            key,
        )
        assert_duplicate_rejected(
            conn, "mx_pp", "INSERT INTO mx_pp VALUES ('us', 501, 'new', 0), ('us', 501, 'dup', 0)",
            key,
        )
        # Another partition is another key.
        conn.execute("INSERT INTO mx_pp VALUES ('ap', 0, 'tarn3', 3)")
    both_read("mx_pp", key)
    # pypaimon upserts keys it wrote and keys tarn wrote: its version must win everywhere.
    pp_write("mx_pp", [dict(region="eu", id=i, v="pp2", amount=D("9.99")) for i in range(0, 40, 2)]
             + [dict(region="us", id=i, v="pp2", amount=None) for i in range(40, 80, 4)]
             + [dict(region="eu", id=100, v="pp2", amount=D("0.00")),
                dict(region="ap", id=1, v="pp2", amount=D("0.01"))])
    rows = both_read("mx_pp", key)
    by_key = {(r["region"], r["id"]): r for r in rows}
    assert len(rows) == 80 + 2 + 40 + 1
    assert by_key[("eu", 100)]["v"] == "pp2" and by_key[("ap", 1)]["amount"] == D("0.01")
    assert by_key[("us", 44)] == dict(region="us", id=44, v="pp2", amount=None)
    assert by_key[("us", 45)] == dict(region="us", id=45, v="tarn2", amount=D("0.45"))
    assert by_key[("eu", 2)]["v"] == "pp2" and by_key[("eu", 3)]["v"] == "pp1"
    with connect() as conn:
        # The upserted keys are still taken for tarn; new ones are not.
        assert_duplicate_rejected(conn, "mx_pp", "INSERT INTO mx_pp VALUES ('us', 44, 'x', 0)", key)
        conn.execute("INSERT INTO mx_pp VALUES ('us', 1000, 'tarn4', 1)")
    pp_write("mx_pp", [dict(region="us", id=1000, v="pp3", amount=D("2.00"))])
    rows = both_read("mx_pp", key)
    assert {(r["region"], r["id"]): r["v"] for r in rows}[("us", 1000)] == "pp3"
    assert pp_snapshot_ids("mx_pp") == snapshot_files("mx_pp") == list(range(1, 8))


def test_mixed_writers_on_a_table_tarn_created():
    key = ["day", "k"]
    with connect() as conn:
        conn.execute(
            """CREATE TABLE mx_tarn (day DATE, k BIGINT, name TEXT, qty INT, seen TIMESTAMP,
                   PRIMARY KEY (day, k)) PARTITIONED BY (day) WITH (bucket = 4)"""
        )
        conn.execute(
            "INSERT INTO mx_tarn SELECT DATE '2026-12-01' + (x % 3), x AS k, 'tarn' || x, x AS qty, "
            "TIMESTAMP '2026-12-01 00:00:00' + (x || ' seconds')::interval "
            "FROM generate_series(1, 300) AS g(x)"
        )
        conn.execute("INSERT INTO mx_tarn VALUES ('2026-12-01', -5, NULL, NULL, NULL)")
    both_read("mx_tarn", key)
    # pypaimon upserts tarn's keys (must land in the same bucket, with a higher sequence
    # number) and adds keys of its own.
    ups = [dict(day=date(2026, 12, 1) + datetime.timedelta(days=x % 3), k=x, name=f"pp{x}",
                qty=-x, seen=None) for x in range(3, 301, 3)]
    new = [dict(day=date(2026, 12, 4), k=x, name="ppnew", qty=0, seen=dt(2026, 12, 4, 1, 2, 3))
           for x in range(10)]
    pp_write("mx_tarn", ups + new + [dict(day=date(2026, 12, 1), k=-5, name="pp", qty=1, seen=None)])
    rows = both_read("mx_tarn", key)
    by_key = {(r["day"], r["k"]): r for r in rows}
    assert len(rows) == 301 + 10
    assert by_key[(date(2026, 12, 1), 3)] == dict(day=date(2026, 12, 1), k=3, name="pp3", qty=-3, seen=None)
    assert by_key[(date(2026, 12, 2), 4)]["name"] == "tarn4"
    assert by_key[(date(2026, 12, 1), -5)]["name"] == "pp"
    with connect() as conn:
        assert_duplicate_rejected(
            conn, "mx_tarn", "INSERT INTO mx_tarn VALUES ('2026-12-04', 7, 'dup', 0, NULL)", key
        )
        assert_duplicate_rejected(
            conn, "mx_tarn", "INSERT INTO mx_tarn VALUES ('2026-12-01', 3, 'dup', 0, NULL)", key
        )
        conn.execute("INSERT INTO mx_tarn VALUES ('2026-12-04', 10, 'tarn', 1, NULL)")
        conn.execute("INSERT INTO mx_tarn VALUES ('2026-12-02', 3, 'tarn', 1, NULL)")
    # A second round of pypaimon upserts on keys already upserted once.
    pp_write("mx_tarn", [dict(day=date(2026, 12, 1), k=3, name="pp-again", qty=3, seen=None),
                         dict(day=date(2026, 12, 4), k=10, name="pp-over-tarn", qty=3, seen=None)])
    rows = both_read("mx_tarn", key)
    by_key = {(r["day"], r["k"]): r for r in rows}
    assert len(rows) == 301 + 10 + 2
    assert by_key[(date(2026, 12, 1), 3)]["name"] == "pp-again"
    assert by_key[(date(2026, 12, 4), 10)]["name"] == "pp-over-tarn"
    assert by_key[(date(2026, 12, 2), 3)]["name"] == "tarn"
    with connect() as conn:
        assert conn.execute(
            "SELECT count(*) FROM mx_tarn WHERE name LIKE 'pp%'"
        ).fetchone()[0] == sum(1 for r in rows if r["name"] and r["name"].startswith("pp"))


# Key types: both writers must hash every key type to the same bucket, or an upsert from one
# writer lands beside the other's row (two versions of a key) and tarn's duplicate check misses.

KEY_TYPES = [
    # id, tarn type, arrow type, values
    ("smallint", "SMALLINT", pa.int16(), [i * 100 - 1500 for i in range(30)]),
    ("int", "INTEGER", pa.int32(), [i * 7919 - 100000 for i in range(30)]),
    ("bigint", "BIGINT", pa.int64(), [i * 10**12 - 5 for i in range(30)]),
    ("text", "TEXT", pa.string(), [f"k{i}é" * (i % 4 + 1) for i in range(30)] + [""]),
    ("varchar", "VARCHAR(40)", None, [f"v{i}" for i in range(30)]),
    ("date", "DATE", pa.date32(), [date(1969, 12, 1) + datetime.timedelta(days=37 * i) for i in range(30)]),
    ("ts3", "TIMESTAMP(3)", pa.timestamp("ms"),
     [dt(1969, 12, 31, 23, 0) + datetime.timedelta(seconds=1001 * i, milliseconds=i) for i in range(30)]),
    ("ts6", "TIMESTAMP(6)", pa.timestamp("us"),
     [dt(2026, 12, 1) + datetime.timedelta(microseconds=123457 * i) for i in range(30)]),
    ("tstz", "TIMESTAMPTZ", pa.timestamp("us", tz="UTC"),
     [dt(2026, 12, 1, tzinfo=UTC) + datetime.timedelta(microseconds=7654321 * i) for i in range(30)]),
    ("dec", "NUMERIC(10, 2)", pa.decimal128(10, 2), [D(f"{i * 37 - 500}.{i:02d}") for i in range(30)]),
    ("dec_big", "NUMERIC(30, 5)", pa.decimal128(30, 5),
     [D(f"{(-1) ** i * 123456789012345678901}.{i:05d}") for i in range(30)]),
    ("bytea", "BYTEA", pa.binary(), [bytes([i, 255 - i] * (i % 3 + 1)) for i in range(30)] + [b""]),
    ("bool", "BOOLEAN", pa.bool_(), [True, False]),
    ("real", "REAL", pa.float32(), [i * 0.5 - 7 for i in range(30)]),
    ("double", "DOUBLE PRECISION", pa.float64(), [i * 0.25 - 3 for i in range(30)]),
]


def sql_literal(v, sql_type):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return f"'\\x{v.hex()}'::bytea"
    if isinstance(v, datetime.datetime):
        return f"'{v.isoformat(' ')}'::{sql_type}"
    return f"'{v}'::{sql_type}"


@pytest.mark.parametrize("kid, sql_type, arrow_type, values", KEY_TYPES, ids=[k[0] for k in KEY_TYPES])
def test_key_types_same_bucket_across_writers(kid, sql_type, arrow_type, values):
    # tarn creates and writes; pypaimon upserts every key.
    name = f"kt_tarn_{kid}"
    with connect() as conn:
        conn.execute(f"CREATE TABLE {name} (k {sql_type} PRIMARY KEY, v TEXT) WITH (bucket = 5)")
        conn.execute(
            f"INSERT INTO {name} VALUES "
            + ", ".join(f"({sql_literal(v, sql_type)}, 'tarn')" for v in values)
        )
    stored = {r["k"] for r in pp_read(name)}
    assert len(stored) == len(values)
    pp_write(name, [dict(k=k, v="pp") for k in stored])
    rows = both_read(name, ["k"])
    assert len(rows) == len(values) and {r["v"] for r in rows} == {"pp"}
    with connect() as conn:
        for v in values[:6]:
            assert_duplicate_rejected(
                conn, name, f"INSERT INTO {name} VALUES ({sql_literal(v, sql_type)}, 'dup')", ["k"]
            )
    if arrow_type is None:
        return
    # pypaimon creates and writes; tarn must find every key (23505), and its new keys must be
    # upserted in place by pypaimon.
    name = f"kt_pp_{kid}"
    table = pp_create(name, [pa.field("k", arrow_type, nullable=False), ("v", pa.string())],
                      primary_keys=["k"], options={"bucket": "5"})
    half = len(values) // 2 or 1
    pp_write(table, [dict(k=v, v="pp") for v in values[:half]])
    with connect() as conn:
        for v in values[:half]:
            assert_duplicate_rejected(
                conn, name, f"INSERT INTO {name} VALUES ({sql_literal(v, sql_type)}, 'dup')", ["k"]
            )
        if values[half:]:
            conn.execute(
                f"INSERT INTO {name} VALUES "
                + ", ".join(f"({sql_literal(v, sql_type)}, 'tarn')" for v in values[half:])
            )
    stored = {r["k"] for r in pp_read(name)}
    assert len(stored) == len(values)
    pp_write(name, [dict(k=k, v="pp2") for k in stored])
    rows = both_read(name, ["k"])
    assert len(rows) == len(values) and {r["v"] for r in rows} == {"pp2"}


def test_composite_key_with_bucket_key_across_writers():
    """`bucket-key` picks the hashed columns; both writers must honour it."""
    with connect() as conn:
        conn.execute(
            """CREATE TABLE kt_bucket_key (tenant TEXT, day DATE, id BIGINT, amount NUMERIC(12, 2),
                   v TEXT, PRIMARY KEY (tenant, day, id))
               PARTITIONED BY (tenant) WITH (bucket = 4, 'bucket-key' = 'id')"""
        )
        conn.execute(
            "INSERT INTO kt_bucket_key SELECT 't' || (x % 3), DATE '2026-12-01' + (x % 5), x, "
            "x * 1.5, 'tarn' FROM generate_series(1, 120) AS g(x)"
        )
    keys = [(r["tenant"], r["day"], r["id"]) for r in pp_read("kt_bucket_key")]
    pp_write("kt_bucket_key", [dict(tenant=t, day=d, id=i, amount=D("0.00"), v="pp")
                               for t, d, i in keys if i % 2 == 0])
    rows = both_read("kt_bucket_key", ["tenant", "day", "id"])
    assert len(rows) == 120
    assert {r["id"] for r in rows if r["v"] == "pp"} == set(range(2, 121, 2))
    with connect() as conn:
        assert_duplicate_rejected(
            conn, "kt_bucket_key",
            "INSERT INTO kt_bucket_key VALUES ('t1', DATE '2026-12-02', 1, 0, 'dup')",
            ["tenant", "day", "id"],
        )
    fields = [pa.field("tenant", pa.string(), nullable=False), pa.field("id", pa.int32(), nullable=False),
              ("v", pa.string())]
    table = pp_create("kt_bucket_key_pp", fields, primary_keys=["tenant", "id"],
                      options={"bucket": "4", "bucket-key": "id"})
    pp_write(table, [dict(tenant=f"t{x % 3}", id=x, v="pp") for x in range(1, 41)])
    with connect() as conn:
        for x in range(1, 41, 3):
            assert_duplicate_rejected(
                conn, "kt_bucket_key_pp",
                f"INSERT INTO kt_bucket_key_pp VALUES ('t{x % 3}', {x}, 'dup')", ["tenant", "id"],
            )
        conn.execute("INSERT INTO kt_bucket_key_pp VALUES ('t9', 1, 'tarn'), ('t1', 100, 'tarn')")
    pp_write(table, [dict(tenant="t1", id=100, v="pp-over-tarn")])
    rows = both_read("kt_bucket_key_pp", ["tenant", "id"])
    assert len(rows) == 42
    assert {(r["tenant"], r["id"]): r["v"] for r in rows}[("t1", 100)] == "pp-over-tarn"


def test_pypaimon_overwrite_seen_by_tarn():
    key = ["id", "dt"]
    fields = [pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
              ("v", pa.string())]
    table = pp_create("ow_pp", fields, primary_keys=key, partition_keys=["dt"], options={"bucket": "2"})
    pp_write(table, [dict(id=i, dt=d, v="pp") for d in ("a", "b") for i in range(10)])
    with connect() as conn:
        conn.execute("INSERT INTO ow_pp VALUES (100, 'b', 'tarn'), (101, 'a', 'tarn')")
    # Overwrite partition b: its old rows (pypaimon's and tarn's) disappear.
    table = pp_table("ow_pp")
    wb = table.new_batch_write_builder().overwrite({"dt": "b"})
    write, commit = wb.new_write(), wb.new_commit()
    write.write_arrow(pa.Table.from_pylist([dict(id=5, dt="b", v="new")], schema=arrow_schema(table)))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    expected = [dict(id=i, dt="a", v="pp") for i in range(10)] + [
        dict(id=101, dt="a", v="tarn"), dict(id=5, dt="b", v="new")]
    assert_same_rows(both_read("ow_pp", key), expected, key, "after overwrite")
    snaps = pp_read(pp_table("ow_pp$snapshots"))
    assert max(snaps, key=lambda r: r["snapshot_id"])["commit_kind"] == "OVERWRITE"
    with connect() as conn:
        conn.execute("INSERT INTO ow_pp VALUES (100, 'b', 'tarn-again')")  # the key is free again
        assert_duplicate_rejected(conn, "ow_pp", "INSERT INTO ow_pp VALUES (5, 'b', 'dup')", key)
    expected.append(dict(id=100, dt="b", v="tarn-again"))
    assert_same_rows(both_read("ow_pp", key), expected, key, "after tarn insert")


def test_many_commits_from_both_writers():
    """70 snapshots from two writers (manifest lists grow; either writer may merge manifests)."""
    with connect() as conn:
        conn.execute("CREATE TABLE many_commits (id BIGINT PRIMARY KEY, n INT, who TEXT) WITH (bucket = 3)")
    expected = {}
    with connect() as conn:
        for round_ in range(35):
            rows = [dict(id=round_, n=round_, who="pp"), dict(id=0, n=round_, who="pp")]
            pp_write("many_commits", rows)
            for r in rows:
                expected[r["id"]] = r
            conn.execute(f"INSERT INTO many_commits VALUES ({1000 + round_}, {round_}, 'tarn')")
            expected[1000 + round_] = dict(id=1000 + round_, n=round_, who="tarn")
    rows = both_read("many_commits", ["id"])
    assert_same_rows(rows, list(expected.values()), ["id"], "final")
    # Background compaction may still commit: compare once the folder holds still.
    on_disk = snapshot_files("many_commits")
    while True:
        seen = pp_snapshot_ids("many_commits")
        now = snapshot_files("many_commits")
        if now == on_disk:
            break
        on_disk = now
    assert seen == on_disk
    commits = pp_commit_ids("many_commits")
    assert len(commits) == 70, "one snapshot per commit"
    # The 36th commit (compactions commit snapshots in between).
    assert_same_rows(
        pp_read(pp_table("many_commits", commits[35])),
        [dict(id=0, n=17, who="pp")] + [dict(id=i, n=i, who="pp") for i in range(1, 18)]
        + [dict(id=1000 + i, n=i, who="tarn") for i in range(18)],
        ["id"], "the 36th commit",
    )


# Filters: each reader may prune files by the other writer's statistics (min/max/null counts,
# strings truncated to 16 characters with the max rounded up); no matching row may be lost.

LONG = "a" * 16
FILTER_ROWS = [
    (1, LONG + "ZZZ", -5, D("-1.50"), float("nan"), dt(1969, 12, 31, 23), date(1969, 1, 1)),
    (2, LONG + "AAA", 5, D("2.25"), 1.5, dt(2026, 1, 1), date(2026, 1, 1)),
    (3, "é" * 20, -100, D("-99.99"), -1e10, dt(1900, 1, 1), date(1900, 1, 1)),
    (4, None, None, None, None, None, None),
    (5, "b", 0, D("0.00"), 0.0, dt(2026, 6, 1), date(2026, 6, 1)),
]
FILTER_COLS = ["id", "s", "n", "d", "f", "ts", "dt"]
# (tarn WHERE clause, pypaimon predicate, python check)
FILTERS = [
    (f"s = '{LONG}ZZZ'", lambda pb: pb.equal("s", LONG + "ZZZ"), lambda r: r["s"] == LONG + "ZZZ"),
    (f"s = '{LONG}AAA'", lambda pb: pb.equal("s", LONG + "AAA"), lambda r: r["s"] == LONG + "AAA"),
    ("s = '" + "é" * 20 + "'", lambda pb: pb.equal("s", "é" * 20), lambda r: r["s"] == "é" * 20),
    (f"s > '{LONG}B'", lambda pb: pb.greater_than("s", LONG + "B"),
     lambda r: r["s"] is not None and r["s"] > LONG + "B"),
    ("n < 0", lambda pb: pb.less_than("n", 0), lambda r: r["n"] is not None and r["n"] < 0),
    ("n > -10", lambda pb: pb.greater_than("n", -10), lambda r: r["n"] is not None and r["n"] > -10),
    ("n IS NULL", lambda pb: pb.is_null("n"), lambda r: r["n"] is None),
    ("d < 0", lambda pb: pb.less_than("d", D("0")), lambda r: r["d"] is not None and r["d"] < 0),
    ("d > -2", lambda pb: pb.greater_than("d", D("-2")), lambda r: r["d"] is not None and r["d"] > -2),
    ("f < 0", lambda pb: pb.less_than("f", 0.0), lambda r: r["f"] is not None and r["f"] < 0),
    ("ts < '1970-01-01'", lambda pb: pb.less_than("ts", dt(1970, 1, 1)),
     lambda r: r["ts"] is not None and r["ts"] < dt(1970, 1, 1)),
    ("dt < '1970-01-01'", lambda pb: pb.less_than("dt", date(1970, 1, 1)),
     lambda r: r["dt"] is not None and r["dt"] < date(1970, 1, 1)),
]


def pp_read_filtered(name, build):
    table = pp_table(name)
    rb = table.new_read_builder()
    rb = rb.with_filter(build(rb.new_predicate_builder()))
    result = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return [] if result is None else result.to_pylist()


def test_filters_over_the_other_writers_statistics():
    # tarn writes one file per row (one statement each); pypaimon filters.
    with connect() as conn:
        conn.execute("CREATE TABLE flt_tarn (id INT, s TEXT, n INT, d NUMERIC(10, 2), "
                     "f DOUBLE PRECISION, ts TIMESTAMP, dt DATE)")
        for row in FILTER_ROWS:
            conn.execute("INSERT INTO flt_tarn VALUES (%s, %s, %s, %s, %s, %s, %s)", row)
    # pypaimon writes one file per row; tarn filters.
    fields = [("id", pa.int32()), ("s", pa.string()), ("n", pa.int32()), ("d", pa.decimal128(10, 2)),
              ("f", pa.float64()), ("ts", pa.timestamp("us")), ("dt", pa.date32())]
    table = pp_create("flt_pp", fields)
    for row in FILTER_ROWS:
        pp_write(table, [dict(zip(FILTER_COLS, row))])
    rows = [dict(zip(FILTER_COLS, r)) for r in FILTER_ROWS]
    assert_same_rows(pp_read("flt_tarn"), rows, ["id"], "flt_tarn")
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM flt_pp"), rows, ["id"], "flt_pp")
        for where, predicate, check in FILTERS:
            want = sorted(r["id"] for r in rows if check(r))
            got_pp = sorted(r["id"] for r in pp_read_filtered("flt_tarn", predicate))
            assert got_pp == want, f"pypaimon over tarn's files, {where}: {got_pp} != {want}"
            got_tarn = sorted(r[0] for r in conn.execute(f"SELECT id FROM flt_pp WHERE {where}"))
            assert got_tarn == want, f"tarn over pypaimon's files, {where}: {got_tarn} != {want}"


def test_filters_after_schema_evolution_by_pypaimon():
    """Old files have no statistics for an added column, and older names/types for others."""
    fields = [pa.field("id", pa.int32(), nullable=False), ("status", pa.string()), ("q", pa.int32())]
    table = pp_create("flt_evolved", fields, primary_keys=["id"], options={"bucket": "1"})
    pp_write(table, [dict(id=1, status="old", q=1), dict(id=2, status="old", q=2)])
    catalog().alter_table("public.flt_evolved", [
        SchemaChange.add_column("amount", AtomicType("INT")),
        SchemaChange.rename_column("status", "state"),
        SchemaChange.update_column_type("q", AtomicType("BIGINT")),
    ])
    pp_write("flt_evolved", [dict(id=3, state="new", q=2**40, amount=7)])
    with connect() as conn:
        conn.execute("INSERT INTO flt_evolved VALUES (4, 'tarn', 3, NULL)")
        for where, want in [("amount IS NULL", [1, 2, 4]), ("amount = 7", [3]),
                            ("state = 'old'", [1, 2]), ("q > 1", [2, 3, 4]), ("q < 100", [1, 2, 4]),
                            ("amount > 0", [3]), ("state <> 'new'", [1, 2, 4]),
                            (f"q = {2**40}", [3])]:
            got = sorted(r[0] for r in conn.execute(f"SELECT id FROM flt_evolved WHERE {where}"))
            assert got == want, f"{where}: {got} != {want}"
    assert sorted(r["id"] for r in pp_read_filtered(
        "flt_evolved", lambda pb: pb.is_null("amount"))) == [1, 2, 4]


# Concurrent commits: pypaimon and tarn commit to the same table at the same time.


def _pypaimon_rewrites_latest_in_place(path, content, stop):
    """What pypaimon 2.1 does to snapshot/LATEST after every commit once the file exists: its
    atomic rename refuses to replace a file, so it falls back to write_file(overwrite=True),
    i.e. truncate then write (renaming_snapshot_commit.py _commit_latest_hint)."""
    while not stop.is_set():
        with open(path, "w") as f:
            f.write(content)


def test_reading_while_pypaimon_rewrites_the_latest_hint():
    with connect() as conn:
        conn.execute("CREATE TABLE hint_race (id INT)")
        conn.execute("INSERT INTO hint_race VALUES (1)")
        conn.execute("INSERT INTO hint_race VALUES (2)")
        latest = os.path.join(WAREHOUSE, "public.db", "hint_race", "snapshot", "LATEST")
        stop = threading.Event()
        writer = threading.Thread(target=_pypaimon_rewrites_latest_in_place, args=(latest, "2", stop))
        writer.start()
        try:
            deadline = time.monotonic() + 20
            for _ in range(3000):
                assert conn.execute("SELECT count(*) FROM hint_race").fetchone() == (2,)
                if time.monotonic() > deadline:
                    break
        finally:
            stop.set()
            writer.join()


def _xfail_if_pypaimon_overwrote_a_tarn_snapshot(name, missing):
    """pypaimon 2.1's local commit is check-then-rename (`LocalFileIO.rename`: `exists()`, then
    `os.rename`, which replaces; its lock is per process): a tarn snapshot created in between is
    replaced by pypaimon's. tarn creates snapshot files atomically (create-if-absent) and never
    deletes one. Only that loss is excused: one tarn batch (5 rows) missing, snapshot ids
    1..39 each once, and 19 of them tarn's (found by a marker commit tarn makes now)."""
    with connect() as conn:
        conn.execute(f"insert into {name} values (-1, 'marker', 0)")
        snaps = pg_rows(
            conn, f'select snapshot_id, commit_user from "{name}$snapshots" order by snapshot_id'
        )
    tarn_user = snaps[-1]["commit_user"]
    tarn_commits = sum(1 for s in snaps[:-1] if s["commit_user"] == tarn_user)
    contiguous = [s["snapshot_id"] for s in snaps] == list(range(1, 41))
    batches = {m // 10 for m in missing}
    if len(missing) == 5 and len(batches) == 1 and max(missing) < 10000 and contiguous \
            and tarn_commits == 19:
        pytest.xfail(
            f"pypaimon's non-atomic local commit replaced tarn's snapshot of batch {batches}"
        )


@pytest.mark.parametrize("kind", ["append", "pk"])
def test_concurrent_commits_by_both_writers(kind):
    """No commit is lost or doubled; snapshot ids stay contiguous.  On a primary-key table a
    tarn INSERT racing pypaimon on the same bucket may answer 40001 (retry), never wrong data."""
    name = f"conc_{kind}"
    with connect() as conn:
        if kind == "pk":
            conn.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, who TEXT, n INT) WITH (bucket = 2)")
        else:
            conn.execute(f"CREATE TABLE {name} (id INT, who TEXT, n INT)")
    failures = []

    def pypaimon_writer():
        for i in range(20):
            try:
                pp_write(name, [dict(id=10000 + i * 10 + j, who="pp", n=i) for j in range(5)])
            except Exception as e:  # pragma: no cover - reported below
                failures.append(f"pypaimon commit {i}: {e!r}")

    thread = threading.Thread(target=pypaimon_writer)
    thread.start()
    retries = {"40001": 0, "58030": 0}
    try:
        with connect() as conn:
            for i in range(20):
                for _attempt in range(50):
                    try:
                        conn.execute(
                            f"INSERT INTO {name} SELECT {i} * 10 + x, 'tarn', {i} "
                            "FROM generate_series(0, 4) AS g(x)"
                        )
                        break
                    except psycopg.Error as e:
                        # 40001 is a legitimate answer for a PK table; 58030 is the LATEST-hint
                        # bug of test_reading_while_pypaimon_rewrites_the_latest_hint.
                        allowed = ("40001", "58030") if kind == "pk" else ("58030",)
                        if e.sqlstate not in allowed:
                            raise
                        retries[e.sqlstate] += 1
                else:
                    failures.append(f"tarn insert {i} never committed")
    finally:
        thread.join()
    assert failures == []
    rows = both_read(name, ["id"])
    expected = sorted(
        [i * 10 + x for i in range(20) for x in range(5)]
        + [10000 + i * 10 + j for i in range(20) for j in range(5)]
    )
    got = sorted(r["id"] for r in rows)
    if got != expected:
        _xfail_if_pypaimon_overwrote_a_tarn_snapshot(name, set(expected) - set(got))
    assert got == expected
    ids = snapshot_files(name)
    assert ids == list(range(1, len(ids) + 1))
    assert pp_snapshot_ids(name) == ids
    assert len(pp_commit_ids(name)) == 40, retries


def test_databases_case_sensitive_names_and_codecs_across_writers():
    """A Paimon database is a schema; Paimon names are case-sensitive (quoted in SQL); tarn
    reads and appends to files in whatever Parquet codec the table names."""
    cat = catalog()
    cat.create_database("sales_pp", True)
    fields = [pa.field("Id", pa.int64(), nullable=False), ("Amount", pa.int32())]
    cat.create_table("sales_pp.Orders", Schema.from_pyarrow_schema(
        pa.schema(fields), primary_keys=["Id"], options={"bucket": "2"}), False)
    pp_write(cat.get_table("sales_pp.Orders"), [dict(Id=1, Amount=5)])
    with connect() as conn:
        assert pg_rows(conn, 'SELECT * FROM sales_pp."Orders"') == [{"Id": 1, "Amount": 5}]
        with pytest.raises(errors.UndefinedTable):
            conn.execute("SELECT * FROM sales_pp.orders")
        with pytest.raises(errors.UndefinedColumn):
            conn.execute('SELECT amount FROM sales_pp."Orders"')
        conn.execute('INSERT INTO sales_pp."Orders" ("Id", "Amount") VALUES (2, 6)')
        with pytest.raises(errors.UniqueViolation):
            conn.execute('INSERT INTO sales_pp."Orders" VALUES (1, 0)')
        conn.execute("CREATE SCHEMA mart_tarn")
        conn.execute("CREATE TABLE mart_tarn.totals (region TEXT PRIMARY KEY, total BIGINT)")
        conn.execute("INSERT INTO mart_tarn.totals VALUES ('eu', 10)")
    assert_same_rows(pp_read(cat.get_table("sales_pp.Orders")),
                     [dict(Id=1, Amount=5), dict(Id=2, Amount=6)], ["Id"], "sales_pp.Orders")
    assert "mart_tarn" in catalog().list_databases()
    assert catalog().list_tables("mart_tarn") == ["totals"]
    assert pp_read(catalog().get_table("mart_tarn.totals")) == [dict(region="eu", total=10)]

    for codec in ["snappy", "lz4", "gzip", "none", "zstd"]:
        name = f"codec_{codec}"
        table = pp_create(name, [pa.field("id", pa.int64(), nullable=False), ("v", pa.string())],
                          primary_keys=["id"], options={"bucket": "1", "file.compression": codec})
        pp_write(table, [dict(id=1, v=codec)])
        with connect() as conn:
            conn.execute(f"INSERT INTO {name} VALUES (2, 'tarn')")
        assert_same_rows(both_read(name, ["id"]), [dict(id=1, v=codec), dict(id=2, v="tarn")],
                         ["id"], name)


def test_pypaimon_writes_into_tarn_uuid_json_and_time_columns():
    """uuid/json/jsonb are Paimon STRING (tarn keeps the PostgreSQL type in table options);
    values pypaimon writes there read back typed in tarn."""
    with connect() as conn:
        conn.execute("CREATE TABLE mx_pgtypes (id INT PRIMARY KEY, u UUID, j JSON, jb JSONB, tm TIME)")
        conn.execute("INSERT INTO mx_pgtypes VALUES (1, '00000000-0000-0000-0000-000000000001', "
                     "'{\"t\": 1}', '[true]', '23:59:59.999')")
    pp_write("mx_pgtypes", [
        dict(id=2, u="a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", j='{"a": [1, null]}', jb="3",
             tm=tm(1, 2, 3, 456000)),
        dict(id=3, u=None, j=None, jb=None, tm=None),
    ])
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM mx_pgtypes"), [
            dict(id=1, u=uuid.UUID(int=1), j={"t": 1}, jb=[True], tm=tm(23, 59, 59, 999000)),
            dict(id=2, u=uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), j={"a": [1, None]},
                 jb=3, tm=tm(1, 2, 3, 456000)),
            dict(id=3, u=None, j=None, jb=None, tm=None),
        ], ["id"], "tarn")
        assert pg_rows(conn, "SELECT id FROM mx_pgtypes "
                             "WHERE u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'") == [{"id": 2}]
    with raw_text_connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM mx_pgtypes"), pp_read("mx_pgtypes"),
                         ["id"], "tarn text vs pypaimon")


# ---------------------------------------------------------------------------------------------
# 4. schema evolution by pypaimon


def test_schema_evolution_add_and_rename_column_by_pypaimon():
    fields = [pa.field("id", pa.int64(), nullable=False), ("status", pa.string()), ("qty", pa.int32())]
    table = pp_create("ev_orders", fields, primary_keys=["id"], options={"bucket": "2"})
    pp_write(table, [dict(id=i, status=f"s{i}", qty=i) for i in range(1, 11)])
    catalog().alter_table(
        "public.ev_orders",
        [
            SchemaChange.add_column("amount", AtomicType("DECIMAL(10, 2)")),
            SchemaChange.rename_column("status", "state"),
        ],
    )
    table = pp_table("ev_orders")
    assert [f.name for f in table.fields] == ["id", "state", "qty", "amount"]
    pp_write(table, [dict(id=2, state="new2", qty=20, amount=D("2.50")),
                     dict(id=11, state="s11", qty=11, amount=None),
                     dict(id=12, state="s12", qty=None, amount=D("-1.00"))])
    expected = {i: dict(id=i, state=f"s{i}", qty=i, amount=None) for i in range(1, 11)}
    expected[2] = dict(id=2, state="new2", qty=20, amount=D("2.50"))
    expected[11] = dict(id=11, state="s11", qty=11, amount=None)
    expected[12] = dict(id=12, state="s12", qty=None, amount=D("-1.00"))
    expected = list(expected.values())
    assert_same_rows(pp_read("ev_orders"), expected, ["id"], "pypaimon")
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM ev_orders"), expected, ["id"], "tarn")
        # Old files under the new name, and the added column is NULL there.
        assert pg_rows(conn, "SELECT id, state, amount FROM ev_orders WHERE state = 's5'") == [
            {"id": 5, "state": "s5", "amount": None}
        ]
        assert conn.execute(
            "SELECT count(*) FROM ev_orders WHERE amount IS NULL"
        ).fetchone() == (10,)
        with pytest.raises(errors.UndefinedColumn):
            conn.execute("SELECT status FROM ev_orders")
        # tarn writes under the newest schema; pypaimon reads it.
        conn.execute("INSERT INTO ev_orders VALUES (13, 'tarn', 13, 13.13)")
        with pytest.raises(errors.UniqueViolation):
            conn.execute("INSERT INTO ev_orders VALUES (5, 'dup', 0, 0)")
    expected.append(dict(id=13, state="tarn", qty=13, amount=D("13.13")))
    both = both_read("ev_orders", ["id"])
    assert_same_rows(both, expected, ["id"], "after tarn insert")
    # pypaimon upserts a row first written under the old schema.
    pp_write("ev_orders", [dict(id=5, state="five", qty=None, amount=D("5.00"))])
    expected = [r for r in expected if r["id"] != 5] + [dict(id=5, state="five", qty=None, amount=D("5.00"))]
    assert_same_rows(both_read("ev_orders", ["id"]), expected, ["id"], "after upsert")


def test_schema_evolution_drop_column_and_widen_type_by_pypaimon():
    fields = [pa.field("id", pa.int32(), nullable=False), ("small", pa.int32()),
              ("gone", pa.string()), ("keep", pa.string())]
    table = pp_create("ev_widen", fields, primary_keys=["id"], options={"bucket": "1"})
    pp_write(table, [dict(id=i, small=i * 10, gone=f"g{i}", keep=f"k{i}") for i in range(5)])
    catalog().alter_table(
        "public.ev_widen",
        [SchemaChange.drop_column("gone"), SchemaChange.update_column_type("small", AtomicType("BIGINT"))],
    )
    table = pp_table("ev_widen")
    assert [f.name for f in table.fields] == ["id", "small", "keep"]
    pp_write(table, [dict(id=1, small=2**40, keep="k1-new"), dict(id=9, small=-(2**40), keep=None)])
    expected = {i: dict(id=i, small=i * 10, keep=f"k{i}") for i in range(5)}
    expected[1] = dict(id=1, small=2**40, keep="k1-new")
    expected[9] = dict(id=9, small=-(2**40), keep=None)
    expected = list(expected.values())
    assert_same_rows(pp_read("ev_widen"), expected, ["id"], "pypaimon")
    with connect() as conn:
        assert_same_rows(pg_rows(conn, "SELECT * FROM ev_widen"), expected, ["id"], "tarn")
        assert conn.execute("SELECT sum(small) FROM ev_widen").fetchone()[0] == sum(r["small"] for r in expected)


def test_schema_evolution_after_tarn_writes():
    """tarn wrote the old files; pypaimon evolves the schema; tarn reads and writes on."""
    with connect() as conn:
        conn.execute("CREATE TABLE ev_tarn (id INT PRIMARY KEY, label TEXT) WITH (bucket = 2)")
        conn.execute("INSERT INTO ev_tarn SELECT x, 'l' || x FROM generate_series(1, 20) AS g(x)")
    catalog().alter_table(
        "public.ev_tarn",
        [SchemaChange.add_column("flag", AtomicType("BOOLEAN")),
         SchemaChange.rename_column("label", "title")],
    )
    with connect() as conn:
        conn.execute("INSERT INTO ev_tarn VALUES (21, 't21', true)")
    pp_write("ev_tarn", [dict(id=3, title="pp3", flag=False)])
    expected = {i: dict(id=i, title=f"l{i}", flag=None) for i in range(1, 21)}
    expected[21] = dict(id=21, title="t21", flag=True)
    expected[3] = dict(id=3, title="pp3", flag=False)
    assert_same_rows(both_read("ev_tarn", ["id"]), list(expected.values()), ["id"], "evolved")


def test_schema_evolution_by_tarn_read_by_pypaimon():
    """tarn's ALTER TABLE writes the next schema-N by Paimon's rules: pypaimon reads the table
    after every kind of change (old files by field id), and writes under the newest schema."""
    with connect() as conn:
        conn.execute(
            "CREATE TABLE ev_alt (id BIGINT PRIMARY KEY, status TEXT, qty INT, score DOUBLE PRECISION)"
            " WITH (bucket = 2)"
        )
        conn.execute(
            "INSERT INTO ev_alt SELECT x, 's' || x, x, x / 2.0 FROM generate_series(1, 10) AS g(x)"
        )
    expected = {i: dict(id=i, status=f"s{i}", qty=i, score=i / 2) for i in range(1, 11)}

    def check(label, sql):
        with connect() as conn:
            conn.execute(sql)
        rows = list(expected.values())
        assert_same_rows(pp_read("ev_alt"), rows, ["id"], f"pypaimon after {label}")
        with connect() as conn:
            assert_same_rows(pg_rows(conn, "SELECT * FROM ev_alt"), rows, ["id"], f"tarn after {label}")

    for r in expected.values():
        r["channel"] = None
    check("add", "ALTER TABLE ev_alt ADD COLUMN channel TEXT")
    with connect() as conn:
        conn.execute("INSERT INTO ev_alt VALUES (11, 's11', 11, 5.5, 'web')")
    expected[11] = dict(id=11, status="s11", qty=11, score=5.5, channel="web")

    def rename(r):
        r["state"] = r.pop("status")
    for r in expected.values():
        rename(r)
    check("rename", "ALTER TABLE ev_alt RENAME COLUMN status TO state")
    check("widen", "ALTER TABLE ev_alt ALTER COLUMN qty TYPE BIGINT")
    for r in expected.values():
        del r["score"]
    check("drop", "ALTER TABLE ev_alt DROP COLUMN score")
    check("comment", "COMMENT ON COLUMN ev_alt.qty IS 'pieces'")
    table = pp_table("ev_alt")
    assert [f.name for f in table.fields] == ["id", "state", "qty", "channel"]
    assert [f.id for f in table.fields] == [0, 1, 2, 4], "field ids kept, the added one new"
    assert str(table.fields[2].type).startswith("BIGINT")
    assert table.fields[2].description == "pieces"
    # pypaimon writes under tarn's newest schema; tarn reads it, old rows and new.
    pp_write(table, [dict(id=3, state="pp3", qty=2**40, channel="pp"), dict(id=12, state="s12", qty=None, channel=None)])
    expected[3] = dict(id=3, state="pp3", qty=2**40, channel="pp")
    expected[12] = dict(id=12, state="s12", qty=None, channel=None)
    assert_same_rows(both_read("ev_alt", ["id"]), list(expected.values()), ["id"], "written by both")
    # RENAME TO moves the table's folder: pypaimon finds it under the new name.
    with connect() as conn:
        conn.execute("ALTER TABLE ev_alt RENAME TO ev_alt2")
    assert_same_rows(pp_read("ev_alt2"), list(expected.values()), ["id"], "pypaimon after rename")


# ---------------------------------------------------------------------------------------------
# 5. an append table written by both


def test_append_table_written_by_both_tarn_created():
    with connect() as conn:
        conn.execute(
            "CREATE TABLE ap_tarn (day DATE, who TEXT, n INT, tags TEXT[]) PARTITIONED BY (day)"
        )
        conn.execute(
            "INSERT INTO ap_tarn VALUES ('2026-12-01', 'tarn', 1, ARRAY['a']), "
            "('2026-12-01', 'tarn', 1, ARRAY['a']), (NULL, NULL, NULL, NULL)"
        )
    pp_rows_written = [dict(day=date(2026, 12, 1), who="tarn", n=1, tags=["a"]),
                       dict(day=date(2026, 12, 2), who="pp", n=2, tags=[]),
                       dict(day=None, who="pp", n=None, tags=None)]
    pp_write("ap_tarn", pp_rows_written)
    with connect() as conn:
        conn.execute(
            "INSERT INTO ap_tarn SELECT DATE '2026-12-01' + (x % 2), 'tarn', x, ARRAY['g'] "
            "FROM generate_series(1, 100) AS g(x)"
        )
    rows = both_read("ap_tarn", ["day", "who", "n"])
    assert len(rows) == 3 + 3 + 100
    assert sum(1 for r in rows if r == dict(day=date(2026, 12, 1), who="tarn", n=1, tags=["a"])) == 3
    assert pp_snapshot_ids("ap_tarn") == [1, 2, 3]


def test_append_table_written_by_both_pypaimon_created():
    fields = [("k", pa.int64()), ("v", pa.string()), ("seen", pa.timestamp("us", tz="UTC"))]
    table = pp_create("ap_pp", fields, partition_keys=["v"])
    first = [dict(k=i, v="x" if i % 2 else "y", seen=dt(2026, 1, 1, tzinfo=UTC)) for i in range(50)]
    pp_write(table, first)
    with connect() as conn:
        conn.execute("INSERT INTO ap_pp VALUES (1, 'x', '2026-01-01 00:00:00+00'), (NULL, NULL, NULL)")
        conn.execute("INSERT INTO ap_pp SELECT x, 'z', NULL FROM generate_series(1, 10) AS g(x)")
    pp_write(table, [dict(k=1, v="x", seen=dt(2026, 1, 1, tzinfo=UTC))])
    rows = both_read("ap_pp", ["k", "v"])
    assert len(rows) == 50 + 2 + 10 + 1
    assert sum(1 for r in rows if r["k"] == 1 and r["v"] == "x") == 3
