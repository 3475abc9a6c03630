"""Oracle for tests/manifest_compat.rs: how pypaimon and fastavro see Paimon manifest files.

    manifest_oracle.py create WAREHOUSE
        pypaimon creates public.orders (partitioned primary-key table, 2 buckets) in WAREHOUSE,
        commits a few times (the last commit overwrites one partition, so there are DELETE
        entries), then prints every manifest-list-* and manifest-* file of the table as
        fastavro reads it.

    manifest_oracle.py read WAREHOUSE MANIFEST_NAME MANIFEST_LIST_NAME
        prints the two named files of public.orders' manifest directory as fastavro reads them
        and as pypaimon's own readers (ManifestFileManager.read, ManifestListManager.read) do.

Output is one JSON object on the last line of stdout. Records use the Avro field names; bytes
are lower-case hex, timestamps epoch milliseconds, null is null.
"""

import datetime
import json
import os
import sys

import fastavro

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def plain(value):
    """A fastavro value as JSON."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return (value - EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def avro_file(path):
    with open(path, 'rb') as f:
        reader = fastavro.reader(f)
        records = [plain(r) for r in reader]
        return {
            'codec': reader.codec,
            'schema': reader.metadata.get('avro.schema'),
            'metadata_keys': sorted(reader.metadata.keys()),
            'records': records,
        }


def catalog(warehouse):
    from pypaimon import CatalogFactory
    return CatalogFactory.create({'warehouse': warehouse})


def create(warehouse):
    import decimal

    import pyarrow as pa
    from pypaimon import Schema

    cat = catalog(warehouse)
    cat.create_database('public', True)
    pa_schema = pa.schema([
        ('id', pa.int64()), ('customer', pa.string()), ('amount', pa.decimal128(12, 2)),
        ('placed_at', pa.timestamp('us')), ('dt', pa.string())])
    schema = Schema.from_pyarrow_schema(
        pa_schema, partition_keys=['dt'], primary_keys=['id', 'dt'], options={'bucket': '2'})
    cat.create_table('public.orders', schema, False)
    table = cat.get_table('public.orders')

    def commit(ids, dts, overwrite=None):
        builder = table.new_batch_write_builder()
        if overwrite is not None:
            builder = builder.overwrite(overwrite)
        write = builder.new_write()
        commit = builder.new_commit()
        n = len(ids)
        data = pa.table({
            'id': ids,
            'customer': ['c%d' % i for i in ids],
            'amount': [decimal.Decimal('%d.25' % i) for i in ids],
            'placed_at': [datetime.datetime(2026, 12, 1, 10, 0, i % 60) for i in ids],
            'dt': dts,
        }, schema=pa_schema)
        assert data.num_rows == n
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()

    commit([1, 2, 3, 4], ['2026-12-01', '2026-12-01', '2026-12-02', '2026-12-02'])
    commit([2, 5], ['2026-12-01', '2026-12-03'])
    commit([3, 6, 7], ['2026-12-02', '2026-12-02', '2026-12-02'], overwrite={'dt': '2026-12-02'})

    manifest_dir = os.path.join(table.table_path, 'manifest')
    files = {}
    for name in sorted(os.listdir(manifest_dir)):
        if name.startswith('manifest-'):
            files[name] = avro_file(os.path.join(manifest_dir, name))
    return {'table_path': str(table.table_path), 'manifest_dir': manifest_dir, 'files': files}


def row_hex(row):
    from pypaimon.table.row.generic_row import GenericRowSerializer
    return GenericRowSerializer.to_bytes(row).hex()


def stats_json(stats):
    return {
        '_MIN_VALUES': row_hex(stats.min_values),
        '_MAX_VALUES': row_hex(stats.max_values),
        '_NULL_COUNTS': stats.null_counts,
    }


def entry_json(entry):
    f = entry.file
    return {
        '_KIND': entry.kind,
        '_PARTITION': row_hex(entry.partition),
        '_BUCKET': entry.bucket,
        '_TOTAL_BUCKETS': entry.total_buckets,
        '_FILE': {
            '_FILE_NAME': f.file_name,
            '_FILE_SIZE': f.file_size,
            '_ROW_COUNT': f.row_count,
            '_MIN_KEY': row_hex(f.min_key),
            '_MAX_KEY': row_hex(f.max_key),
            '_KEY_STATS': stats_json(f.key_stats),
            '_VALUE_STATS': stats_json(f.value_stats),
            '_MIN_SEQUENCE_NUMBER': f.min_sequence_number,
            '_MAX_SEQUENCE_NUMBER': f.max_sequence_number,
            '_SCHEMA_ID': f.schema_id,
            '_LEVEL': f.level,
            '_EXTRA_FILES': f.extra_files,
            '_CREATION_TIME': None if f.creation_time is None else f.creation_time.get_millisecond(),
            '_DELETE_ROW_COUNT': f.delete_row_count,
            '_EMBEDDED_FILE_INDEX': None if f.embedded_index is None else f.embedded_index.hex(),
            '_FILE_SOURCE': f.file_source,
            '_VALUE_STATS_COLS': f.value_stats_cols,
            '_EXTERNAL_PATH': f.external_path,
            '_FIRST_ROW_ID': f.first_row_id,
            '_WRITE_COLS': f.write_cols,
            '_WRITE_COLS_SEQUENCES': f.write_cols_sequences,
        },
    }


def meta_json(meta):
    return {
        '_FILE_NAME': meta.file_name,
        '_FILE_SIZE': meta.file_size,
        '_NUM_ADDED_FILES': meta.num_added_files,
        '_NUM_DELETED_FILES': meta.num_deleted_files,
        '_PARTITION_STATS': stats_json(meta.partition_stats),
        '_SCHEMA_ID': meta.schema_id,
        '_MIN_BUCKET': meta.min_bucket,
        '_MAX_BUCKET': meta.max_bucket,
        '_MIN_LEVEL': meta.min_level,
        '_MAX_LEVEL': meta.max_level,
        '_MIN_ROW_ID': meta.min_row_id,
        '_MAX_ROW_ID': meta.max_row_id,
        # pypaimon-only fields (not in Paimon Java's ManifestFileMeta schema)
        '_TOTAL_BUCKETS': meta.total_buckets,
        '_EXTRA_FILES': meta.extra_files,
    }


def read(warehouse, manifest_name, list_name):
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    table = catalog(warehouse).get_table('public.orders')
    manifest_dir = os.path.join(table.table_path, 'manifest')
    entries = ManifestFileManager(table).read(manifest_name, drop_stats=False)
    metas = ManifestListManager(table).read(list_name)
    return {
        'fastavro': {
            'manifest': avro_file(os.path.join(manifest_dir, manifest_name)),
            'manifest_list': avro_file(os.path.join(manifest_dir, list_name)),
        },
        'pypaimon': {
            'manifest': [entry_json(e) for e in entries],
            'manifest_list': [meta_json(m) for m in metas],
        },
    }


def main(argv):
    if len(argv) == 3 and argv[1] == 'create':
        out = create(argv[2])
    elif len(argv) == 5 and argv[1] == 'read':
        out = read(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__)
    sys.stdout.write('\n' + json.dumps(out) + '\n')


if __name__ == '__main__':
    main(sys.argv)
