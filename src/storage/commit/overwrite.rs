//! Overwrite commits: TRUNCATE (every live file) and dropped partitions (the live files of the
//! partitions a set of partition specs names), each one OVERWRITE snapshot, as Paimon's
//! `FileStoreCommitImpl.truncateTable` / `dropPartitions` (`tryOverwritePartition`) write them:
//! DELETE entries for the files, no changelog, and the index files of those partitions
//! (deletion vectors, dynamic-bucket HASH indexes, any other type) gone from the index
//! manifest.
//!
//! Readers: time travel to a snapshot before the overwrite still reads the rows (the files
//! stay until expiration); `table_changes` across it (a diff of states) shows the rows as
//! deleted, and so does `table_changelog` (a commit without changelog files shows its own net
//! change, `read/changelog_scan.rs`); Paimon's streaming readers skip OVERWRITE snapshots
//! unless `streaming-read-overwrite` is set.

use std::collections::{BTreeMap, HashSet};

use crate::storage::StorageError;
use crate::storage::commit::committer::{self, CommitMessage, Step};
use crate::storage::commit::snapshot_writer::Content;
use crate::storage::commit::state::CommitState;
use crate::storage::lsm::split::{FileId, file_id};
use crate::storage::lsm::unflushed::UnflushedState;
use crate::storage::meta::index_manifest::{self, IndexManifestEntry};
use crate::storage::meta::snapshot::{CommitKind, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::read::scan::{ScanFilter, ScanPlan};
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::{Datum, PartitionText};
use crate::storage::spec::manifest::{FileKind, ManifestEntry};
use crate::storage::spec::predicate::Predicate;

/// Removes every row of the table with one OVERWRITE snapshot. Returns the new snapshot id, or
/// `None` if the table had no snapshot.
pub async fn truncate(table: &Table) -> Result<Option<i64>, StorageError> {
    crate::storage::write::restriction::check_writable(table)?;
    let log = table.state::<CommitState>().log.clone();
    let mut truncate = Truncate { erases: None };
    let id = committer::commit(table, &mut truncate).await;
    if truncate.erases.is_some() && !matches!(id, Ok(Some(_))) {
        table.state::<UnflushedState>().flush_failed();
    }
    let id = id?;
    if let (Some(log), Some(through)) = (log, truncate.erases) {
        log.table_flushed(table, through).await?;
    }
    Ok(id)
}

/// TRUNCATE; with the commit log on, it also erases the table's transactions logged before it
/// (through `erases`, its `commitIdentifier`), as a flush that writes nothing would.
struct Truncate {
    erases: Option<u64>,
}

impl CommitMessage for Truncate {
    type Output = Option<i64>;

    fn start(&mut self, table: &Table) -> Option<Option<i64>> {
        // Under the commit lock: every transaction logged so far committed before this.
        if table.state::<CommitState>().log.is_some() {
            let unflushed = table.state::<UnflushedState>();
            self.erases = unflushed.last_lsn();
            if self.erases.is_some() {
                unflushed.begin_flush();
            }
        }
        None
    }

    fn identifier(&self) -> Option<i64> {
        self.erases.and_then(|l| i64::try_from(l).ok())
    }

    async fn prepare(
        &mut self,
        table: &Table,
        latest: Option<&Snapshot>,
        _identifier: i64,
    ) -> Result<Step<Option<i64>>, StorageError> {
        let Some(latest) = latest else {
            return Ok(Step::Finish(None));
        };
        // The erased LSNs become this snapshot's identifier and the table's flushed mark:
        // durable first (a commit logged before may still wait for its fdatasync).
        if let (Some(_), Some(log)) = (self.erases, &table.state::<CommitState>().log) {
            log.barrier().await?;
        }
        let mut plan = ScanPlan::default();
        let entries = table
            .live_entries(latest, &ScanFilter::default(), &mut plan)
            .await?
            .into_iter()
            .map(|mut e| {
                e.kind = FileKind::Delete;
                e
            })
            .collect();
        let mut content = Content::new(CommitKind::Overwrite, entries, Vec::new(), None);
        content.index_manifest = None;
        Ok(Step::Publish(content))
    }

    fn published(&mut self, table: &Table, snapshot: &Snapshot) -> Option<i64> {
        if let Some(through) = self.erases {
            table.state::<UnflushedState>().flushed(through, snapshot);
            table.state::<CommitState>().set_log_identifier(through);
        }
        Some(snapshot.id)
    }
}

/// What [`drop_partitions`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartitionDrop {
    /// The OVERWRITE snapshot; `None` when no partition matched (nothing was written).
    pub snapshot: Option<i64>,
    /// The partitions dropped (those holding live files or index files), each as its values in
    /// partition-key order, sorted by their bytes.
    pub partitions: Vec<Vec<Datum>>,
    /// Data files deleted from the table's state.
    pub files: usize,
    /// The row count of those files (all the versions they hold: not the table's rows on a
    /// primary-key table).
    pub file_rows: i64,
}

