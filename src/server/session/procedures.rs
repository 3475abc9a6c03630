//! `CALL sys.<procedure>(...)`: Paimon's maintenance procedures, run by the session at once
//! (inside a transaction block too, with a WARNING: they are not undone by ROLLBACK).
//!
//! Names and arguments follow Paimon's procedures: `create_tag(table, tag [, snapshot])`,
//! `delete_tag(table, tag)`, `expire_snapshots(table [, retain_max, retain_min, older_than,
//! max_deletes])`, `rollback_to(table, version [, force])`, `restore(table, version)`,
//! `remove_orphan_files(table [, older_than, dry_run])`, `compact(table [, partitions,
//! compact_strategy])` (a full compaction, or with `compact_strategy => 'minor'` what the
//! background compactor would do now; waited for). The table is `'name'` or `'schema.name'`, resolved by search_path like any table reference; a version is a snapshot
//! id or a tag name. Each returns one row saying what it did (columns per procedure, fixed so
//! clients can describe the statement before running it).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

use crate::sql::call::{CallSpec, CallValue};
use crate::storage::Table;
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::time_travel::VersionSpec;

use super::super::error::PgError;
use super::{Outcome, Output, Session};

/// Procedures tarn runs, for the hint of an unknown one.
const PROCEDURES: &str = "sys.create_tag, sys.delete_tag, sys.expire_snapshots, \
                          sys.rollback_to, sys.restore, sys.remove_orphan_files, sys.compact";

/// The youngest files `remove_orphan_files` may delete.
const MIN_ORPHAN_AGE_MILLIS: i64 = 3_600_000;

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
        "remove_orphan_files" => vec![
            int("deleted_files_count"),
            int("deleted_bytes"),
            Field::new("dry_run", DataType::Boolean, true),
        ],
        _ => return None,
    };
    Some(Schema::new(fields))
}

