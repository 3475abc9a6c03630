//! Paimon's system tables of a table (`"orders$snapshots"`, `$schemas`, `$tags`, `$options`,
//! and over a snapshot's files `$files`, `$manifests`, `$partitions`, `$buckets`: see
//! [`super::system_files`]), with Paimon's names and columns, queryable with any SQL (they are
//! ordinary in-memory tables built when a statement names them, from the table's metadata files
//! at that moment).
//!
//! The file tables read a pinned snapshot when versioned (`"t$files" VERSION AS OF 3` reaches
//! the catalog as `t$files$snapshot$3`, see [`SystemName`]); the others have no versions.
//!
//! `"t$compaction"` is tarn's own (Paimon has no such table): one row of this process's
//! compaction counters for the table since the server started (`CompactorState` in
//! `storage/compactor.rs`; other processes' and earlier runs' work is not in it):
//! `compactions` committed, `abandoned` (inputs changed meanwhile), `bytes_read` and
//! `bytes_written` by compactions, `bytes_committed` (data files added by user commits),
//! `write_amplification` = (bytes_committed + bytes_written) / bytes_committed (NULL before
//! the first commit), `write_stalls`, whether a pass is `running`, and the `write_only`
//! option. `$buckets` also ends with tarn's columns of each bucket's LSM shape
//! (`sorted_runs`, `level0_file_count`, `max_level`, `pending_compaction`; see
//! [`super::system_files`]).
//!
//! Times are `timestamptz` (Paimon's own readers show the writer's local wall-clock time; an
//! absolute time reads the same from every session whatever its TimeZone).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::system_files::{FILE_TABLES, file_table};
use super::table::storage_error;
use super::time_travel::VersionedName;
use crate::storage::{CommitState, CompactorState, Snapshot, Table, VersionSpec};

/// The system tables tarn serves, by the suffix after `$`.
pub const SYSTEM_TABLES: &[&str] = &[
    "snapshots",
    "schemas",
    "tags",
    "options",
    "files",
    "manifests",
    "partitions",
    "buckets",
    "audit_log",
    "compaction",
];

/// A system table's name as the catalog sees it: `orders$files`, or with the version a
/// versioned reference was renamed to, `orders$files$snapshot$3` (`$tag$x`, `$timestamp$ms`).
#[derive(Debug, Clone, PartialEq)]
pub struct SystemName {
    pub table: String,
    pub kind: String,
    pub version: Option<VersionSpec>,
}

impl SystemName {
    /// Reads `table$kind[$version]`; `None` when `kind` is not a system table (or the version
    /// does not read).
    pub fn parse(name: &str) -> Option<Self> {
        let (table, rest) = name.split_once('$')?;
        let (kind, version) = match rest.split_once('$') {
            Some((kind, version)) => (kind, Some(version)),
            None => (rest, None),
        };
        if !SYSTEM_TABLES.contains(&kind) {
            return None;
        }
        let version = match version {
            Some(v) => Some(VersionedName::parse(&format!("{table}${v}"))?.version),
            None => None,
        };
        Some(Self {
            table: table.to_owned(),
            kind: kind.to_owned(),
            version,
        })
    }
}

/// `table$kind` as a table, or `None` if `kind` is not a system table. `version` is the
/// snapshot a versioned reference pins; only the file tables have versions.
///
/// The rows are read again each time a plan is executed (a prepared statement run many times
/// sees the table's metadata as it is then, not as it was when it was prepared).
pub async fn system_table(
    table: &Table,
    kind: &str,
    version: Option<&Snapshot>,
) -> Result<Option<Arc<dyn TableProvider>>> {
    if version.is_some() && !FILE_TABLES.contains(&kind) {
        return Err(datafusion::error::DataFusionError::NotImplemented(format!(
            "\"{}${kind}\" has no versions: VERSION AS OF and FOR SYSTEM_TIME AS OF apply to \
             the $files, $manifests, $partitions, $buckets and $audit_log system tables",
            table.name()
        )));
    }
    let Some(batch) = system_rows(table, kind, version).await? else {
        return Ok(None);
    };
    Ok(Some(Arc::new(SystemTable {
        table: table.clone(),
        kind: kind.to_owned(),
        version: version.cloned(),
        schema: batch.schema(),
    })))
}

/// The rows of `table$kind` now.
async fn system_rows(
    table: &Table,
    kind: &str,
    version: Option<&Snapshot>,
) -> Result<Option<RecordBatch>> {
    let (schema, columns): (Vec<Field>, Vec<ArrayRef>) = match kind {
        "snapshots" => snapshots(table).await?,
        "tags" => tags(table).await?,
        "schemas" => schemas(table).await?,
        "options" => options(table),
        "compaction" => compaction(table),
        _ => match file_table(table, kind, version).await? {
            Some(columns) => columns,
            None => return Ok(None),
        },
    };
    let schema = Arc::new(Schema::new(schema));
    Ok(Some(RecordBatch::try_new(schema, columns)?))
}

