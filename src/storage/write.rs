//! [`TableWrite`]: one statement's writes to one table — per-bucket memtables, sorted level-0
//! files, and the duplicate-key check of INSERT.
//!
//! Rows are routed to (partition, bucket) with Paimon's bucket function and buffered per bucket.
//! When the buffered bytes exceed the write buffer (`write-buffer-size`, default
//! [`DEFAULT_WRITE_BUFFER`]), every buffer is sorted by key and written as a level-0 file (a
//! sorted run) with fresh sequence numbers, so memory stays bounded whatever the statement's
//! size. Nothing is visible until [`TableWrite::commit`] writes a snapshot; a write that fails or
//! is dropped deletes the files it wrote.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Int8Array, Int64Array, RecordBatch, StringArray, UInt32Array,
};
use arrow::compute::{concat_batches, take, take_record_batch};
use arrow::row::{RowConverter, SortField};

use super::StorageError;
use super::binary_row;
use super::bucket;
use super::data_file::{self, kind};
use super::datum::{Datum, PartitionText};
use super::manifest::{DataFileMeta, FileSource, SimpleStats};
use super::merge::KeyGroups;
use super::scan::{ScanFilter, ScanPlan, compare_keys};
use super::schema::options;
use super::snapshot::Snapshot;
use super::stats;
use super::table::Table;
use super::types::TypeKind;

/// Bytes a statement buffers before writing sorted runs (Paimon's own default is 256 MiB; tarn
/// keeps memory per writing statement lower).
pub const DEFAULT_WRITE_BUFFER: usize = 64 * 1024 * 1024;

/// What an INSERT does with a key that already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// PostgreSQL's INSERT: an existing key (or one given twice) fails with 23505.
    Insert,
    /// Blind upsert: the last version of a key wins.
    Upsert,
}

/// A data file written by this statement, not yet committed.
#[derive(Debug, Clone)]
pub struct NewFile {
    pub partition: Vec<u8>,
    pub partition_values: Vec<Datum>,
    pub bucket: i32,
    pub total_buckets: i32,
    pub meta: DataFileMeta,
}

struct Buffer {
    partition: Vec<Datum>,
    partition_bytes: Vec<u8>,
    bucket: i32,
    batches: Vec<RecordBatch>,
    bytes: usize,
}

/// One statement's writes to one table.
pub struct TableWrite {
    table: Table,
    mode: WriteMode,
    base: Option<Snapshot>,
    /// Live files of the base snapshot per (partition, bucket).
    existing: HashMap<(Vec<u8>, i32), Vec<DataFileMeta>>,
    buffers: BTreeMap<(Vec<u8>, i32), Buffer>,
    /// Partition values and bytes by the partition columns' Arrow row encoding.
    partitions: HashMap<Vec<u8>, (Vec<Datum>, Vec<u8>)>,
    buffered: usize,
    limit: usize,
    files: Vec<NewFile>,
    /// The run being written right now, if any.
    in_flight: Option<tokio::task::JoinHandle<Result<NewFile, StorageError>>>,
    rows: u64,
    committed: bool,
}

