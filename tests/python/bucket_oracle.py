"""Oracle for tests/bucket_compat.rs: pypaimon's own BinaryRow serializer and bucket function.

Usage: bucket_oracle.py INPUT.json OUTPUT.json

INPUT holds cases written by the Rust test:
  {"cases": [{"name", "fields": [<Paimon schema field JSON>...],
              "columns": [{"arrow": <tag>, "values": [...]}...],
              "bucket_counts": [n...], "extractor_rows": k, "serialize_rows": m}]}
Value encodings per Arrow tag: bool/int*/date32/time32ms: JSON numbers; float32/float64: the IEEE
bits as an unsigned integer; decimal128(p,s): the unscaled value as a string; utf8: a string;
binary: hex; timestamp_{ms,us}[_utc]: the integer in that unit. null is NULL.

For every case OUTPUT gets, computed by pypaimon code (nothing re-implemented here):
  hashes      RowKeyExtractor._binary_row_hash_code of every row (BinaryRow hash, as signed int)
  buckets     {n: [...]} write.row_key_extractor._bucket_from_hash(hash, n) of every row
  extractor   {n: [...]} FixedBucketRowKeyExtractor(schema with bucket=n)
              .extract_partition_bucket_batch(batch) over the first `extractor_rows` rows
  serialized  GenericRowSerializer.to_bytes(GenericRow(values, fields)) (hex) of the first
              `serialize_rows` rows
"""

import json
import struct
import sys
from decimal import Context, Decimal

import numpy as np
import pyarrow as pa
from pypaimon.schema.data_types import DataField
from pypaimon.schema.table_schema import TableSchema
from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer
from pypaimon.table.row.internal_row import RowKind
from pypaimon.write.row_key_extractor import (
    FixedBucketRowKeyExtractor,
    RowKeyExtractor,
    _bucket_from_hash,
)

_EXACT = Context(prec=200)


def to_arrow(column):
    tag = column["arrow"]
    values = column["values"]
    mask = np.array([v is None for v in values], dtype=bool)
    if tag == "bool":
        return pa.array(values, pa.bool_())
    if tag in ("int8", "int16", "int32", "int64"):
        return pa.array(values, getattr(pa, tag)())
    if tag in ("float32", "float64"):
        bits_type, float_type = (
            (np.uint32, np.float32) if tag == "float32" else (np.uint64, np.float64)
        )
        bits = np.array([0 if v is None else v for v in values], dtype=bits_type)
        return pa.array(bits.view(float_type), mask=mask)
    if tag.startswith("decimal128("):
        precision, scale = (int(x) for x in tag[len("decimal128("):-1].split(","))
        decimals = [
            None if v is None else Decimal(int(v)).scaleb(-scale, context=_EXACT)
            for v in values
        ]
        return pa.array(decimals, pa.decimal128(precision, scale))
    if tag == "utf8":
        return pa.array(values, pa.string())
    if tag == "binary":
        return pa.array([None if v is None else bytes.fromhex(v) for v in values], pa.binary())
    if tag == "date32":
        return pa.array(values, pa.int32()).cast(pa.date32())
    if tag == "time32ms":
        return pa.array(values, pa.int32()).cast(pa.time32("ms"))
    if tag.startswith("timestamp_"):
        parts = tag.split("_")
        tz = "UTC" if len(parts) == 3 else None
        return pa.array(values, pa.int64()).cast(pa.timestamp(parts[1], tz=tz))
    raise ValueError(f"unknown arrow tag {tag}")


def signed32(h):
    return h - (1 << 32) if h >= (1 << 31) else h


def run_case(case):
    fields = [DataField.from_dict(f) for f in case["fields"]]
    names = [f.name for f in fields]
    arrays = [to_arrow(c) for c in case["columns"]]
    batch = pa.RecordBatch.from_arrays(arrays, names=names)
    rows = batch.num_rows

    # Python values of every row, as the extractor reads them (`col[row].as_py()`).
    columns = [batch.column(i) for i in range(len(names))]
    values = [tuple(col[r].as_py() for col in columns) for r in range(rows)]

    hashes = [RowKeyExtractor._binary_row_hash_code(v, fields) for v in values]
    buckets = {
        str(n): [_bucket_from_hash(h, n) for h in hashes] for n in case["bucket_counts"]
    }

    extractor = {}
    head = batch.slice(0, min(rows, case["extractor_rows"]))
    for n in case["bucket_counts"]:
        schema = TableSchema(
            fields=fields,
            partition_keys=[],
            primary_keys=[],
            options={"bucket": str(n), "bucket-key": ",".join(names)},
        )
        _, got = FixedBucketRowKeyExtractor(schema).extract_partition_bucket_batch(head)
        extractor[str(n)] = list(got)

    serialized = [
        GenericRowSerializer.to_bytes(GenericRow(list(v), fields, RowKind.INSERT)).hex()
        for v in values[: case["serialize_rows"]]
    ]
    return {
        "name": case["name"],
        "hashes": [signed32(h) for h in hashes],
        "buckets": buckets,
        "extractor": extractor,
        "serialized": serialized,
    }


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    out = {"cases": [run_case(c) for c in cases]}
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
