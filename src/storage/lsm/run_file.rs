//! A sorted run written as one data file: encoding (Paimon's key-value Parquet layout, its
//! statistics) and storing it with its [`DataFileMeta`].
//!
//! Two writers share it: commits write level-0 files of fresh rows, numbered as they are written
//! ([`encode_folded`]); compaction writes merged rows that keep their sequence numbers, at the
//! level its plan chose ([`encode_merged`]).
//!
//! Either way the stored file is a [`NewFile`] until a commit publishes it.
//!
//! Both write the table's file index with each file (`file-index.bloom-filter.columns`, see
//! [`crate::storage::spec::file_index`]): in the manifest entry when small, else as `<file>.index` beside it.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Int8Array, Int64Array, RecordBatch};
use arrow::datatypes::Int64Type;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::{self, kind};
use crate::storage::lsm::memrun::Folded;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::file_index::{self, BuiltIndex};
use crate::storage::spec::manifest::{DataFileMeta, FileSource, SimpleStats};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::stats;

/// A data file written and stored but not yet committed: by a transaction (a spilled or
/// committed run, a changelog file) or by a compaction (an output file).
#[derive(Debug, Clone)]
pub struct NewFile {
    pub partition: Vec<u8>,
    pub partition_values: Vec<Datum>,
    pub bucket: i32,
    pub total_buckets: i32,
    pub meta: DataFileMeta,
}

/// One sorted run, encoded.
pub(crate) struct EncodedRun {
    bytes: Vec<u8>,
    row_count: i64,
    min_seq: i64,
    max_seq: i64,
    min_key: Vec<u8>,
    max_key: Vec<u8>,
    key_stats: SimpleStats,
    value_stats: SimpleStats,
    delete_count: i64,
    index: Option<BuiltIndex>,
}

impl EncodedRun {
    /// The run without its file index (changelog files have none: Java indexes data files).
    pub(crate) fn without_index(mut self) -> Self {
        self.index = None;
        self
    }
}

/// Numbers and encodes a folded run as one data file (with `_KEY_*`, `_SEQUENCE_NUMBER`,
/// `_VALUE_KIND` for primary-key tables). `reserve(n)` hands out the first of `n` sequence
/// numbers.
pub(crate) fn encode_folded(
    schema: &TableSchema,
    folded: &Folded,
    reserve: impl FnOnce(i64) -> i64,
) -> Result<EncodedRun, StorageError> {
    let row_count = folded.rows.num_rows() as i64;
    let first_seq = reserve(row_count);
    let sequences = Int64Array::from_iter_values(first_seq..first_seq + row_count);
    encode(
        schema,
        &folded.keys,
        &sequences,
        &folded.kinds,
        folded.rows.columns(),
    )
}

/// Encodes rows of a primary-key table in the full read layout (keys, `_SEQUENCE_NUMBER`,
/// `_VALUE_KIND`, every column), sorted by key, keeping their sequence numbers.
pub(crate) fn encode_merged(
    schema: &TableSchema,
    batch: &RecordBatch,
    key_count: usize,
) -> Result<EncodedRun, StorageError> {
    let columns = batch.columns();
    encode(
        schema,
        &columns[..key_count],
        columns[key_count].as_primitive::<Int64Type>(),
        columns[key_count + 1].as_primitive(),
        &columns[key_count + 2..],
    )
}

