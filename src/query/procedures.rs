//! Paimon's maintenance procedures (`CALL sys.<procedure>`) on one table: what each one does
//! through storage's facade (`storage::procedures`) and the one row it returns.
//!
//! The session reads a CALL's arguments into a [`Procedure`] and resolves its table; this
//! module runs it. Keeping the run here puts procedures where every other statement runs (the
//! query layer), so the wire layer never names storage's maintenance floor. The result columns
//! are fixed per procedure ([`result_schema`]) so that clients can describe a CALL before
//! running it.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};

use crate::storage::procedures::{self as maintenance, ExpireConfig};
use crate::storage::spec::options::partition::PartitionExpireOptions;
use crate::storage::{Snapshot, Table, VersionSpec};

use super::QueryError;

/// Procedures tarn runs, for the hint of an unknown one.
pub const PROCEDURES: &str = "sys.create_tag, sys.delete_tag, sys.expire_snapshots, \
                              sys.rollback_to, sys.restore, sys.remove_orphan_files, sys.compact, \
                              sys.flush, sys.expire_partitions";

/// The youngest files `remove_orphan_files` may delete: a commit in flight writes its files
/// before its snapshot, so younger files may be referenced by nothing yet.
const MIN_ORPHAN_AGE_MILLIS: i64 = 3_600_000;

/// One procedure with its arguments read (`None`: the table's own setting or Paimon's default).
#[derive(Debug, Clone, PartialEq)]
pub enum Procedure {
    /// `create_tag(table, tag [, snapshot])`: the latest snapshot unless one is named.
    CreateTag { tag: String, snapshot: Option<i64> },
    /// `delete_tag(table, tag)`.
    DeleteTag { tag: String },
    /// `expire_snapshots(table [, retain_max, retain_min, older_than, max_deletes])`.
    ExpireSnapshots {
        retain_max: Option<i64>,
        retain_min: Option<i64>,
        /// Milliseconds since the epoch.
        older_than: Option<i64>,
        max_deletes: Option<i64>,
    },
    /// `rollback_to(table, version [, force])`.
    RollbackTo { version: VersionSpec, force: bool },
    /// `restore(table, version)`.
    Restore { version: VersionSpec },
    /// `compact(table [, partitions, compact_strategy])`: full, or what the background
    /// compactor would do now (`minor`, every bucket).
    Compact {
        partitions: Vec<String>,
        minor: bool,
    },
    /// `flush(table)`: the table's commits waiting in the commit log, as a snapshot now.
    Flush,
    /// `expire_partitions(table [, expiration_time, timestamp_formatter, timestamp_pattern,
    /// expire_strategy, max_expires])`: the table's `partition.*` options with these in
    /// their place (Paimon option key → value).
    ExpirePartitions { options: Vec<(String, String)> },
    /// `remove_orphan_files(table [, older_than, dry_run])`.
    RemoveOrphanFiles {
        /// Milliseconds since the epoch (`None`: Paimon's default age before now).
        older_than: Option<i64>,
        dry_run: bool,
    },
}

impl Procedure {
    /// The procedure's name under `sys.`.
    pub fn name(&self) -> &'static str {
        match self {
            Procedure::CreateTag { .. } => "create_tag",
            Procedure::DeleteTag { .. } => "delete_tag",
            Procedure::ExpireSnapshots { .. } => "expire_snapshots",
            Procedure::RollbackTo { .. } => "rollback_to",
            Procedure::Restore { .. } => "restore",
            Procedure::Compact { .. } => "compact",
            Procedure::RemoveOrphanFiles { .. } => "remove_orphan_files",
            Procedure::Flush => "flush",
            Procedure::ExpirePartitions { .. } => "expire_partitions",
        }
    }
}

