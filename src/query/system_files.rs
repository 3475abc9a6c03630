//! Paimon's system tables over a snapshot's files: `t$files`, `t$manifests`, `t$partitions`,
//! `t$buckets`, with the columns and value texts of Paimon Java's `FilesTable`,
//! `ManifestsTable`, `PartitionsTable` and `BucketsTable`.
//!
//! They describe the latest snapshot, or the one a versioned reference pins
//! (`"t$files" VERSION AS OF 3`); a table without snapshots gives empty tables. Values render as
//! Paimon renders them, so they compare with what Spark or Flink show:
//! - a partition in `$files`, `$manifests` and `$buckets` is Paimon's cast of the partition row
//!   to STRING (`{2024-01-01, 3}`, `{}` when unpartitioned); in `$partitions` it is
//!   `dt=2024-01-01/hr=3` (`(empty)` when unpartitioned), NULL shown as the default partition
//!   name;
//! - keys are Java's `Arrays.toString` of the key's internal values (`[1, abc]`: a DATE is its
//!   day number, a TIMESTAMP `2024-01-01T10:00`), NULL for append tables;
//! - value statistics are `{column=value, ...}` in column-name order over the table's current
//!   columns (Java's `TreeMap.toString`), evolved from each file's own schema by field id.
//!
//! Times (`creation_time`, `last_update_time`) are the files' `_CREATION_TIME` shown as
//! `timestamptz` (tarn writes UTC; Paimon Java and pypaimon write their local wall-clock time).
//!
//! `$buckets` ends with tarn's own columns, after Paimon's (which stay first and unchanged):
//! `sorted_runs` (each level-0 file, plus one per non-empty level >= 1: what a read merges),
//! `level0_file_count`, `max_level` (the highest level holding a file) and
//! `pending_compaction` (the compaction policy, from the state a writer restoring the bucket
//! starts with, would compact it now), computed over the files of the version read.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Int32Array, Int64Array, ListBuilder, StringArray, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::Result;
use futures::{StreamExt, TryStreamExt, stream};

use super::system_tables::{time_type, times};
use super::table::storage_error;
use crate::storage::compaction::{self, CompactOptions, FileSummary, PickState, PickTime};
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::{Datum, date_text, decimal_text};
use crate::storage::spec::manifest::{
    DataFileMeta, FileKind, FileSource, ManifestEntry, SimpleStats,
};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{PaimonType, TypeKind};
use crate::storage::{ScanFilter, ScanPlan, Snapshot, StorageError, Table};

/// The system tables of this module, by the suffix after `$`.
pub const FILE_TABLES: &[&str] = &["files", "manifests", "partitions", "buckets"];

type Columns = (Vec<Field>, Vec<ArrayRef>);

/// `table$kind` at `version` (the latest snapshot when `None`), or `None` if `kind` is not one
/// of [`FILE_TABLES`].
pub async fn file_table(
    table: &Table,
    kind: &str,
    version: Option<&Snapshot>,
) -> Result<Option<Columns>> {
    if !FILE_TABLES.contains(&kind) {
        return Ok(None);
    }
    let view = View::new(table, version).await.map_err(storage_error)?;
    let columns = match kind {
        "files" => view.files().await,
        "manifests" => view.manifests().await,
        "partitions" => view.partitions().await,
        _ => view.buckets().await,
    };
    columns.map(Some).map_err(storage_error)
}

/// A table as of one snapshot, with the schema Paimon reads it with: the latest schema, or the
/// pinned snapshot's own schema for a versioned reference (as Paimon's time travel does).
struct View<'a> {
    table: &'a Table,
    schema: Arc<TableSchema>,
    snapshot: Option<Snapshot>,
    partition_types: Vec<PaimonType>,
}

impl<'a> View<'a> {
    async fn new(table: &'a Table, version: Option<&Snapshot>) -> Result<Self, StorageError> {
        let (snapshot, schema) = match version {
            Some(s) => (Some(s.clone()), table.schema_by_id(s.schema_id).await?),
            None => (
                table.snapshots().latest().await?,
                Arc::clone(table.schema()),
            ),
        };
        let partition_types = schema
            .partition_keys
            .iter()
            .map(|k| schema.type_of(k).clone())
            .collect();
        Ok(Self {
            table,
            schema,
            snapshot,
            partition_types,
        })
    }

    fn partition(&self, bytes: &[u8]) -> Result<Vec<Datum>, StorageError> {
        binary_row::deserialize(bytes, &self.partition_types)
    }

    /// Every entry of the snapshot's data manifests (base and delta), ADD and DELETE alike.
    async fn all_entries(&self) -> Result<Vec<Arc<Vec<ManifestEntry>>>, StorageError> {
        let Some(snapshot) = &self.snapshot else {
            return Ok(Vec::new());
        };
        let mut metas = self
            .table
            .read_manifest_list(&snapshot.base_manifest_list)
            .await?;
        metas.extend(
            self.table
                .read_manifest_list(&snapshot.delta_manifest_list)
                .await?,
        );
        stream::iter(metas)
            .map(|m| async move { self.table.read_manifest(&m.file_name).await })
            .buffered(8)
            .try_collect()
            .await
    }