fn encode(
    schema: &TableSchema,
    keys: &[ArrayRef],
    sequences: &Int64Array,
    kinds: &Int8Array,
    values: &[ArrayRef],
) -> Result<EncodedRun, StorageError> {
    let row_count = sequences.len() as i64;
    let has_key = schema.has_primary_key();
    let mut columns: Vec<ArrayRef> = Vec::new();
    if has_key {
        columns.extend(keys.iter().cloned());
        columns.push(Arc::new(sequences.clone()));
        columns.push(Arc::new(kinds.clone()));
    }
    columns.extend(values.iter().cloned());
    let file_schema = data_file::file_arrow_schema(schema)?;
    let columns = crate::storage::lsm::memrun::cast_to_fields(columns, file_schema.fields())?;
    // Over the values as written (every row, deletes too, as Java's writer indexes them).
    let value_offset = if has_key { keys.len() + 2 } else { 0 };
    let index = file_index::build(schema, &columns[value_offset..])?;
    let file_batch = RecordBatch::try_new(file_schema, columns)?;
    let bytes = data_file::encode_file(&file_batch, schema.core_options().zstd_level())?;

    let value_types: Vec<_> = schema.fields.iter().map(|f| f.data_type.clone()).collect();
    let value_stats = stats::simple_stats(values, &value_types, true)?;
    let key_types: Vec<_> = schema
        .trimmed_primary_keys()
        .iter()
        .map(|k| schema.type_of(k).clone())
        .collect();
    let (min_key, max_key, key_stats) = if has_key && row_count > 0 {
        let at = |row: usize| -> Result<Vec<Datum>, StorageError> {
            keys.iter()
                .zip(&key_types)
                .map(|(c, t)| Datum::from_array(c, row, t))
                .collect()
        };
        (
            binary_row::serialize(&at(0)?, &key_types),
            binary_row::serialize(&at(row_count as usize - 1)?, &key_types),
            stats::simple_stats(keys, &key_types, false)?,
        )
    } else {
        (
            binary_row::serialize(&[], &[]),
            binary_row::serialize(&[], &[]),
            SimpleStats::empty(),
        )
    };
    let delete_count = kinds.values().iter().filter(|k| !kind::is_add(**k)).count() as i64;
    Ok(EncodedRun {
        bytes,
        row_count,
        min_seq: arrow::compute::min(sequences).unwrap_or(0),
        max_seq: arrow::compute::max(sequences).unwrap_or(-1),
        min_key,
        max_key,
        key_stats,
        value_stats,
        delete_count,
        index,
    })
}

/// Writes `run` as file `name` of the bucket at `level`, and describes it.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn store(
    table: &Table,
    partition_values: Vec<Datum>,
    partition_bytes: Vec<u8>,
    bucket: i32,
    name: String,
    run: EncodedRun,
    level: i32,
    source: FileSource,
) -> Result<NewFile, StorageError> {
    let dir = table.bucket_path(&partition_values, bucket);
    let path = dir.clone().join(name.as_str());
    let size = run.bytes.len() as i64;
    let (mut embedded_file_index, mut extra_files) = (None, Vec::new());
    match run.index {
        Some(BuiltIndex {
            bytes,
            embedded: true,
        }) => embedded_file_index = Some(bytes),
        Some(BuiltIndex {
            bytes,
            embedded: false,
        }) => {
            let index_name = file_index::index_file_name(&name);
            table
                .io()
                .write(&dir.clone().join(index_name.as_str()), bytes)
                .await?;
            extra_files.push(index_name);
        }
        None => {}
    }
    if let Err(e) = table.io().write(&path, run.bytes).await {
        for extra in &extra_files {
            let _ = table.io().delete(&dir.clone().join(extra.as_str())).await;
        }
        return Err(e);
    }
    Ok(NewFile {
        partition: partition_bytes,
        partition_values,
        bucket,
        total_buckets: table.schema().bucket(),
        meta: DataFileMeta {
            file_name: name,
            file_size: size,
            row_count: run.row_count,
            min_key: run.min_key,
            max_key: run.max_key,
            key_stats: run.key_stats,
            value_stats: run.value_stats,
            min_sequence_number: run.min_seq,
            max_sequence_number: run.max_seq,
            schema_id: table.schema().id,
            level,
            extra_files,
            creation_time: Some(table.clock().now_millis()),
            delete_row_count: Some(run.delete_count),
            embedded_file_index,
            file_source: Some(source),
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        },
    })
}