impl TableWrite {
    /// Starts a write on the table's latest snapshot.
    pub async fn new(table: Table, mode: WriteMode) -> Result<Self, StorageError> {
        table.check_writable()?;
        let base = table.snapshots().latest().await?;
        let mut existing: HashMap<(Vec<u8>, i32), Vec<DataFileMeta>> = HashMap::new();
        if let Some(snapshot) = &base {
            let mut plan = ScanPlan::default();
            for e in table
                .live_entries(snapshot, &ScanFilter::default(), &mut plan)
                .await?
            {
                existing
                    .entry((e.partition, e.bucket))
                    .or_default()
                    .push(e.file);
            }
        }
        let limit = table
            .schema()
            .option(options::WRITE_BUFFER_SIZE)
            .and_then(parse_size)
            .unwrap_or(DEFAULT_WRITE_BUFFER);
        Ok(Self {
            table,
            mode,
            base,
            existing,
            buffers: BTreeMap::new(),
            partitions: HashMap::new(),
            buffered: 0,
            limit,
            files: Vec::new(),
            in_flight: None,
            rows: 0,
            committed: false,
        })
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Buffers `batch` (columns in the table schema's order and types).
    pub async fn write(&mut self, batch: RecordBatch) -> Result<(), StorageError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let batch = self.conform(batch)?;
        self.rows += batch.num_rows() as u64;
        let schema = Arc::clone(self.table.schema());
        let partition_idx = schema.indexes_of(&schema.partition_keys);
        let num_buckets = schema.bucket();

        // Partition of each row.
        let mut groups: Vec<(Vec<u8>, Vec<u32>)> = Vec::new();
        if partition_idx.is_empty() {
            groups.push((Vec::new(), (0..batch.num_rows() as u32).collect()));
        } else {
            let columns: Vec<ArrayRef> = partition_idx
                .iter()
                .map(|&i| Arc::clone(batch.column(i)))
                .collect();
            let converter = RowConverter::new(
                columns
                    .iter()
                    .map(|c| SortField::new(c.data_type().clone()))
                    .collect(),
            )?;
            let rows = converter.convert_columns(&columns)?;
            let mut index: HashMap<&[u8], usize> = HashMap::new();
            for i in 0..batch.num_rows() {
                let key = rows.row(i).data();
                let g = *index.entry(key).or_insert_with(|| {
                    groups.push((key.to_vec(), Vec::new()));
                    groups.len() - 1
                });
                groups[g].1.push(i as u32);
            }
            for (key, rows_of) in &groups {
                if !self.partitions.contains_key(key) {
                    let first = rows_of[0] as usize;
                    let types = self.table.partition_types();
                    let values = partition_idx
                        .iter()
                        .zip(&types)
                        .map(|(&c, t)| Datum::from_array(batch.column(c), first, t))
                        .collect::<Result<Vec<_>, _>>()?;
                    let bytes = binary_row::serialize(&values, &types);
                    self.partitions.insert(key.clone(), (values, bytes));
                }
            }
        }

        // Bucket of each row.
        let buckets: Option<Vec<i32>> = if num_buckets > 1 {
            let keys = schema.bucket_keys();
            let idx = schema.indexes_of(&keys);
            let columns: Vec<ArrayRef> = idx.iter().map(|&i| Arc::clone(batch.column(i))).collect();
            let types: Vec<_> = idx
                .iter()
                .map(|&i| schema.fields[i].data_type.clone())
                .collect();
            Some(bucket::bucket_ids(&columns, &types, num_buckets)?)
        } else {
            None
        };

        for (key, rows_of) in groups {
            let (values, bytes) = match self.partitions.get(&key) {
                Some(p) => p.clone(),
                None => (Vec::new(), binary_row::serialize(&[], &[])),
            };
            let mut by_bucket: BTreeMap<i32, Vec<u32>> = BTreeMap::new();
            match &buckets {
                Some(b) => {
                    for r in rows_of {
                        by_bucket.entry(b[r as usize]).or_default().push(r);
                    }
                }
                None => {
                    by_bucket.insert(0, rows_of);
                }
            }
            for (b, rows_of) in by_bucket {
                let part = if rows_of.len() == batch.num_rows() {
                    batch.clone()
                } else {
                    take_record_batch(&batch, &UInt32Array::from(rows_of))?
                };
                let size = part.get_array_memory_size();
                let buffer = self
                    .buffers
                    .entry((bytes.clone(), b))
                    .or_insert_with(|| Buffer {
                        partition: values.clone(),
                        partition_bytes: bytes.clone(),
                        bucket: b,
                        batches: Vec::new(),
                        bytes: 0,
                    });
                buffer.batches.push(part);
                buffer.bytes += size;
                self.buffered += size;
            }
        }
        if self.buffered > self.limit {
            self.flush().await?;
        }
        Ok(())
    }

    /// Checks NOT NULL and length limits, pads CHAR(n): a row that breaks a rule fails the
    /// statement before anything is written.
    fn conform(&self, batch: RecordBatch) -> Result<RecordBatch, StorageError> {
        let schema = self.table.schema();
        let mut columns = batch.columns().to_vec();
        for (i, field) in schema.fields.iter().enumerate() {
            let column = &columns[i];
            if !field.data_type.nullable && column.null_count() > 0 {
                return Err(StorageError::NotNull {
                    table: self.table.name().to_owned(),
                    column: field.name.clone(),
                });
            }
            match field.data_type.kind {
                TypeKind::VarChar(n) if n < super::types::MAX_LENGTH => {
                    let n = n as usize;
                    let s = column.as_string::<i32>();
                    let too_long = |v: &str| v.len() > n && v.chars().count() > n;
                    if s.iter().flatten().any(too_long) {
                        // PostgreSQL cuts excess trailing blanks and refuses anything else.
                        let mut cut = Vec::with_capacity(s.len());
                        for v in s.iter() {
                            cut.push(match v {
                                Some(v) if too_long(v) => {
                                    if v.chars().skip(n).any(|c| c != ' ') {
                                        return Err(StorageError::ValueTooLong {
                                            type_name: format!("character varying({n})"),
                                        });
                                    }
                                    Some(v.chars().take(n).collect::<String>())
                                }
                                other => other.map(str::to_owned),
                            });
                        }
                        columns[i] = Arc::new(StringArray::from(cut));
                    }
                }
                TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) if !matches!(p, 3 | 6 | 9) => {
                    // TIMESTAMP(p) keeps p fraction digits: round the finer unit as PostgreSQL
                    // does (half away from zero).
                    columns[i] = round_timestamps(column, p)?;
                }
                TypeKind::Char(n) => {
                    let n = n as usize;
                    let s = column.as_string::<i32>();
                    let mut padded = Vec::with_capacity(s.len());
                    for v in s.iter() {
                        padded.push(match v {
                            None => None,
                            Some(v) => {
                                let len = v.chars().count();
                                if len > n {
                                    // PostgreSQL drops excess trailing blanks, refuses the rest.
                                    let cut: String = v.chars().take(n).collect();
                                    if v.chars().skip(n).any(|c| c != ' ') {
                                        return Err(StorageError::ValueTooLong {
                                            type_name: format!("character({n})"),
                                        });
                                    }
                                    Some(cut)
                                } else {
                                    Some(format!("{v:<n$}"))
                                }
                            }
                        });
                    }
                    columns[i] = Arc::new(StringArray::from(padded));
                }
                _ => {}
            }
        }
        Ok(RecordBatch::try_new(batch.schema(), columns)?)
    }