    async fn files(&self) -> Result<Columns, StorageError> {
        let entries = match &self.snapshot {
            Some(s) => {
                let mut plan = ScanPlan::default();
                self.table
                    .live_entries(s, &ScanFilter::default(), &mut plan)
                    .await?
            }
            None => Vec::new(),
        };
        let mut schemas: HashMap<i64, Arc<TableSchema>> = HashMap::new();
        schemas.insert(self.schema.id, Arc::clone(&self.schema));
        for e in &entries {
            if let std::collections::hash_map::Entry::Vacant(v) = schemas.entry(e.file.schema_id) {
                v.insert(self.table.schema_by_id(e.file.schema_id).await?);
            }
        }
        let mut partitions: HashMap<&[u8], (Vec<Datum>, String)> = HashMap::new();
        for e in &entries {
            if !partitions.contains_key(e.partition.as_slice()) {
                let values = self.partition(&e.partition)?;
                let text = row_text(&values, &self.partition_types);
                partitions.insert(&e.partition, (values, text));
            }
        }
        let mut rows: Vec<&ManifestEntry> = entries.iter().collect();
        rows.sort_by(|a, b| {
            let (pa, pb) = (
                &partitions[a.partition.as_slice()].1,
                &partitions[b.partition.as_slice()].1,
            );
            pa.cmp(pb)
                .then(a.bucket.cmp(&b.bucket))
                .then(a.file.level.cmp(&b.file.level))
                .then(a.file.min_sequence_number.cmp(&b.file.min_sequence_number))
                .then(a.file.file_name.cmp(&b.file.file_name))
        });

        let mut out = FileColumns::default();
        for e in rows {
            let f = &e.file;
            let (values, text) = &partitions[e.partition.as_slice()];
            let file_schema = &schemas[&f.schema_id];
            out.partition.push(text.clone());
            out.bucket.push(e.bucket);
            out.file_path.push(match &f.external_path {
                Some(p) => p.clone(),
                None => self.file_path(values, e.bucket, &f.file_name),
            });
            out.file_format.push(format_identifier(&f.file_name));
            out.schema_id.push(f.schema_id);
            out.level.push(f.level);
            out.record_count.push(f.row_count);
            out.file_size.push(f.file_size);
            out.min_key.push(key_text(&f.min_key, file_schema)?);
            out.max_key.push(key_text(&f.max_key, file_schema)?);
            let stats = value_stats(f, file_schema, &self.schema);
            out.null_counts
                .push(stats_text(&stats, |s| match s.null_count {
                    Some(n) => n.to_string(),
                    None => "null".into(),
                }));
            out.min_values.push(stats_text(&stats, |s| s.min.clone()));
            out.max_values.push(stats_text(&stats, |s| s.max.clone()));
            out.min_sequence.push(f.min_sequence_number);
            out.max_sequence.push(f.max_sequence_number);
            out.creation_time.push(f.creation_time);
            out.delete_row_count.push(f.delete_row_count);
            out.file_source.push(f.file_source.map(|s| match s {
                FileSource::Append => "APPEND",
                FileSource::Compact => "COMPACT",
            }));
            out.first_row_id.push(f.first_row_id);
            match &f.write_cols {
                Some(cols) => {
                    for c in cols {
                        out.write_cols.values().append_value(c);
                    }
                    out.write_cols.append(true);
                }
                None => out.write_cols.append(false),
            }
        }
        Ok(out.finish())
    }

    /// Where a data file lives, as Paimon prints it (`file:/warehouse/db.db/t/dt=1/bucket-0/x`).
    fn file_path(&self, partition: &[Datum], bucket: i32, file_name: &str) -> String {
        let folder = self.table.bucket_path(partition, bucket);
        match self.table.io().local_root() {
            Some(root) => format!("file:{}/{}/{file_name}", root.display(), folder.as_ref()),
            None => format!("/{}/{file_name}", folder.as_ref()),
        }
    }