impl Session {
    pub(super) async fn call(&mut self, spec: &CallSpec) -> Result<Outcome, PgError> {
        let args = Args(spec);
        let row: Vec<ArrayRef> = match spec.procedure.as_str() {
            "create_tag" => {
                args.expect(&["table", "tag", "snapshot"])?;
                let table = self.procedure_table(&args.text(0, "table")?).await?;
                let tag = args.text(1, "tag")?;
                let snapshot = match args.integer(2, "snapshot")? {
                    Some(id) => table.resolve_version(&VersionSpec::SnapshotId(id)).await?,
                    None => latest(&table).await?,
                };
                let now = self.engine.catalog().warehouse().clock().now_millis();
                table.tags().create(&tag, &snapshot, now).await?;
                vec![text(tag), int(snapshot.id)]
            }
            "delete_tag" => {
                args.expect(&["table", "tag"])?;
                let table = self.procedure_table(&args.text(0, "table")?).await?;
                let tag = args.text(1, "tag")?;
                let snapshot = table
                    .resolve_version(&VersionSpec::Tag(tag.clone()))
                    .await?;
                table.tags().delete(&tag).await?;
                vec![text(tag), int(snapshot.id)]
            }
            "expire_snapshots" => {
                args.expect(&[
                    "table",
                    "retain_max",
                    "retain_min",
                    "older_than",
                    "max_deletes",
                ])?;
                let table = self.procedure_table(&args.text(0, "table")?).await?;
                let older_than = match args.get(3, "older_than") {
                    Some(CallValue::Text(t)) => Some(self.timestamp_millis(t, "older_than")?),
                    Some(CallValue::Null) | None => None,
                    Some(_) => {
                        return Err(
                            args.invalid("argument older_than must be a timestamp string".into())
                        );
                    }
                };
                let cfg = crate::storage::maintenance::expire::ExpireConfig::from_options(
                    &table.schema().options,
                )?
                .with_procedure_args(
                    args.integer(1, "retain_max")?,
                    args.integer(2, "retain_min")?,
                    older_than,
                    args.integer(4, "max_deletes")?,
                );
                cfg.check().map_err(|e| PgError::new("22023", e))?;
                let report =
                    crate::storage::maintenance::expire::expire_snapshots(&table, &cfg).await?;
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
            "rollback_to" => {
                args.expect(&["table", "version", "force"])?;
                let table = self.procedure_table(&args.text(0, "table")?).await?;
                let target = table.resolve_version(&args.version(1, "version")?).await?;
                let force = args.boolean(2, "force")?.unwrap_or(false);
                let previous = table.snapshots().latest_id().await?;
                let report =
                    crate::storage::maintenance::rollback::rollback_to(&table, &target, force)
                        .await?;
                vec![
                    opt_int(previous),
                    int(report.target),
                    int(report.snapshots_deleted as i64),
                    text(report.tags_deleted.join(", ")),
                    int(report.data_files_deleted as i64),
                ]
            }
            "restore" => {
                args.expect(&["table", "version"])?;
                let table = self.procedure_table(&args.text(0, "table")?).await?;
                crate::storage::write::restriction::check_writable(&table)?;
                let target = table.resolve_version(&args.version(1, "version")?).await?;
                let new_id = crate::storage::maintenance::restore::restore(&table, &target).await?;
                vec![int(target.id), int(new_id)]
            }
            "compact" => {
                args.expect(&["table", "partitions", "compact_strategy"])?;
                let table = self.procedure_table(&args.text(0, "table")?).await?;
                let minor = match args.get(2, "compact_strategy") {
                    Some(CallValue::Text(t)) if t.eq_ignore_ascii_case("minor") => true,
                    Some(CallValue::Text(t)) if t.eq_ignore_ascii_case("full") => false,
                    Some(CallValue::Null) | None => false,
                    Some(_) => {
                        return Err(args.invalid(
                            "argument compact_strategy must be 'full' or 'minor'".into(),
                        ));
                    }
                };
                // Paimon's form: 'k=v,k2=v2;k=w' (partitions separated by ';').
                let partitions: Vec<String> = match args.get(1, "partitions") {
                    Some(CallValue::Text(t)) => t
                        .split(';')
                        .filter(|p| !p.trim().is_empty())
                        .map(str::to_owned)
                        .collect(),
                    Some(CallValue::Null) | None => Vec::new(),
                    Some(_) => {
                        return Err(args.invalid(
                            "argument partitions must be a string like 'dt=2026-12-01'".into(),
                        ));
                    }
                };
                let report = if minor {
                    if !partitions.is_empty() {
                        return Err(args.invalid(
                            "compact_strategy 'minor' compacts every bucket: leave out \
                             partitions"
                                .into(),
                        ));
                    }
                    crate::storage::maintenance::compactor::compact_minor(&table).await?
                } else {
                    crate::storage::maintenance::compactor::compact_full(&table, &partitions)
                        .await?
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
            "remove_orphan_files" => {
                args.expect(&["table", "older_than", "dry_run"])?;
                let table = self.procedure_table(&args.text(0, "table")?).await?;
                let now = self.engine.catalog().warehouse().clock().now_millis();
                let older_than = match args.get(1, "older_than") {
                    Some(CallValue::Text(t)) => self.timestamp_millis(t, "older_than")?,
                    Some(CallValue::Null) | None => {
                        now - crate::storage::maintenance::orphan::ORPHAN_DEFAULT_AGE.as_millis()
                            as i64
                    }
                    Some(_) => {
                        return Err(
                            args.invalid("argument older_than must be a timestamp string".into())
                        );
                    }
                };
                // A commit in flight writes its files before its snapshot: only files older
                // than any commit can take are candidates.
                if older_than > now - MIN_ORPHAN_AGE_MILLIS {
                    return Err(PgError::new(
                        "22023",
                        "remove_orphan_files: older_than must be at least 1 hour ago (files of \
                         commits in flight are younger and referenced by nothing yet)",
                    ));
                }
                let dry_run = args.boolean(2, "dry_run")?.unwrap_or(false);
                let report = crate::storage::maintenance::orphan::remove_orphan_files(
                    &table, older_than, dry_run,
                )
                .await?;
                vec![
                    int(report.files.len() as i64),
                    int(report.bytes as i64),
                    Arc::new(BooleanArray::from(vec![report.dry_run])),
                ]
            }
            other => {
                return Err(
                    PgError::new("42883", format!("procedure sys.{other} does not exist"))
                        .with_hint(format!("tarn's procedures: {PROCEDURES}.")),
                );
            }
        };
        let schema = Arc::new(result_schema(&spec.procedure).expect("a known procedure"));
        let batch = RecordBatch::try_new(Arc::clone(&schema), row)
            .map_err(|e| PgError::new("XX000", e.to_string()))?;
        let batches = Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&schema),
            futures::stream::iter([Ok(batch)]),
        ));
        Ok(Outcome {
            warnings: self.ddl_warning("CALL"),
            ..Outcome::from(Output::Rows {
                schema,
                batches,
                tag: "CALL",
            })
        })
    }