/// The columns `CALL sys.<procedure>` returns (`None`: no such procedure).
pub fn result_schema(procedure: &str) -> Option<Schema> {
    let int = |n: &str| Field::new(n, DataType::Int64, true);
    let text = |n: &str| Field::new(n, DataType::Utf8, true);
    let fields = match procedure {
        "create_tag" | "delete_tag" => vec![text("tag"), int("snapshot_id")],
        "expire_snapshots" => vec![
            int("deleted_snapshots_count"),
            int("first_deleted_snapshot"),
            int("last_deleted_snapshot"),
            int("deleted_data_files"),
            int("deleted_changelog_files"),
            int("deleted_manifests"),
        ],
        "rollback_to" => vec![
            int("previous_snapshot_id"),
            int("current_snapshot_id"),
            int("deleted_snapshots_count"),
            text("deleted_tags"),
            int("deleted_data_files"),
        ],
        "restore" => vec![int("restored_snapshot_id"), int("new_snapshot_id")],
        "compact" => vec![
            int("compacted_buckets"),
            int("files_before"),
            int("files_after"),
            int("bytes_read"),
            int("bytes_written"),
            int("last_snapshot_id"),
        ],
        "flush" => vec![int("snapshot_id")],
        "expire_partitions" => vec![text("expired_partitions")],
        "remove_orphan_files" => vec![
            int("deleted_files_count"),
            int("deleted_bytes"),
            Field::new("dry_run", DataType::Boolean, true),
        ],
        _ => return None,
    };
    Some(Schema::new(fields))
}

/// Runs `procedure` on `table` (`now_millis`: the warehouse clock's now); returns its row
/// (`expire_partitions`: one per partition).
pub async fn run(
    table: &Table,
    procedure: Procedure,
    now_millis: i64,
) -> Result<RecordBatch, QueryError> {
    let name = procedure.name();
    let row: Vec<ArrayRef> = match procedure {
        Procedure::CreateTag { tag, snapshot } => {
            let snapshot = match snapshot {
                Some(id) => table.resolve_version(&VersionSpec::SnapshotId(id)).await?,
                None => latest(table).await?,
            };
            table.tags().create(&tag, &snapshot, now_millis).await?;
            vec![text(tag), int(snapshot.id)]
        }
        Procedure::DeleteTag { tag } => {
            let snapshot = table
                .resolve_version(&VersionSpec::Tag(tag.clone()))
                .await?;
            table.tags().delete(&tag).await?;
            vec![text(tag), int(snapshot.id)]
        }
        Procedure::ExpireSnapshots {
            retain_max,
            retain_min,
            older_than,
            max_deletes,
        } => {
            let cfg = ExpireConfig::from_options(&table.schema().options)?.with_procedure_args(
                retain_max,
                retain_min,
                older_than,
                max_deletes,
            );
            cfg.check().map_err(|message| QueryError::Coded {
                code: "22023",
                message,
            })?;
            let report = maintenance::expire_snapshots(table, &cfg).await?;
            let (first, last) = match report.expired.is_empty() {
                true => (None, None),
                false => (Some(report.expired.start), Some(report.expired.end - 1)),
            };
            vec![
                int(report.snapshots_deleted as i64),
                opt_int(first),
                opt_int(last),
                int(report.data_files_deleted as i64),
                int(report.changelog_files_deleted as i64),
                int(report.manifests_deleted as i64),
            ]
        }
        Procedure::RollbackTo { version, force } => {
            let target = table.resolve_version(&version).await?;
            let previous = table.snapshots().latest_id().await?;
            let report = maintenance::rollback_to(table, &target, force).await?;
            vec![
                opt_int(previous),
                int(report.target),
                int(report.snapshots_deleted as i64),
                text(report.tags_deleted.join(", ")),
                int(report.data_files_deleted as i64),
            ]
        }
        Procedure::Restore { version } => {
            let target = table.resolve_version(&version).await?;
            let new_id = maintenance::restore(table, &target).await?;
            vec![int(target.id), int(new_id)]
        }
        Procedure::Compact { partitions, minor } => {
            let report = if minor {
                maintenance::compact_minor(table).await?
            } else {
                maintenance::compact_full(table, &partitions).await?
            };
            vec![
                int(report.buckets as i64),
                int(report.files_before as i64),
                int(report.files_after as i64),
                int(report.bytes_read),
                int(report.bytes_written),
                opt_int(report.snapshots.last().copied()),
            ]
        }
        Procedure::Flush => vec![opt_int(maintenance::flush(table).await?)],
        Procedure::ExpirePartitions { options } => {
            let mut all = table.schema().options.clone();
            all.extend(options);
            let invalid = |message: String| QueryError::Coded {
                code: "22023",
                message,
            };
            let opts = PartitionExpireOptions::from_options(&all)
                .map_err(|e| invalid(format!("expire_partitions: {e}")))?
                .ok_or_else(|| {
                    invalid(
                        "expire_partitions: give expiration_time (or set the table's \
                         partition.expiration-time)"
                            .to_owned(),
                    )
                })?;
            let mut expired = maintenance::expire_partitions(table, &opts, now_millis).await?;
            if expired.is_empty() {
                // Paimon's answer.
                expired.push("No expired partitions.".to_owned());
            }
            vec![Arc::new(StringArray::from(expired)) as ArrayRef]
        }
        Procedure::RemoveOrphanFiles {
            older_than,
            dry_run,
        } => {
            let older_than = older_than
                .unwrap_or(now_millis - maintenance::ORPHAN_DEFAULT_AGE.as_millis() as i64);
            if older_than > now_millis - MIN_ORPHAN_AGE_MILLIS {
                return Err(QueryError::Coded {
                    code: "22023",
                    message: "remove_orphan_files: older_than must be at least 1 hour ago \
                              (files of commits in flight are younger and referenced by \
                              nothing yet)"
                        .to_owned(),
                });
            }
            let report = maintenance::remove_orphan_files(table, older_than, dry_run).await?;
            vec![
                int(report.files.len() as i64),
                int(report.bytes as i64),
                Arc::new(BooleanArray::from(vec![report.dry_run])),
            ]
        }
    };
    let schema = Arc::new(result_schema(name).expect("every Procedure has a result schema"));
    Ok(RecordBatch::try_new(schema, row)?)
}