    async fn manifests(&self) -> Result<Columns, StorageError> {
        let mut metas = Vec::new();
        if let Some(s) = &self.snapshot {
            metas.extend(self.table.read_manifest_list(&s.base_manifest_list).await?);
            metas.extend(
                self.table
                    .read_manifest_list(&s.delta_manifest_list)
                    .await?,
            );
            if let Some(changelog) = &s.changelog_manifest_list {
                metas.extend(self.table.read_manifest_list(changelog).await?);
            }
        }
        // Statistics Paimon wrote are always readable; odd ones show as NULL, not an error.
        let stats = |bytes: &[u8]| {
            self.partition(bytes)
                .ok()
                .map(|v| row_text(&v, &self.partition_types))
        };
        let fields = vec![
            Field::new("file_name", DataType::Utf8, false),
            Field::new("file_size", DataType::Int64, false),
            Field::new("num_added_files", DataType::Int64, false),
            Field::new("num_deleted_files", DataType::Int64, false),
            Field::new("schema_id", DataType::Int64, false),
            Field::new("min_partition_stats", DataType::Utf8, true),
            Field::new("max_partition_stats", DataType::Utf8, true),
            Field::new("min_row_id", DataType::Int64, true),
            Field::new("max_row_id", DataType::Int64, true),
        ];
        let int =
            |f: fn(&crate::storage::spec::manifest::ManifestFileMeta) -> Option<i64>| -> ArrayRef {
                Arc::new(metas.iter().map(f).collect::<Int64Array>())
            };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(
                metas
                    .iter()
                    .map(|m| Some(m.file_name.as_str()))
                    .collect::<StringArray>(),
            ),
            int(|m| Some(m.file_size)),
            int(|m| Some(m.num_added_files)),
            int(|m| Some(m.num_deleted_files)),
            int(|m| Some(m.schema_id)),
            Arc::new(
                metas
                    .iter()
                    .map(|m| stats(&m.partition_stats.min_values))
                    .collect::<StringArray>(),
            ),
            Arc::new(
                metas
                    .iter()
                    .map(|m| stats(&m.partition_stats.max_values))
                    .collect::<StringArray>(),
            ),
            int(|m| m.min_row_id),
            int(|m| m.max_row_id),
        ];
        Ok((fields, columns))
    }

    /// Per partition: the sums of its entries (a DELETE subtracts its file), as Paimon's
    /// `PartitionEntry` merges them; partitions left without files are not shown.
    async fn partitions(&self) -> Result<Columns, StorageError> {
        let mut sums: HashMap<Vec<u8>, Totals> = HashMap::new();
        for manifest in self.all_entries().await? {
            for e in manifest.iter() {
                sums.entry(e.partition.clone()).or_default().add(e);
            }
        }
        let default_name = self.schema.core_options().partition_default_name();
        let mut rows: Vec<(String, Totals)> = Vec::new();
        for (bytes, totals) in sums {
            if totals.file_count <= 0 {
                continue;
            }
            let values = self.partition(&bytes)?;
            let mut text = String::new();
            for (i, (key, (v, ty))) in self
                .schema
                .partition_keys
                .iter()
                .zip(values.iter().zip(&self.partition_types))
                .enumerate()
            {
                if i > 0 {
                    text.push('/');
                }
                let value = match v {
                    Datum::Null => default_name.to_owned(),
                    v => {
                        let t = cast_text(v, ty);
                        if t.trim().is_empty() {
                            default_name.to_owned()
                        } else {
                            t
                        }
                    }
                };
                let _ = write!(text, "{key}={value}");
            }
            rows.push((text, totals));
        }
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        // Deletion vectors' counts (index manifests' cardinalities) are not summed per
        // partition yet: NULL for tables with deletion vectors.
        let deleted = (!self.schema.core_options().deletion_vectors_enabled()).then_some(0i64);
        let n = rows.len();
        let fields = vec![
            Field::new("partition", DataType::Utf8, true),
            Field::new("record_count", DataType::Int64, false),
            Field::new("file_size_in_bytes", DataType::Int64, false),
            Field::new("file_count", DataType::Int64, false),
            Field::new("last_update_time", time_type(), true),
            Field::new("created_at", time_type(), true),
            Field::new("created_by", DataType::Utf8, true),
            Field::new("updated_by", DataType::Utf8, true),
            Field::new("options", DataType::Utf8, true),
            Field::new("total_buckets", DataType::Int32, false),
            Field::new("done", DataType::Boolean, false),
            Field::new("deleted_record_count", DataType::Int64, true),
        ];
        let none = || -> ArrayRef { Arc::new(StringArray::from(vec![None::<&str>; n])) };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(
                rows.iter()
                    .map(|(t, _)| Some(t.as_str()))
                    .collect::<StringArray>(),
            ),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|(_, t)| t.record_count),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|(_, t)| t.file_size),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|(_, t)| t.file_count),
            )),
            times(rows.iter().map(|(_, t)| t.last_creation).collect()),
            times(vec![None; n]),
            none(),
            none(),
            none(),
            Arc::new(Int32Array::from_iter_values(
                rows.iter().map(|(_, t)| t.total_buckets),
            )),
            Arc::new(BooleanArray::from(vec![false; n])),
            Arc::new(Int64Array::from(vec![deleted; n])),
        ];
        Ok((fields, columns))
    }

    /// Per (partition, bucket), summed as [`partitions`](Self::partitions) does; then tarn's
    /// compaction columns over the bucket's live files (see [`BucketShape`]).
    async fn buckets(&self) -> Result<Columns, StorageError> {
        let mut sums: HashMap<(Vec<u8>, i32), Totals> = HashMap::new();
        for manifest in self.all_entries().await? {
            for e in manifest.iter() {
                sums.entry((e.partition.clone(), e.bucket))
                    .or_default()
                    .add(e);
            }
        }
        let live = match &self.snapshot {
            Some(s) => Some(self.table.live_files(s).await?),
            None => None,
        };
        let shapes = ShapeContext::new(self.table, &self.schema);
        let mut texts: HashMap<Vec<u8>, String> = HashMap::new();
        let mut rows: Vec<(String, i32, Totals, BucketShape)> = Vec::new();
        for ((bytes, bucket), totals) in sums {
            if totals.file_count <= 0 {
                continue;
            }
            let text = match texts.get(&bytes) {
                Some(t) => t.clone(),
                None => {
                    let t = row_text(&self.partition(&bytes)?, &self.partition_types);
                    texts.insert(bytes.clone(), t.clone());
                    t
                }
            };
            let at = (bytes, bucket);
            let shape = shapes.shape(live.as_ref().map_or(&[][..], |l| l.bucket(&at)));
            rows.push((text, bucket, totals, shape));
        }
        rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        let fields = vec![
            Field::new("partition", DataType::Utf8, true),
            Field::new("bucket", DataType::Int32, false),
            Field::new("record_count", DataType::Int64, false),
            Field::new("file_size_in_bytes", DataType::Int64, false),
            Field::new("file_count", DataType::Int64, false),
            Field::new("last_update_time", time_type(), true),
            // tarn's columns, after Paimon's.
            Field::new("sorted_runs", DataType::Int64, true),
            Field::new("level0_file_count", DataType::Int64, false),
            Field::new("max_level", DataType::Int32, false),
            Field::new("pending_compaction", DataType::Boolean, true),
        ];
        let columns: Vec<ArrayRef> = vec![
            Arc::new(
                rows.iter()
                    .map(|(p, _, _, _)| Some(p.as_str()))
                    .collect::<StringArray>(),
            ),
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.2.record_count),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.2.file_size),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.2.file_count),
            )),
            times(rows.iter().map(|r| r.2.last_creation).collect()),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.3.sorted_runs).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.3.level0_files),
            )),
            Arc::new(Int32Array::from_iter_values(
                rows.iter().map(|r| r.3.max_level),
            )),
            Arc::new(BooleanArray::from(
                rows.iter().map(|r| r.3.pending).collect::<Vec<_>>(),
            )),
        ];
        Ok((fields, columns))
    }
}

