//! TRUNCATE: one OVERWRITE snapshot that deletes every live file, as Paimon's overwrite commit
//! does (no changelog; no index manifest — the deletion vectors of files no longer live go).

use crate::storage::StorageError;
use crate::storage::commit::committer::{self, CommitMessage, Step};
use crate::storage::commit::snapshot_writer::Content;
use crate::storage::meta::snapshot::{CommitKind, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::read::scan::{ScanFilter, ScanPlan};
use crate::storage::spec::manifest::FileKind;

/// Removes every row of the table with one OVERWRITE snapshot. Returns the new snapshot id, or
/// `None` if the table had no snapshot.
pub async fn truncate(table: &Table) -> Result<Option<i64>, StorageError> {
    crate::storage::write::restriction::check_writable(table)?;
    committer::commit(table, &mut Truncate).await
}

struct Truncate;

impl CommitMessage for Truncate {
    type Output = Option<i64>;

    async fn prepare(
        &mut self,
        table: &Table,
        latest: Option<&Snapshot>,
        _identifier: i64,
    ) -> Result<Step<Option<i64>>, StorageError> {
        let Some(latest) = latest else {
            return Ok(Step::Finish(None));
        };
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

    fn published(&mut self, _table: &Table, snapshot: &Snapshot) -> Option<i64> {
        Some(snapshot.id)
    }
}