    /// Writes every buffer as a sorted run.
    /// Writes every buffer as a sorted run. Each run is written by its own task, so a
    /// statement cancelled mid-write never leaves a file nobody knows about: a dropped
    /// `TableWrite` waits for the task in flight and deletes what it wrote.
    async fn flush(&mut self) -> Result<(), StorageError> {
        let buffers = std::mem::take(&mut self.buffers);
        self.buffered = 0;
        for (_, buffer) in buffers {
            let task = tokio::spawn(self.write_run(buffer));
            let handle = self.in_flight.insert(task);
            let result = handle.await;
            self.in_flight = None;
            let file =
                result.map_err(|e| StorageError::format(format!("writer task failed: {e}")))??;
            self.files.push(file);
        }
        Ok(())
    }

    fn write_run(
        &self,
        buffer: Buffer,
    ) -> impl std::future::Future<Output = Result<NewFile, StorageError>> + Send + 'static {
        let table = self.table.clone();
        let floor = self
            .existing
            .get(&(buffer.partition_bytes.clone(), buffer.bucket))
            .and_then(|files| files.iter().map(|f| f.max_sequence_number).max())
            .map_or(0, |m| m + 1);
        let mode = self.mode;
        write_run(table, buffer, floor, mode)
    }
}

async fn write_run(
    table: Table,
    buffer: Buffer,
    floor: i64,
    mode: WriteMode,
) -> Result<NewFile, StorageError> {
    let schema = Arc::clone(table.schema());
    let arrow_schema = buffer.batches[0].schema();
    let partition_values = buffer.partition.clone();
    let partition_bytes = buffer.partition_bytes.clone();
    let bucket = buffer.bucket;
    let table_name = table.name().to_owned();
    let shared = Arc::clone(table.shared());
    let batches = buffer.batches;
    let (values_for_task, bytes_for_task) = (partition_values.clone(), partition_bytes.clone());

    // Sorting and encoding are CPU work: off the async runtime.
    let run = tokio::task::spawn_blocking(move || {
        encode_run(
            &schema,
            &arrow_schema,
            batches,
            mode,
            &table_name,
            &values_for_task,
            |n| shared.reserve_sequences(&bytes_for_task, bucket, floor, n),
        )
    })
    .await
    .map_err(|e| StorageError::format(format!("writer task failed: {e}")))??;

    let name = data_file::new_file_name("data");
    let path = table
        .bucket_path(&partition_values, bucket)
        .join(name.as_str());
    let size = run.bytes.len() as i64;
    table.io().write(&path, run.bytes).await?;
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
            min_sequence_number: run.first_seq,
            max_sequence_number: run.first_seq + run.row_count - 1,
            schema_id: table.schema().id,
            level: 0,
            extra_files: Vec::new(),
            creation_time: Some(table.clock().now_millis()),
            delete_row_count: Some(0),
            embedded_file_index: None,
            file_source: Some(FileSource::Append),
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        },
    })
}

