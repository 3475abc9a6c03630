//! Every change of every commit between two versions: what `table_changelog(t, from, to)`
//! returns, and the audit log of a table with `changelog-producer` = `input`.
//!
//! [`changes`](crate::storage::read::changes) answers "how does `to` differ from `from`" (the net change);
//! auditors also ask "what did each commit do". A commit's changes come from its changelog
//! files when it has them (`changelog-producer` = `input`, or Paimon's `lookup` /
//! `full-compaction` written by other engines): every version the writer received, in the order
//! it wrote them, so a key changed twice in one group-commit round shows both changes. A commit
//! without changelog files (a table without a producer, TRUNCATE and `sys.restore` overwrites,
//! commits by writers that do not produce one) shows its own net change: the difference of its
//! state and its parent's. Compactions change nothing and show nothing — except in `lookup` and
//! `full-compaction` tables, whose writes show nothing and whose compactions show the changes
//! they merged (`compact_changelog.rs`): what Paimon's streaming readers see.
//!
//! The audit log of an input table (Paimon's streaming audit log read from the earliest
//! snapshot, `scan.mode` = `from-snapshot-full`) is the state of the earliest retained snapshot
//! as inserts, then this changelog up to the version read: replaying it rebuilds that version.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{Int8Type, SchemaRef};
use futures::TryStreamExt;

use crate::storage::StorageError;
use crate::storage::meta::snapshot::{CommitKind, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::meta::time_travel::{VersionError, VersionSpec};
use crate::storage::read::scan::Split;
use crate::storage::spec::binary_row;
use crate::storage::spec::manifest::{DataFileMeta, FileKind};
use crate::storage::spec::options::ChangelogProducer;

/// Paimon's short names of the row kinds, by `_VALUE_KIND`.
const KIND_NAMES: [&str; 4] = ["+I", "-U", "+U", "-D"];

/// The `rowkind` column of rows whose `_VALUE_KIND` is `kinds` (`None`: an append table's rows,
/// all inserts).
pub fn row_kind_names(kinds: Option<&ArrayRef>, rows: usize) -> ArrayRef {
    let column: StringArray = match kinds {
        Some(k) => k
            .as_primitive::<Int8Type>()
            .iter()
            .map(|k| k.and_then(|k| KIND_NAMES.get(k as usize).copied()))
            .collect(),
        None => std::iter::repeat_n(Some(KIND_NAMES[0]), rows).collect(),
    };
    Arc::new(column)
}

impl Table {
    /// Every change of every commit from `from` (exclusive; `None`: the empty table before the
    /// first snapshot) to `to` (inclusive), commit by commit, in
    /// [`changes_schema`](Self::changes_schema). Every snapshot in between must be retained.
    pub async fn changelog(
        &self,
        from: Option<&Snapshot>,
        to: &Snapshot,
    ) -> Result<Vec<RecordBatch>, StorageError> {
        let from_id = from.map_or(0, |s| s.id);
        if from_id > to.id {
            return Err(StorageError::Version(VersionError::Backwards {
                table: self.qualified_name(),
                from: from_id,
                to: to.id,
            }));
        }
        // `lookup` / `full-compaction`: a write's changes are in the changelog of the
        // compaction that merges them, not in its own snapshot.
        let at_compaction = self.schema().has_primary_key()
            && self
                .schema()
                .core_options()
                .changelog_producer()
                .is_ok_and(ChangelogProducer::at_compaction);
        let mut parent = from.cloned();
        let mut out = Vec::new();
        for id in from_id + 1..=to.id {
            let snapshot = if id == to.id {
                to.clone()
            } else {
                self.resolve_version(&VersionSpec::SnapshotId(id)).await?
            };
            if let Some(list) = &snapshot.changelog_manifest_list {
                out.extend(self.changelog_files(list, snapshot.id).await?);
            } else if snapshot.commit_kind == CommitKind::Overwrite
                || (snapshot.commit_kind == CommitKind::Append && !at_compaction)
            {
                out.extend(self.changes(parent.as_ref(), &snapshot).await?);
            }
            parent = Some(snapshot);
        }
        Ok(out)
    }

    /// The audit log of a table with a changelog: the rows of the earliest retained snapshot
    /// as inserts (from the empty table when that is snapshot 1), then
    /// [`changelog`](Self::changelog) up to `to`; in `changes_schema`.
    pub async fn changelog_history(&self, to: &Snapshot) -> Result<Vec<RecordBatch>, StorageError> {
        let earliest = match self.snapshots().earliest_id().await? {
            Some(id) if id > 1 && id <= to.id => {
                Some(self.resolve_version(&VersionSpec::SnapshotId(id)).await?)
            }
            // A tag's snapshot older than every retained one: start from the tag itself.
            Some(id) if id > to.id => Some(to.clone()),
            _ => None,
        };
        let mut out = Vec::new();
        if let Some(first) = &earliest {
            out = self.changes(None, first).await?;
        }
        out.extend(self.changelog(earliest.as_ref(), to).await?);
        Ok(out)
    }

    /// The rows of the changelog files listed by manifest list `list`, bucket by bucket, each
    /// bucket's files in sequence order.
    async fn changelog_files(
        &self,
        list: &str,
        snapshot: i64,
    ) -> Result<Vec<RecordBatch>, StorageError> {
        let mut buckets: BTreeMap<(Vec<u8>, i32), (i32, Vec<DataFileMeta>)> = BTreeMap::new();
        for meta in self.read_manifest_list(list).await? {
            for e in self.read_manifest(&meta.file_name).await?.iter() {
                if e.kind == FileKind::Add {
                    buckets
                        .entry((e.partition.clone(), e.bucket))
                        .or_insert_with(|| (e.total_buckets, Vec::new()))
                        .1
                        .push(e.file.clone());
                }
            }
        }
        let schema = self.changes_schema()?;
        let layout = self.full_layout();
        let partition_types = self.partition_types();
        let mut out = Vec::new();
        for ((partition_bytes, bucket), (total_buckets, mut files)) in buckets {
            files.sort_by_key(|f| (f.min_sequence_number, f.max_sequence_number));
            let split = Split {
                partition: binary_row::deserialize(&partition_bytes, &partition_types)?,
                partition_bytes,
                bucket,
                total_buckets,
                files: Vec::new(),
                deletions: None,
            };
            for file in &files {
                let batches: Vec<RecordBatch> = self
                    .open_data_file(&split, file, &layout)
                    .await?
                    .try_collect()
                    .await?;
                for b in batches {
                    out.push(change_rows(&schema, &b, &layout, snapshot)?);
                }
            }
        }
        Ok(out)
    }
}

/// A batch of a file read in the full layout as change rows of `snapshot`.
fn change_rows(
    schema: &SchemaRef,
    batch: &RecordBatch,
    layout: &crate::storage::lsm::data_file::ReadLayout,
    snapshot: i64,
) -> Result<RecordBatch, StorageError> {
    let kinds = layout.system.then(|| batch.column(layout.kind_index()));
    let mut columns = vec![
        row_kind_names(kinds, batch.num_rows()),
        Arc::new(Int64Array::from_value(snapshot, batch.num_rows())) as ArrayRef,
    ];
    columns.extend(batch.columns()[layout.value_offset()..].iter().cloned());
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}