/// tarn's columns of `$buckets`: a bucket's LSM shape and whether the compaction policy would
/// compact it now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BucketShape {
    /// Sorted runs a read merges: each level-0 file, plus one per non-empty level >= 1. NULL
    /// for tables without a primary key (their files are not merged).
    sorted_runs: Option<i64>,
    level0_files: i64,
    /// The highest level holding a file.
    max_level: i32,
    /// Whether `compact_policy::pick` returns a plan now, from the state a writer restoring
    /// the bucket starts with (the background compactor's remembered state is not consulted).
    /// NULL without a primary key or when the table's compaction options are invalid.
    pending: Option<bool>,
}

/// What [`BucketShape`]s of one table are computed with.
struct ShapeContext {
    /// The table's compaction options; `None` for tables without a primary key or with
    /// invalid options.
    opts: Option<CompactOptions>,
    has_primary_key: bool,
    now: PickTime,
}

impl ShapeContext {
    fn new(table: &Table, schema: &TableSchema) -> Self {
        let has_primary_key = schema.has_primary_key();
        Self {
            opts: has_primary_key
                .then(|| compaction::options_of(table).ok())
                .flatten(),
            has_primary_key,
            now: compaction::pick_time(table),
        }
    }

    fn shape(&self, files: &[Arc<DataFileMeta>]) -> BucketShape {
        let summaries: Vec<FileSummary> = files.iter().map(|f| compaction::summary(f)).collect();
        let runs = compaction::runs(&summaries);
        let pending = self.opts.as_ref().map(|opts| {
            let mut state = PickState::restored(&summaries, opts);
            compaction::pick(&runs, opts, &mut state, self.now).is_some()
        });
        BucketShape {
            sorted_runs: self.has_primary_key.then_some(runs.len() as i64),
            level0_files: summaries.iter().filter(|f| f.level == 0).count() as i64,
            max_level: files.iter().map(|f| f.level).max().unwrap_or(0),
            pending,
        }
    }
}

/// Sums over manifest entries (Paimon's `PartitionEntry` / `BucketEntry`).
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    record_count: i64,
    file_size: i64,
    file_count: i64,
    /// Newest `_CREATION_TIME` of any entry, deleted files included (as Paimon merges them).
    last_creation: Option<i64>,
    total_buckets: i32,
}

impl Totals {
    fn add(&mut self, e: &ManifestEntry) {
        let sign = match e.kind {
            FileKind::Add => 1,
            FileKind::Delete => -1,
        };
        self.record_count += sign * e.file.row_count;
        self.file_size += sign * e.file.file_size;
        self.file_count += sign;
        self.last_creation = self.last_creation.max(e.file.creation_time);
        self.total_buckets = e.total_buckets;
    }
}