impl TableWrite {
    /// Writes what is buffered and checks INSERT's key uniqueness against the base snapshot.
    /// Returns the files to commit.
    pub async fn finish(&mut self) -> Result<Vec<NewFile>, StorageError> {
        self.flush().await?;
        if self.mode == WriteMode::Insert && self.table.schema().has_primary_key() {
            let existing = self.existing.clone();
            self.check_unique(&existing).await?;
        }
        Ok(self.files.clone())
    }

    /// Fails with 23505 if a key of the new files exists in `existing` (live there) or in two
    /// new files. Only files whose key ranges overlap are read, and only their key columns.
    pub(crate) async fn check_unique(
        &self,
        existing: &HashMap<(Vec<u8>, i32), Vec<DataFileMeta>>,
    ) -> Result<(), StorageError> {
        let key_types = self.table.key_types();
        let mut by_bucket: BTreeMap<(Vec<u8>, i32), Vec<&NewFile>> = BTreeMap::new();
        for f in &self.files {
            by_bucket
                .entry((f.partition.clone(), f.bucket))
                .or_default()
                .push(f);
        }
        let layout = self.table.read_layout(&[]);
        let schema = layout.schema()?;
        for ((partition, bucket), new) in by_bucket {
            let old = existing
                .get(&(partition.clone(), bucket))
                .cloned()
                .unwrap_or_default();
            if old.is_empty() && new.len() == 1 {
                continue; // keys within a run were checked while sorting
            }
            // (min, max, is_new, file)
            let mut files: Vec<(Vec<Datum>, Vec<Datum>, bool, DataFileMeta)> = Vec::new();
            for f in &new {
                files.push((
                    binary_row::deserialize(&f.meta.min_key, &key_types)?,
                    binary_row::deserialize(&f.meta.max_key, &key_types)?,
                    true,
                    f.meta.clone(),
                ));
            }
            for f in old {
                files.push((
                    binary_row::deserialize(&f.min_key, &key_types)?,
                    binary_row::deserialize(&f.max_key, &key_types)?,
                    false,
                    f,
                ));
            }
            files.sort_by(|a, b| compare_keys(&a.0, &b.0));
            // Overlapping clusters.
            let mut clusters: Vec<Vec<(bool, DataFileMeta)>> = Vec::new();
            let mut cluster_max: Option<Vec<Datum>> = None;
            for (min, max, is_new, f) in files {
                if cluster_max
                    .as_ref()
                    .is_some_and(|m| compare_keys(&min, m).is_le())
                {
                    clusters.last_mut().expect("cluster").push((is_new, f));
                    let m = cluster_max.as_mut().expect("cluster");
                    if compare_keys(&max, m).is_gt() {
                        *m = max;
                    }
                } else {
                    clusters.push(vec![(is_new, f)]);
                    cluster_max = Some(max);
                }
            }
            let partition_values = new[0].partition_values.clone();
            let split = super::scan::Split {
                partition: partition_values.clone(),
                partition_bytes: partition.clone(),
                bucket,
                total_buckets: new[0].total_buckets,
                files: Vec::new(),
            };
            for cluster in clusters {
                if cluster.len() < 2 || !cluster.iter().any(|(n, _)| *n) {
                    continue;
                }
                let mut runs = Vec::new();
                let mut is_new = Vec::new();
                for (n, f) in &cluster {
                    runs.push(self.table.open_data_file(&split, f, &layout).await?);
                    is_new.push(*n);
                }
                let mut groups = KeyGroups::new(Arc::clone(&schema), layout.key_count(), runs)?;
                let mut seen = 0usize;
                while let Some((_, versions)) = groups.next_group().await? {
                    let new_count = versions.iter().filter(|v| is_new[v.run]).count();
                    let live_before = versions
                        .iter()
                        .filter(|v| !is_new[v.run])
                        .max_by_key(|v| (v.sequence, v.run))
                        .is_some_and(|v| kind::is_add(v.kind));
                    if new_count >= 2 || (new_count == 1 && live_before) {
                        let v = versions[0];
                        let batch = &groups.retained()[v.at.0];
                        let key: Vec<Datum> = (0..layout.key_count())
                            .map(|i| Datum::from_array(batch.column(i), v.at.1, &key_types[i]))
                            .collect::<Result<_, _>>()?;
                        return Err(self.duplicate(&key, &partition_values));
                    }
                    seen += 1;
                    if seen.is_multiple_of(4096) {
                        groups.compact();
                    }
                }
            }
        }
        Ok(())
    }