/// How [`drop_partitions`] ended.
#[derive(Debug, Clone, PartialEq)]
pub enum DropOutcome {
    /// The partitions were dropped (or none matched, and none had to).
    Dropped(PartitionDrop),
    /// Spec `n` (an index into the specs) matches no partition of the latest snapshot, and
    /// each had to: nothing was dropped.
    Missing(usize),
    /// The live files of the matched partitions are not those of the `base` snapshot the
    /// caller looked at (a commit since changed them): nothing was dropped.
    Changed,
}

/// Drops the partitions of `table` that any of `specs` admits (each a predicate on partition
/// columns, exact per partition) with one OVERWRITE snapshot on top of the latest one.
///
/// With the commit log on, the table's logged transactions are flushed first, under the same
/// commit lock as the overwrite, so a transaction acknowledged before the drop is dropped with
/// its partition and none acknowledged after it is. `must_exist`: each spec must match a
/// partition holding files, else nothing happens ([`DropOutcome::Missing`]). `base`: the
/// snapshot whose files in those partitions the caller counted (a DELETE's row count); when
/// they changed since, nothing happens ([`DropOutcome::Changed`]).
pub async fn drop_partitions(
    table: &Table,
    specs: &[Predicate],
    must_exist: bool,
    base: Option<i64>,
) -> Result<DropOutcome, StorageError> {
    crate::storage::write::restriction::check_writable(table)?;
    if table.schema().partition_keys.is_empty() {
        return Err(StorageError::Unsupported(format!(
            "table {} is not partitioned",
            table.qualified_name()
        )));
    }
    if specs.is_empty() {
        return Ok(DropOutcome::Dropped(PartitionDrop::default()));
    }
    let state = table.state::<CommitState>();
    let _lock = state.lock.lock().await;
    if let Some(log) = &state.log {
        // Logged transactions are later than every snapshot: into the table first, so the
        // overwrite sees (and drops) their files.
        crate::storage::commit::logged::drain_locked(log, table).await?;
    }
    let mut message = DropPartitions {
        specs,
        must_exist,
        base,
        outcome: None,
    };
    committer::commit_locked(table, &mut message).await
}

/// Dropped partitions, as a commit.
struct DropPartitions<'a> {
    specs: &'a [Predicate],
    must_exist: bool,
    base: Option<i64>,
    /// What the last prepared attempt drops.
    outcome: Option<PartitionDrop>,
}

impl DropPartitions<'_> {
    fn filter(&self) -> ScanFilter {
        ScanFilter {
            partition: Some(match self.specs {
                [one] => one.clone(),
                many => Predicate::Or(many.to_vec()),
            }),
            key: None,
        }
    }
}

/// Whether the partition `values` (in `names`' order) satisfies `predicate`.
fn admits(predicate: &Predicate, names: &[String], values: &[Datum]) -> bool {
    predicate.eval(&|column: &str| names.iter().position(|n| n == column).map(|i| &values[i]))
}