/// The columns of `$files`, filled row by row.
#[derive(Default)]
struct FileColumns {
    partition: Vec<String>,
    bucket: Vec<i32>,
    file_path: Vec<String>,
    file_format: Vec<String>,
    schema_id: Vec<i64>,
    level: Vec<i32>,
    record_count: Vec<i64>,
    file_size: Vec<i64>,
    min_key: Vec<Option<String>>,
    max_key: Vec<Option<String>>,
    null_counts: Vec<String>,
    min_values: Vec<String>,
    max_values: Vec<String>,
    min_sequence: Vec<i64>,
    max_sequence: Vec<i64>,
    creation_time: Vec<Option<i64>>,
    delete_row_count: Vec<Option<i64>>,
    file_source: Vec<Option<&'static str>>,
    first_row_id: Vec<Option<i64>>,
    write_cols: ListBuilder<StringBuilder>,
}

impl FileColumns {
    fn finish(mut self) -> Columns {
        let fields = vec![
            Field::new("partition", DataType::Utf8, true),
            Field::new("bucket", DataType::Int32, false),
            Field::new("file_path", DataType::Utf8, false),
            Field::new("file_format", DataType::Utf8, false),
            Field::new("schema_id", DataType::Int64, false),
            Field::new("level", DataType::Int32, false),
            Field::new("record_count", DataType::Int64, false),
            Field::new("file_size_in_bytes", DataType::Int64, false),
            Field::new("min_key", DataType::Utf8, true),
            Field::new("max_key", DataType::Utf8, true),
            Field::new("null_value_counts", DataType::Utf8, false),
            Field::new("min_value_stats", DataType::Utf8, false),
            Field::new("max_value_stats", DataType::Utf8, false),
            Field::new("min_sequence_number", DataType::Int64, true),
            Field::new("max_sequence_number", DataType::Int64, true),
            Field::new("creation_time", time_type(), true),
            Field::new("deleteRowCount", DataType::Int64, true),
            Field::new("file_source", DataType::Utf8, true),
            Field::new("first_row_id", DataType::Int64, true),
            Field::new("write_cols", DataType::new_list(DataType::Utf8, true), true),
        ];
        let text = |v: Vec<String>| -> ArrayRef { Arc::new(StringArray::from(v)) };
        let columns: Vec<ArrayRef> = vec![
            text(self.partition),
            Arc::new(Int32Array::from(self.bucket)),
            text(self.file_path),
            text(self.file_format),
            Arc::new(Int64Array::from(self.schema_id)),
            Arc::new(Int32Array::from(self.level)),
            Arc::new(Int64Array::from(self.record_count)),
            Arc::new(Int64Array::from(self.file_size)),
            Arc::new(StringArray::from(self.min_key)),
            Arc::new(StringArray::from(self.max_key)),
            text(self.null_counts),
            text(self.min_values),
            text(self.max_values),
            Arc::new(Int64Array::from(self.min_sequence)),
            Arc::new(Int64Array::from(self.max_sequence)),
            times(self.creation_time),
            Arc::new(Int64Array::from(self.delete_row_count)),
            Arc::new(StringArray::from(self.file_source)),
            Arc::new(Int64Array::from(self.first_row_id)),
            Arc::new(self.write_cols.finish()),
        ];
        (fields, columns)
    }
}

// ---------------------------------------------------------------------------------------------
// Value statistics
// ---------------------------------------------------------------------------------------------

/// One column's statistics as texts, named by the table's current column.
struct ColumnStats {
    name: String,
    null_count: Option<i64>,
    min: String,
    max: String,
}

/// A file's value statistics over the table's columns (Paimon's `SimpleStatsEvolution`): by
/// field id through the file's schema (projected to `write_cols` when set), by name through
/// `value_stats_cols`; a column the file lacks has no min/max and all its rows count as nulls.
fn value_stats(
    file: &DataFileMeta,
    file_schema: &TableSchema,
    table: &TableSchema,
) -> Vec<ColumnStats> {
    // Written columns in their written order (system columns among them are not fields).
    let data_fields: Vec<&crate::storage::spec::types::DataField> = match &file.write_cols {
        Some(cols) => cols.iter().filter_map(|c| file_schema.field(c)).collect(),
        None => file_schema.fields.iter().collect(),
    };
    let evolved = file_schema.id != table.id || file.write_cols.is_some();
    let stats: &SimpleStats = &file.value_stats;
    // Positions of the data fields in the stats rows.
    let positions: Vec<Option<usize>> = match &file.value_stats_cols {
        Some(cols) => data_fields
            .iter()
            .map(|f| cols.iter().position(|c| *c == f.name))
            .collect(),
        None => (0..data_fields.len()).map(Some).collect(),
    };
    let stats_types: Vec<PaimonType> = match &file.value_stats_cols {
        Some(cols) => cols
            .iter()
            .map(|c| {
                data_fields
                    .iter()
                    .find(|f| f.name == *c)
                    .map(|f| f.data_type.clone())
                    .unwrap_or_else(|| PaimonType::nullable(TypeKind::Int))
            })
            .collect(),
        None => data_fields.iter().map(|f| f.data_type.clone()).collect(),
    };
    // Unreadable statistics (types tarn cannot decode) show as unknown, not as an error.
    let decode = |bytes: &[u8]| {
        binary_row::deserialize(bytes, &stats_types)
            .unwrap_or_else(|_| vec![Datum::Null; stats_types.len()])
    };
    let (min, max) = (decode(&stats.min_values), decode(&stats.max_values));
    let null_counts = stats.null_counts.as_deref().unwrap_or(&[]);
    // Without evolution Paimon shows as many columns as the statistics row holds.
    let shown = if evolved || file.value_stats_cols.is_some() {
        table.fields.len()
    } else {
        table
            .fields
            .len()
            .min(arity(&stats.min_values).unwrap_or(0))
    };
    table.fields[..shown]
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let source = if evolved {
                data_fields.iter().position(|f| f.id == field.id)
            } else {
                Some(i)
            };
            let Some(source) = source else {
                return ColumnStats {
                    name: field.name.clone(),
                    null_count: Some(file.row_count),
                    min: "null".into(),
                    max: "null".into(),
                };
            };
            let at = positions.get(source).copied().flatten();
            let ty = at.and_then(|p| stats_types.get(p));
            let text = |values: &[Datum]| match (at.and_then(|p| values.get(p)), ty) {
                (Some(v), Some(ty)) => java_text(v, ty),
                _ => "null".to_owned(),
            };
            ColumnStats {
                name: field.name.clone(),
                null_count: at.and_then(|p| null_counts.get(p).copied().flatten()),
                min: text(&min),
                max: text(&max),
            }
        })
        .collect()
}