    fn duplicate(&self, key: &[Datum], partition: &[Datum]) -> StorageError {
        duplicate_key_error(&self.table, key, partition)
    }

    /// Commits the written files as one APPEND snapshot. Returns the snapshot id, or `None`
    /// when nothing was written.
    pub async fn commit(mut self) -> Result<Option<i64>, StorageError> {
        let files = self.finish().await?;
        if files.is_empty() {
            self.committed = true;
            return Ok(None);
        }
        let base = self.base.clone();
        let result = super::commit::commit_append(&self, base, &files).await;
        if result.is_ok() {
            self.committed = true;
        }
        result.map(Some)
    }

    pub(crate) fn mode(&self) -> WriteMode {
        self.mode
    }

    /// Deletes the files this write produced (it will not be committed).
    pub async fn abort(mut self) {
        self.committed = true;
        delete_files(&self.table, std::mem::take(&mut self.files)).await;
    }
}

impl Drop for TableWrite {
    fn drop(&mut self) {
        let in_flight = self.in_flight.take();
        if self.committed || (self.files.is_empty() && in_flight.is_none()) {
            return;
        }
        let mut files = std::mem::take(&mut self.files);
        let table = self.table.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if let Some(task) = in_flight
                    && let Ok(Ok(file)) = task.await
                {
                    files.push(file);
                }
                delete_files(&table, files).await
            });
        }
    }
}

async fn delete_files(table: &Table, files: Vec<NewFile>) {
    for f in files {
        let path = table
            .bucket_path(&f.partition_values, f.bucket)
            .join(f.meta.file_name.as_str());
        if let Err(e) = table.io().delete(&path).await {
            tracing::warn!(error = %e, %path, "could not delete an uncommitted data file");
        }
    }
}

/// The 23505 error for `key` (trimmed primary key values) in `partition`.
pub(crate) fn duplicate_key_error(
    table: &Table,
    key: &[Datum],
    partition: &[Datum],
) -> StorageError {
    StorageError::DuplicateKey {
        constraint: format!("{}_pkey", table.name()),
        detail: format_key(table.schema(), key, partition),
    }
}

