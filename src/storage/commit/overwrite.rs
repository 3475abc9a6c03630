//! TRUNCATE: one OVERWRITE snapshot that deletes every live file, as Paimon's overwrite commit
//! does (no changelog; no index manifest — the deletion vectors of files no longer live go).

use crate::storage::StorageError;
use crate::storage::commit::committer::{self, CommitMessage, Step};
use crate::storage::commit::snapshot_writer::Content;
use crate::storage::commit::state::CommitState;
use crate::storage::lsm::unflushed::UnflushedState;
use crate::storage::meta::snapshot::{CommitKind, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::read::scan::{ScanFilter, ScanPlan};
use crate::storage::spec::manifest::FileKind;

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