/// `{a=1, b=x}`: Java's `TreeMap.toString`, keys in `String.compareTo` (UTF-16) order.
fn stats_text(stats: &[ColumnStats], value: impl Fn(&ColumnStats) -> String) -> String {
    let mut sorted: Vec<&ColumnStats> = stats.iter().collect();
    sorted.sort_by(|a, b| a.name.encode_utf16().cmp(b.name.encode_utf16()));
    let mut out = String::from("{");
    for (i, s) in sorted.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}={}", s.name, value(s));
    }
    out.push('}');
    out
}

// ---------------------------------------------------------------------------------------------
// Value texts
// ---------------------------------------------------------------------------------------------

/// The field count of a serialized BinaryRow.
fn arity(bytes: &[u8]) -> Option<usize> {
    let prefix = bytes.first_chunk::<4>()?;
    usize::try_from(i32::from_be_bytes(*prefix)).ok()
}

/// A file's min or max key: Java's `Arrays.toString` of the key's internal values, in the
/// file's own schema; NULL for an empty key (append tables).
fn key_text(bytes: &[u8], schema: &TableSchema) -> Result<Option<String>, StorageError> {
    if arity(bytes).unwrap_or(0) == 0 {
        return Ok(None);
    }
    // Paimon reads a key-less table's keys as whole rows.
    let types: Vec<PaimonType> = if schema.primary_keys.is_empty() {
        schema.fields.iter().map(|f| f.data_type.clone()).collect()
    } else {
        schema
            .trimmed_primary_keys()
            .iter()
            .map(|k| schema.type_of(k).clone())
            .collect()
    };
    let values = binary_row::deserialize(bytes, &types)?;
    let texts: Vec<String> = values
        .iter()
        .zip(&types)
        .map(|(v, ty)| java_text(v, ty))
        .collect();
    Ok(Some(format!("[{}]", texts.join(", "))))
}

/// A partition row cast to STRING as Paimon casts rows: `{2024-01-01, 3}`, NULL as `null`.
fn row_text(values: &[Datum], types: &[PaimonType]) -> String {
    let texts: Vec<String> = values
        .iter()
        .zip(types)
        .map(|(v, ty)| match v {
            Datum::Null => "null".to_owned(),
            v => cast_text(v, ty),
        })
        .collect();
    format!("{{{}}}", texts.join(", "))
}

/// Paimon's `CAST(v AS STRING)` (its `*ToStringCastRule`s).
fn cast_text(value: &Datum, ty: &PaimonType) -> String {
    match (value, &ty.kind) {
        (Datum::Date(days), _) => date_text(*days),
        (Datum::Time(ms), TypeKind::Time(p)) => time_text(*ms, *p),
        (Datum::Timestamp(ts), TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p)) => {
            // Paimon shows LTZ values in the JVM's zone; tarn's zone for them is UTC.
            let nanos = ts.millis.rem_euclid(1000) * 1_000_000 + i64::from(ts.nanos_of_milli);
            let mut fraction = format!("{nanos:09}");
            while fraction.len() > usize::from(*p) && fraction.ends_with('0') {
                fraction.pop();
            }
            let mut out = date_time_text(ts.millis, ' ', true);
            if !fraction.is_empty() {
                out.push('.');
                out.push_str(&fraction);
            }
            out
        }
        (Datum::Binary(b), _) => String::from_utf8_lossy(b).into_owned(),
        (v, _) => java_text(v, ty),
    }
}

