"""Bloom-filter file indexes ('file-index.bloom-filter.columns') of data files tarn writes, seen
from outside tarn: the manifest entries as pypaimon decodes them (`_EMBEDDED_FILE_INDEX`,
`_EXTRA_FILES`), the index bytes decoded here from Paimon Java's layout (FileIndexFormat,
BloomFilterFileIndex, BloomFilter64, FastHash) and rebuilt here bit for bit from the values of
the data file, with a transcription of the Java code that shares nothing with tarn's; and
pypaimon (which ignores file indexes) reading the tables. Paimon Java readers skip a file whose
filter says "no", so a filter that differs from Java's would lose rows there.

The tables are created by pypaimon with the options, written by tarn (INSERT), and also by
pypaimon (files without indexes, which tarn must still read).

Run by tests/python.rs against a running tarn (TARN_PORT) over the warehouse TARN_WAREHOUSE.
"""

import math
import os
import struct

import pyarrow as pa
import pyarrow.parquet as pq

from test_pypaimon import WAREHOUSE, connect, pg_rows, pp_create, pp_read, pp_table, pp_write

MAGIC = 1493475289347502
M64 = (1 << 64) - 1


# --- Java's algorithms, transcribed -----------------------------------------------------------


def s64(x):
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def s32(x):
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def long_hash(key):
    """FastHash.FastHashVisitor.getLongHash (Thomas Wang's 64-bit hash), Java long arithmetic."""
    key = s64(key)
    key = s64((~key) + (key << 21))
    key = s64(key ^ (key >> 24))
    key = s64(key + (key << 3) + (key << 8))
    key = s64(key ^ (key >> 14))
    key = s64(key + (key << 2) + (key << 4))
    key = s64(key ^ (key >> 28))
    return s64(key + (key << 31))


P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
P4, P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc, lane):
    return (_rotl((acc + lane * P2) & M64, 31) * P1) & M64