/// A system table whose rows are read when its scan is planned.
#[derive(Debug)]
struct SystemTable {
    table: Table,
    kind: String,
    version: Option<Snapshot>,
    schema: SchemaRef,
}

#[async_trait::async_trait]
impl TableProvider for SystemTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let batch = system_rows(&self.table, &self.kind, self.version.as_ref())
            .await?
            .expect("a system table kind");
        scan_rows(&self.schema, vec![batch], state, projection, filters, limit).await
    }
}

/// The scan of rows a system table computed when its plan ran.
pub(super) async fn scan_rows(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
    state: &dyn Session,
    projection: Option<&Vec<usize>>,
    filters: &[Expr],
    limit: Option<usize>,
) -> Result<Arc<dyn ExecutionPlan>> {
    MemTable::try_new(Arc::clone(schema), vec![batches])?
        .scan(state, projection, filters, limit)
        .await
}

pub(super) fn time_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

pub(super) fn times(values: Vec<Option<i64>>) -> ArrayRef {
    Arc::new(TimestampMillisecondArray::from(values).with_timezone("UTC"))
}

async fn snapshots(table: &Table) -> Result<(Vec<Field>, Vec<ArrayRef>)> {
    let mut all = Vec::new();
    for id in table.snapshots().list_ids().await.map_err(storage_error)? {
        // Expired between listing and reading: not a retained snapshot any more.
        if let Some(s) = table.snapshots().get(id).await.map_err(storage_error)? {
            all.push(s);
        }
    }
    Ok(snapshot_columns(&all))
}

fn snapshot_columns(all: &[Snapshot]) -> (Vec<Field>, Vec<ArrayRef>) {
    let fields = vec![
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("schema_id", DataType::Int64, false),
        Field::new("commit_user", DataType::Utf8, false),
        Field::new("commit_identifier", DataType::Int64, false),
        Field::new("commit_kind", DataType::Utf8, false),
        Field::new("commit_time", time_type(), false),
        Field::new("base_manifest_list", DataType::Utf8, false),
        Field::new("delta_manifest_list", DataType::Utf8, false),
        Field::new("changelog_manifest_list", DataType::Utf8, true),
        Field::new("total_record_count", DataType::Int64, true),
        Field::new("delta_record_count", DataType::Int64, true),
        Field::new("changelog_record_count", DataType::Int64, true),
        Field::new("watermark", DataType::Int64, true),
    ];
    let int = |f: fn(&Snapshot) -> Option<i64>| -> ArrayRef {
        Arc::new(Int64Array::from(all.iter().map(f).collect::<Vec<_>>()))
    };
    let text = |f: fn(&Snapshot) -> Option<String>| -> ArrayRef {
        Arc::new(StringArray::from(all.iter().map(f).collect::<Vec<_>>()))
    };
    let columns = vec![
        int(|s| Some(s.id)),
        int(|s| Some(s.schema_id)),
        text(|s| Some(s.commit_user.clone())),
        int(|s| Some(s.commit_identifier)),
        text(|s| Some(s.commit_kind.as_str().to_owned())),
        times(all.iter().map(|s| Some(s.time_millis)).collect()),
        text(|s| Some(s.base_manifest_list.clone())),
        text(|s| Some(s.delta_manifest_list.clone())),
        text(|s| s.changelog_manifest_list.clone()),
        int(|s| s.total_record_count),
        int(|s| s.delta_record_count),
        int(|s| s.changelog_record_count),
        int(|s| s.watermark),
    ];
    (fields, columns)
}

async fn tags(table: &Table) -> Result<(Vec<Field>, Vec<ArrayRef>)> {
    let all = table.tags().list().await.map_err(storage_error)?;
    let fields = vec![
        Field::new("tag_name", DataType::Utf8, false),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("schema_id", DataType::Int64, false),
        Field::new("commit_time", time_type(), false),
        Field::new("record_count", DataType::Int64, true),
        Field::new("create_time", time_type(), true),
        Field::new("time_retained", DataType::Utf8, true),
    ];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(
            all.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(
            all.iter().map(|t| t.snapshot.id).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(
            all.iter().map(|t| t.snapshot.schema_id).collect::<Vec<_>>(),
        )),
        times(all.iter().map(|t| Some(t.snapshot.time_millis)).collect()),
        Arc::new(Int64Array::from(
            all.iter()
                .map(|t| t.snapshot.total_record_count)
                .collect::<Vec<_>>(),
        )),
        times(all.iter().map(|t| t.create_time_millis).collect()),
        Arc::new(StringArray::from(
            all.iter()
                .map(|t| t.time_retained.map(|d| format!("{d:?}")))
                .collect::<Vec<_>>(),
        )),
    ];
    Ok((fields, columns))
}