/// Java's `toString` of a value in Paimon's internal form (what `Arrays.toString` and
/// `Map.toString` print): DATE and TIME are their day and millisecond numbers, TIMESTAMP is
/// `LocalDateTime.toString`, DECIMAL its plain text.
fn java_text(value: &Datum, ty: &PaimonType) -> String {
    match value {
        Datum::Null => "null".to_owned(),
        Datum::Boolean(b) => b.to_string(),
        Datum::TinyInt(v) => v.to_string(),
        Datum::SmallInt(v) => v.to_string(),
        Datum::Int(v) => v.to_string(),
        Datum::BigInt(v) => v.to_string(),
        Datum::Float(v) => java_float(f64::from(*v), format!("{v:e}")),
        Datum::Double(v) => java_float(*v, format!("{v:e}")),
        Datum::Decimal(v) => match ty.kind {
            TypeKind::Decimal { scale, .. } => decimal_text(*v, scale),
            _ => v.to_string(),
        },
        Datum::String(s) => s.clone(),
        // Java prints an array's identity here; the bytes as text say more.
        Datum::Binary(b) => String::from_utf8_lossy(b).into_owned(),
        Datum::Date(days) => days.to_string(),
        Datum::Time(ms) => ms.to_string(),
        Datum::Timestamp(ts) => {
            // LocalDateTime.toString: seconds only when not zero, the fraction in groups of 3.
            let nanos = ts.millis.rem_euclid(1000) * 1_000_000 + i64::from(ts.nanos_of_milli);
            let seconds = ts.millis.div_euclid(1000).rem_euclid(60);
            let mut out = date_time_text(ts.millis, 'T', seconds != 0 || nanos != 0);
            if nanos != 0 {
                if nanos % 1_000_000 == 0 {
                    let _ = write!(out, ".{:03}", nanos / 1_000_000);
                } else if nanos % 1000 == 0 {
                    let _ = write!(out, ".{:06}", nanos / 1000);
                } else {
                    let _ = write!(out, ".{nanos:09}");
                }
            }
            out
        }
    }
}

/// `YYYY-MM-DD<sep>HH:MM[:SS]` of epoch milliseconds.
fn date_time_text(millis: i64, sep: char, with_seconds: bool) -> String {
    let secs = millis.div_euclid(1000);
    let days = secs.div_euclid(86_400) as i32;
    let s = secs.rem_euclid(86_400);
    let mut out = format!(
        "{}{sep}{:02}:{:02}",
        date_text(days),
        s / 3600,
        (s / 60) % 60
    );
    if with_seconds {
        let _ = write!(out, ":{:02}", s % 60);
    }
    out
}

/// Paimon's TIME to STRING: `HH:MM:SS`, then for `TIME(p > 0)` the milliseconds' digits up to
/// the last non-zero one (at least one).
fn time_text(ms: i32, precision: u8) -> String {
    let ms = ms.rem_euclid(86_400_000);
    let s = ms / 1000;
    let mut out = format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
    if precision > 0 {
        out.push('.');
        let mut rest = ms % 1000;
        let mut left = precision;
        while left > 0 {
            out.push(char::from(b'0' + (rest / 100) as u8));
            rest = rest % 100 * 10;
            if rest == 0 {
                break;
            }
            left -= 1;
        }
    }
    out
}

/// Java's `Double.toString`/`Float.toString` from the shortest digits (`sci`: Rust's `{:e}` of
/// the value): plain between 10^-3 and 10^7 (`1.0`, `0.001`), else `1.0E10`.
fn java_float(v: f64, sci: String) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let (sign, sci) = match sci.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", sci.as_str()),
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let magnitude = v.abs();
    let body = if (1e-3..1e7).contains(&magnitude) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            let padded = format!("{digits:0<int_len$}");
            let (int, frac) = padded.split_at(int_len);
            format!("{int}.{}", if frac.is_empty() { "0" } else { frac })
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        }
    } else {
        let (first, rest) = digits.split_at(1);
        format!("{first}.{}E{exp}", if rest.is_empty() { "0" } else { rest })
    };
    format!("{sign}{body}")
}