/// One sorted run, encoded.
struct EncodedRun {
    bytes: Vec<u8>,
    row_count: i64,
    first_seq: i64,
    min_key: Vec<u8>,
    max_key: Vec<u8>,
    key_stats: SimpleStats,
    value_stats: SimpleStats,
}

/// Sorts (primary-key tables), numbers and encodes buffered batches as one data file.
/// `reserve(n)` hands out the first of `n` sequence numbers.
fn encode_run(
    schema: &super::schema::TableSchema,
    arrow_schema: &arrow::datatypes::SchemaRef,
    batches: Vec<RecordBatch>,
    mode: WriteMode,
    table_name: &str,
    partition: &[Datum],
    reserve: impl FnOnce(i64) -> i64,
) -> Result<EncodedRun, StorageError> {
    let batch = concat_batches(arrow_schema, &batches)?;
    drop(batches);
    let (sorted, keys) = if schema.has_primary_key() {
        sort_unique(&batch, schema, mode, table_name, partition)?
    } else {
        (batch, None)
    };
    let row_count = sorted.num_rows() as i64;
    let first_seq = reserve(row_count);
    let mut columns: Vec<ArrayRef> = Vec::new();
    if let Some(keys) = &keys {
        columns.extend(keys.iter().cloned());
        columns.push(Arc::new(Int64Array::from_iter_values(
            first_seq..first_seq + row_count,
        )));
        columns.push(Arc::new(Int8Array::from_value(
            kind::INSERT,
            row_count as usize,
        )));
    }
    columns.extend(sorted.columns().iter().cloned());
    let file_schema = data_file::file_arrow_schema(schema)?;
    // Same types, but nested field names may differ (a list's "item" vs Paimon's "element").
    let columns = columns
        .into_iter()
        .zip(file_schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(c)
            } else {
                arrow::compute::cast(&c, f.data_type())
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let file_batch = RecordBatch::try_new(file_schema, columns)?;
    let bytes = data_file::encode_file(&file_batch, zstd_level(schema))?;

    let value_types: Vec<_> = schema.fields.iter().map(|f| f.data_type.clone()).collect();
    let value_stats = stats::simple_stats(sorted.columns(), &value_types, true)?;
    let key_types: Vec<_> = schema
        .trimmed_primary_keys()
        .iter()
        .map(|k| schema.type_of(k).clone())
        .collect();
    let (min_key, max_key, key_stats) = match &keys {
        Some(keys) => {
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
        }
        None => (
            binary_row::serialize(&[], &[]),
            binary_row::serialize(&[], &[]),
            SimpleStats::empty(),
        ),
    };
    Ok(EncodedRun {
        bytes,
        row_count,
        first_seq,
        min_key,
        max_key,
        key_stats,
        value_stats,
    })
}

/// Sorts `batch` by the trimmed primary key; duplicate keys fail (INSERT) or keep their last
/// version (upsert). Returns the sorted rows and their key columns.
fn sort_unique(
    batch: &RecordBatch,
    schema: &super::schema::TableSchema,
    mode: WriteMode,
    table_name: &str,
    partition: &[Datum],
) -> Result<(RecordBatch, Option<Vec<ArrayRef>>), StorageError> {
    let key_idx = schema.indexes_of(&schema.trimmed_primary_keys());
    let key_cols: Vec<ArrayRef> = key_idx
        .iter()
        .map(|&i| Arc::clone(batch.column(i)))
        .collect();
    let converter = RowConverter::new(
        key_cols
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let rows = converter.convert_columns(&key_cols)?;
    let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
    // Stable: among equal keys the later row stays later (upsert keeps the last).
    order.sort_by(|a, b| rows.row(*a as usize).cmp(&rows.row(*b as usize)));
    let mut keep: Vec<u32> = Vec::with_capacity(order.len());
    for &i in &order {
        if let Some(&last) = keep.last()
            && rows.row(last as usize) == rows.row(i as usize)
        {
            match mode {
                WriteMode::Insert => {
                    let types: Vec<_> = key_idx
                        .iter()
                        .map(|&k| schema.fields[k].data_type.clone())
                        .collect();
                    let key: Vec<Datum> = key_cols
                        .iter()
                        .zip(&types)
                        .map(|(c, t)| Datum::from_array(c, i as usize, t))
                        .collect::<Result<_, _>>()?;
                    return Err(StorageError::DuplicateKey {
                        constraint: format!("{table_name}_pkey"),
                        detail: format_key(schema, &key, partition),
                    });
                }
                WriteMode::Upsert => {
                    *keep.last_mut().expect("last") = i;
                }
            }
        } else {
            keep.push(i);
        }
    }
    let indices = UInt32Array::from(keep);
    let sorted = take_record_batch(batch, &indices)?;
    let keys = key_cols
        .iter()
        .map(|c| take(c, &indices, None))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((sorted, Some(keys)))
}

fn format_key(schema: &super::schema::TableSchema, key: &[Datum], partition: &[Datum]) -> String {
    let trimmed = schema.trimmed_primary_keys();
    let values: Vec<String> = schema
        .primary_keys
        .iter()
        .map(|k| {
            let ty = schema.type_of(k);
            let v = match trimmed.iter().position(|t| t == k) {
                Some(i) => key.get(i),
                None => schema
                    .partition_keys
                    .iter()
                    .position(|p| p == k)
                    .and_then(|i| partition.get(i)),
            };
            match v {
                Some(Datum::Null) | None => "null".to_owned(),
                Some(d) => PartitionText(d, ty).to_string(),
            }
        })
        .collect();
    format!(
        "Key ({})=({}) already exists.",
        schema.primary_keys.join(", "),
        values.join(", ")
    )
}

fn zstd_level(schema: &super::schema::TableSchema) -> i32 {
    schema
        .option("file.compression.zstd-level")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1)
}

/// Rounds timestamps to `precision` fraction digits (the column's Arrow unit is finer).
fn round_timestamps(column: &ArrayRef, precision: u8) -> Result<ArrayRef, StorageError> {
    use arrow::datatypes::{DataType as A, TimeUnit as U};
    let unit_digits = match column.data_type() {
        A::Timestamp(U::Second, _) => 0,
        A::Timestamp(U::Millisecond, _) => 3,
        A::Timestamp(U::Microsecond, _) => 6,
        A::Timestamp(U::Nanosecond, _) => 9,
        _ => return Ok(Arc::clone(column)),
    };
    if precision >= unit_digits {
        return Ok(Arc::clone(column));
    }
    let step = 10i64.pow((unit_digits - precision) as u32);
    let round = |v: i64| {
        let r = v.rem_euclid(step);
        let down = v - r;
        if r * 2 >= step { down + step } else { down }
    };
    let raw = arrow::compute::cast(column, &A::Int64)?;
    let rounded: arrow::array::Int64Array = raw
        .as_primitive::<arrow::datatypes::Int64Type>()
        .unary(round);
    Ok(arrow::compute::cast(&rounded, column.data_type())?)
}

/// Parses Paimon memory sizes: `256 mb`, `64MB`, `1gb`, `1048576`.
pub fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim().to_lowercase().replace(' ', "");
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num.parse().ok()?;
    let mult = match unit {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_timestamps_to_their_precision() {
        use arrow::array::TimestampMillisecondArray;
        let a: ArrayRef = Arc::new(
            TimestampMillisecondArray::from(vec![Some(1_500), Some(1_499), Some(-500), None])
                .with_timezone("UTC"),
        );
        let r = round_timestamps(&a, 0).unwrap();
        let r = r.as_primitive::<arrow::datatypes::TimestampMillisecondType>();
        assert_eq!(r.values()[..3], [2_000, 1_000, 0]);
        assert!(r.is_null(3));
        assert_eq!(r.timezone(), Some("UTC"));
    }

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size("256 mb"), Some(256 << 20));
        assert_eq!(parse_size("64MB"), Some(64 << 20));
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("x"), None);
    }
}