    /// A timestamp argument (`'2026-12-01 10:00:00'`, read in the session's TimeZone).
    fn timestamp_millis(&self, text: &str, what: &str) -> Result<i64, PgError> {
        let value: ArrayRef = Arc::new(StringArray::from(vec![text]));
        let zone = self.settings().time_zone();
        crate::query::time_travel::to_millis(&value, &zone, what)
            .map_err(|e| PgError::new("22007", format!("argument {what}: {e}")))
    }

    /// The table a procedure names (`'t'` or `'schema.t'`).
    async fn procedure_table(&mut self, name: &str) -> Result<Table, PgError> {
        self.refresh_catalog().await?;
        let (schema, table) = match name.split_once('.') {
            Some((s, t)) => (Some(s), t),
            None => (None, name),
        };
        let Some(db) = self.find_table(schema, table).await? else {
            return Err(PgError::new(
                "42P01",
                format!("relation \"{name}\" does not exist"),
            ));
        };
        Ok(self
            .engine
            .catalog()
            .warehouse()
            .open_table(&db, table)
            .await?)
    }
}

/// A CALL's arguments, by position or by name.
struct Args<'a>(&'a CallSpec);

impl Args<'_> {
    /// Fails on a name the procedure does not take, or too many arguments.
    fn expect(&self, names: &[&str]) -> Result<(), PgError> {
        if self.0.args.len() > names.len() {
            return Err(self.invalid(format!("takes at most {} arguments", names.len())));
        }
        for a in &self.0.args {
            if let Some(n) = &a.name
                && !names.contains(&n.as_str())
            {
                return Err(self.invalid(format!(
                    "has no argument {n} (its arguments: {})",
                    names.join(", ")
                )));
            }
        }
        Ok(())
    }

    fn get(&self, position: usize, name: &str) -> Option<&CallValue> {
        self.0
            .args
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
            .or_else(|| self.0.args.get(position).filter(|a| a.name.is_none()))
            .map(|a| &a.value)
    }

    fn text(&self, position: usize, name: &str) -> Result<String, PgError> {
        match self.get(position, name) {
            Some(CallValue::Text(s)) => Ok(s.clone()),
            Some(_) => Err(self.invalid(format!("argument {name} must be a string"))),
            None => Err(self.invalid(format!("needs argument {name}"))),
        }
    }

    fn integer(&self, position: usize, name: &str) -> Result<Option<i64>, PgError> {
        match self.get(position, name) {
            Some(CallValue::Integer(i)) => Ok(Some(*i)),
            Some(CallValue::Null) | None => Ok(None),
            Some(CallValue::Text(t)) => t
                .parse()
                .map(Some)
                .map_err(|_| self.invalid(format!("argument {name} must be an integer"))),
            Some(CallValue::Boolean(_)) => {
                Err(self.invalid(format!("argument {name} must be an integer")))
            }
        }
    }

    fn boolean(&self, position: usize, name: &str) -> Result<Option<bool>, PgError> {
        match self.get(position, name) {
            Some(CallValue::Boolean(b)) => Ok(Some(*b)),
            Some(CallValue::Null) | None => Ok(None),
            Some(CallValue::Text(t)) => match t.to_lowercase().as_str() {
                "true" | "t" | "yes" | "on" | "1" => Ok(Some(true)),
                "false" | "f" | "no" | "off" | "0" => Ok(Some(false)),
                _ => Err(self.invalid(format!("argument {name} must be a boolean"))),
            },
            Some(CallValue::Integer(_)) => {
                Err(self.invalid(format!("argument {name} must be a boolean")))
            }
        }
    }

    /// A version: an integer is a snapshot id, a string a tag name.
    fn version(&self, position: usize, name: &str) -> Result<VersionSpec, PgError> {
        match self.get(position, name) {
            Some(CallValue::Integer(i)) => Ok(VersionSpec::SnapshotId(*i)),
            Some(CallValue::Text(t)) => Ok(VersionSpec::Tag(t.clone())),
            _ => Err(self.invalid(format!(
                "needs argument {name}: a snapshot id or a tag name"
            ))),
        }
    }

    fn invalid(&self, what: String) -> PgError {
        PgError::new(
            "42883",
            format!("procedure sys.{} {what}", self.0.procedure),
        )
    }
}

/// The latest snapshot of `table` (55000 when it has none yet).
async fn latest(table: &Table) -> Result<Snapshot, PgError> {
    table.snapshots().latest().await?.ok_or_else(|| {
        PgError::new(
            "55000",
            format!(
                "table {} has no snapshot to tag yet",
                table.qualified_name()
            ),
        )
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