/// The format of a data file from its name (`data-….parquet` → `parquet`; a Hadoop compression
/// extension after it is skipped: `x.csv.gz` → `csv`), as Paimon's `formatIdentifier`.
fn format_identifier(file_name: &str) -> String {
    const COMPRESSIONS: &[&str] = &["gz", "bz2", "deflate", "snappy", "lz4", "zst"];
    let Some((stem, ext)) = file_name.rsplit_once('.') else {
        return String::new();
    };
    if COMPRESSIONS.iter().any(|c| c.eq_ignore_ascii_case(ext))
        && let Some((_, inner)) = stem.rsplit_once('.')
    {
        return inner.to_owned();
    }
    ext.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::spec::datum::Timestamp;

    fn t(kind: TypeKind) -> PaimonType {
        PaimonType::nullable(kind)
    }

    #[test]
    fn doubles_print_like_java() {
        let d = |v: f64| java_float(v, format!("{v:e}"));
        assert_eq!(d(1.0), "1.0");
        assert_eq!(d(-2.5), "-2.5");
        assert_eq!(d(0.001), "0.001");
        assert_eq!(d(0.0001), "1.0E-4");
        assert_eq!(d(1234567.0), "1234567.0");
        assert_eq!(d(1e7), "1.0E7");
        assert_eq!(d(1.25e10), "1.25E10");
        assert_eq!(d(100.0), "100.0");
        assert_eq!(d(0.1), "0.1");
        assert_eq!(d(0.0), "0.0");
        let f = |v: f32| java_float(f64::from(v), format!("{v:e}"));
        assert_eq!(f(0.1), "0.1");
        assert_eq!(f(3.5e9), "3.5E9");
    }

    #[test]
    fn values_print_like_paimon() {
        let ts = Datum::Timestamp(Timestamp::from_millis(1_704_103_200_000)); // 2024-01-01 10:00
        assert_eq!(
            java_text(&ts, &t(TypeKind::Timestamp(6))),
            "2024-01-01T10:00"
        );
        assert_eq!(
            cast_text(&ts, &t(TypeKind::Timestamp(6))),
            "2024-01-01 10:00:00.000000"
        );
        assert_eq!(
            cast_text(&ts, &t(TypeKind::Timestamp(0))),
            "2024-01-01 10:00:00"
        );
        let ts2 = Datum::Timestamp(Timestamp::from_millis(1_704_103_201_500));
        assert_eq!(
            java_text(&ts2, &t(TypeKind::Timestamp(3))),
            "2024-01-01T10:00:01.500"
        );
        assert_eq!(
            cast_text(&ts2, &t(TypeKind::Timestamp(3))),
            "2024-01-01 10:00:01.500"
        );
        let date = Datum::Date(19_723);
        assert_eq!(java_text(&date, &t(TypeKind::Date)), "19723");
        assert_eq!(cast_text(&date, &t(TypeKind::Date)), "2024-01-01");
        assert_eq!(time_text(36_000_000, 0), "10:00:00");
        assert_eq!(time_text(36_000_000, 3), "10:00:00.0");
        assert_eq!(time_text(36_000_120, 3), "10:00:00.12");
        let dec = t(TypeKind::Decimal {
            precision: 10,
            scale: 2,
        });
        assert_eq!(java_text(&Datum::Decimal(1250), &dec), "12.50");
        assert_eq!(
            row_text(
                &[Datum::Date(19_723), Datum::Int(3), Datum::Null],
                &[t(TypeKind::Date), t(TypeKind::Int), t(TypeKind::Int)]
            ),
            "{2024-01-01, 3, null}"
        );
        assert_eq!(row_text(&[], &[]), "{}");
    }

    fn file(name: &str, level: i32, size: i64, sequence: i64) -> Arc<DataFileMeta> {
        Arc::new(DataFileMeta {
            file_name: name.to_owned(),
            file_size: size,
            row_count: 1,
            min_key: Vec::new(),
            max_key: Vec::new(),
            key_stats: SimpleStats::empty(),
            value_stats: SimpleStats::empty(),
            min_sequence_number: sequence,
            max_sequence_number: sequence,
            schema_id: 0,
            level,
            extra_files: Vec::new(),
            creation_time: Some(0),
            delete_row_count: Some(0),
            embedded_file_index: None,
            file_source: None,
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        })
    }

    fn context(has_primary_key: bool) -> ShapeContext {
        ShapeContext {
            opts: has_primary_key.then(CompactOptions::default),
            has_primary_key,
            now: PickTime::default(),
        }
    }

    #[test]
    fn bucket_shapes() {
        let shape = |files: &[Arc<DataFileMeta>]| context(true).shape(files);
        let level0: Vec<_> = (0..4)
            .map(|i| file(&format!("l0-{i}"), 0, 100, i))
            .collect();
        // Four level-0 runs: below the trigger (5).
        assert_eq!(
            shape(&level0),
            BucketShape {
                sorted_runs: Some(4),
                level0_files: 4,
                max_level: 0,
                pending: Some(false),
            }
        );
        // A fifth run: the policy compacts (size amplification over the oldest run).
        let mut five = level0.clone();
        five.push(file("l0-4", 0, 100, 4));
        assert_eq!(shape(&five).pending, Some(true));
        // Levels >= 1 are one run each, however many files they hold.
        let mixed = vec![
            file("a", 5, 1000, 0),
            file("b", 5, 1000, 1),
            file("c", 3, 100, 2),
            file("d", 0, 10, 3),
        ];
        assert_eq!(
            shape(&mixed),
            BucketShape {
                sorted_runs: Some(3),
                level0_files: 1,
                max_level: 5,
                pending: Some(false),
            }
        );
        // Append tables: files, but no runs to merge and nothing for the policy.
        assert_eq!(
            context(false).shape(&level0),
            BucketShape {
                sorted_runs: None,
                level0_files: 4,
                max_level: 0,
                pending: None,
            }
        );
    }

    #[test]
    fn format_identifiers() {
        assert_eq!(format_identifier("data-1-0.parquet"), "parquet");
        assert_eq!(format_identifier("data-1-0.orc"), "orc");
        assert_eq!(format_identifier("data-1-0.csv.gz"), "csv");
    }
}