impl CommitMessage for DropPartitions<'_> {
    type Output = DropOutcome;

    async fn prepare(
        &mut self,
        table: &Table,
        latest: Option<&Snapshot>,
        _identifier: i64,
    ) -> Result<Step<DropOutcome>, StorageError> {
        let Some(latest) = latest else {
            return Ok(Step::Finish(if self.must_exist {
                DropOutcome::Missing(0)
            } else {
                DropOutcome::Dropped(PartitionDrop::default())
            }));
        };
        let filter = self.filter();
        let predicate = filter.partition.clone().expect("a partition predicate");
        let names = table.schema().partition_keys.clone();
        let types = table.partition_types();
        let mut plan = ScanPlan::default();
        let entries = table.live_entries(latest, &filter, &mut plan).await?;
        let mut partitions: BTreeMap<Vec<u8>, Vec<Datum>> = BTreeMap::new();
        for e in &entries {
            if !partitions.contains_key(&e.partition) {
                let values = binary_row::deserialize(&e.partition, &types)?;
                partitions.insert(e.partition.clone(), values);
            }
        }
        if self.must_exist
            && let Some(n) = self
                .specs
                .iter()
                .position(|s| !partitions.values().any(|v| admits(s, &names, v)))
        {
            return Ok(Step::Finish(DropOutcome::Missing(n)));
        }
        if let Some(base) = self.base
            && base != latest.id
        {
            let Some(base) = table.snapshots().get(base).await? else {
                return Ok(Step::Finish(DropOutcome::Changed));
            };
            let then: HashSet<FileId> = table
                .live_entries(&base, &filter, &mut plan)
                .await?
                .iter()
                .map(file_id)
                .collect();
            let now: HashSet<FileId> = entries.iter().map(file_id).collect();
            if then != now {
                return Ok(Step::Finish(DropOutcome::Changed));
            }
        }
        // The index files of those partitions go with them (Paimon's overwrite deletes every
        // index entry its partition filter admits).
        let mut index_entries: Vec<IndexManifestEntry> = Vec::new();
        let mut dropped_index: Vec<IndexManifestEntry> = Vec::new();
        if let Some(name) = &latest.index_manifest {
            for e in table.read_index_entries(name).await? {
                let values = binary_row::deserialize(&e.partition, &types)?;
                if admits(&predicate, &names, &values) {
                    partitions.entry(e.partition.clone()).or_insert(values);
                    dropped_index.push(IndexManifestEntry {
                        kind: FileKind::Delete,
                        ..e.clone()
                    });
                }
                index_entries.push(e);
            }
        }
        if entries.is_empty() && dropped_index.is_empty() {
            return Ok(Step::Finish(DropOutcome::Dropped(PartitionDrop::default())));
        }
        let file_rows = entries.iter().map(|e| e.file.row_count).sum();
        let files = entries.len();
        let deletes: Vec<ManifestEntry> = entries
            .into_iter()
            .map(|e| ManifestEntry {
                kind: FileKind::Delete,
                ..e
            })
            .collect();
        let mut content = Content::new(CommitKind::Overwrite, deletes, Vec::new(), Some(latest));
        if !dropped_index.is_empty() {
            let kept = index_manifest::combine(index_entries, dropped_index);
            content.index_manifest = if kept.is_empty() {
                None
            } else {
                let name =
                    index_manifest::write_index_manifest_file(table.io(), table.path(), &kept)
                        .await?;
                content
                    .attempt_files
                    .push(index_manifest::index_manifest_path(table.path(), &name));
                Some(name)
            };
        }
        self.outcome = Some(PartitionDrop {
            snapshot: None,
            partitions: partitions.into_values().collect(),
            files,
            file_rows,
        });
        Ok(Step::Publish(content))
    }

    fn published(&mut self, _table: &Table, snapshot: &Snapshot) -> DropOutcome {
        let mut outcome = self.outcome.take().expect("a prepared drop");
        outcome.snapshot = Some(snapshot.id);
        DropOutcome::Dropped(outcome)
    }
}

/// A partition as Paimon's procedures print it: `dt=2026-01-01, hour=3` (a NULL value as the
/// table's `partition.default-name`).
pub fn partition_text(table: &Table, values: &[Datum]) -> String {
    let schema = table.schema();
    let default_name = schema.core_options().partition_default_name().to_owned();
    schema
        .partition_keys
        .iter()
        .zip(values)
        .map(|(key, value)| match value {
            Datum::Null => format!("{key}={default_name}"),
            v => format!("{key}={}", PartitionText(v, schema.type_of(key))),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
#[path = "overwrite_tests.rs"]
mod tests;