/// The latest snapshot of `table` (55000 when it has none yet).
async fn latest(table: &Table) -> Result<Snapshot, QueryError> {
    table
        .snapshots()
        .latest()
        .await?
        .ok_or_else(|| QueryError::Coded {
            code: "55000",
            message: format!(
                "table {} has no snapshot to tag yet",
                table.qualified_name()
            ),
        })
}

fn int(v: i64) -> ArrayRef {
    Arc::new(Int64Array::from(vec![v]))
}

fn opt_int(v: Option<i64>) -> ArrayRef {
    Arc::new(Int64Array::from(vec![v]))
}

fn text(v: String) -> ArrayRef {
    Arc::new(StringArray::from(vec![v]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_procedure_has_its_columns() {
        let all = [
            Procedure::CreateTag {
                tag: "t".into(),
                snapshot: None,
            },
            Procedure::DeleteTag { tag: "t".into() },
            Procedure::ExpireSnapshots {
                retain_max: None,
                retain_min: None,
                older_than: None,
                max_deletes: None,
            },
            Procedure::RollbackTo {
                version: VersionSpec::SnapshotId(1),
                force: false,
            },
            Procedure::Restore {
                version: VersionSpec::SnapshotId(1),
            },
            Procedure::Flush,
            Procedure::ExpirePartitions {
                options: Vec::new(),
            },
            Procedure::Compact {
                partitions: Vec::new(),
                minor: false,
            },
            Procedure::RemoveOrphanFiles {
                older_than: None,
                dry_run: true,
            },
        ];
        for p in all {
            assert!(result_schema(p.name()).is_some(), "{}", p.name());
            assert!(PROCEDURES.contains(&format!("sys.{}", p.name())));
        }
        assert!(result_schema("no_such").is_none());
    }
}