/// Every schema version up to the current one, with its parts as Paimon's JSON.
async fn schemas(table: &Table) -> Result<(Vec<Field>, Vec<ArrayRef>)> {
    let mut rows: Vec<(i64, serde_json::Value)> = Vec::new();
    for id in 0..=table.schema().id {
        // A version other engines removed is skipped, not an error.
        if let Ok(schema) = table.schema_by_id(id).await {
            let json = serde_json::from_slice(&schema.to_json())
                .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
            rows.push((id, json));
        }
    }
    let part = |key: &str| -> ArrayRef {
        Arc::new(StringArray::from(
            rows.iter()
                .map(|(_, j)| j.get(key).filter(|v| !v.is_null()).map(|v| v.to_string()))
                .collect::<Vec<_>>(),
        ))
    };
    let fields = vec![
        Field::new("schema_id", DataType::Int64, false),
        Field::new("fields", DataType::Utf8, true),
        Field::new("partition_keys", DataType::Utf8, true),
        Field::new("primary_keys", DataType::Utf8, true),
        Field::new("options", DataType::Utf8, true),
        Field::new("comment", DataType::Utf8, true),
        Field::new("update_time", time_type(), true),
    ];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(
            rows.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        )),
        part("fields"),
        part("partitionKeys"),
        part("primaryKeys"),
        part("options"),
        Arc::new(StringArray::from(
            rows.iter()
                .map(|(_, j)| j.get("comment").and_then(|v| v.as_str()).map(str::to_owned))
                .collect::<Vec<_>>(),
        )),
        times(
            rows.iter()
                .map(|(_, j)| j.get("timeMillis").and_then(serde_json::Value::as_i64))
                .collect(),
        ),
    ];
    Ok((fields, columns))
}

fn options(table: &Table) -> (Vec<Field>, Vec<ArrayRef>) {
    let options = &table.schema().options;
    (
        vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, false),
        ],
        vec![
            Arc::new(StringArray::from(
                options.keys().cloned().collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                options.values().cloned().collect::<Vec<_>>(),
            )),
        ],
    )
}

/// `t$compaction`: this process's compaction counters of the table, one row.
fn compaction(table: &Table) -> (Vec<Field>, Vec<ArrayRef>) {
    let state = table.state::<CompactorState>();
    let commit = table.state::<CommitState>();
    let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    let counters = CompactionCounters {
        compactions: load(&state.compactions),
        abandoned: load(&state.abandoned),
        bytes_read: load(&state.bytes_read),
        bytes_written: load(&state.bytes_written),
        bytes_committed: load(&commit.bytes_committed),
        write_stalls: load(&state.stalls),
    };
    let write_only = table.schema().core_options().write_only();
    let int = |name: &str| Field::new(name, DataType::Int64, false);
    let fields = vec![
        int("compactions"),
        int("abandoned"),
        int("bytes_read"),
        int("bytes_written"),
        int("bytes_committed"),
        Field::new("write_amplification", DataType::Float64, true),
        int("write_stalls"),
        Field::new("running", DataType::Boolean, false),
        Field::new("write_only", DataType::Boolean, false),
    ];
    let value = |n: u64| -> ArrayRef {
        Arc::new(Int64Array::from(vec![i64::try_from(n).unwrap_or(i64::MAX)]))
    };
    let columns: Vec<ArrayRef> = vec![
        value(counters.compactions),
        value(counters.abandoned),
        value(counters.bytes_read),
        value(counters.bytes_written),
        value(counters.bytes_committed),
        Arc::new(Float64Array::from(vec![counters.write_amplification()])),
        value(counters.write_stalls),
        Arc::new(BooleanArray::from(vec![!state.is_idle()])),
        Arc::new(BooleanArray::from(vec![write_only])),
    ];
    (fields, columns)
}

/// The counters `t$compaction` shows, read once.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct CompactionCounters {
    compactions: u64,
    abandoned: u64,
    bytes_read: u64,
    bytes_written: u64,
    bytes_committed: u64,
    write_stalls: u64,
}

impl CompactionCounters {
    /// Bytes written to data files per byte committed: (committed + compacted) / committed;
    /// `None` before anything was committed.
    fn write_amplification(&self) -> Option<f64> {
        (self.bytes_committed > 0).then(|| {
            (self.bytes_committed as f64 + self.bytes_written as f64) / self.bytes_committed as f64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_amplification() {
        let none = CompactionCounters::default();
        assert_eq!(none.write_amplification(), None);
        // Compaction alone (e.g. of files another process committed) has no denominator.
        let compacted_only = CompactionCounters {
            bytes_written: 100,
            ..none
        };
        assert_eq!(compacted_only.write_amplification(), None);
        let committed = CompactionCounters {
            bytes_committed: 400,
            ..none
        };
        assert_eq!(committed.write_amplification(), Some(1.0));
        let both = CompactionCounters {
            bytes_committed: 400,
            bytes_written: 600,
            ..none
        };
        assert_eq!(both.write_amplification(), Some(2.5));
    }

    #[test]
    fn system_names() {
        let c = SystemName::parse("orders$compaction").expect("a system table");
        assert_eq!(
            (c.table.as_str(), c.kind.as_str()),
            ("orders", "compaction")
        );
        assert_eq!(c.version, None);
        assert!(SystemName::parse("orders$compactions").is_none());
    }
}