def xxh64(data, seed=0):
    """XXH64 (what Java's LongHashFunction.xx() computes), as a signed long."""
    n, i = len(data), 0
    lane = lambda at, width: int.from_bytes(data[at : at + width], "little")  # noqa: E731
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed, (seed - P1) & M64]
        while i + 32 <= n:
            v = [_round(v[j], lane(i + 8 * j, 8)) for j in range(4)]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for x in v:
            h = ((h ^ _round(0, x)) * P1 + P4) & M64
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        h = (_rotl(h ^ _round(0, lane(i, 8)), 27) * P1 + P4) & M64
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ ((lane(i, 4) * P1) & M64), 23) * P2 + P3) & M64
        i += 4
    while i < n:
        h = (_rotl(h ^ ((data[i] * P5) & M64), 11) * P1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    h ^= h >> 32
    return s64(h)


def filter_size(items, fpp):
    """BloomFilter64(items, fpp): (numBits, numHashFunctions)."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    num_bits = nb + (8 - int(math.fmod(nb, 8)))
    return num_bits, max(1, int(round(num_bits / items * math.log(2))))


def positions(hash64, num_bits, k):
    """BloomFilter64.addHash / testHash: the bits of one hash."""
    h1, h2 = s32(hash64), s32((hash64 & M64) >> 32)
    out = []
    for i in range(1, k + 1):
        c = s32(h1 + i * h2)
        if c < 0:
            c = ~c
        out.append(int(math.fmod(c, num_bits)))
    return out


def java_filter(hashes, items, fpp):
    """BloomFilterFileIndex.Writer.serializedBytes of these hashes."""
    num_bits, k = filter_size(items, fpp)
    bits = bytearray(num_bits // 8)
    for h in hashes:
        for p in positions(h, num_bits, k):
            bits[p >> 3] |= 1 << (p & 7)
    return struct.pack(">i", k) + bytes(bits)


def filter_has(body, hash64):
    k = struct.unpack(">i", body[:4])[0]
    bits = body[4:]
    return all(bits[p >> 3] & (1 << (p & 7)) for p in positions(hash64, len(bits) * 8, k))


def read_utf(buf, at):
    """DataInput.readUTF (modified UTF-8; ASCII names here)."""
    (length,) = struct.unpack_from(">H", buf, at)
    return buf[at + 2 : at + 2 + length].decode("utf-8"), at + 2 + length


def decode_index(buf):
    """FileIndexFormat.Reader: {column: {index type: body bytes}}, checking the layout."""
    magic, version, head_length, columns = struct.unpack_from(">qiii", buf, 0)
    assert magic == MAGIC, magic
    assert version == 1
    at = 20
    out = {}
    for _ in range(columns):
        column, at = read_utf(buf, at)
        (count,) = struct.unpack_from(">i", buf, at)
        at += 4
        for _ in range(count):
            index_type, at = read_utf(buf, at)
            start, length = struct.unpack_from(">ii", buf, at)
            at += 8
            assert start >= head_length and start + length <= len(buf), (start, length)
            out.setdefault(column, {})[index_type] = buf[start : start + length]
    (redundant,) = struct.unpack_from(">i", buf, at)
    assert redundant == 0
    assert at + 4 == head_length, (at, head_length)
    # Bodies follow the head back to back.
    assert head_length + sum(len(b) for c in out.values() for b in c.values()) == len(buf)
    return out


# --- helpers --------------------------------------------------------------------------------


def data_files(name):
    """DataFileMeta of every live file, as pypaimon plans the table."""
    splits = pp_table(name).new_read_builder().new_scan().plan().splits()
    return [f for s in splits for f in s.files]


def bucket_dir(name):
    return os.path.join(WAREHOUSE, "public.db", name, "bucket-0")


def file_column(name, file_name, column):
    return pq.read_table(os.path.join(bucket_dir(name), file_name), columns=[column]).column(
        0
    ).to_pylist()


def check_filters(name, meta, index_bytes, columns):
    """The file's index holds one Java bloom filter per column, equal to one built here."""
    index = decode_index(index_bytes)
    assert sorted(index) == sorted(c for c, _, _, _ in columns)
    for column, items, fpp, hash_of in columns:
        assert list(index[column]) == ["bloom-filter"]
        body = index[column]["bloom-filter"]
        values = [v for v in file_column(name, meta.file_name, column) if v is not None]
        assert values, "the file holds values"
        assert body == java_filter([hash_of(v) for v in values], items, fpp), column
        num_bits, k = filter_size(items, fpp)
        assert struct.unpack(">i", body[:4])[0] == k
        assert len(body) == 4 + num_bits // 8


def str_hash(v):
    return xxh64(v.encode("utf-8"))


def test_java_hash_vectors():
    # Vectors Java's FastHash gives (as apache/paimon-cpp's compatibility tests record them).
    assert long_hash(1) & M64 == 0x5BCA7C69B794F8CE
    assert long_hash(-1) & M64 == 0x5BCA868437950D03
    assert xxh64(b"") & M64 == 0xEF46DB3751D8E999
    assert xxh64(b"Have a nice day!") & M64 == 0xE663266D57D776C2
    assert xxh64("我是一个粉刷匠".encode()) & M64 == 0x9F01FCD3F19877E6
    # Java writer output for "a", "b", "" with items 10, fpp 0.02.
    assert java_filter([str_hash(s) for s in ["a", "b", ""]], 10, 0.02) == bytes(
        [0, 0, 0, 6, 0, 32, 32, 3, 208, 32, 0, 64, 73, 16, 201]
    )


FIELDS = [
    pa.field("id", pa.int64(), nullable=False),
    ("name", pa.string()),
    ("n", pa.int32()),
]


def test_tarn_embeds_small_filters_in_the_manifest():
    name = "fi_small"
    options = {
        "bucket": "1",
        "write-only": "true",
        "file-index.bloom-filter.columns": "id,name",
        "file-index.bloom-filter.id.items": "100",
        "file-index.bloom-filter.name.items": "50",
        "file-index.bloom-filter.name.fpp": "0.05",
    }
    pp_create(name, FIELDS, primary_keys=["id"], options=options)
    long_name = "a name longer than thirty-two bytes, for XXH64's long path"
    with connect() as conn:
        conn.execute(f"INSERT INTO {name} VALUES (1, 'one', 1), (3, 'three', 3), (5, NULL, 5)")
        conn.execute(f"INSERT INTO {name} VALUES (2, 'two', 2), (4, %s, 4)", [long_name])
        conn.execute(f"UPDATE {name} SET n = 30 WHERE id = 3")
        conn.execute(f"DELETE FROM {name} WHERE id = 2")
    files = data_files(name)
    assert len(files) == 4
    for f in files:
        assert f.extra_files == [], f.extra_files
        assert f.embedded_index is not None
        assert len(f.embedded_index) <= 500
        check_filters(
            name,
            f,
            f.embedded_index,
            [("id", 100, 0.1, long_hash), ("name", 50, 0.05, str_hash)],
        )
    # Absent keys are ruled out by some file (the filters are not all ones).
    ids = [v for f in files for v in file_column(name, f.file_name, "id")]
    bodies = [decode_index(f.embedded_index)["id"]["bloom-filter"] for f in files]
    assert any(not filter_has(b, long_hash(7)) for b in bodies)
    assert all(
        filter_has(decode_index(f.embedded_index)["id"]["bloom-filter"], long_hash(v))
        for f in files
        for v in file_column(name, f.file_name, "id")
    )
    assert sorted(set(ids)) == [1, 2, 3, 4, 5]

    expected = [
        dict(id=1, name="one", n=1),
        dict(id=3, name="three", n=30),
        dict(id=4, name=long_name, n=4),
        dict(id=5, name=None, n=5),
    ]
    assert sorted(pp_read(name), key=lambda r: r["id"]) == expected

    # pypaimon's own commit (its files carry no index); tarn's lookups still find every row.
    pp_write(name, [dict(id=6, name="six", n=6), dict(id=1, name="uno", n=11)])
    expected[0] = dict(id=1, name="uno", n=11)
    expected.append(dict(id=6, name="six", n=6))
    with connect() as conn:
        for row in expected:
            got = pg_rows(conn, f"SELECT id, name, n FROM {name} WHERE id = %s", [row["id"]])
            assert got == [row]
        for absent in [2, 7, 100]:
            assert pg_rows(conn, f"SELECT id FROM {name} WHERE id = %s", [absent]) == []
        got = pg_rows(conn, f"SELECT id FROM {name} WHERE id IN (2, 3, 6) ORDER BY id")
        assert got == [dict(id=3), dict(id=6)]
    assert sorted(pp_read(name), key=lambda r: r["id"]) == expected


def test_tarn_writes_big_filters_to_index_files():
    name = "fi_big"
    options = {
        "bucket": "1",
        "write-only": "true",
        # Paimon's default size: 1,000,000 items, fpp 0.1 (about 600 KB per filter).
        "file-index.bloom-filter.columns": "id,n",
    }
    pp_create(name, FIELDS, primary_keys=["id"], options=options)
    with connect() as conn:
        conn.execute(f"INSERT INTO {name} SELECT g, 'n' || g, g * 2 FROM generate_series(1, 99, 2) g")
        conn.execute(f"INSERT INTO {name} SELECT g, 'n' || g, g * 2 FROM generate_series(2, 100, 2) g")
        explain = pg_rows(conn, f"EXPLAIN SELECT * FROM {name} WHERE id = 42")
        scan = next(v for r in explain for v in r.values() if "PaimonScanExec" in str(v))
        assert "files=1, files_pruned=1," in scan, scan
        assert pg_rows(conn, f"SELECT n FROM {name} WHERE id = 42") == [dict(n=84)]
    files = data_files(name)
    assert len(files) == 2
    for f in files:
        assert f.embedded_index is None
        # Java's name for it: the data file's name with '.index' appended, in the same folder.
        assert f.extra_files == [f.file_name + ".index"], f.extra_files
        with open(os.path.join(bucket_dir(name), f.extra_files[0]), "rb") as fh:
            index = fh.read()
        assert len(index) > 500
        check_filters(
            name,
            f,
            index,
            [
                ("id", 1_000_000, 0.1, long_hash),
                ("n", 1_000_000, 0.1, lambda v: long_hash(v)),
            ],
        )
    rows = sorted(pp_read(name), key=lambda r: r["id"])
    assert rows == [dict(id=i, name=f"n{i}", n=2 * i) for i in range(1, 101)]
