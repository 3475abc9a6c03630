//! `CALL sys.restore(t, version)`: the audit-safe way back to an old version.
//!
//! Unlike a rollback (which deletes later snapshots), a restore commits ONE new OVERWRITE
//! snapshot whose live files are exactly those of the old version: files live now but not then
//! are deleted from the table's state, files live then but not now are added back (they still
//! exist: the old version is retained or tagged, so expiration kept them). History stays: time
//! travel to the snapshots in between still reads them, and `table_changes` across the restore
//! shows the net change.

use std::collections::HashSet;

use crate::storage::StorageError;
use crate::storage::commit::committer::{self, CommitMessage, Step};
use crate::storage::commit::snapshot_writer::Content;
use crate::storage::lsm::split::{FileId, file_id};
use crate::storage::meta::snapshot::{CommitKind, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::read::scan::{ScanFilter, ScanPlan};
use crate::storage::spec::manifest::{FileKind, ManifestEntry};

/// Commits a snapshot whose content equals `target`'s; returns its id.
pub async fn restore(table: &Table, target: &Snapshot) -> Result<i64, StorageError> {
    crate::storage::write::restriction::check_writable(table)?;
    committer::commit(table, &mut Restore { target }).await
}

/// A restore, as a commit: on top of whatever is latest, the files to delete and add back.
struct Restore<'a> {
    target: &'a Snapshot,
}

impl CommitMessage for Restore<'_> {
    type Output = i64;

    async fn prepare(
        &mut self,
        table: &Table,
        latest: Option<&Snapshot>,
        _identifier: i64,
    ) -> Result<Step<i64>, StorageError> {
        let mut plan = ScanPlan::default();
        let then = table
            .live_entries(self.target, &ScanFilter::default(), &mut plan)
            .await?;
        let now = match latest {
            Some(s) => {
                table
                    .live_entries(s, &ScanFilter::default(), &mut plan)
                    .await?
            }
            None => Vec::new(),
        };
        // The old version's deletion vectors come back with its files.
        let mut content = Content::new(
            CommitKind::Overwrite,
            restore_entries(&then, &now),
            Vec::new(),
            None,
        );
        content.index_manifest = self.target.index_manifest.clone();
        Ok(Step::Publish(content))
    }

    fn published(&mut self, _table: &Table, snapshot: &Snapshot) -> i64 {
        snapshot.id
    }
}

/// DELETE entries for files live `now` but not `then`, ADD entries for the reverse.
fn restore_entries(then: &[ManifestEntry], now: &[ManifestEntry]) -> Vec<ManifestEntry> {
    let then_ids: HashSet<FileId> = then.iter().map(file_id).collect();
    let now_ids: HashSet<FileId> = now.iter().map(file_id).collect();
    let mut entries: Vec<ManifestEntry> = now
        .iter()
        .filter(|e| !then_ids.contains(&file_id(e)))
        .map(|e| ManifestEntry {
            kind: FileKind::Delete,
            ..e.clone()
        })
        .collect();
    entries.extend(
        then.iter()
            .filter(|e| !now_ids.contains(&file_id(e)))
            .map(|e| ManifestEntry {
                kind: FileKind::Add,
                ..e.clone()
            }),
    );
    entries
}
